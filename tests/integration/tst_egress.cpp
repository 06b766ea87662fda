// SPDX-License-Identifier: Apache-2.0
// The network allowlist, end to end: a sandbox in `allowlist` mode, real curl inside, the daemon's
// egress proxy, and real servers on the host's loopback that the daemon reaches through its
// --resolve table (the test's names never touch DNS). Whatever is refused is refused with the rule
// that said so; what goes through reaches the server with the bytes the test expects.
#include "LoopbackServer.h"
#include "TestHelpers.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestEgress final : public QObject {
    Q_OBJECT
    std::unique_ptr<LoopbackServer> m_web;
    std::unique_ptr<TestDaemon> m_daemon;
    QProcess m_tls;
    quint16 m_tlsPort = 0;
    QTemporaryDir m_tmp;

    // A bash script in the sandbox "net" (bash: /dev/tcp and /dev/udp).
    CliResult sh(const QString &script, int timeoutMs = 30000) const
    {
        return execIn(*m_daemon, QStringLiteral("net"), args("bash", "-c", script), {}, timeoutMs);
    }
    QString url(const char *host, const char *path = "/") const
    {
        return QStringLiteral("http://%1:%2%3").arg(q(host)).arg(m_web->port()).arg(q(path));
    }
    // curl through the proxy whatever NO_PROXY says: prints the status code, then the body.
    CliResult viaProxy(const QString &curlArgs) const
    {
        return sh(QStringLiteral(
            "curl -sS -m 10 --noproxy '' -x http://127.0.0.1:3128 -o /tmp/body -w '%{http_code}\\n' %1; cat /tmp/body")
                      .arg(curlArgs));
    }
    // Raw proxy bytes from bash inside the sandbox; prints the proxy's first answer line.
    CliResult rawRequest(const QString &request) const
    {
        return sh(
            QStringLiteral("exec 3<>/dev/tcp/127.0.0.1/3128; printf '%1' >&3; head -c 200 <&3 | head -1").arg(request));
    }
    void setPolicy(const QByteArray &policy) const
    {
        const CliResult r = m_daemon->ctl(args("policy", "set", "net", "-"), policy);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
    }
    static constexpr const char *kPolicy
        = R"({"network": {"mode": "allowlist", "allow": ["allowed.test", "*.wild.test", "tls.test"],
                                                "deny": ["blocked.wild.test"], "unknown": "deny"}})";
    QList<QJsonObject> events(const QString &kind) const { return storedEvents(*m_daemon, kind); }

