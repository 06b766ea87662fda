// SPDX-License-Identifier: Apache-2.0
// Making a sandbox again from its history: the own layer it had last (its creation, then each
// change of that layer, in order), its name and preset; its spec as created when no layer was
// recorded; and a clear error when its creation is not there.
#include "client/Recreate.h"

#include <QJsonArray>
#include <QTest>

using namespace airlock;

namespace {
QJsonObject recorded(const char *kind, const QJsonObject &payload)
{
    return {{QStringLiteral("kind"), QLatin1String(kind)}, {QStringLiteral("payload"), payload}};
}
const QJsonObject spec{{QStringLiteral("name"), QStringLiteral("w")},
    {QStringLiteral("network"), QStringLiteral("allowlist")},
    {QStringLiteral("limits"), QJsonObject{{QStringLiteral("pids"), 64}}}};
} // namespace

class TestRecreate final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theLastOwnLayerWins()
    {
        const QJsonObject first{
            {QStringLiteral("network"), QJsonObject{{QStringLiteral("mode"), QStringLiteral("allowlist")}}}};
        const QJsonObject second{
            {QStringLiteral("commands"), QJsonObject{{QStringLiteral("default"), QStringLiteral("deny")}}}};
        const QJsonArray events{
            recorded("sandbox.created",
                {{QStringLiteral("name"), QStringLiteral("w")}, {QStringLiteral("spec"), spec},
                    {QStringLiteral("preset"), QStringLiteral("locked")}, {QStringLiteral("overrides"), first}}),
            recorded("policy.changed", {{QStringLiteral("old"), first}, {QStringLiteral("new"), second}})};
        auto p = recreateParameters(events);
        QVERIFY(p);
        QCOMPARE(p->request.toJson().value(QStringLiteral("policy")).toObject(), second);
        QCOMPARE(p->request.toJson().value(QStringLiteral("spec")).toObject(),
            (QJsonObject{{QStringLiteral("name"), QStringLiteral("w")}}));
        QCOMPARE(p->request.toJson().value(QStringLiteral("preset")).toString(), QStringLiteral("locked"));
        QVERIFY(p->ownLayer);
    }
    void aChangeBeforeItsCreationIsAnotherSandboxs()
    {
        // A name reused: only what follows the newest creation counts.
        const QJsonObject mine{{QStringLiteral("tools"), QJsonObject()}};
        const QJsonArray events{
            recorded("policy.changed", {{QStringLiteral("new"), QJsonObject{{QStringLiteral("x"), 1}}}}),
            recorded("sandbox.created",
                {{QStringLiteral("name"), QStringLiteral("w")}, {QStringLiteral("spec"), spec},
                    {QStringLiteral("overrides"), mine}})};
        auto p = recreateParameters(events);
        QVERIFY(p);
        QCOMPARE(p->request.toJson().value(QStringLiteral("policy")).toObject(), mine);
        QVERIFY(!p->request.toJson().contains(QStringLiteral("preset")));
    }
    void withoutARecordedLayerTheSpecAsCreated()
    {
        auto p = recreateParameters({recorded(
            "sandbox.created", {{QStringLiteral("name"), QStringLiteral("w")}, {QStringLiteral("spec"), spec}})});
        QVERIFY(p);
        QCOMPARE(p->request.toJson().value(QStringLiteral("spec")).toObject(), spec);
        QVERIFY(!p->request.toJson().contains(QStringLiteral("policy")));
        QVERIFY(!p->ownLayer); // said: its own rules were not recorded
    }
    void nothingToMakeItFrom()
    {
        auto none = recreateParameters({recorded("policy.changed", {{QStringLiteral("new"), QJsonObject()}})});
        QVERIFY(!none);
        QCOMPARE(none.error().code, ErrorCode::NotFound);
        QVERIFY(none.error().message.startsWith(QLatin1String("its creation is not in the history")));
        auto nameless = recreateParameters({recorded("sandbox.created", {{QStringLiteral("spec"), QJsonObject()}})});
        QVERIFY(!nameless);
        QCOMPARE(nameless.error().code, ErrorCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestRecreate)
#include "tst_recreate.moc"
