// SPDX-License-Identifier: Apache-2.0
// A sandbox.create request as every front end builds it: only what was asked for goes on the wire
// (the daemon's defaults and the policy decide the rest), hosts let through land in the own
// layer's allowlist, and a request read back is checked as the daemon checks it.
#include "model/CreateSandboxRequest.h"

#include <QJsonArray>
#include <QTest>

using namespace airlock;

class TestCreateRequest final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void nothingAskedIsAnEmptySpec()
    {
        QCOMPARE(CreateSandboxRequest().toJson(), (QJsonObject{{QStringLiteral("spec"), QJsonObject()}}));
    }

    void onlyWhatWasAskedGoesOnTheWire()
    {
        CreateSandboxRequest request;
        request.name = QStringLiteral("w");
        request.limits.pids = 64;
        request.preset = QStringLiteral("locked");
        QCOMPARE(request.toJson(),
            (QJsonObject{{QStringLiteral("spec"),
                             QJsonObject{{QStringLiteral("name"), QStringLiteral("w")},
                                 {QStringLiteral("limits"), QJsonObject{{QStringLiteral("pids"), 64}}}}},
                {QStringLiteral("preset"), QStringLiteral("locked")}}));
    }

    // The default kind is not written: a daemon from before isolation kinds reads the request
    // as it always did; another kind is, and such a daemon refuses the unknown field.
    void onlyAnIsolationAskedForIsWritten()
    {
        CreateSandboxRequest request;
        QVERIFY(!request.toJson().value(QStringLiteral("spec")).toObject().contains(QStringLiteral("isolation")));
        request.isolation = Isolation::Gvisor;
        QCOMPARE(request.toJson().value(QStringLiteral("spec")).toObject().value(QStringLiteral("isolation")),
            QJsonValue(QStringLiteral("gvisor")));
    }

    void allowedHostsJoinTheOwnLayer()
    {
        CreateSandboxRequest request;
        request.policy = QJsonObject{{QStringLiteral("network"),
            QJsonObject{{QStringLiteral("allow"), QJsonArray{QStringLiteral("a.example")}}}}};
        request.allowHosts({QStringLiteral("b.example")});
        QCOMPARE(request.network, std::optional<NetworkMode>(NetworkMode::Allowlist));
        QCOMPARE(request.toJson().value(QStringLiteral("policy")).toObject(),
            (QJsonObject{{QStringLiteral("network"),
                QJsonObject{{QStringLiteral("allow"),
                    QJsonArray{QStringLiteral("a.example"), QStringLiteral("b.example")}}}}}));
        QCOMPARE(request.toJson().value(QStringLiteral("spec")).toObject().value(QStringLiteral("network")),
            QJsonValue(QStringLiteral("allowlist")));
    }

    void readBackItIsTheSameRequest()
    {
        const QJsonObject json{
            {QStringLiteral("spec"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("w")},
                    {QStringLiteral("network"), QStringLiteral("none")},
                    {QStringLiteral("isolation"), QStringLiteral("gvisor")},
                    {QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/nowhere")},
                            {QStringLiteral("path"), QStringLiteral("/data")}, {QStringLiteral("writable"), true}}}}}},
            {QStringLiteral("policy"), QJsonObject()}, {QStringLiteral("preset"), QStringLiteral("open")}};
        auto request = CreateSandboxRequest::fromJson(json); // a mount source is the daemon's to find
        QVERIFY2(request, qPrintable(request ? QString() : request.error().message));
        QCOMPARE(request->toJson(), json);
    }

    // A copy-on-write mount goes on the wire as "writable": false beside "copyOnWrite": true, so
    // that a daemon from before it (which does not know the field) mounts the folder read-only;
    // one that knows it reads it back as written, and writable.
    void aCopyOnWriteMountIsReadOnlyToADaemonThatDoesNotKnowIt()
    {
        auto mount = parseMountArg(QStringLiteral("/tmp:/project/p:cow"));
        QVERIFY(mount);
        QVERIFY(mount->copyOnWrite && mount->writable);
        CreateSandboxRequest request;
        request.mounts = {*mount};
        const QJsonObject wire = request.toJson()
                                     .value(QStringLiteral("spec"))
                                     .toObject()
                                     .value(QStringLiteral("mounts"))
                                     .toArray()
                                     .first()
                                     .toObject();
        QCOMPARE(wire.value(QStringLiteral("writable")), QJsonValue(false));
        QCOMPARE(wire.value(QStringLiteral("copyOnWrite")), QJsonValue(true));
        auto back = CreateSandboxRequest::fromJson(request.toJson());
        QVERIFY(back);
        QCOMPARE(back->mounts, request.mounts);
        auto bad = CreateSandboxRequest::fromJson(QJsonObject{{QStringLiteral("spec"),
            QJsonObject{{QStringLiteral("mounts"),
                QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/tmp")},
                    {QStringLiteral("path"), QStringLiteral("/p")},
                    {QStringLiteral("copyOnWrite"), QStringLiteral("yes")}}}}}}});
        QVERIFY(!bad);
        QVERIFY2(bad.error().message.contains(QLatin1String("/mounts/0/copyOnWrite: expected a bool")),
            qPrintable(bad.error().message));
        QVERIFY(!parseMountArg(QStringLiteral("/tmp:/p:cw")));
    }

    void aBadFieldIsNamed_data()
    {
        QTest::addColumn<QJsonObject>("json");
        QTest::addColumn<QString>("error");
        QTest::newRow("a spec that is not an object")
            << QJsonObject{{QStringLiteral("spec"), 1}} << QStringLiteral("/spec: expected an object");
        QTest::newRow("a limit out of range") << QJsonObject{{QStringLiteral("spec"),
            QJsonObject{{QStringLiteral("limits"), QJsonObject{{QStringLiteral("pids"), 1}}}}}}
                                              << QStringLiteral("/limits/pids: 1 is out of range: from 2 to 4194304");
        QTest::newRow("an isolation that does not exist")
            << QJsonObject{{QStringLiteral("spec"), QJsonObject{{QStringLiteral("isolation"), QStringLiteral("vm")}}}}
            << QStringLiteral("/isolation: expected \"namespaces\" or \"gvisor\"");
        QTest::newRow("a policy that is not an object")
            << QJsonObject{{QStringLiteral("policy"), QStringLiteral("open")}}
            << QStringLiteral("/policy: expected a policy object");
        QTest::newRow("a preset that is not a name")
            << QJsonObject{{QStringLiteral("preset"), 1}} << QStringLiteral("/preset: expected a string");
    }
    void aBadFieldIsNamed()
    {
        QFETCH(QJsonObject, json);
        QFETCH(QString, error);
        auto request = CreateSandboxRequest::fromJson(json);
        QVERIFY(!request);
        QCOMPARE(request.error().code, ErrorCode::InvalidArgument);
        QCOMPARE(request.error().message, error);
    }
};

QTEST_GUILESS_MAIN(TestCreateRequest)
#include "tst_create_request.moc"
