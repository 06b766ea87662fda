// SPDX-License-Identifier: Apache-2.0
// The credential broker, end to end (issue 24, decision 8): a sandbox whose policy brokers a
// secret for a host holds only a placeholder; real curl inside talks HTTPS to that host through
// the egress proxy, which serves TLS as the host with the sandbox's own authority, puts the real
// secret in the one header the policy names, and talks to the host (a real Node HTTPS server on a
// loopback address, behind a test authority given with airlockd --upstream-ca) with its
// certificate verified. Written as the code in the sandbox would attack it: the secret is looked
// for everywhere the sandbox can read, the host is made to echo it, and the broker is pointed at a
// host whose certificate does not verify.
#include "StubHttps.h"
#include "TestHelpers.h"

#include <QDirIterator>
#include <QJsonArray>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

namespace {
const QByteArray kPlaceholder = "airlock-brokered-MODEL_KEY";
} // namespace

class TestBroker final : public QObject {
    Q_OBJECT
    StubHttps m_stub;
    QByteArray m_secret; // made up for the run
    std::unique_ptr<TestDaemon> m_daemon;

    CliResult sh(const QString &script, int timeoutMs = 30000) const
    {
        return execIn(*m_daemon, QStringLiteral("agent"), args("bash", "-c", script), {}, timeoutMs);
    }
    static QString header(const QJsonObject &request, const QString &name) { return StubHttps::header(request, name); }
    QList<QJsonObject> eventsOf(
        const QString &kind, const std::function<bool(const QJsonObject &)> &which, qsizetype atLeast = 1) const
    {
        QList<QJsonObject> found;
        waitFor(
            [&] {
                found.clear();
                for (const QJsonObject &e : storedEvents(*m_daemon, kind))
                    if (which(e))
                        found.append(e);
                return found.size() >= atLeast;
            },
            5000);
        return found;
    }
private Q_SLOTS:
    void initTestCase()
    {
        // A certificate for api.broker.test only: wrong.broker.test reaches the same host.
        QVERIFY2(m_stub.start({QStringLiteral("api.broker.test")}), qPrintable(m_stub.error()));
        m_secret = "sk-test-" + QByteArray::number(QRandomGenerator::global()->generate64(), 16)
            + QByteArray::number(QRandomGenerator::global()->generate64(), 16);
        m_daemon = std::make_unique<TestDaemon>(
            args("--secret-store", "file", "--resolve", QStringLiteral("api.broker.test=") + m_stub.address(),
                "--resolve", QStringLiteral("wrong.broker.test=") + m_stub.address(), "--resolve",
                QStringLiteral("late.broker.test=") + m_stub.address(), "--upstream-ca", m_stub.authorityPath()));
        m_daemon->setSandboxesOutlive(true); // aTakenOverSandboxBrokersStill
        QVERIFY(m_daemon->start());
        const CliResult set = m_daemon->ctl(args("secret", "set", "MODEL_KEY"), m_secret + '\n');
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        const CliResult created = m_daemon->ctl(args("create", "--name", "agent", "--policy", "-"),
            R"({"network": {"mode": "allowlist", "allow": ["api.broker.test", "wrong.broker.test"]},
                "credentials": {"grants": [
                  {"secret": "MODEL_KEY", "env": "MODEL_KEY", "broker": {"host": "api.broker.test", "header": "x-api-key"}},
                  {"secret": "MODEL_KEY", "env": "WRONG_KEY", "broker": {"host": "wrong.broker.test", "header": "x-api-key"}}]}})");
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // The request reaches the host with the real secret in its header; the sandbox's variable is
    // the placeholder; the request is an event that says the secret was put in.
    void theHostGetsTheSecretAndTheSandboxAPlaceholder()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r = sh(QStringLiteral(
            "printenv MODEL_KEY; curl -sS -m 10 https://api.broker.test/v1/messages -H \"x-api-key: $MODEL_KEY\" "
            "-d '{\"q\":1}'"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, kPlaceholder + "\nok POST /v1/messages\n");
        const QJsonObject got = m_stub.next(before);
        QVERIFY(!got.isEmpty());
        QCOMPARE(header(got, QStringLiteral("x-api-key")).toLatin1(), m_secret);
        QCOMPARE(got.value(QStringLiteral("bodyBytes")).toInt(), 7);
        QCOMPARE(header(got, QStringLiteral("accept-encoding")), QStringLiteral("identity"));
        const auto requests = eventsOf(QStringLiteral("network.request"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("target")).toString() == QLatin1String("/v1/messages");
        });
        QCOMPARE(requests.size(), 1);
        QCOMPARE(requests[0].value(QStringLiteral("status")).toInt(), 200);
        QVERIFY(requests[0].value(QStringLiteral("credential")).toBool());
        QCOMPARE(requests[0].value(QStringLiteral("secret")).toString(), QStringLiteral("MODEL_KEY"));
        const auto opened = eventsOf(QStringLiteral("network.opened"),
            [](const QJsonObject &e) { return e.value(QStringLiteral("brokered")).toBool(); });
        QVERIFY(!opened.isEmpty());
        QCOMPARE(opened[0].value(QStringLiteral("host")).toString(), QStringLiteral("api.broker.test"));
    }

    // What the sandbox trusts for the host is its own authority, and only for the brokered names.
    void theSandboxTrustsItsOwnAuthority()
    {
        const CliResult r = sh(QStringLiteral(
            "echo $SSL_CERT_FILE $CURL_CA_BUNDLE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS; "
            "curl -sS -m 10 -o /dev/null -w '%{certs}' https://api.broker.test/ | grep -m2 -E '^(Issuer|Subject):'"
            "; openssl x509 -in /.airlock/trust/authority.pem -noout -ext nameConstraints | tail -n +2"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QByteArray> lines = r.out.split('\n');
        QCOMPARE(lines.value(0),
            "/.airlock/trust/bundle.pem /.airlock/trust/bundle.pem /.airlock/trust/bundle.pem "
            "/.airlock/trust/authority.pem");
        QVERIFY2(r.out.contains("Subject:CN = api.broker.test") || r.out.contains("Subject:CN=api.broker.test"),
            r.out.constData());
        QVERIFY2(r.out.contains("Airlock"), r.out.constData()); // issued by the sandbox's authority
        QVERIFY2(r.out.contains("DNS:api.broker.test") && r.out.contains("DNS:wrong.broker.test"), r.out.constData());
    }

    // Nothing the sandbox can read holds the secret: not its environment, nor any process's, nor a
    // file outside /usr (the host's programs), /proc, /sys and /dev. The needle is a part of the
    // secret: searching for all of it would put it in the sandbox.
    void nothingInsideHoldsTheSecret()
    {
        const QByteArray needle = m_secret.mid(8, 12);
        const CliResult r
            = sh(QStringLiteral("env | grep -c %1; cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c %1;"
                                "grep -rlsF %1 / --exclude-dir=usr --exclude-dir=proc --exclude-dir=sys "
                                "--exclude-dir=dev | head; echo done")
                     .arg(QString::fromLatin1(needle)));
        QCOMPARE(r.out, QByteArray("0\n0\ndone\n"));
        const CliResult environ
            = sh(QStringLiteral("cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c '^MODEL_KEY=%1$'")
                     .arg(QString::fromLatin1(kPlaceholder)));
        QVERIFY2(environ.out.toInt() >= 1, qPrintable(environ.describe()));
    }

    // A host that echoes the secret back (an error message quoting the key): the sandbox gets it
    // masked, at the same length, and the event counts it.
    void anAnswerThatEchoesTheSecretIsMasked()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r = sh(QStringLiteral(
            "curl -sS -m 10 https://api.broker.test/echo-headers -H \"x-api-key: $MODEL_KEY\" -o /tmp/echo; "
            "wc -c < /tmp/echo; grep -o '\"x-api-key\",\"[^\"]*\"' /tmp/echo"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(!r.out.contains(m_secret.mid(8)), r.out.constData());
        QVERIFY2(r.out.contains("\"x-api-key\",\"[REDACTED"), r.out.constData());
        const QJsonObject got = m_stub.next(before);
        QVERIFY(!got.isEmpty());
        const int sent
            = int(QJsonDocument(got.value(QStringLiteral("headers")).toArray()).toJson(QJsonDocument::Compact).size());
        QCOMPARE(r.out.split('\n').first().trimmed().toInt(), sent); // same length
        const auto requests = eventsOf(QStringLiteral("network.request"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("target")).toString() == QLatin1String("/echo-headers");
        });
        QCOMPARE(requests.size(), 1);
        QCOMPARE(requests[0].value(QStringLiteral("redacted")).toInt(), 1);
    }

    // The placeholder anywhere but its header stays the placeholder: code in the sandbox cannot
    // get the secret sent where the host would hand it back.
    void thePlaceholderElsewhereStaysAPlaceholder()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r = sh(QStringLiteral("curl -sS -m 10 \"https://api.broker.test/q?k=$MODEL_KEY\" -H "
                                              "\"x-other: $MODEL_KEY\" -H \"x-api-key: Bearer $MODEL_KEY\""));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject got = m_stub.next(before);
        QVERIFY(!got.isEmpty());
        QCOMPARE(got.value(QStringLiteral("url")).toString().toLatin1(), "/q?k=" + kPlaceholder);
        QCOMPARE(header(got, QStringLiteral("x-other")).toLatin1(), kPlaceholder);
        QCOMPARE(header(got, QStringLiteral("x-api-key")).toLatin1(), "Bearer " + m_secret);
    }

    // Keep-alive: two requests over one brokered connection, each passed on whole; a streamed
    // answer arrives in its parts.
    void oneConnectionCarriesManyRequestsAndStreams()
    {
        const CliResult r = sh(QStringLiteral("curl -sS -m 10 https://api.broker.test/one https://api.broker.test/two "
                                              "https://api.broker.test/stream https://api.broker.test/bytes/300000 > "
                                              "/tmp/all; head -c 120 /tmp/all; echo"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.startsWith("ok GET /one\nok GET /two\ndata: part 1\n\ndata: part 2\n\ndata: part 3\n\nxxx"),
            r.out.constData());
        const auto closed = eventsOf(QStringLiteral("network.closed"),
            [](const QJsonObject &e) { return e.value(QStringLiteral("requests")).toInt() == 4; });
        QCOMPARE(closed.size(), 1);
        QVERIFY2(closed[0].value(QStringLiteral("bytesDown")).toInteger() > 300000,
            qPrintable(QString::fromUtf8(QJsonDocument(closed[0]).toJson())));
    }

    // Bodies larger than a TLS record and than the broker's buffers pass whole, both ways, with a
    // length or chunked.
    void largeBodiesPassWhole()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r = sh(
            QStringLiteral(
                "head -c 3000000 /dev/zero | tr '\\0' y > /tmp/up; "
                "curl -sS -m 30 https://api.broker.test/upload --data-binary @/tmp/up -o /dev/null -w "
                "'%{http_code}\\n'; "
                "curl -sS -m 30 https://api.broker.test/bytes/3000000 | tr -d x | wc -c; "
                "curl -sS -m 30 https://api.broker.test/bytes/3000000 | wc -c; "
                "curl -sS -m 30 -H 'Transfer-Encoding: chunked' https://api.broker.test/chunked --data-binary @/tmp/up "
                "-o /dev/null -w '%{http_code}\\n'"),
            60000);
        QCOMPARE(r.out, QByteArray("200\n0\n3000000\n200\n"));
        QList<QJsonObject> got;
        QVERIFY(waitFor(
            [&] {
                got = m_stub.requests().mid(before);
                return got.size() >= 4;
            },
            5000));
        QCOMPARE(got[0].value(QStringLiteral("url")).toString(), QStringLiteral("/upload"));
        QCOMPARE(got[0].value(QStringLiteral("bodyBytes")).toInt(), 3000000);
        QCOMPARE(got[3].value(QStringLiteral("url")).toString(), QStringLiteral("/chunked"));
        QCOMPARE(StubHttps::header(got[3], QStringLiteral("transfer-encoding")), QStringLiteral("chunked"));
        QCOMPARE(got[3].value(QStringLiteral("bodyBytes")).toInt(), 3000000);
    }

    // A brokered host whose certificate does not verify (here: issued for another name) gets
    // nothing: the CONNECT is refused with the reason, and the stub sees no request.
    void aHostThatDoesNotVerifyIsRefused()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r
            = sh(QStringLiteral("curl -sS -m 10 https://wrong.broker.test/ -H \"x-api-key: $WRONG_KEY\""));
        QVERIFY2(r.exitCode != 0, qPrintable(r.describe()));
        const auto denied = eventsOf(QStringLiteral("network.denied"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("host")).toString() == QLatin1String("wrong.broker.test");
        });
        QCOMPARE(denied.size(), 1);
        QCOMPARE(denied[0].value(QStringLiteral("rule")).toString(), QStringLiteral("broker"));
        const QString reason = denied[0].value(QStringLiteral("reason")).toString();
        QVERIFY2(reason.contains(QLatin1String("certificate of wrong.broker.test failed verification"))
                && reason.contains(QLatin1String("mismatch")),
            qPrintable(reason));
        QTest::qWait(200);
        QCOMPARE(m_stub.requests().size(), before);
    }

    // A brokered host over plain HTTP: refused, never sent (the proxy would have nothing to put the
    // secret in safely).
    void plainHttpToABrokeredHostIsRefused()
    {
        const CliResult r
            = sh(QStringLiteral("curl -sS -m 10 -o /dev/null -w '%{http_code}' http://api.broker.test/plain"));
        QCOMPARE(r.out, QByteArray("403"));
        const auto denied = eventsOf(QStringLiteral("network.denied"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("reason"))
                .toString()
                .contains(QLatin1String("is brokered on port 443 only (HTTPS), not 80"));
        });
        QCOMPARE(denied.size(), 1);
    }

    // A daemon that takes the sandbox over goes on brokering with the authority the sandbox
    // trusts (kept in its record, 0600 in the daemon's own directory).
    void aTakenOverSandboxBrokersStill()
    {
        m_daemon->stop();
        QVERIFY(m_daemon->start());
        const CliResult r
            = sh(QStringLiteral("curl -sS -m 10 https://api.broker.test/again -H \"x-api-key: $MODEL_KEY\""));
        QVERIFY2(r.exitCode == 0 && r.out == "ok GET /again\n", qPrintable(r.describe()));
    }

    // A policy change to what is brokered ends the brokered connections open then: one that went
    // on would put in what the policy no longer grants.
    void aChangeOfWhatIsBrokeredEndsOpenConnections()
    {
        QProcess slow;
        slow.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--socket", m_daemon->socketPath(), "exec", "agent", "-n", "--", "bash", "-c",
                "curl -sS -m 20 https://api.broker.test/delay/4000 -H \"x-api-key: $MODEL_KEY\"; echo \"curl $?\""));
        QVERIFY(waitFor(
            [&] {
                for (const QJsonObject &r : m_stub.requests())
                    if (r.value(QStringLiteral("url")).toString() == QLatin1String("/delay/4000"))
                        return true;
                return false;
            },
            10000));
        const QByteArray changed
            = R"({"network": {"mode": "allowlist", "allow": ["api.broker.test", "wrong.broker.test", "late.broker.test"]},
                "credentials": {"grants": [
                  {"secret": "MODEL_KEY", "env": "MODEL_KEY", "broker": {"host": "api.broker.test", "header": "authorization"}},
                  {"secret": "MODEL_KEY", "env": "WRONG_KEY", "broker": {"host": "wrong.broker.test", "header": "x-api-key"}},
                  {"secret": "MODEL_KEY", "env": "LATE_KEY", "broker": {"host": "late.broker.test", "header": "x-api-key"}}]}})";
        const CliResult set = m_daemon->ctl(args("policy", "set", "agent", "-"), changed);
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        QVERIFY(slow.waitForFinished(20000));
        const QByteArray out = slow.readAllStandardOutput();
        QVERIFY2(!out.contains("late") && out.contains("curl "), out.constData());
        const auto closed = eventsOf(QStringLiteral("network.closed"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("error")).toString()
                == QLatin1String("the sandbox's brokered credentials changed");
        });
        QCOMPARE(closed.size(), 1);
        // The next connection is brokered as the policy now says.
        const qsizetype before = m_stub.requests().size();
        const CliResult r
            = sh(QStringLiteral("curl -sS -m 10 https://api.broker.test/now -H \"authorization: Bearer $MODEL_KEY\""));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(header(m_stub.next(before), QStringLiteral("authorization")).toLatin1(), "Bearer " + m_secret);
        // A host the change made brokered: the sandbox's authority was made for the hosts it
        // started with, so it is refused (a plain tunnel would carry the placeholder out to it).
        const qsizetype beforeLate = m_stub.requests().size();
        const CliResult late
            = sh(QStringLiteral("curl -sS -m 10 https://late.broker.test/ -H \"x-api-key: $LATE_KEY\""));
        QVERIFY2(late.exitCode != 0, qPrintable(late.describe()));
        const auto denied = eventsOf(QStringLiteral("network.denied"), [](const QJsonObject &e) {
            return e.value(QStringLiteral("host")).toString() == QLatin1String("late.broker.test");
        });
        QCOMPARE(denied.size(), 1);
        QCOMPARE(denied[0].value(QStringLiteral("rule")).toString(), QStringLiteral("broker"));
        QVERIFY2(denied[0].value(QStringLiteral("reason")).toString().contains(QLatin1String("create a new sandbox")),
            qPrintable(denied[0].value(QStringLiteral("reason")).toString()));
        QTest::qWait(200);
        QCOMPARE(m_stub.requests().size(), beforeLate);
    }

    // The secret is in no file the daemon wrote (history, its WAL, logs): only in the store.
    void theSecretIsInNoFileOfTheDaemon()
    {
        QDirIterator it(m_daemon->rootDir(), QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            if (path.endsWith(QLatin1String("/secrets.json")))
                continue;
            QFile f(path);
            if (f.open(QIODevice::ReadOnly))
                QVERIFY2(!f.readAll().contains(m_secret.mid(8)), qPrintable(path));
        }
    }

    // Policies that cannot be brokered are refused with what to change.
    void badBrokeredGrantsAreRefused()
    {
        const CliResult noProxy = m_daemon->ctl(args("create", "--name", "direct", "--policy", "-"),
            R"({"network": {"mode": "none"}, "credentials": {"grants": [
                {"secret": "MODEL_KEY", "env": "K", "broker": {"host": "api.broker.test", "header": "x-api-key"}}]}})");
        QVERIFY(noProxy.exitCode != 0);
        QVERIFY2(noProxy.err.contains("needs network mode \\\"allowlist\\\"")
                || noProxy.err.contains("needs network mode \"allowlist\""),
            qPrintable(noProxy.describe()));
        const CliResult framing = m_daemon->ctl(args("create", "--name", "framing", "--policy", "-"),
            R"({"network": {"mode": "allowlist"}, "credentials": {"grants": [
                {"secret": "MODEL_KEY", "env": "K", "broker": {"host": "api.broker.test", "header": "host"}}]}})");
        QVERIFY(framing.exitCode != 0);
        QVERIFY2(framing.err.contains("/credentials/grants/0/broker/header"), qPrintable(framing.describe()));
        const CliResult twoWays = m_daemon->ctl(args("create", "--name", "twoways", "--policy", "-"),
            R"({"network": {"mode": "allowlist"}, "credentials": {"grants": [
                {"secret": "MODEL_KEY", "env": "K", "broker": {"host": "api.broker.test", "header": "x-api-key"}},
                {"secret": "MODEL_KEY", "file": "/run/k"}]}})");
        QVERIFY(twoWays.exitCode != 0);
        QVERIFY2(twoWays.err.contains("also granted as file /run/k"), qPrintable(twoWays.describe()));
        const CliResult address = m_daemon->ctl(args("create", "--name", "address", "--policy", "-"),
            R"({"network": {"mode": "allowlist"}, "credentials": {"grants": [
                {"secret": "MODEL_KEY", "env": "K", "broker": {"host": "127.1", "header": "x-api-key"}}]}})");
        QVERIFY(address.exitCode != 0);
        QVERIFY2(address.err.contains("/credentials/grants/0/broker/host") && address.err.contains("an address"),
            qPrintable(address.describe()));
    }
};

QTEST_GUILESS_MAIN(TestBroker)
#include "tst_broker.moc"
