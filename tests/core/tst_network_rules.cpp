// SPDX-License-Identifier: Apache-2.0
// Network rules, decided before anything is resolved: names and wildcards, ports, deny over allow,
// addresses in every spelling refused unless named, special ranges refused after resolution too.
#include "policy/NetworkRules.h"

#include <QTest>

using namespace airlock::policy;

namespace {
const NetworkRules &rules()
{
    static const NetworkRules r(QStringLiteral("allowlist"),
        {QStringLiteral("pypi.org:443"), QStringLiteral("*.pythonhosted.org"), QStringLiteral("example.com"),
            QStringLiteral("10.1.2.3:8080"), QStringLiteral("[2001:db8::1]"), QStringLiteral("*.ok.example")},
        {QStringLiteral("bad.ok.example"), QStringLiteral("example.com:25")}, Decision::Deny);
    return r;
}

QString decide(const char *host, quint16 port)
{
    const NetworkVerdict v = rules().evaluate(QString::fromUtf8(host), port);
    return decisionName(v.decision) + QLatin1Char(' ') + v.rule;
}
} // namespace

class TestNetworkRules final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void namesWildcardsAndPorts()
    {
        QCOMPARE(decide("pypi.org", 443), QStringLiteral("allow pypi.org:443"));
        QCOMPARE(decide("PyPI.org.", 443), QStringLiteral("allow pypi.org:443")); // case and trailing dot
        QCOMPARE(decide("pypi.org", 80), QStringLiteral("deny default")); // the rule names a port
        QCOMPARE(decide("files.pythonhosted.org", 443), QStringLiteral("allow *.pythonhosted.org"));
        QCOMPARE(decide("a.b.pythonhosted.org", 8443), QStringLiteral("allow *.pythonhosted.org")); // no port: any
        QCOMPARE(decide("pythonhosted.org", 443), QStringLiteral("deny default")); // *.x is not x
        QCOMPARE(decide("evilpythonhosted.org", 443), QStringLiteral("deny default"));
        QCOMPARE(decide("unlisted.example", 443), QStringLiteral("deny default"));
        QCOMPARE(decide("xn--bcher-kva.example", 443), QStringLiteral("deny default"));
        const NetworkVerdict idn = rules().evaluate(QStringLiteral("bücher.example"), 443);
        QCOMPARE(idn.host, QStringLiteral("xn--bcher-kva.example")); // IDNA before matching
    }

    void denyBeatsAllow()
    {
        QCOMPARE(decide("good.ok.example", 443), QStringLiteral("allow *.ok.example"));
        QCOMPARE(decide("bad.ok.example", 443), QStringLiteral("deny bad.ok.example"));
        QCOMPARE(decide("example.com", 443), QStringLiteral("allow example.com"));
        QCOMPARE(decide("example.com", 25), QStringLiteral("deny example.com:25"));
    }

    void addressesInAnySpellingNeedARuleThatNamesThem()
    {
        QCOMPARE(decide("10.1.2.3", 8080), QStringLiteral("allow 10.1.2.3:8080"));
        QCOMPARE(decide("10.1.2.3", 80), QStringLiteral("deny ip literal"));
        QCOMPARE(decide("169.254.169.254", 80), QStringLiteral("deny ip literal"));
        QCOMPARE(decide("127.0.0.1", 80), QStringLiteral("deny ip literal"));
        QCOMPARE(decide("2130706433", 80), QStringLiteral("deny ip literal")); // decimal 127.0.0.1
        QCOMPARE(decide("0x7f.1", 80), QStringLiteral("deny ip literal")); // hex, short
        QCOMPARE(decide("0177.0.0.1", 80), QStringLiteral("deny ip literal")); // octal
        QCOMPARE(decide("[::ffff:169.254.169.254]", 80), QStringLiteral("deny ip literal"));
        QCOMPARE(decide("[::1]", 80), QStringLiteral("deny ip literal"));
        QCOMPARE(decide("[2001:DB8::1]", 443), QStringLiteral("allow [2001:db8::1]"));
        // The canonical address is what is matched and reported.
        QCOMPARE(rules().evaluate(QStringLiteral("0x0a.1.2.3"), 8080).host, QStringLiteral("10.1.2.3"));
        QCOMPARE(decide("0x0a.1.2.3", 8080), QStringLiteral("allow 10.1.2.3:8080"));
        const NetworkVerdict metadata = rules().evaluate(QStringLiteral("[::ffff:a9fe:a9fe]"), 80);
        QCOMPARE(metadata.host, QStringLiteral("169.254.169.254"));
        QVERIFY2(metadata.reason.contains(QStringLiteral("in a refused range")), qPrintable(metadata.reason));
    }

    void specialRangesAreRefusedAfterResolutionToo()
    {
        for (const char *special : {"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
                 "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12::1",
                 "::ffff:10.0.0.1", "ff02::1",
                 // IPv4 inside IPv6 in the other spellings: compatible, SIIT, Teredo; site-local; discard
                 "::7f00:1", "::ffff:0:a00:1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "fec0::1", "100::1"})
            QVERIFY2(NetworkRules::isSpecialAddress(QHostAddress(QString::fromLatin1(special))), special);
        for (const char *ordinary : {"151.101.0.223", "8.8.8.8", "2a04:4e42::223", "172.32.0.1", "100.128.0.1"})
            QVERIFY2(!NetworkRules::isSpecialAddress(QHostAddress(QString::fromLatin1(ordinary))), ordinary);
        // An allowed name that resolves into the LAN is refused (no DNS rebinding) ...
        const NetworkVerdict allowed = rules().evaluate(QStringLiteral("example.com"), 443);
        QCOMPARE(allowed.decision, Decision::Allow);
        const NetworkVerdict rebound
            = rules().checkResolved(allowed, QHostAddress(QStringLiteral("192.168.0.10")), 443);
        QCOMPARE(rebound.decision, Decision::Deny);
        QCOMPARE(rebound.rule, QStringLiteral("refused range"));
        QCOMPARE(rules().checkResolved(allowed, QHostAddress(QStringLiteral("::ffff:127.0.0.1")), 443).decision,
            Decision::Deny);
        QCOMPARE(rules().checkResolved(allowed, QHostAddress(QStringLiteral("93.184.216.34")), 443).decision,
            Decision::Allow);
        // A deny rule that names an address holds for the names that resolve to it.
        const NetworkRules denyAddress(QStringLiteral("allowlist"), {QStringLiteral("cdn.example")},
            {QStringLiteral("203.0.113.0")}, Decision::Deny);
        const NetworkVerdict cdn = denyAddress.checkResolved(
            denyAddress.evaluate(QStringLiteral("cdn.example"), 443), QHostAddress(QStringLiteral("203.0.113.0")), 443);
        QCOMPARE(cdn.decision, Decision::Deny);
        QCOMPARE(cdn.rule, QStringLiteral("203.0.113.0"));
        // ... unless a rule names that address.
        QCOMPARE(rules()
                     .checkResolved(rules().evaluate(QStringLiteral("example.com"), 8080),
                         QHostAddress(QStringLiteral("10.1.2.3")), 8080)
                     .decision,
            Decision::Allow);
    }

    // DNS carries the name it is asked: one a sandbox makes up under a wildcard ("<data>.zone")
    // reaches whoever serves the zone. Only a name a rule lists exactly, or one under a wildcard
    // the policy lists in resolveWildcards, may be looked up.
    void whatMayBeLookedUp_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("rule");
        QTest::addColumn<bool>("wildcard");
        QTest::addColumn<QString>("lookupRule");
        QTest::newRow("a name under a wildcard is not looked up")
            << QStringLiteral("6578666c.zone.example") << 443 << QStringLiteral("*.zone.example:443") << true
            << QString();
        QTest::newRow("a name a rule lists exactly beats the wildcard listed before it") << QStringLiteral(
            "exact.zone.example") << 443 << QStringLiteral("exact.zone.example") << false << QString();
        QTest::newRow("a wildcard the policy lets resolve")
            << QStringLiteral("a.cdn.example") << 443 << QStringLiteral("*.cdn.example") << true
            << QStringLiteral("*.cdn.example:443");
        QTest::newRow("on another port than resolveWildcards names")
            << QStringLiteral("a.cdn.example") << 80 << QStringLiteral("*.cdn.example") << true << QString();
        QTest::newRow("resolveWildcards alone allows nothing")
            << QStringLiteral("a.other.example") << 443 << QStringLiteral("default") << false << QString();
    }
    void whatMayBeLookedUp()
    {
        QFETCH(QString, host);
        QFETCH(int, port);
        QFETCH(QString, rule);
        QFETCH(bool, wildcard);
        QFETCH(QString, lookupRule);
        const NetworkRules r(QStringLiteral("allowlist"),
            {QStringLiteral("*.zone.example:443"), QStringLiteral("exact.zone.example"),
                QStringLiteral("*.cdn.example")},
            {}, Decision::Deny, {QStringLiteral("*.cdn.example:443"), QStringLiteral("*.other.example")});
        const NetworkVerdict v = r.evaluate(host, quint16(port));
        QCOMPARE(v.rule, rule);
        QCOMPARE(v.decision, rule == QLatin1String("default") ? Decision::Deny : Decision::Allow);
        QCOMPARE(v.wildcard, wildcard);
        QCOMPARE(v.lookupRule, lookupRule);
        QCOMPARE(v.toJson().value(QStringLiteral("wildcard")).toBool(), wildcard);
    }

    void modesAndTheUnknown()
    {
        const NetworkRules none(QStringLiteral("none"), {QStringLiteral("pypi.org")}, {}, Decision::Ask);
        QCOMPARE(none.evaluate(QStringLiteral("pypi.org"), 443).decision, Decision::Deny);
        const NetworkRules full(QStringLiteral("full"), {}, {}, Decision::Deny);
        QCOMPARE(full.evaluate(QStringLiteral("anything.example"), 443).decision, Decision::Allow);
        const NetworkRules ask(QStringLiteral("allowlist"), {}, {}, Decision::Ask);
        QCOMPARE(ask.evaluate(QStringLiteral("new.example"), 443).decision, Decision::Ask);
        QCOMPARE(ask.evaluate(QStringLiteral("10.0.0.1"), 443).decision, Decision::Deny); // addresses never ask
        QCOMPARE(ask.evaluate(QStringLiteral("not a host"), 443).decision, Decision::Deny);
        QCOMPARE(ask.evaluate(QStringLiteral("*.example"), 443).decision, Decision::Deny);
    }
};

QTEST_GUILESS_MAIN(TestNetworkRules)
#include "tst_network_rules.moc"
