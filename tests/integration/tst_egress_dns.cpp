// SPDX-License-Identifier: Apache-2.0
// What the egress proxy looks up in DNS, end to end: a daemon whose only resolver is a stub DNS
// server on a loopback address of the test's own, which records every name it is asked. A process
// in the sandbox that makes up `<data>.zone` under an allowed wildcard gets no lookup (DNS would
// carry the data to whoever serves the zone) unless the policy lists the wildcard in
// resolveWildcards; then each lookup is an event, and a flood of new names is refused.
#include "LoopbackServer.h"
#include "StubDns.h"
#include "TestHelpers.h"

#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestEgressDns final : public QObject {
    Q_OBJECT
    std::unique_ptr<LoopbackServer> m_web;
    std::unique_ptr<StubDns> m_dns;
    std::unique_ptr<TestDaemon> m_daemon;

    // The stub answers every name with 127.0.0.1, which the proxy refuses unless a rule names the
    // address: the web server's port is named, so an allowed lookup ends at the web server.
    QByteArray policy(const char *resolveWildcards = nullptr) const
    {
        return QStringLiteral(
            R"({"network": {"mode": "allowlist", "allow": ["*.zone.test", "exact.zone.test", "127.0.0.1:%1"]%2}})")
            .arg(m_web->port())
            .arg(resolveWildcards ? QStringLiteral(", \"resolveWildcards\": %1").arg(QLatin1String(resolveWildcards))
                                  : QString())
            .toUtf8();
    }
    void setPolicy(const QByteArray &document) const
    {
        const CliResult r = m_daemon->ctl(args("policy", "set", "dns", "-"), document);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
    }
    // CONNECT HOST:PORT from bash in the sandbox: the proxy's status line, or its whole refusal.
    CliResult connectTo(const QString &host) const
    {
        return execIn(*m_daemon, QStringLiteral("dns"),
            args("bash", "-c",
                QStringLiteral("exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT %1:%2 HTTP/1.1\\r\\n\\r\\n' >&3; read "
                               "-r status <&3; "
                               "case $status in *' 200 '*) echo \"$status\";; *) echo \"$status\"; cat <&3;; esac")
                    .arg(host)
                    .arg(m_web->port())));
    }
    QList<QJsonObject> events(const QString &kind) const { return storedEvents(*m_daemon, kind); }
    static QJsonObject about(const QList<QJsonObject> &events, const QString &host)
    {
        for (const QJsonObject &e : events)
            if (e.value(QStringLiteral("host")).toString() == host)
                return e;
        return {};
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_web = std::make_unique<LoopbackServer>("web");
        m_dns = std::make_unique<StubDns>(QHostAddress(QHostAddress::LocalHost));
        QVERIFY2(m_dns->start(), "cannot bind the stub DNS server (needs root)");
        m_daemon = std::make_unique<TestDaemon>();
        m_daemon->setLauncher(m_dns->launcher());
        QVERIFY(m_daemon->start());
        const CliResult created = m_daemon->ctl(args("create", "--name", "dns", "--policy", "-"), policy());
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void aNameARuleListsIsLookedUp()
    {
        const CliResult r = connectTo(QStringLiteral("exact.zone.test"));
        QCOMPARE(r.out, QByteArray("HTTP/1.1 200 Connection established\r\n"));
        QVERIFY(m_dns->asked().contains(QStringLiteral("exact.zone.test")));
        // Fully qualified: the host's search domain is never tried (it would look up a name under
        // the host's zone, and with ndots:5 connect to that name's address).
        QVERIFY2(!m_dns->asked().join(QLatin1Char(' ')).contains(QLatin1String("corp.internal")),
            qPrintable(m_dns->asked().join(QLatin1Char(' '))));
        QVERIFY(about(events(QStringLiteral("network.lookup")), QStringLiteral("exact.zone.test"))
                    .isEmpty()); // nothing to record
        QCOMPARE(about(events(QStringLiteral("network.opened")), QStringLiteral("exact.zone.test"))
                     .value(QStringLiteral("resolvedBy"))
                     .toString(),
            QStringLiteral("dns"));
    }

    void aNameMadeUpUnderAWildcardIsNotLookedUp()
    {
        const QString made = QStringLiteral("73656372657420646174612c2070617274203120.zone.test");
        const CliResult r = connectTo(made);
        QVERIFY2(r.out.startsWith("HTTP/1.1 403 Forbidden\r\n"), qPrintable(r.describe()));
        QVERIFY2(r.out.contains(QStringLiteral("%1 matches only wildcard rule '*.zone.test'").arg(made).toUtf8()),
            qPrintable(r.describe()));
        QVERIFY2(r.out.contains("network.resolveWildcards"), qPrintable(r.describe()));
        QVERIFY2(!m_dns->asked().contains(made), qPrintable(m_dns->asked().join(QLatin1Char(' '))));
        const QJsonObject denied = about(events(QStringLiteral("network.denied")), made);
        QCOMPARE(denied.value(QStringLiteral("rule")).toString(), QStringLiteral("*.zone.test"));
        QVERIFY(about(events(QStringLiteral("network.lookup")), made).isEmpty());
    }

    void withTheOptInEachLookupIsRecorded()
    {
        setPolicy(policy(R"(["*.zone.test"])"));
        const CliResult r = connectTo(QStringLiteral("n1.zone.test"));
        QCOMPARE(r.out, QByteArray("HTTP/1.1 200 Connection established\r\n"));
        QVERIFY(m_dns->asked().contains(QStringLiteral("n1.zone.test")));
        const QJsonObject lookup = about(events(QStringLiteral("network.lookup")), QStringLiteral("n1.zone.test"));
        QCOMPARE(lookup.value(QStringLiteral("rule")).toString(), QStringLiteral("*.zone.test"));
        QCOMPARE(lookup.value(QStringLiteral("lookupRule")).toString(), QStringLiteral("*.zone.test"));
        QCOMPARE(lookup.value(QStringLiteral("port")).toInt(), int(m_web->port()));
        QCOMPARE(lookup.value(QStringLiteral("namesThisMinute")).toInt(), 1);
        QCOMPARE(lookup.value(QStringLiteral("limit")).toInt(), 20);
        // The connection it was for says so too, by the same number.
        const QJsonObject opened = about(events(QStringLiteral("network.opened")), QStringLiteral("n1.zone.test"));
        QCOMPARE(opened.value(QStringLiteral("connection")), lookup.value(QStringLiteral("connection")));
    }

    void aFloodOfNewNamesIsRefused()
    {
        // n1 was the first; n2..n20 make twenty new names this minute, n21 is one too many.
        const CliResult r = execIn(*m_daemon, QStringLiteral("dns"),
            args("bash", "-c",
                QStringLiteral("for i in $(seq 2 21); do exec 3<>/dev/tcp/127.0.0.1/3128; "
                               "printf 'CONNECT n%s.zone.test:%1 HTTP/1.1\\r\\n\\r\\n' $i >&3; read -r status <&3; "
                               "echo \"n$i $status\"; exec 3<&-; done")
                    .arg(m_web->port())));
        const QList<QByteArray> lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 20);
        for (int i = 0; i < 19; ++i)
            QCOMPARE(
                lines.at(i).trimmed(), QStringLiteral("n%1 HTTP/1.1 200 Connection established").arg(i + 2).toUtf8());
        QCOMPARE(lines.at(19).trimmed(), QByteArray("n21 HTTP/1.1 403 Forbidden"));
        QVERIFY(m_dns->asked().contains(QStringLiteral("n20.zone.test")));
        QVERIFY(!m_dns->asked().contains(QStringLiteral("n21.zone.test")));
        const QJsonObject denied = about(events(QStringLiteral("network.denied")), QStringLiteral("n21.zone.test"));
        QCOMPARE(denied.value(QStringLiteral("rule")).toString(), QStringLiteral("*.zone.test"));
        QVERIFY2(denied.value(QStringLiteral("reason"))
                     .toString()
                     .contains(QLatin1String("more than 20 new names under wildcard rules looked up in a minute")),
            qPrintable(denied.value(QStringLiteral("reason")).toString()));
        QCOMPARE(about(events(QStringLiteral("network.lookup")), QStringLiteral("n20.zone.test"))
                     .value(QStringLiteral("namesThisMinute"))
                     .toInt(),
            20);
        // A name looked up already this minute is no new one; a name a rule lists is never counted.
        QCOMPARE(connectTo(QStringLiteral("n7.zone.test")).out, QByteArray("HTTP/1.1 200 Connection established\r\n"));
        QCOMPARE(
            connectTo(QStringLiteral("exact.zone.test")).out, QByteArray("HTTP/1.1 200 Connection established\r\n"));
    }
};

QTEST_GUILESS_MAIN(TestEgressDns)
#include "tst_egress_dns.moc"
