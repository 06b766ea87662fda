// SPDX-License-Identifier: Apache-2.0
// The daemon's method table, its names and its document agree: every method of rpc/Methods.h is
// declared once (with who may call it) and has its heading in resources/docs/protocol.md, and
// nothing is declared or documented that is not a method.
#include "approval/ApprovalBroker.h"
#include "engine/Engine.h"
#include "rpc/RpcServer.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::rpc;

namespace {
QSet<QString> matches(const QString &path, const QString &pattern)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    QSet<QString> found;
    const QString text = QString::fromUtf8(f.readAll());
    QRegularExpressionMatchIterator it = QRegularExpression(pattern).globalMatch(text);
    while (it.hasNext())
        found.insert(it.next().captured(1));
    return found;
}

QString listed(QSet<QString> names)
{
    QStringList sorted(names.begin(), names.end());
    sorted.sort();
    return sorted.join(QStringLiteral(", "));
}
} // namespace

class TestMethodTable final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        EngineConfig config;
        config.dataDir = m_dir.path();
        m_approvals = std::make_unique<ApprovalBroker>(1000);
        m_engine = std::make_unique<Engine>(config, HostCapabilities{}, *m_approvals);
        m_server = std::make_unique<RpcServer>(*m_engine, nullptr, *m_approvals);
        for (const Method &m : m_server->methods())
            m_declared.insert(m.name);
    }

    void cleanupTestCase()
    {
        m_server.reset();
        m_engine.reset();
    }

    void everyNameIsDeclaredAndEveryDeclarationNamed()
    {
        // Methods.h's method names (its notifications are sent, not answered).
        QSet<QString> names = matches(QStringLiteral(AIRLOCK_SOURCE_DIR "/core/rpc/Methods.h"),
            QStringLiteral("inline constexpr Name \\w+\\{\"([a-z.]+)\"\\}"));
        for (const char *notification : {"event", "progress", "fs.transfer"})
            QVERIFY2(names.remove(QLatin1String(notification)), notification);
        QCOMPARE(names.size(), 44);
        QVERIFY2(names == m_declared,
            qPrintable(QStringLiteral("named, not declared: %1; declared, not named: %2")
                           .arg(listed(names - m_declared), listed(m_declared - names))));
    }

    void everyDeclaredMethodIsDocumented()
    {
        const QSet<QString> documented = matches(
            QStringLiteral(AIRLOCK_SOURCE_DIR "/resources/docs/protocol.md"), QStringLiteral("\n### `([^`]+)`"));
        QVERIFY2(documented == m_declared,
            qPrintable(QStringLiteral("declared, not documented: %1; documented, not declared: %2")
                           .arg(listed(m_declared - documented), listed(documented - m_declared))));
    }

    void everyGrantIsComplete()
    {
        for (const Method &m : m_server->methods()) {
            const Access &a = m.access;
            const QByteArray name = QString(m.name).toUtf8();
            QVERIFY2(m.handler, name);
            // A refusal says why; only refusals carry a text.
            QCOMPARE(a.agent == Access::Agent::Refused, a.refusal != nullptr);
            if (a.refusal)
                QVERIFY2(QByteArray(a.refusal).startsWith("an agent connection "), name);
            // A listing filtered for scoped tokens names its array and the id in each element.
            QCOMPARE(a.listed != nullptr, a.listedId != nullptr);
            if (a.listed)
                QVERIFY2(a.token == Access::Token::Open, name);
            // What a scoped token acts on is named where the method reads it.
            if (a.scope == Access::Scope::Param && m.needs & NeedsSandbox)
                QVERIFY2(a.token != Access::Token::Open, name);
            // Methods that change something are not for read-only tokens (a spot check of the
            // declarations, by name: a new ".set" or ".delete" marked Read fails here).
            for (const char *verb : {".set", ".delete", ".remove", ".start", ".prune", ".decide", ".call", ".write"})
                if (name.contains(verb))
                    QVERIFY2(a.token == Access::Token::Full, name);
            // Agents never manage secrets, policies, approvals or the history's pruning.
            if (name.startsWith("secrets.") || name == "policy.set" || name == "policy.defaults.set"
                || name == "approvals.decide" || name == "history.prune")
                QVERIFY2(a.agent == Access::Agent::Refused, name);
        }
    }

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ApprovalBroker> m_approvals;
    std::unique_ptr<Engine> m_engine;
    std::unique_ptr<RpcServer> m_server;
    QSet<QString> m_declared;
};

QTEST_GUILESS_MAIN(TestMethodTable)
#include "tst_method_table.moc"