private Q_SLOTS:
    void initTestCase()
    {
        m_web = std::make_unique<LoopbackServer>("web");
        // A real TLS server for HTTPS through CONNECT.
        const QString key = m_tmp.filePath(QStringLiteral("key.pem")),
                      cert = m_tmp.filePath(QStringLiteral("cert.pem"));
        QCOMPARE(QProcess::execute(QStringLiteral("openssl"),
                     args("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                         "-subj", "/CN=tls.test")),
            0);
        m_tls.start(
            QStringLiteral("openssl"), args("s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key, "-www"));
        QVERIFY(waitFor(
            [&] {
                m_tls.waitForReadyRead(200);
                const QByteArray out = m_tls.peek(4096);
                const qsizetype at = out.indexOf("ACCEPT 127.0.0.1:");
                if (at < 0)
                    return false;
                m_tlsPort = quint16(out.mid(at + 17).split('\n').first().trimmed().toUInt());
                return m_tlsPort > 0;
            },
            10000));

        m_daemon = std::make_unique<TestDaemon>(args("--approval-timeout", "20s", "--resolve", "allowed.test=127.0.0.1",
            "--resolve", "a.wild.test=127.0.0.1", "--resolve", "wild.test=127.0.0.1", "--resolve",
            "blocked.wild.test=127.0.0.1", "--resolve", "tls.test=127.0.0.1", "--resolve", "ask.test=127.0.0.1"));
        QVERIFY(m_daemon->start());
        QFile policy(m_tmp.filePath(QStringLiteral("policy.json")));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(kPolicy);
        policy.close();
        QString error;
        QCOMPARE(m_daemon->create(args("--name", "net", "--policy", policy.fileName()), &error), QStringLiteral("net"));
    }
    void cleanupTestCase()
    {
        m_daemon.reset();
        m_tls.kill();
        m_tls.waitForFinished();
    }

    void theSandboxIsToldWhereTheProxyIs()
    {
        const CliResult r = sh(QStringLiteral("env | grep -i _proxy= | LC_ALL=C sort"));
        QCOMPARE(r.out,
            QByteArray("ALL_PROXY=socks5h://127.0.0.1:3128\nHTTPS_PROXY=http://127.0.0.1:3128\nHTTP_PROXY=http://"
                       "127.0.0.1:3128\n"
                       "NO_PROXY=localhost,127.0.0.1,::1\nall_proxy=socks5h://127.0.0.1:3128\nhttp_proxy=http://"
                       "127.0.0.1:3128\n"
                       "https_proxy=http://127.0.0.1:3128\nno_proxy=localhost,127.0.0.1,::1\n"));
        const QJsonObject info = jsonObject(m_daemon->ctl(args("info", "net", "--json")).out);
        QCOMPARE(info.value(QStringLiteral("network")).toString(), QStringLiteral("allowlist"));
        const QJsonObject isolation = info.value(QStringLiteral("isolation")).toObject();
        QCOMPARE(isolation.value(QStringLiteral("runtime")).toString(), testIsolation());
        // Under gVisor there is no host network namespace to name: runsc runs with --network=none,
        // and the guest relays to the daemon's egress socket (tst_gvisor tries that socket).
        if (!underGvisor())
            QVERIFY(isolation.value(QStringLiteral("namespaces")).toArray().contains(QStringLiteral("net")));
    }

    void anAllowedNameIsReachableByPlainHttp()
    {
        const int before = m_web->heads().size();
        const CliResult r = sh(QStringLiteral("curl -sS -m 10 %1").arg(url("allowed.test", "/plain?x=1")));
        QCOMPARE(r.out, QByteArray("web GET /plain?x=1\n"));
        // What reached the server: origin-form, the right Host, one request per connection, and
        // nothing meant for the proxy.
        const QByteArray head = m_web->heads().value(before);
        QVERIFY2(head.startsWith("GET /plain?x=1 HTTP/1.1\r\n"), head.constData());
        QVERIFY2(
            head.contains(QStringLiteral("\r\nHost: allowed.test:%1").arg(m_web->port()).toLatin1()), head.constData());
        QVERIFY2(head.contains("\r\nConnection: close"), head.constData());
        QVERIFY2(!head.toLower().contains("proxy-"), head.constData());
    }

    void theCliMakesAnAllowlistWithAllow()
    {
        const CliResult r = m_daemon->ctl(
            args("run", "--allow", "Allowed.Test.", "--", "curl", "-sS", "-m", "10", url("allowed.test", "/run")));
        QVERIFY2(r.exitCode == 0 && r.out == "web GET /run\n", qPrintable(r.describe()));
        QCOMPARE(m_daemon->ctl(args("run", "--network", "full", "--allow", "x.test", "--", "true")).err,
            QByteArray("airlockctl: --allow goes with --network allowlist (or no --network)\n"));
    }

    void anAllowedNameIsReachableThroughConnectAndSocks()
    {
        QCOMPARE(sh(QStringLiteral("curl -sS -m 10 -p %1").arg(url("allowed.test", "/tunnel"))).out,
            QByteArray("web GET /tunnel\n"));
        QCOMPARE(
            sh(QStringLiteral("curl -sS -m 10 --socks5-hostname 127.0.0.1:3128 %1").arg(url("a.wild.test", "/socks")))
                .out,
            QByteArray("web GET /socks\n"));
        // ALL_PROXY alone (socks5h: the name goes to the proxy, never to a resolver inside).
        QCOMPARE(
            sh(QStringLiteral("unset HTTP_PROXY http_proxy; curl -sS -m 10 %1").arg(url("allowed.test", "/all"))).out,
            QByteArray("web GET /all\n"));
    }

    void bulkDataCrossesTheRelayIntact()
    {
        // 50 MB through a CONNECT tunnel, counted on arrival and in the connection's event.
        const CliResult r
            = sh(QStringLiteral("curl -sS -m 60 -p %1 | wc -c").arg(url("allowed.test", "/bytes/50000000")), 90000);
        QCOMPARE(r.out, QByteArray("50000000\n"));
        // The relay reports the close a moment after the client saw it.
        QVERIFY(waitFor(
            [&] {
                const QList<QJsonObject> closed = events(QStringLiteral("network.closed"));
                return std::any_of(closed.cbegin(), closed.cend(), [](const QJsonObject &o) {
                    return o.value(QStringLiteral("protocol")).toString() == QLatin1String("http-connect")
                        && o.value(QStringLiteral("bytesDown")).toDouble() > 50000000;
                });
            },
            5000));
    }

    void aHalfClosedRequestStillGetsItsAnswer()
    {
        // The client says all it has to say and shuts its sending side; the answer still comes
        // back (under gVisor through the guest's relay, which passes the half-close on).
        const CliResult r = sh(QStringLiteral(
            "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', 3128)); "
            "s.sendall(b'GET %1 HTTP/1.1\\r\\nHost: allowed.test:%2\\r\\n\\r\\n'); s.shutdown(socket.SHUT_WR); "
            "print(s.makefile('rb').read().decode().splitlines()[-1])\"")
                                   .arg(url("allowed.test", "/half"))
                                   .arg(m_web->port()));
        QVERIFY2(r.out == "web GET /half\n", qPrintable(r.describe()));
    }

    // All of an upload comes back, though the client shut its side first and the destination
    // closed at once after the last byte (red team: the relay ended the pair at the destination's
    // hang-up while a unix socket's small buffer, under gVisor, still held back most of the echo).
    void aHalfClosedUploadGetsAllOfItsEchoBack()
    {
        const CliResult r = sh(
            QStringLiteral("python3 -c \"import socket,hashlib; s=socket.create_connection(('127.0.0.1', 3128)); "
                           "s.sendall(b'CONNECT allowed.test:%1 HTTP/1.1\\r\\nHost: allowed.test:%1\\r\\n\\r\\n'); "
                           "f=s.makefile('rb'); print(f.readline().decode().strip()); [f.readline() for _ in "
                           "iter(lambda: f.peek(2)[:2] != b'\\r\\n', False)]; f.readline(); "
                           "data=bytes(range(256))*8192; s.sendall(b'POST /echo HTTP/1.1\\r\\n\\r\\n'+data); "
                           "s.shutdown(socket.SHUT_WR); "
                           "back=f.read(); print(len(back), back == data)\"")
                .arg(m_web->port()));
        QVERIFY2(r.out == "HTTP/1.1 200 Connection established\n2097152 True\n", qPrintable(r.describe()));
    }

    void httpsGoesThroughConnect()
    {
        const CliResult r = sh(
            QStringLiteral("curl -sS -m 10 -k -o /dev/null -w '%{http_code} %{ssl_verify_result}' https://tls.test:%1/")
                .arg(m_tlsPort));
        QVERIFY2(r.out == "200 18" || r.out == "200 0", qPrintable(r.describe())); // 18: self-signed (-k)
    }

    void refusedDestinationsNameTheRule_data()
    {
        QTest::addColumn<QString>("curlArgs");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("unlisted name") << url("unlisted.test")
                                       << QByteArray("403\nairlock: no rule names unlisted.test:%1\n");
        QTest::newRow("bare domain of a wildcard")
            << url("wild.test") << QByteArray("403\nairlock: no rule names wild.test:%1\n");
        QTest::newRow("deny beats allow")
            << url("blocked.wild.test")
            << QByteArray("403\nairlock: blocked.wild.test:%1 matches deny rule 'blocked.wild.test'\n");
        QTest::newRow("loopback address")
            << url("127.0.0.1")
            << QByteArray("403\nairlock: 127.0.0.1 is an address in a refused range and no rule names it\n");
        QTest::newRow("metadata address")
            << QStringLiteral("http://169.254.169.254/latest/meta-data/")
            << QByteArray("403\nairlock: 169.254.169.254 is an address in a refused range and no rule names it\n");
        QTest::newRow("IPv4-mapped IPv6")
            << QStringLiteral("'http://[::ffff:127.0.0.1]:%1/'").arg(m_web->port())
            << QByteArray("403\nairlock: 127.0.0.1 is an address in a refused range and no rule names it\n");
        QTest::newRow("public address") << QStringLiteral(
            "http://93.184.216.34/") << QByteArray("403\nairlock: 93.184.216.34 is an address and no rule names it\n");
    }
    void refusedDestinationsNameTheRule()
    {
        QFETCH(QString, curlArgs);
        QFETCH(QByteArray, expected);
        const int accepted = m_web->accepted();
        const CliResult r = viaProxy(curlArgs);
        QCOMPARE(r.out, expected.replace("%1", QByteArray::number(m_web->port())));
        QCOMPARE(m_web->accepted(), accepted); // nothing reached the server
    }

    void addressSpellingsAreRefusedAtTheProxy_data()
    {
        QTest::addColumn<QString>("request");
        QTest::addColumn<QByteArray>("expected");
        // Raw requests: curl would normalise these before the proxy sees them; other clients do not.
        QTest::newRow("decimal CONNECT") << QStringLiteral("CONNECT 2130706433:%1 HTTP/1.1\\r\\n\\r\\n")
                                         << QByteArray("HTTP/1.1 403 Forbidden\r");
        QTest::newRow("octal CONNECT") << QStringLiteral("CONNECT 0177.0.0.1:%1 HTTP/1.1\\r\\n\\r\\n")
                                       << QByteArray("HTTP/1.1 403 Forbidden\r");
        QTest::newRow("hex absolute-form")
            << QStringLiteral("GET http://0x7f000001:%1/ HTTP/1.1\\r\\nHost: 0x7f000001:%1\\r\\n\\r\\n")
            << QByteArray("HTTP/1.1 403 Forbidden\r");
        QTest::newRow("Host header differs")
            << QStringLiteral("GET http://allowed.test:%1/ HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n")
            << QByteArray("HTTP/1.1 400 Bad Request\r");
        QTest::newRow("https in absolute-form") << QStringLiteral("GET https://allowed.test:%1/ HTTP/1.1\\r\\n\\r\\n")
                                                << QByteArray("HTTP/1.1 400 Bad Request\r");
        QTest::newRow("userinfo") << QStringLiteral("GET http://x@allowed.test:%1/ HTTP/1.1\\r\\n\\r\\n")
                                  << QByteArray("HTTP/1.1 400 Bad Request\r");
        QTest::newRow("origin-form to a proxy") << QStringLiteral("GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n")
                                                << QByteArray("HTTP/1.1 400 Bad Request\r");
    }
    void addressSpellingsAreRefusedAtTheProxy()
    {
        QFETCH(QString, request);
        QFETCH(QByteArray, expected);
        const int accepted = m_web->accepted();
        QCOMPARE(rawRequest(request.contains(QLatin1String("%1")) ? request.arg(m_web->port()) : request).out,
            expected + '\n');
        QCOMPARE(m_web->accepted(), accepted);
    }

    void socksAddressFormsAreDecidedLikeNames()
    {
        // SOCKS5 with an IPv4 address (curl --socks5 resolves locally: a literal goes as 4 bytes).
        const CliResult r = sh(QStringLiteral(
            "curl -sS -m 10 --noproxy '' --socks5 127.0.0.1:3128 http://127.0.0.1:%1/ 2>&1; echo \" exit $?\"")
                                   .arg(m_web->port()));
        // Reply code 2: "connection not allowed by ruleset".
        QCOMPARE(r.out, QByteArray("curl: (97) Can't complete SOCKS5 connection to 127.0.0.1. (2)\n exit 97\n"));
    }

    void aNameThatResolvesIntoLoopbackIsRefused()
    {
        // "localhost" is allowed by name, but the system resolver answers 127.0.0.1: refused after
        // resolution, by the range check (no DNS rebinding into the host).
        setPolicy(R"({"network": {"mode": "allowlist", "allow": ["localhost"]}})");
        const CliResult r = viaProxy(QStringLiteral("http://localhost:%1/").arg(m_web->port()));
        QVERIFY2(r.out.startsWith(
                     "403\nairlock: localhost resolves to 127.0.0.1 (loopback, private, link-local or reserved)"),
            qPrintable(r.describe()));
        setPolicy(kPolicy);
    }

    void thereIsNoOtherWayOut()
    {
        // No resolver: names do not resolve inside, so DNS cannot carry data out.
        QCOMPARE(sh(QStringLiteral("getent hosts allowed.test; echo $?")).out, QByteArray("2\n"));
        // Programs that ignore the proxy variables have no network at all.
        // (gVisor's own stack, with only loopback, answers EHOSTUNREACH where Linux's says ENETUNREACH.)
        const CliResult udp = sh(QStringLiteral("echo x > /dev/udp/10.1.2.3/53"));
        QVERIFY2(udp.err.contains(underGvisor() ? "No route to host" : "Network is unreachable"),
            qPrintable(udp.describe()));
        const CliResult direct = sh(
            QStringLiteral("curl -sS -m 5 --noproxy '*' http://127.0.0.1:%1/; echo \" exit $?\"").arg(m_web->port()));
        QVERIFY2(direct.out.endsWith(" exit 7\n"),
            qPrintable(direct.describe())); // the sandbox's own loopback: nothing listens
    }

    void aLiveRuleChangeAppliesToTheNextConnection()
    {
        QCOMPARE(sh(QStringLiteral("curl -sS -m 10 %1").arg(url("allowed.test", "/before"))).out,
            QByteArray("web GET /before\n"));
        setPolicy(R"({"network": {"mode": "allowlist", "allow": ["allowed.test"], "deny": ["allowed.test"]}})");
        QCOMPARE(viaProxy(url("allowed.test", "/after")).out,
            QStringLiteral("403\nairlock: allowed.test:%1 matches deny rule 'allowed.test'\n")
                .arg(m_web->port())
                .toUtf8());
        setPolicy(kPolicy);
    }

    void anAskedDestinationWaitsForAPerson()
    {
        setPolicy(R"({"network": {"mode": "allowlist", "allow": ["allowed.test"], "unknown": "ask"}})");
        const auto asking = [&](const char *path) {
            auto p = std::make_unique<QProcess>();
            p->setProcessEnvironment(m_daemon->environment());
            p->start(binDir() + QStringLiteral("/airlockctl"),
                args("--no-autostart", "exec", "net", "-n", "--", "sh", "-c",
                    QStringLiteral("curl -sS -m 30 -o /tmp/b -w '%{http_code} ' %1; cat /tmp/b")
                        .arg(url("ask.test", path))));
            return p;
        };
        const auto request = [&] { return waitForApproval(*m_daemon); };

        // Allowed once: this connection goes through...
        auto first = asking("/once");
        QJsonObject r = request();
        QCOMPARE(r.value(QStringLiteral("kind")).toString(), QStringLiteral("network"));
        QCOMPARE(
            r.value(QStringLiteral("destination")).toString(), QStringLiteral("ask.test:%1 (http)").arg(m_web->port()));
        QVERIFY(m_daemon->ctl(args("approvals"))
                    .out.contains(QStringLiteral("connect  ask.test:%1 (http)").arg(m_web->port()).toUtf8()));
        QCOMPARE(m_daemon->ctl(args("approve", r.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(first->waitForFinished(15000));
        QCOMPARE(first->readAllStandardOutput(), QByteArray("200 web GET /once\n"));

        // ...and the next one asks again; denied, with the reason.
        auto second = asking("/denied");
        r = request();
        QCOMPARE(
            m_daemon->ctl(args("deny", r.value(QStringLiteral("id")).toString(), "--reason", "not today")).exitCode, 0);
        QVERIFY(second->waitForFinished(15000));
        const QByteArray refused = second->readAllStandardOutput();
        QVERIFY2(refused.startsWith("403 airlock: denied by airlockctl") && refused.endsWith(": not today\n"),
            refused.constData());

        // "Always" adds the host to the sandbox's allow list: the next connection asks nobody.
        auto third = asking("/always");
        r = request();
        QCOMPARE(m_daemon->ctl(args("approve", r.value(QStringLiteral("id")).toString(), "--always")).exitCode, 0);
        QVERIFY(third->waitForFinished(15000));
        QCOMPARE(third->readAllStandardOutput(), QByteArray("200 web GET /always\n"));
        const QJsonArray allow = jsonObject(m_daemon->ctl(args("policy", "show", "net", "--json")).out)
                                     .value(QStringLiteral("policy"))
                                     .toObject()
                                     .value(QStringLiteral("network"))
                                     .toObject()
                                     .value(QStringLiteral("allow"))
                                     .toArray();
        QCOMPARE(allow, QJsonArray({QStringLiteral("allowed.test"), QStringLiteral("ask.test")}));
        QCOMPARE(
            sh(QStringLiteral("curl -sS -m 10 %1").arg(url("ask.test", "/again"))).out, QByteArray("web GET /again\n"));
        setPolicy(kPolicy);
    }

    void aFloodOfRefusalsIsCountedNotStored()
    {
        const auto denied = [&] { return events(QStringLiteral("network.denied")).size(); };
        const qsizetype before = denied();
        // 800 refusals: past the burst of 200 even on a slow machine (refill is 50/s).
        const CliResult r = sh(QStringLiteral("for i in $(seq 800); do exec 3<>/dev/tcp/127.0.0.1/3128; printf "
                                              "'CONNECT 10.9.9.9:80 HTTP/1.1\\r\\n\\r\\n' >&3; "
                                              "read -r -N 12 reply <&3; exec 3<&-; done; echo done"),
            120000);
        QCOMPARE(r.out, QByteArray("done\n"));
        // The counts come in a report at most a second after the last one was dropped.
        qint64 suppressed = 0;
        qsizetype stored = 0;
        waitFor(
            [&] {
                suppressed = 0;
                for (const QJsonObject &s : events(QStringLiteral("events.suppressed")))
                    suppressed += qint64(s.value(QStringLiteral("counts"))
                                             .toObject()
                                             .value(QStringLiteral("network.denied"))
                                             .toDouble());
                stored = denied() - before;
                return stored + suppressed == 800;
            },
            5000);
        QVERIFY2(stored < 800 && stored + suppressed == 800,
            qPrintable(QStringLiteral("%1 stored, %2 suppressed").arg(stored).arg(suppressed)));
    }

    void everyConnectionIsAnEvent()
    {
        // Opened and closed for what went through, with bytes and duration; denied for the rest.
        const QList<QJsonObject> closed = events(QStringLiteral("network.closed"));
        const auto plain = std::find_if(closed.cbegin(), closed.cend(), [](const QJsonObject &o) {
            return o.value(QStringLiteral("host")).toString() == QLatin1String("allowed.test")
                && o.value(QStringLiteral("protocol")).toString() == QLatin1String("http");
        });
        QVERIFY(plain != closed.cend());
        QCOMPARE(plain->value(QStringLiteral("decision")).toString(), QStringLiteral("allow"));
        QCOMPARE(plain->value(QStringLiteral("rule")).toString(), QStringLiteral("allowed.test"));
        QCOMPARE(plain->value(QStringLiteral("address")).toString(), QStringLiteral("127.0.0.1"));
        QCOMPARE(plain->value(QStringLiteral("error")).toString(), QString());
        QVERIFY(plain->value(QStringLiteral("bytesUp")).toInt() > 50);
        QVERIFY(plain->value(QStringLiteral("bytesDown")).toInt() > 50);
        QVERIFY(plain->contains(QStringLiteral("durationMs")));
        const QList<QJsonObject> denied = events(QStringLiteral("network.denied"));
        QVERIFY(std::any_of(denied.cbegin(), denied.cend(), [](const QJsonObject &o) {
            return o.value(QStringLiteral("host")).toString() == QLatin1String("169.254.169.254")
                && o.value(QStringLiteral("rule")).toString() == QLatin1String("ip literal");
        }));
        QVERIFY(std::any_of(closed.cbegin(), closed.cend(), [](const QJsonObject &o) {
            return o.value(QStringLiteral("host")).toString() == QLatin1String("ask.test")
                && o.value(QStringLiteral("decision")).toString() == QLatin1String("approved");
        }));
    }
};

QTEST_GUILESS_MAIN(TestEgress)
#include "tst_egress.moc"
