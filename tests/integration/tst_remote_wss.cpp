// SPDX-License-Identifier: Apache-2.0
// wss:// end to end against a "remote" host: a network namespace joined to this one by a veth
// pair, running its own airlockd (separate data directory) with --listen on its side of the link.
// The lifecycle over a pinned fingerprint and a token; every refusal with its reason (tokens,
// fingerprint, TLS 1.2, Host, Origin, query, plain ws, frames, rate limit); and a 5 s cut of the
// link during a stream. What each kind of token may do is tst_remote_tokens.
#include "WssFixture.h"
#include "remote/RefusalLog.h"
#include "rpc/Protocol.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QSslKey>
#include <QSslSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QWebSocket>

#include <algorithm>
#include <tuple>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestRemoteWss final : public QObject, public WssFixture {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (::geteuid() != 0)
            QSKIP("network namespaces and veth pairs need root");
        startRemoteHost();
    }
    void cleanupTestCase()
    {
        m_daemon.reset();
        m_link.reset();
    }

    void theIdentityIsPrivateAndItsFingerprintIsOpenSsls()
    {
        const QString dir = m_daemon->dataDir() + QStringLiteral("/tls");
        QCOMPARE(QFile::permissions(dir + QStringLiteral("/key.pem")),
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadUser | QFileDevice::WriteUser);
        QByteArray out;
        QVERIFY(
            NetnsPair::run(QStringLiteral("openssl x509 -noout -fingerprint -sha256 -in %1/cert.pem").arg(dir), &out));
        // "sha256 Fingerprint=AB:CD:…", as OpenSSL itself computes it over the DER certificate.
        QCOMPARE(QString::fromLatin1(out.trimmed()).section(QLatin1Char('='), 1).remove(QLatin1Char(':')).toLower(),
            m_fingerprint);
        QVERIFY(
            NetnsPair::run(QStringLiteral("openssl x509 -noout -text -in %1/cert.pem | grep -q 'CA:FALSE'").arg(dir)));
        // The token file holds a hash, never the token.
        QFile tokens(m_daemon->dataDir() + QStringLiteral("/tokens.json"));
        QVERIFY(tokens.open(QIODevice::ReadOnly));
        const QByteArray stored = tokens.readAll();
        QVERIFY(!stored.contains(m_token.section(QLatin1Char('_'), 2).toLatin1()));
        QVERIFY(stored.contains(
            QCryptographicHash::hash(m_token.section(QLatin1Char('_'), 2).toLatin1(), QCryptographicHash::Sha256)
                .toHex()));
    }

    void aSandboxLivesItsWholeLifeOverWss()
    {
        QCOMPARE(remote(args("create", "--name", "far")).exitCode, 0);
        const CliResult run
            = remote(args("exec", "far", "-n", "--", "sh", "-c", "printf 'one\\ntwo\\n'; echo err >&2; exit 3"));
        QCOMPARE(run.exitCode, 3);
        QCOMPARE(run.out, QByteArray("one\ntwo\n"));
        QCOMPARE(run.err, QByteArray("err\n"));
        // Live: the first line arrives while the command still runs.
        ConnectOptions options;
        options.host = m_url;
        options.token = m_token;
        options.autostart = false;
        DaemonClient client;
        QVERIFY2(client.connectToDaemon(options), "cannot connect over wss");
        QElapsedTimer t;
        qint64 firstAt = -1, exitAt = -1;
        QObject::connect(&client, &DaemonClient::eventReceived, &client, [&](const Event &e) {
            if (e.isOutput() && e.data.contains("first") && firstAt < 0)
                firstAt = t.elapsed();
            if (e.kind == QLatin1String("exec.exited"))
                exitAt = t.elapsed();
        });
        t.start();
        auto started = client.call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), QStringLiteral("far")},
                {QStringLiteral("argv"),
                    QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"),
                        QStringLiteral("echo first; sleep 1.5; echo second")}},
                {QStringLiteral("attach"), true}});
        QVERIFY2(started, qPrintable(started ? QString() : started.error().message));
        QVERIFY(waitFor([&] { return exitAt >= 0; }, 10000));
        QVERIFY2(firstAt >= 0 && exitAt - firstAt > 1000,
            qPrintable(QStringLiteral("first at %1 ms, exit at %2 ms").arg(firstAt).arg(exitAt)));

        // A policy change from here, and its effect on an agent over there.
        const CliResult set = remote(args("policy", "set", "far", "-"), {}, {},
            R"({"commands": {"rules": [{"decision": "deny", "command": "rm"}]}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        const CliResult denied
            = m_daemon->ctl(args("--agent", "bot", "exec", "far", "-n", "--", "rm", "-rf", "/workspace"));
        QCOMPARE(denied.exitCode, 6);
        QVERIFY2(denied.err.contains("matches rule 'rm' (sandbox)"), qPrintable(denied.describe()));

        // An agent over there asks; a person here approves over wss.
        auto agent = std::make_unique<QProcess>();
        agent->setProcessEnvironment(m_daemon->environment());
        agent->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "far", "-n", "--", "printf", "approved\\n"));
        QJsonObject request;
        QVERIFY2(waitFor(
                     [&] {
                         request = jsonObject(remote(args("approvals", "--json")).out)
                                       .value(QStringLiteral("approvals"))
                                       .toArray()
                                       .first()
                                       .toObject();
                         return !request.isEmpty() || agent->state() == QProcess::NotRunning;
                     },
                     10000)
                && !request.isEmpty(),
            agent->readAllStandardError().constData());
        const CliResult approved
            = remote(args("approve") + QStringList{request.value(QStringLiteral("id")).toString()});
        QVERIFY2(approved.exitCode == 0, qPrintable(approved.describe()));
        QVERIFY(agent->waitForFinished(10000));
        QCOMPARE(agent->readAllStandardOutput(), QByteArray("approved\n"));
        // The history says who decided: the token, from where, not only what the client called itself.
        auto local = m_daemon->connect();
        auto events = local->call(QStringLiteral("history.events"),
            {{QStringLiteral("sandbox"), QStringLiteral("far")},
                {QStringLiteral("kinds"), QJsonArray{QStringLiteral("approval.")}}});
        QVERIFY(events);
        const QByteArray recorded = QJsonDocument(*events).toJson(QJsonDocument::Compact);
        QVERIFY2(recorded.contains(QByteArray("(token laptop from " + m_local.toLatin1() + ':')),
            recorded.left(3000).constData());

        // The history over there, read from here: listed, searched, and replayed stream by stream.
        const QJsonArray listed = jsonObject(remote(args("history", "--sandbox", "far", "--json")).out)
                                      .value(QStringLiteral("executions"))
                                      .toArray();
        QVERIFY2(listed.size() >= 3, qPrintable(QString::number(listed.size())));
        const QJsonObject failedRun = listed.last().toObject(); // newest first: the first command is last
        QCOMPARE(failedRun.value(QStringLiteral("exitCode")).toInt(), 3);
        const CliResult shown = remote(args("show", "--raw")
            + QStringList{QString::number(qint64(failedRun.value(QStringLiteral("id")).toDouble()))});
        QVERIFY2(shown.exitCode == 0, qPrintable(shown.describe()));
        QCOMPARE(shown.out, QByteArray("one\ntwo\n"));
        QCOMPARE(shown.err, QByteArray("err\n"));
        const CliResult found = remote(args("search", "approved", "--json"));
        QVERIFY2(found.exitCode == 0 && found.out.contains("printf"), qPrintable(found.describe()));

        QCOMPARE(remote(args("rm", "far")).exitCode, 0);
        QVERIFY(!m_daemon->ctl(args("ls")).out.contains("far"));
    }

    void aSavedHostKeepsItsTokenOutOfHostsJson()
    {
        const QString tokenFile = m_daemon->rootDir() + QStringLiteral("/laptop.token");
        QFile f(tokenFile);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(m_token.toLatin1() + '\n');
        f.close();
        QFile junk(m_daemon->rootDir() + QStringLiteral("/junk.token"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("password123\n");
        junk.close();
        const CliResult bad = remote(
            args("hosts", "add", "far-box") + QStringList{m_url, QStringLiteral("--token-file"), junk.fileName()});
        QVERIFY2(bad.exitCode == 2 && bad.err.contains("not a token"), qPrintable(bad.describe()));
        const CliResult added
            = remote(args("hosts", "add", "far-box") + QStringList{m_url, QStringLiteral("--token-file"), tokenFile});
        QVERIFY2(added.exitCode == 0, qPrintable(added.describe()));
        QFile hosts(m_daemon->rootDir() + QStringLiteral("/config/airlock/hosts.json"));
        QVERIFY(hosts.open(QIODevice::ReadOnly));
        const QByteArray saved = hosts.readAll();
        QVERIFY2(saved.contains(m_fingerprint.toLatin1())
                && !saved.contains(m_token.section(QLatin1Char('_'), 2).toLatin1()),
            saved.constData());
        const QJsonObject entry = jsonObject(remote(args("hosts", "ls", "--json")).out)
                                      .value(QStringLiteral("hosts"))
                                      .toArray()
                                      .at(1)
                                      .toObject();
        const QString backend = entry.value(QStringLiteral("token")).toString();
        QVERIFY2(backend == QLatin1String("file") || backend == QLatin1String("secret-service"), qPrintable(backend));
        // Never silently in the file: why no keyring was used is said.
        const QByteArray saidFile = "airlockctl: the token of 'far-box' is kept in "
            + (m_daemon->rootDir() + QStringLiteral("/config/airlock/host-tokens.json")).toUtf8()
            + " (readable by you alone): no keyring answered (";
        QVERIFY2(backend == QLatin1String("file") ? added.err.startsWith(saidFile) : added.err.isEmpty(),
            qPrintable(added.describe()));
        if (backend == QLatin1String("file"))
            QCOMPARE(QFile::permissions(m_daemon->rootDir() + QStringLiteral("/config/airlock/host-tokens.json"))
                    & (QFileDevice::ReadGroup | QFileDevice::WriteGroup | QFileDevice::ReadOther
                        | QFileDevice::WriteOther),
                QFileDevice::Permissions());
        // By name, with no token in the environment: the saved one is used.
        const CliResult listed = remote(args("ls"), QStringLiteral(""), QStringLiteral("far-box"));
        QVERIFY2(listed.exitCode == 0 && listed.out.startsWith("NAME"), qPrintable(listed.describe()));
        QCOMPARE(remote(args("hosts", "rm", "far-box")).exitCode, 0);
        if (backend == QLatin1String("file")) { // the token goes with its host
            QFile tokens(m_daemon->rootDir() + QStringLiteral("/config/airlock/host-tokens.json"));
            QVERIFY(tokens.open(QIODevice::ReadOnly));
            QVERIFY(!tokens.readAll().contains("host-token.far-box"));
        }
        const CliResult gone = remote(args("ls"), QStringLiteral(""), QStringLiteral("far-box"));
        QCOMPARE(gone.exitCode, 3);
    }

    void refusalsSayWhy()
    {
        const QByteArray good = "Bearer " + m_token.toLatin1();
        QVERIFY(raw(upgradeRequest(good)).status.startsWith("HTTP/1.1 101"));
        const auto status = [&](const QByteArray &request) { return QString::fromUtf8(raw(request).status); };
        QCOMPARE(status(upgradeRequest({})),
            QStringLiteral("HTTP/1.1 401 no token: send 'Authorization: Bearer alk_…' (airlockd token create)"));
        QString wrong = m_token;
        wrong[wrong.size() - 1] = wrong.endsWith(QLatin1Char('A')) ? QLatin1Char('B') : QLatin1Char('A');
        QVERIFY(status(upgradeRequest("Bearer " + wrong.toLatin1()))
                    .startsWith(QLatin1String("HTTP/1.1 401 wrong token: the secret does not match")));
        QCOMPARE(status(upgradeRequest("Bearer alk_000000000000_" + QByteArray(43, 'A'))),
            QStringLiteral("HTTP/1.1 401 unknown token (not issued by this daemon)"));
        QCOMPARE(status(upgradeRequest({}, {}, "/?token=" + m_token.toLatin1())),
            QStringLiteral(
                "HTTP/1.1 400 the URL takes no query: a token goes in the Authorization header, never in a URL"));
        QCOMPARE(status(upgradeRequest(good, "Origin: https://evil.example\r\n")),
            QStringLiteral("HTTP/1.1 403 foreign Origin 'https://evil.example': web pages may not drive the daemon"));
        // DNS rebinding: a name that resolves here but is not this daemon's.
        QVERIFY(status(upgradeRequest(good, {}, "/", "evil.example:7443"))
                    .startsWith(QLatin1String("HTTP/1.1 421 Host 'evil.example:7443' does not name")));

        // TLS 1.2 never completes a handshake.
        const HttpReply old = raw(upgradeRequest(good), QSsl::TlsV1_2);
        QVERIFY2(
            old.status.isEmpty() && old.tlsError.contains(QLatin1String("protocol version")), qPrintable(old.tlsError));
        QFile log(m_daemon->rootDir() + QStringLiteral("/state/airlock/airlockd.log"));
        QVERIFY(waitFor(
            [&] {
                return log.open(QIODevice::ReadOnly)
                    && log.readAll().contains(
                        QByteArray("refused a connection from " + m_local.toLatin1() + ": TLS handshake failed"));
            },
            5000));

        // The client side: a wrong pin, plain ws:// off loopback, and the daemon refusing plain ws there.
        QString otherPin = m_fingerprint;
        otherPin[0] = otherPin.at(0) == QLatin1Char('0') ? QLatin1Char('1') : QLatin1Char('0');
        const CliResult pinned
            = remote(args("ls"), {}, QStringLiteral("wss://%1:%2#sha256=%3").arg(m_remote).arg(kWssPort).arg(otherPin));
        QCOMPARE(pinned.exitCode, 4);
        QVERIFY2(pinned.err.contains(QByteArray("the daemon's certificate is not the pinned one (expected sha256="
                     + otherPin.toLatin1() + ", got " + m_fingerprint.toLatin1() + ")")),
            qPrintable(pinned.describe()));
        const CliResult plain = remote(args("ls"), {}, QStringLiteral("ws://%1:%2").arg(m_remote).arg(kWssPort));
        QCOMPARE(plain.exitCode, 2);
        QVERIFY2(plain.err.contains("plain ws:// only to a loopback address"), qPrintable(plain.describe()));
        QProcess plainDaemon;
        plainDaemon.setProcessEnvironment(m_daemon->environment());
        plainDaemon.start(binDir() + QStringLiteral("/airlockd"),
            args("--socket", "/nonexistent/x.sock", "--listen")
                + QStringList{m_local + QStringLiteral(":7444"), QStringLiteral("--plain-ws")});
        QVERIFY(plainDaemon.waitForFinished(10000));
        QCOMPARE(plainDaemon.exitCode(), 2);
        QVERIFY(plainDaemon.readAllStandardError().contains("plain ws:// only on a loopback address"));
        QVERIFY(daemonAnswers());
    }

    void aTrustedImpostorNeverSeesTheToken()
    {
        // A server whose certificate the system would trust (here: this process's CA list) and
        // whose name matches, but which is not the pinned daemon: the client must refuse it
        // before the upgrade request, which carries the token, is written.
        QTemporaryDir dir;
        QVERIFY(NetnsPair::run(QStringLiteral(
            "cd %1 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
            "-subj /CN=impostor -addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null")
                                   .arg(dir.path())));
        QFile certFile(dir.filePath(QStringLiteral("cert.pem")));
        QVERIFY(certFile.open(QIODevice::ReadOnly));
        const QSslConfiguration original = QSslConfiguration::defaultConfiguration();
        QSslConfiguration trusting = original;
        trusting.setCaCertificates({QSslCertificate(certFile.readAll())});
        QSslConfiguration::setDefaultConfiguration(trusting);
        // The impostor: OpenSSL's own TLS 1.3 server, printing whatever a client sends it.
        const quint16 port = freeLoopbackPort();
        QVERIFY(port != 0);
        QProcess impostor;
        impostor.setWorkingDirectory(dir.path());
        impostor.start(QStringLiteral("openssl"),
            {QStringLiteral("s_server"), QStringLiteral("-quiet"), QStringLiteral("-tls1_3"), QStringLiteral("-accept"),
                QStringLiteral("127.0.0.1:%1").arg(port), QStringLiteral("-cert"), QStringLiteral("cert.pem"),
                QStringLiteral("-key"), QStringLiteral("key.pem")});
        QVERIFY(waitFor(
            [&] {
                QTcpSocket s;
                s.connectToHost(QHostAddress::LocalHost, port);
                return s.waitForConnected(100);
            },
            5000));
        DaemonClient client;
        ConnectOptions options;
        options.host = QStringLiteral("wss://127.0.0.1:%1#sha256=%2").arg(port).arg(m_fingerprint);
        options.token = m_token;
        options.autostart = false;
        options.timeoutMs = 5000;
        const Status connected = client.connectToDaemon(options);
        QSslConfiguration::setDefaultConfiguration(original);
        impostor.terminate();
        impostor.waitForFinished(5000);
        const QByteArray heard = impostor.readAllStandardOutput();
        QVERIFY(!connected);
        QVERIFY2(connected.error().message.contains(QStringLiteral("not the pinned one")),
            qPrintable(connected.error().message));
        QVERIFY2(!heard.contains("Authorization") && !heard.contains(m_token.section(QLatin1Char('_'), 2).toLatin1()),
            heard.constData());
    }

    void aPeerThatStopsReadingIsClosed()
    {
        // Pings make the daemon queue pongs; a peer that never reads them must not grow the
        // daemon's memory without end.
        QSslSocket s;
        QSslConfiguration c = s.sslConfiguration();
        c.setPeerVerifyMode(QSslSocket::VerifyNone);
        s.setSslConfiguration(c);
        s.setReadBufferSize(4096); // we read almost nothing
        s.connectToHostEncrypted(m_remote, kWssPort);
        QVERIFY(s.waitForEncrypted(5000));
        s.write(upgradeRequest("Bearer " + m_token.toLatin1()));
        QVERIFY(s.waitForReadyRead(5000));
        QVERIFY(s.read(4096).startsWith("HTTP/1.1 101"));
        const qint64 rssBefore = rssMb(m_daemon->pid());
        QByteArray ping("\x89\xfd\x00\x00\x00\x00", 6); // FIN|ping, masked, 125 bytes, mask 0
        ping += QByteArray(125, 'p');
        QByteArray burst;
        for (int i = 0; i < 512; ++i)
            burst += ping;
        // Written without ever reading: no event loop runs here, only writes and flushes.
        QFile log(m_daemon->rootDir() + QStringLiteral("/state/airlock/airlockd.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        log.seek(log.size());
        QByteArray logged;
        qint64 peakMb = rssBefore;
        QElapsedTimer t;
        t.start();
        for (int i = 0; !logged.contains("left: the peer stopped reading") && t.elapsed() < 30000; ++i) {
            if (s.encryptedBytesToWrite() < (1 << 20))
                s.write(burst);
            s.flush();
            QThread::msleep(2);
            if (i % 100 == 0) {
                logged += log.readAll();
                peakMb = std::max(peakMb, rssMb(m_daemon->pid()));
            }
        }
        QVERIFY2(logged.contains("left: the peer stopped reading"), "the daemon kept a peer that never reads");
        QVERIFY2(peakMb - rssBefore < 100, qPrintable(QStringLiteral("RSS %1 -> %2 MB").arg(rssBefore).arg(peakMb)));
        QVERIFY(daemonAnswers());
    }

    void unauthenticatedConnectionsAreCappedPerAddress()
    {
        std::vector<std::unique_ptr<QTcpSocket>> idle;
        for (int i = 0; i < 8; ++i) {
            auto s = std::make_unique<QTcpSocket>();
            s->bind(QHostAddress(m_other));
            s->connectToHost(m_remote, kWssPort);
            QVERIFY(s->waitForConnected(2000));
            idle.push_back(std::move(s));
        }
        QTcpSocket ninth;
        ninth.bind(QHostAddress(m_other));
        ninth.connectToHost(m_remote, kWssPort);
        QVERIFY(ninth.waitForConnected(2000));
        QVERIFY2(waitFor([&] { return ninth.state() == QAbstractSocket::UnconnectedState; }, 2000),
            "a ninth idle connection from one address stayed");
        QCOMPARE(remote(args("ls")).exitCode, 0); // others are not locked out
        // And silence is dropped: the idle eight are gone within the deadline.
        QVERIFY(waitFor(
            [&] {
                return std::all_of(idle.begin(), idle.end(), [](const auto &s) {
                    s->waitForReadyRead(10);
                    return s->state() == QAbstractSocket::UnconnectedState;
                });
            },
            8000));
    }

    void oversizedAndMalformedFramesCloseOnlyThatConnection()
    {
        auto big = openSocket(m_token);
        QVERIFY(big);
        big->sendBinaryMessage(QByteArray(2 * 1024 * 1024, 'x'));
        QVERIFY(waitFor([&] { return big->state() == QAbstractSocket::UnconnectedState; }, 5000));
        QCOMPARE(big->closeCode(), QWebSocketProtocol::CloseCodeTooMuchData);

        auto bad = openSocket(m_token);
        QVERIFY(bad);
        QByteArray received;
        QObject::connect(
            bad.get(), &QWebSocket::binaryMessageReceived, bad.get(), [&](const QByteArray &m) { received += m; });
        bad->sendBinaryMessage(QByteArray("\x00\x00\x00\x06Zhello", 10)); // a frame kind the protocol does not have
        QVERIFY(waitFor([&] { return bad->state() == QAbstractSocket::UnconnectedState; }, 5000));
        rpc::FrameReader reader;
        reader.append(received);
        auto frame = reader.next();
        QVERIFY(frame && *frame);
        const auto message = rpc::decodeJson((*frame)->payload);
        QVERIFY(message);
        QCOMPARE(message->value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("data"))
                     .toObject()
                     .value(QStringLiteral("type"))
                     .toString(),
            QStringLiteral("protocol_error"));
        QCOMPARE(message->value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("unknown frame kind 0x5a"));
        QVERIFY(daemonAnswers());
        QCOMPARE(remote(args("ls")).exitCode, 0);
    }

    void failedAttemptsAreRateLimitedPerAddress()
    {
        // From a second address of ours, so the others keep working.
        const QByteArray wrong = "Bearer alk_000000000000_" + QByteArray(43, 'A');
        for (int i = 0; i < 5; ++i)
            QVERIFY(raw(upgradeRequest(wrong), QSsl::TlsV1_3, m_other).status.startsWith("HTTP/1.1 401"));
        const QByteArray limited = raw(upgradeRequest("Bearer " + m_token.toLatin1()), QSsl::TlsV1_3, m_other).status;
        QCOMPARE(limited, QByteArray("HTTP/1.1 429 too many failed attempts from this address; wait"));
        QVERIFY(raw(upgradeRequest("Bearer " + m_token.toLatin1())).status.startsWith("HTTP/1.1 101"));
        // And recorded, with the address.
        QFile log(m_daemon->rootDir() + QStringLiteral("/state/airlock/airlockd.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains(
            QByteArray("refused a connection from " + m_other.toLatin1() + ": 401 unknown token")));
        // A flood from there is counted, not written line by line: the log keeps what came before.
        for (int i = 0; i < 30; ++i)
            QVERIFY(raw(upgradeRequest(wrong), QSsl::TlsV1_3, m_other).status.startsWith("HTTP/1.1 429"));
        QVERIFY(log.seek(0));
        QCOMPARE(log.readAll().count(QByteArray("refused a connection from " + m_other.toLatin1() + ':')),
            qsizetype(remote::RefusalLog::kPerBlock));
    }

    // One machine commonly holds a whole IPv6 /64: another address of it is the same client.
    void anIPv6ClientIsLimitedByItsSlash64()
    {
        const QString prefix = QStringLiteral("fd00:a1:%1:1").arg(::getpid() % 0xffff, 0, 16);
        QVERIFY(m_link->addIPv6(prefix, {QStringLiteral("1"), QStringLiteral("7")}));
        TestDaemon daemon(
            QStringList{QStringLiteral("--listen"), QStringLiteral("[%1::2]:%2").arg(prefix).arg(kWssPort + 1)});
        daemon.setLauncher(m_link->launcher());
        QVERIFY(daemon.start());
        const QByteArray request = "GET / HTTP/1.1\r\nHost: [" + prefix.toLatin1()
            + "::2]:" + QByteArray::number(kWssPort + 1)
            + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nAuthorization: Bearer alk_000000000000_"
            + QByteArray(43, 'A') + "\r\n\r\n";
        const QString there = prefix + QStringLiteral("::2");
        for (int i = 0; i < 5; ++i) {
            const HttpReply r = raw(request, QSsl::TlsV1_3, prefix + QStringLiteral("::1"), there, kWssPort + 1);
            QVERIFY2(r.status.startsWith("HTTP/1.1 401 unknown token"),
                qPrintable(QString::fromLatin1(r.status) + r.tlsError));
        }
        QCOMPARE(raw(request, QSsl::TlsV1_3, prefix + QStringLiteral("::7"), there, kWssPort + 1).status,
            QByteArray("HTTP/1.1 429 too many failed attempts from this address; wait"));
    }

    void executionsOutliveTheirClientUnlessLeased()
    {
        // A client that vanishes (SIGKILL, no goodbye): by default what it started keeps running
        // on the remote host; with --lease it is killed once the lease runs out, and that is
        // recorded in the history.
        QCOMPARE(remote(args("create", "--name", "leased")).exitCode, 0);
        const auto startAndVanish = [&](const QStringList &options, const QString &marker) {
            auto p = startRemote(args("exec", "leased", "-n") + options + args("--", "sh", "-c")
                + QStringList{QStringLiteral("echo %1; sleep 30").arg(marker)});
            QByteArray seen;
            const bool started = readUntil(*p, seen, marker.toLatin1());
            p->kill();
            p->waitForFinished();
            return started;
        };
        QVERIFY(startAndVanish({}, QStringLiteral("kept")));
        QVERIFY(startAndVanish(args("--lease", "1s"), QStringLiteral("leased")));
        const auto status = [&](const char *marker) {
            const QJsonArray executions
                = jsonObject(m_daemon->ctl(args("history", "--sandbox", "leased", "--json")).out)
                      .value(QStringLiteral("executions"))
                      .toArray();
            for (const QJsonValue &e : executions)
                if (e.toObject()
                        .value(QStringLiteral("argv"))
                        .toArray()
                        .last()
                        .toString()
                        .contains(QLatin1String(marker)))
                    return e.toObject().value(QStringLiteral("status")).toString();
            return QString();
        };
        QVERIFY2(waitFor([&] { return status("echo leased") == QLatin1String("killed"); }, 10000),
            qPrintable(status("echo leased")));
        QCOMPARE(status("echo kept"), QStringLiteral("running"));
        auto local = m_daemon->connect();
        auto events
            = local->call(QStringLiteral("history.events"), {{QStringLiteral("sandbox"), QStringLiteral("leased")}});
        QVERIFY(events);
        const QByteArray recorded = QJsonDocument(*events).toJson(QJsonDocument::Compact);
        QVERIFY2(recorded.contains("\"exec.lease_expired\"") && recorded.contains("\"leaseMs\":1000"),
            recorded.left(3000).constData());
        QCOMPARE(m_daemon->ctl(args("rm", "leased")).exitCode, 0);
    }

    void aDroppedConnectionResumesTheStreamWithoutGapsOrRepeats()
    {
        // The path to the daemon is cut mid-stream (both ends see their connection end): the
        // client says so, reconnects, writes what it missed from the daemon's history and goes on
        // live: every line once, in order, and the command's own exit code.
        QCOMPARE(remote(args("create", "--name", "resumed")).exitCode, 0);
        auto started = startRemote(
            args("exec", "resumed", "-n", "--", "sh", "-c",
                "i=0; while [ $i -lt 80 ]; do i=$((i+1)); echo tick $i; echo err $i >&2; sleep 0.05; done; exit 3"),
            {}, QStringLiteral("wss://127.0.0.1:%1#sha256=%2").arg(m_proxy->port()).arg(m_fingerprint));
        QProcess &p = *started;
        QByteArray seen;
        QVERIFY(readUntil(p, seen, "tick 10\n"));
        m_proxy->cut();
        // (the relay lives in this process: the event loop must run while we wait)
        QVERIFY(waitFor(
            [&] {
                seen += p.readAllStandardOutput();
                return p.state() == QProcess::NotRunning;
            },
            60000));
        seen += p.readAllStandardOutput();
        const QByteArray said = p.readAllStandardError();
        QByteArray expected, expectedErr;
        for (int i = 1; i <= 80; ++i) {
            expected += "tick " + QByteArray::number(i) + '\n';
            expectedErr += "err " + QByteArray::number(i) + '\n';
        }
        QCOMPARE(seen, expected);
        QVERIFY2(
            said.contains("airlockctl: the connection was lost (") && said.contains("airlockctl: reconnected after "),
            said.constData());
        QByteArray errLines; // stderr without airlockctl's own two lines
        for (const QByteArray &line : said.split('\n'))
            if (!line.isEmpty() && !line.startsWith("airlockctl: "))
                errLines += line + '\n';
        QCOMPARE(errLines, expectedErr);
        QCOMPARE(p.exitCode(), 3);
        QCOMPARE(remote(args("rm", "resumed")).exitCode, 0);
    }

    void aStreamSurvivesTheLinkGoingDownForFiveSeconds()
    {
        QCOMPARE(remote(args("create", "--name", "ticker")).exitCode, 0);
        auto started = startRemote(args("exec", "ticker", "-n", "--", "sh", "-c",
            "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo tick $i; sleep 0.2; done"));
        QProcess &p = *started;
        QByteArray seen;
        QVERIFY(readUntil(p, seen, "tick 5\n"));
        QVERIFY(m_link->setLink(false));
        QTest::qWait(5000);
        QVERIFY(m_link->setLink(true));
        QVERIFY(p.waitForFinished(60000));
        seen += p.readAllStandardOutput();
        QByteArray expected;
        for (int i = 1; i <= 60; ++i)
            expected += "tick " + QByteArray::number(i) + '\n';
        QCOMPARE(seen, expected);
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(remote(args("rm", "ticker")).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestRemoteWss)
#include "tst_remote_wss.moc"
