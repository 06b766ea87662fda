// SPDX-License-Identifier: Apache-2.0
// A sandbox's own certificate authority for its brokered hosts, checked by the real `openssl`
// tool as a TLS client in the sandbox would check it: a leaf verifies for its host only, the
// authority signs for nothing outside its hosts (its name constraints hold even for a certificate
// made with its key on purpose), and one sandbox's authority is worth nothing in another.
#include "net/SandboxCa.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::net;

namespace {
struct Run {
    int exitCode = -1;
    QString output; // stdout and stderr
};

class TestSandboxCa : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString write(const QString &name, const QByteArray &pem)
    {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(pem) != pem.size())
            qFatal("cannot write %s", qPrintable(path));
        return path;
    }
    static Run openssl(const QStringList &args)
    {
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(QStringLiteral("openssl"), args);
        if (!p.waitForFinished(20000))
            qFatal("openssl %s did not finish", qPrintable(args.join(QLatin1Char(' '))));
        return {p.exitCode(), QString::fromUtf8(p.readAll())};
    }
    // `openssl verify` of a leaf against one authority, as a TLS client checking `host` would.
    Run verify(const QByteArray &authority, const QByteArray &leaf, const QString &host)
    {
        return openssl({QStringLiteral("verify"), QStringLiteral("-CAfile"), write(QStringLiteral("ca.pem"), authority),
            QStringLiteral("-purpose"), QStringLiteral("sslserver"), QStringLiteral("-verify_hostname"), host,
            write(QStringLiteral("leaf.pem"), leaf)});
    }
    static SandboxCa made(const QString &id, const QStringList &hosts)
    {
        auto ca = SandboxCa::make(id, hosts);
        if (!ca)
            qFatal("%s", qPrintable(ca.error().message));
        return std::move(*ca);
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void theAuthoritySaysWhatItMaySign()
    {
        const SandboxCa ca = made(
            QStringLiteral("sb-1"), {QStringLiteral("API.Example.test."), QStringLiteral("models.example.test")});
        QCOMPARE(ca.hosts(), QStringList({QStringLiteral("api.example.test"), QStringLiteral("models.example.test")}));
        const Run text = openssl({QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-text"),
            QStringLiteral("-in"), write(QStringLiteral("ca.pem"), ca.certificatePem())});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.output.contains(QStringLiteral("Subject: CN = Airlock sandbox sb-1")), qPrintable(text.output));
        QVERIFY(text.output.contains(
            QStringLiteral("X509v3 Basic Constraints: critical\n                CA:TRUE, pathlen:0")));
        QVERIFY(text.output.contains(
            QStringLiteral("X509v3 Key Usage: critical\n                Certificate Sign, CRL Sign")));
        QVERIFY(text.output.contains(QStringLiteral("X509v3 Name Constraints: critical\n                Permitted:\n"
                                                    "                  DNS:api.example.test\n"
                                                    "                  DNS:models.example.test")));
        QVERIFY(text.output.contains(QStringLiteral("ASN1 OID: prime256v1")));
        // The authority's key is not in what the sandbox is given.
        QVERIFY(!ca.certificatePem().contains("PRIVATE KEY"));
        QVERIFY(ca.authority().key.contains("-----BEGIN PRIVATE KEY-----"));
    }

    void aLeafVerifiesForItsHostOnly()
    {
        SandboxCa ca = made(QStringLiteral("sb-1"), {QStringLiteral("api.example.test")});
        const auto leaf = ca.leafFor(QStringLiteral("API.example.test"));
        QVERIFY2(leaf, qPrintable(leaf ? QString() : leaf.error().message));
        const Run ok = verify(ca.certificatePem(), leaf->certificate, QStringLiteral("api.example.test"));
        QVERIFY2(ok.exitCode == 0 && ok.output.contains(QStringLiteral("leaf.pem: OK")), qPrintable(ok.output));
        const Run other = verify(ca.certificatePem(), leaf->certificate, QStringLiteral("models.example.test"));
        QVERIFY2(other.exitCode != 0 && other.output.contains(QStringLiteral("hostname mismatch")),
            qPrintable(other.output));
        // A server's certificate, not an authority; thirty days (issued again with a day left).
        const QString leafPath = write(QStringLiteral("leaf.pem"), leaf->certificate);
        const Run text = openssl({QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-text"),
            QStringLiteral("-in"), leafPath});
        QVERIFY(text.output.contains(QStringLiteral("CA:FALSE")));
        QVERIFY(text.output.contains(QStringLiteral("TLS Web Server Authentication")));
        QVERIFY(text.output.contains(QStringLiteral("DNS:api.example.test")));
        QCOMPARE(openssl({QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-checkend"),
                             QString::number(29 * 86400), QStringLiteral("-in"), leafPath})
                     .exitCode,
            0);
        QCOMPARE(openssl({QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-checkend"),
                             QString::number(31 * 86400), QStringLiteral("-in"), leafPath})
                     .exitCode,
            1);
        // The same leaf next time, with a key of its own (not the authority's).
        const auto again = ca.leafFor(QStringLiteral("api.example.test"));
        QVERIFY(again);
        QCOMPARE(again->certificate, leaf->certificate);
        QVERIFY(leaf->key != ca.authority().key);
    }

    // What leafFor refuses, the authority's name constraints refuse too: a certificate made with its
    // key for another name (a bug, or a key that got out) does not verify in the sandbox.
    void theAuthoritySignsForNothingElse_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("verifies");
        QTest::newRow("another host") << "evil.test" << false;
        QTest::newRow("its host as a prefix of another") << "api.example.test.evil.test" << false;
        QTest::newRow("a sibling") << "www.example.test" << false;
        QTest::newRow("its parent") << "example.test" << false;
        QTest::newRow("a subdomain (RFC 5280: constraints cover them)") << "eu.api.example.test" << true;
    }
    void theAuthoritySignsForNothingElse()
    {
        QFETCH(QString, name);
        QFETCH(bool, verifies);
        SandboxCa ca = made(QStringLiteral("sb-1"), {QStringLiteral("api.example.test")});
        QVERIFY(!ca.leafFor(name));
        x509::CertificateSpec spec;
        spec.commonName = name;
        spec.validSeconds = 86400;
        spec.dnsNames = {name};
        const auto rogue = x509::issue(spec, &ca.authority());
        QVERIFY(rogue);
        const Run run = verify(ca.certificatePem(), rogue->certificate, name);
        if (verifies) {
            QVERIFY2(run.exitCode == 0, qPrintable(run.output));
        } else {
            QVERIFY2(run.exitCode != 0 && run.output.contains(QStringLiteral("permitted subtree violation")),
                qPrintable(run.output));
        }
    }

    // No address either: a name type with no constraint would be unconstrained (RFC 5280). A leaf
    // for addresses, made with the authority's key by the openssl tool, does not verify.
    void theAuthoritySignsForNoAddress()
    {
        SandboxCa ca = made(QStringLiteral("sb-1"), {QStringLiteral("api.example.test")});
        const QString caPath = write(QStringLiteral("ca.pem"), ca.certificatePem()),
                      caKey = write(QStringLiteral("ca-key.pem"), ca.authority().key),
                      leafPath = m_dir.filePath(QStringLiteral("ip-leaf.pem"));
        const Run made = openssl({QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"),
            QStringLiteral("ec"), QStringLiteral("-pkeyopt"), QStringLiteral("ec_paramgen_curve:P-256"),
            QStringLiteral("-nodes"), QStringLiteral("-keyout"), m_dir.filePath(QStringLiteral("ip-key.pem")),
            QStringLiteral("-subj"), QStringLiteral("/CN=10.0.0.1"), QStringLiteral("-addext"),
            QStringLiteral("subjectAltName=IP:10.0.0.1,IP:::1"), QStringLiteral("-CA"), caPath,
            QStringLiteral("-CAkey"), caKey, QStringLiteral("-days"), QStringLiteral("1"), QStringLiteral("-out"),
            leafPath});
        QVERIFY2(made.exitCode == 0, qPrintable(made.output));
        for (const QString &ip : {QStringLiteral("10.0.0.1"), QStringLiteral("::1")}) {
            const Run run = openssl({QStringLiteral("verify"), QStringLiteral("-CAfile"), caPath,
                QStringLiteral("-purpose"), QStringLiteral("sslserver"), QStringLiteral("-verify_ip"), ip, leafPath});
            QVERIFY2(run.exitCode != 0 && run.output.contains(QStringLiteral("excluded subtree violation")),
                qPrintable(run.output));
        }
    }

    void oneSandboxsAuthorityIsWorthNothingInAnother()
    {
        SandboxCa a = made(QStringLiteral("sb-a"), {QStringLiteral("api.example.test")});
        const SandboxCa b = made(QStringLiteral("sb-b"), {QStringLiteral("api.example.test")});
        QVERIFY(a.certificatePem() != b.certificatePem());
        const auto leaf = a.leafFor(QStringLiteral("api.example.test"));
        QVERIFY(leaf);
        const Run run = verify(b.certificatePem(), leaf->certificate, QStringLiteral("api.example.test"));
        QVERIFY2(run.exitCode != 0 && run.output.contains(QStringLiteral("unable to get local issuer certificate")),
            qPrintable(run.output));
    }

    void leavesForOtherHostsAreRefused()
    {
        SandboxCa ca
            = made(QStringLiteral("sb-1"), {QStringLiteral("api.example.test"), QStringLiteral("b.example.test")});
        const auto refused = ca.leafFor(QStringLiteral("evil.test"));
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::InvalidArgument);
        QCOMPARE(refused.error().message,
            QStringLiteral("evil.test is not among this sandbox's brokered hosts (api.example.test, b.example.test)"));
    }

    void hostsThatCannotBeBrokeredAreRefused_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("why");
        QTest::newRow("an address") << "10.0.0.1"
                                    << "an address, not a name";
        QTest::newRow("an address in another spelling") << "2130706433"
                                                        << "an address, not a name";
        QTest::newRow("IPv6") << "::1"
                              << "an address, not a name";
        QTest::newRow("an address with a trailing dot") << "127.1."
                                                        << "an address, not a name";
        QTest::newRow("an address in hex") << "0x7f.1"
                                           << "an address, not a name";
        QTest::newRow("an address after a blank") << " 10.0.0.1"
                                                  << "an address, not a name";
        QTest::newRow("the broadcast address as a number") << "4294967295."
                                                           << "an address, not a name";
        QTest::newRow("a name ending in a number") << "1.2.3.4.5"
                                                   << "an address, not a name";
        QTest::newRow("an octet too large") << "256.1.1.1"
                                            << "an address, not a name";
        QTest::newRow("a wildcard") << "*.example.com"
                                    << "a wildcard";
        QTest::newRow("a port") << "api.example.com:8443"
                                << "a port";
        QTest::newRow("one label") << "localhost"
                                   << "a name of one label";
        QTest::newRow("nothing") << ""
                                 << "is not a host a credential can be brokered for";
        QTest::newRow("not a name") << "api example.com"
                                    << "is not a host a credential can be brokered for";
        QTest::newRow("a constraint list's separator") << "a.test,DNS:evil.test"
                                                       << "is not a host a credential";
    }
    void hostsThatCannotBeBrokeredAreRefused()
    {
        QFETCH(QString, host);
        QFETCH(QString, why);
        const auto ca = SandboxCa::make(QStringLiteral("sb-1"), {QStringLiteral("api.example.test"), host});
        QVERIFY(!ca);
        QCOMPARE(ca.error().code, ErrorCode::InvalidArgument);
        QVERIFY2(ca.error().message.contains(why), qPrintable(ca.error().message));
        QVERIFY(!SandboxCa::make(QStringLiteral("sb-1"), {}));
    }
};
} // namespace

QTEST_GUILESS_MAIN(TestSandboxCa)
#include "tst_sandbox_ca.moc"
