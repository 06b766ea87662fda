// SPDX-License-Identifier: Apache-2.0
// wss:// end to end against a "remote" host: a network namespace joined to this one by a veth
// pair, running its own airlockd (separate data directory) with --listen on its side of the link.
// The lifecycle over a pinned fingerprint and a token; every refusal with its reason (tokens,
// fingerprint, TLS 1.2, Host, Origin, query, plain ws, scopes, frames, rate limit); a revoked
// token's live connection; and a 5 s cut of the link during a stream.
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
#include <QTcpServer>
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
        m_link = std::make_unique<NetnsPair>();
        QByteArray out;
        QVERIFY2(m_link->up(&out), out.constData());
        m_local = m_link->local();
        m_remote = m_link->remote();
        m_other = m_link->other();
        m_proxy = std::make_unique<CuttableProxy>(QHostAddress(m_remote), kWssPort);
        m_daemon = std::make_unique<TestDaemon>(
            QStringList{QStringLiteral("--listen"), QStringLiteral("%1:%2").arg(m_remote).arg(kWssPort),
                QStringLiteral("--secret-store"), QStringLiteral("file"), QStringLiteral("--allow-host"),
                QStringLiteral("127.0.0.1:%1").arg(m_proxy->port())});
        m_daemon->setLauncher(m_link->launcher());
        QVERIFY(m_daemon->start());
        QFile cert(m_daemon->dataDir() + QStringLiteral("/tls/cert.pem"));
        QVERIFY(cert.open(QIODevice::ReadOnly));
        m_fingerprint = QString::fromLatin1(QSslCertificate(cert.readAll()).digest(QCryptographicHash::Sha256).toHex());
        m_url = QStringLiteral("wss://%1:%2#sha256=%3").arg(m_remote).arg(kWssPort).arg(m_fingerprint);
        m_token = newToken(QStringLiteral("laptop"));
        QVERIFY(m_token.startsWith(QLatin1String("alk_")));
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

    void revokedTokensAreRefusedAndCutOff()
    {
        const QString token = newToken(QStringLiteral("old"));
        auto live = openSocket(token);
        QVERIFY(live);
        QProcess revoke;
        revoke.setProcessEnvironment(m_daemon->environment());
        revoke.start(binDir() + QStringLiteral("/airlockd"), args("token", "revoke", "old"));
        QVERIFY(revoke.waitForFinished(10000) && revoke.exitCode() == 0);
        QVERIFY2(waitFor([&] { return live->state() == QAbstractSocket::UnconnectedState; }, 5000),
            "a revoked token's connection stayed open");
        QCOMPARE(live->closeReason(), QStringLiteral("token revoked"));
        QVERIFY(raw(upgradeRequest("Bearer " + token.toLatin1()))
                    .status.startsWith("HTTP/1.1 401 token 'old' was revoked at "));
    }

    void scopedTokensStayInTheirLane()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "theirs")).exitCode, 0);
        const QString mine = newToken(QStringLiteral("ci"), {QStringLiteral("sandbox:mine")});
        QCOMPARE(remote(args("create", "--name", "mine"), mine).exitCode, 0);
        QCOMPARE(remote(args("exec", "mine", "-n", "--", "true"), mine).exitCode, 0);
        const CliResult other = remote(args("exec", "theirs", "-n", "--", "true"), mine);
        QCOMPARE(other.exitCode, 6);
        QVERIFY2(other.err.contains("token 'ci' (sandboxes mine): sandbox 'theirs' is outside it"),
            qPrintable(other.describe()));
        const CliResult listed = remote(args("ls"), mine);
        QVERIFY2(listed.out.contains("mine") && !listed.out.contains("theirs"), qPrintable(listed.describe()));
        // What sandboxes are doing (their last output, their agents) is theirs to see too.
        const CliResult stats = remote(args("stats", "--json"), mine);
        QCOMPARE(stats.exitCode, 0);
        QCOMPARE(jsonArray(stats.out).size(), 1);
        QCOMPARE(
            jsonArray(stats.out).first().toObject().value(QStringLiteral("name")).toString(), QStringLiteral("mine"));
        const CliResult foreign = remote(args("stats", "theirs"), mine);
        QVERIFY2(foreign.exitCode != 0 && foreign.err.contains("no sandbox 'theirs'"), qPrintable(foreign.describe()));
        const CliResult secrets = remote(args("secret", "ls"), mine);
        QVERIFY2(secrets.exitCode != 0 && secrets.err.contains("secrets.list reaches beyond its sandboxes"),
            qPrintable(secrets.describe()));

        const QString reader = newToken(QStringLiteral("viewer"), {QStringLiteral("read-only")});
        QVERIFY(remote(args("ls"), reader).out.contains("theirs"));
        const CliResult write = remote(args("exec", "theirs", "-n", "--", "true"), reader);
        QVERIFY2(write.exitCode == 6
                && write.err.contains("token 'viewer' (read-only): exec.start is not allowed: the token is read-only"),
            qPrintable(write.describe()));

        // Naming one of its sandboxes does not open what lies beyond it.
        QCOMPARE(m_daemon->ctl(args("exec", "theirs", "-n", "--", "echo", "their-output")).exitCode, 0);
        DaemonClient scoped;
        ConnectOptions options;
        options.host = m_url;
        options.token = mine;
        options.autostart = false;
        QVERIFY(scoped.connectToDaemon(options));
        const QJsonObject inScope{{QStringLiteral("sandbox"), QStringLiteral("mine")}};
        const std::pair<const char *, QJsonObject> beyond[] = {
            {"history.output", QJsonObject{{QStringLiteral("execution"), 1}}},
            {"history.show", QJsonObject{{QStringLiteral("execution"), QStringLiteral("theirs:1")}}},
            {"history.runs", {}},
            {"history.prune", QJsonObject{{QStringLiteral("keepBytes"), 0}}},
            {"history.events", QJsonObject{{QStringLiteral("run"), QStringLiteral("x")}}},
            {"secrets.set",
                QJsonObject{{QStringLiteral("name"), QStringLiteral("GITHUB_TOKEN")},
                    {QStringLiteral("value"), QStringLiteral("c3RvbGVuLXN0b2xlbg==")}}},
            {"secrets.list", {}},
            {"policy.defaults.get", {}},
            {"policy.defaults.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
            {"policy.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
        };
        for (const auto &[method, params] : beyond) {
            QJsonObject withSandbox = params;
            for (auto it = inScope.begin(); it != inScope.end(); ++it)
                withSandbox.insert(it.key(), it.value());
            auto r = scoped.call(QString::fromLatin1(method), withSandbox);
            const bool refused = !r && r.error().code == ErrorCode::Denied
                && (r.error().message.contains(QStringLiteral("reaches beyond its sandboxes"))
                    || r.error().message.contains(QStringLiteral("must name one of its sandboxes")));
            QVERIFY2(refused,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        auto mounted = scoped.call(QStringLiteral("sandbox.create"),
            {{QStringLiteral("spec"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("mine")},
                    {QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/etc")},
                            {QStringLiteral("path"), QStringLiteral("/mnt/etc")}}}}}}});
        QVERIFY2(!mounted && mounted.error().message.contains(QStringLiteral("default policy only")),
            qPrintable(mounted ? QString() : mounted.error().message));
        // A draft to try: a person's (it names the patterns and what they are tried on, and
        // mounts whose host paths would be looked at); a limited token is refused, and is not
        // shown what the person's defaults say now.
        const QJsonObject probe{{QStringLiteral("sandbox"), QStringLiteral("mine")},
            {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}},
            {QStringLiteral("policy"),
                QJsonObject{{QStringLiteral("filesystem"),
                    QJsonObject{{QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/root/.ssh")},
                            {QStringLiteral("path"), QStringLiteral("/data")}}}}}}}}};
        for (DaemonClient *limited : {&scoped}) {
            auto drafted = limited->call(QStringLiteral("policy.check"), probe);
            QVERIFY2(!drafted && drafted.error().code == ErrorCode::Denied
                    && drafted.error().message
                        == QStringLiteral("token 'ci' (sandboxes mine): policy drafts need a token with full access"),
                qPrintable(drafted ? QStringLiteral("allowed") : drafted.error().message));
        }
        auto plain = scoped.call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("mine")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        QVERIFY2(
            plain && !plain->contains(QStringLiteral("draft")), qPrintable(plain ? QString() : plain.error().message));
        auto shown = scoped.call(QStringLiteral("policy.get"),
            {{QStringLiteral("sandbox"), QStringLiteral("mine")}, {QStringLiteral("effective"), true}});
        QVERIFY(shown && shown->contains(QStringLiteral("sources")) && !shown->contains(QStringLiteral("below")));
        DaemonClient viewer;
        options.token = reader;
        QVERIFY(viewer.connectToDaemon(options));
        auto viewed = viewer.call(QStringLiteral("policy.check"), probe);
        QVERIFY2(!viewed
                && viewed.error().message
                    == QStringLiteral("token 'viewer' (read-only): policy drafts need a token with full access"),
            qPrintable(viewed ? QStringLiteral("allowed") : viewed.error().message));
        QCOMPARE(m_daemon->ctl(args("rm", "theirs", "mine")).exitCode, 0);
    }

    // A read-only token is refused every method that changes something, each with its reason,
    // and answered the rest (rpc/MethodTable.h's Token::Full, as RpcServerGrants' isRead was).
    void aReadOnlyTokenIsRefusedEveryChangeByName()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "looked-at")).exitCode, 0);
        const QString glance = newToken(QStringLiteral("glance"), {QStringLiteral("read-only")});
        DaemonClient viewer;
        ConnectOptions options;
        options.host = m_url;
        options.token = glance;
        options.autostart = false;
        QVERIFY(viewer.connectToDaemon(options));
        const QJsonObject sb{{QStringLiteral("sandbox"), QStringLiteral("looked-at")}};
        const auto with = [&](QJsonObject p) {
            p.insert(QStringLiteral("sandbox"), QStringLiteral("looked-at"));
            return p;
        };
        const std::pair<const char *, QJsonObject> changes[] = {
            {"sandbox.create", QJsonObject{{QStringLiteral("spec"), QJsonObject{}}}},
            {"sandbox.delete", sb},
            {"sandbox.kill", sb},
            {"exec.start", with({{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}})},
            {"exec.stdin", with({{QStringLiteral("exec"), 1}})},
            {"exec.signal", with({{QStringLiteral("exec"), 1}})},
            {"exec.resize",
                with({{QStringLiteral("exec"), 1}, {QStringLiteral("rows"), 24}, {QStringLiteral("cols"), 80}})},
            {"fs.write", with({{QStringLiteral("path"), QStringLiteral("/workspace/x")}})},
            {"fs.read", with({{QStringLiteral("path"), QStringLiteral("/etc/hostname")}})},
            {"fs.upload", with({{QStringLiteral("path"), QStringLiteral("/workspace/x")}})},
            {"fs.download", with({{QStringLiteral("path"), QStringLiteral("/etc/hostname")}})},
            {"fs.finish", with({{QStringLiteral("transfer"), 1}})},
            {"fs.mkdir", with({{QStringLiteral("path"), QStringLiteral("/workspace/d")}})},
            {"fs.list", with({{QStringLiteral("path"), QStringLiteral("/workspace")}})},
            {"policy.set", with({{QStringLiteral("policy"), QJsonObject{}}})},
            {"policy.defaults.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
            {"approvals.decide", QJsonObject{}},
            {"approvals.withdraw", QJsonObject{}},
            {"secrets.set", QJsonObject{{QStringLiteral("name"), QStringLiteral("X")}}},
            {"secrets.remove", QJsonObject{{QStringLiteral("name"), QStringLiteral("X")}}},
            {"tools.call", with({{QStringLiteral("tool"), QStringLiteral("package.version")}})},
            {"history.prune", QJsonObject{{QStringLiteral("keepBytes"), 1e12}}},
        };
        for (const auto &[method, params] : changes) {
            auto r = viewer.call(QString::fromLatin1(method), params);
            const QString why = QStringLiteral("token 'glance' (read-only): %1 is not allowed: the token is read-only")
                                    .arg(QLatin1String(method));
            QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        const std::pair<const char *, QJsonObject> reads[] = {
            {"daemon.info", {}},
            {"sandbox.list", {}},
            {"sandbox.stats", {}},
            {"sandbox.info", sb},
            {"approvals.list", {}},
            {"events.subscribe", sb},
            {"policy.presets", {}},
            {"policy.get", sb},
            {"policy.check", with({{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}})},
            {"policy.defaults.get", {}},
            {"tools.list", sb},
            {"secrets.list", {}},
            {"history.list", {}},
            {"history.runs", {}},
            {"history.events", sb},
        };
        for (const auto &[method, params] : reads) {
            auto r = viewer.call(QString::fromLatin1(method), params);
            QVERIFY2(
                r, qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(method), r ? QString() : r.error().message)));
        }
        QCOMPARE(m_daemon->ctl(args("rm", "looked-at")).exitCode, 0);
    }

    // A token scoped to its sandboxes neither sees nor decides nor withdraws what waits for a
    // person in another sandbox (by the approval's id, or with none), hears none of that
    // sandbox's events when it asks for every event, and finishes no copy there.
    void aScopedTokenStaysOutOfAnotherSandboxsApprovalsEventsAndCopies()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "far-theirs")).exitCode, 0);
        const QString theirs = jsonObject(m_daemon->ctl(args("info", "far-theirs", "--json")).out)
                                   .value(QStringLiteral("id"))
                                   .toString();
        QVERIFY(!theirs.isEmpty());
        const QString lane = newToken(QStringLiteral("lane"), {QStringLiteral("sandbox:lane")});
        QCOMPARE(remote(args("create", "--name", "lane"), lane).exitCode, 0);
        DaemonClient scoped;
        ConnectOptions options;
        options.host = m_url;
        options.token = lane;
        options.autostart = false;
        QVERIFY(scoped.connectToDaemon(options));
        QList<Event> heard;
        QObject::connect(&scoped, &DaemonClient::eventReceived, &scoped, [&heard](const Event &e) { heard.append(e); });
        QVERIFY(scoped.call(QStringLiteral("events.subscribe")));

        // An agent's command in their sandbox waits for a person.
        QProcess agent;
        agent.setProcessEnvironment(m_daemon->environment());
        agent.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "far-theirs", "-n", "--", "touch", "/workspace/asked"));
        QVERIFY(agent.waitForStarted());
        auto person = m_daemon->connect();
        QVERIFY(person);
        QJsonObject waiting;
        QVERIFY(waitFor(
            [&] {
                auto listed = person->call(QStringLiteral("approvals.list"));
                waiting
                    = listed ? listed->value(QStringLiteral("approvals")).toArray().first().toObject() : QJsonObject();
                return !waiting.isEmpty();
            },
            10000));
        const QString approval = waiting.value(QStringLiteral("id")).toString();
        QCOMPARE(waiting.value(QStringLiteral("sandbox")).toString(), theirs);

        auto seen = scoped.call(QStringLiteral("approvals.list"));
        QVERIFY(seen && seen->value(QStringLiteral("approvals")).toArray().isEmpty());
        const QString outside = QStringLiteral("token 'lane' (sandboxes lane): sandbox 'far-theirs' is outside it");
        const QJsonObject decision{{QStringLiteral("id"), approval},
            {QStringLiteral("nonce"), waiting.value(QStringLiteral("nonce"))},
            {QStringLiteral("decision"), QStringLiteral("allow")}, {QStringLiteral("always"), true}};
        const std::tuple<const char *, QJsonObject, QString> refused[] = {
            {"approvals.decide", decision, outside},
            {"approvals.withdraw", QJsonObject{{QStringLiteral("id"), approval}}, outside},
            // Without an id a decision names no approval in its sandboxes (only withdraw goes
            // without one: this connection's own requests).
            {"approvals.decide",
                QJsonObject{{QStringLiteral("nonce"), waiting.value(QStringLiteral("nonce"))},
                    {QStringLiteral("decision"), QStringLiteral("allow")}},
                QStringLiteral("token 'lane' (sandboxes lane): approval '' waits in none of its sandboxes")},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), QStringLiteral("far-theirs")}}, outside},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), theirs}}, outside},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), theirs.left(8)}}, outside},
        };
        for (const auto &[method, params, why] : refused) {
            auto r = scoped.call(QString::fromLatin1(method), params);
            QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        auto own = scoped.call(QStringLiteral("approvals.withdraw"));
        QVERIFY(own && own->value(QStringLiteral("withdrawn")).toArray().isEmpty()); // it has none
        auto still = person->call(QStringLiteral("approvals.list"));
        QVERIFY(still && still->value(QStringLiteral("approvals")).toArray().size() == 1);

        // A copy opened in its own sandbox is finished there only.
        auto opened = scoped.call(QStringLiteral("fs.upload"),
            {{QStringLiteral("sandbox"), QStringLiteral("lane")},
                {QStringLiteral("path"), QStringLiteral("/workspace/up")}});
        QVERIFY2(opened, qPrintable(opened ? QString() : opened.error().message));
        const QJsonValue transfer = opened->value(QStringLiteral("transfer"));
        for (const QString &ref : {QStringLiteral("far-theirs"), theirs}) {
            auto crossed = scoped.call(QStringLiteral("fs.finish"),
                {{QStringLiteral("sandbox"), ref}, {QStringLiteral("transfer"), transfer},
                    {QStringLiteral("bytes"), 0}});
            QVERIFY2(!crossed && crossed.error().code == ErrorCode::Denied && crossed.error().message == outside,
                qPrintable(crossed ? QStringLiteral("allowed") : crossed.error().message));
        }
        QVERIFY(scoped.call(QStringLiteral("fs.finish"),
            {{QStringLiteral("sandbox"), QStringLiteral("lane")}, {QStringLiteral("transfer"), transfer},
                {QStringLiteral("bytes"), 0}}));

        // Every event it asked for is of its own sandbox.
        QCOMPARE(m_daemon->ctl(args("exec", "far-theirs", "-n", "--", "echo", "their-words")).exitCode, 0);
        QCOMPARE(remote(args("exec", "lane", "-n", "--", "echo", "lane-words"), lane).exitCode, 0);
        const QString laneId
            = jsonObject(m_daemon->ctl(args("info", "lane", "--json")).out).value(QStringLiteral("id")).toString();
        QVERIFY(waitFor(
            [&] {
                return std::any_of(heard.cbegin(), heard.cend(),
                    [&](const Event &e) { return e.sandbox == laneId && e.kind == QLatin1String("exec.exited"); });
            },
            10000));
        QTest::qWait(300);
        for (const Event &e : std::as_const(heard))
            QVERIFY2(e.sandbox == laneId, qPrintable(QStringLiteral("%1 of %2").arg(e.kind, e.sandbox)));

        QCOMPARE(m_daemon->ctl(args("deny", approval)).exitCode, 0);
        QVERIFY(agent.waitForFinished(10000));
        QCOMPARE(agent.exitCode(), 6);
        QCOMPARE(m_daemon->ctl(args("rm", "far-theirs", "lane")).exitCode, 0);
    }

    // A scope names sandboxes, but reaches only the one that had the name when the token was made
    // and those created through the token: a later sandbox of the same name made by a person,
    // with a host folder and the host's network, is outside it for every method.
    void aScopeIsBoundToSandboxesNotToNames()
    {
        const QString byName = newToken(QStringLiteral("by-name"), {QStringLiteral("sandbox:alpha")});
        QVERIFY(!byName.isEmpty());
        QCOMPARE(remote(args("create", "--name", "alpha"), byName).exitCode, 0);
        QCOMPARE(remote(args("exec", "alpha", "-n", "--", "true"), byName).exitCode, 0);
        QCOMPARE(remote(args("rm", "alpha"), byName).exitCode, 0);
        QCOMPARE(remote(args("create", "--name", "alpha"), byName).exitCode, 0); // again: a new one, its own too
        QCOMPARE(remote(args("exec", "alpha", "-n", "--", "true"), byName).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("rm", "alpha")).exitCode, 0);
        QCOMPARE(
            m_daemon->ctl(args("create", "--name", "alpha", "--mount", "/etc:/mnt/etc", "--network", "full")).exitCode,
            0);
        const QString id
            = jsonObject(m_daemon->ctl(args("info", "alpha", "--json")).out).value(QStringLiteral("id")).toString();
        QVERIFY(!id.isEmpty());

        DaemonClient holder; // the attacker: the old token, and every method it was given
        ConnectOptions options;
        options.host = m_url;
        options.token = byName;
        options.autostart = false;
        QVERIFY(holder.connectToDaemon(options));
        const QString why = QStringLiteral(
            "token 'by-name' (sandboxes alpha): sandbox 'alpha' (id %1) is outside it: the token reaches only the "
            "sandboxes of that name created through it, and this one was created by a local client")
                                .arg(id);
        const QJsonObject exec{{QStringLiteral("exec"), 1}};
        const std::pair<const char *, QJsonObject> methods[] = {
            {"sandbox.info", {}},
            {"sandbox.delete", {}},
            {"sandbox.kill", {}},
            {"exec.start",
                QJsonObject{
                    {QStringLiteral("argv"), QJsonArray{QStringLiteral("cat"), QStringLiteral("/mnt/etc/shadow")}}}},
            {"exec.stdin", QJsonObject{{QStringLiteral("exec"), 1}, {QStringLiteral("data"), QString()}}},
            {"exec.signal", exec},
            {"exec.resize",
                QJsonObject{{QStringLiteral("exec"), 1}, {QStringLiteral("rows"), 24}, {QStringLiteral("cols"), 80}}},
            {"fs.write",
                QJsonObject{
                    {QStringLiteral("path"), QStringLiteral("/workspace/x")}, {QStringLiteral("data"), QString()}}},
            {"fs.read", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc/shadow")}}},
            {"fs.upload", QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/x")}}},
            {"fs.download", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc/shadow")}}},
            {"fs.finish", QJsonObject{{QStringLiteral("transfer"), 1}}},
            {"fs.mkdir", QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/d")}}},
            {"fs.list", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc")}}},
            {"policy.get", {}},
            {"policy.check", QJsonObject{{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}}},
            {"tools.list", {}},
            {"tools.call", QJsonObject{{QStringLiteral("tool"), QStringLiteral("package.version")}}},
            {"history.list", {}},
            {"history.events", {}},
            {"events.subscribe", {}},
        };
        for (const QString &ref : {QStringLiteral("alpha"), id, id.left(6)}) {
            for (const auto &[method, params] : methods) {
                QJsonObject p = params;
                p.insert(QStringLiteral("sandbox"), ref);
                auto r = holder.call(QString::fromLatin1(method), p);
                QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                    qPrintable(
                        QStringLiteral("%1 on %2: %3")
                            .arg(QLatin1String(method), ref, r ? QStringLiteral("allowed") : r.error().message)));
            }
        }
        auto listed = holder.call(QStringLiteral("sandbox.list"));
        QVERIFY(listed && listed->value(QStringLiteral("sandboxes")).toArray().isEmpty());
        const CliResult cli = remote(args("exec", "alpha", "-n", "--", "cat", "/mnt/etc/hostname"), byName);
        QCOMPARE(cli.exitCode, 6);
        QCOMPARE(QString::fromUtf8(cli.err), QStringLiteral("airlockctl: %1\n").arg(why));
        QCOMPARE(m_daemon->ctl(args("rm", "alpha")).exitCode, 0);

        // A sandbox that had the name when the token was made: bound by its id, not by the name.
        QCOMPARE(m_daemon->ctl(args("create", "--name", "beta")).exitCode, 0);
        const QString first
            = jsonObject(m_daemon->ctl(args("info", "beta", "--json")).out).value(QStringLiteral("id")).toString();
        const QString byId = newToken(QStringLiteral("by-id"), {QStringLiteral("sandbox:beta")});
        QCOMPARE(remote(args("exec", "beta", "-n", "--", "true"), byId).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("rm", "beta")).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("create", "--name", "beta", "--network", "full")).exitCode, 0);
        const QString second
            = jsonObject(m_daemon->ctl(args("info", "beta", "--json")).out).value(QStringLiteral("id")).toString();
        const CliResult rebound = remote(args("exec", "beta", "-n", "--", "true"), byId);
        QCOMPARE(rebound.exitCode, 6);
        QCOMPARE(QString::fromUtf8(rebound.err),
            QStringLiteral(
                "airlockctl: token 'by-id' (sandboxes beta (id %1)): sandbox 'beta' (id %2) is outside it: the token "
                "was bound to "
                "sandbox %1, which had the name when the token was made, and this one was created by a local client\n")
                .arg(first, second));
        QCOMPARE(m_daemon->ctl(args("rm", "beta")).exitCode, 0);
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
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const quint16 port = probe.serverPort();
        probe.close();
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

    void concurrentTokenCommandsLoseNothing()
    {
        std::vector<std::unique_ptr<QProcess>> running;
        for (int i = 0; i < 6; ++i) {
            auto p = std::make_unique<QProcess>();
            p->setProcessEnvironment(m_daemon->environment());
            p->start(binDir() + QStringLiteral("/airlockd"),
                args("token", "create", "--name") + QStringList{QStringLiteral("burst-%1").arg(i)});
            running.push_back(std::move(p));
        }
        auto revoke = std::make_unique<QProcess>();
        revoke->setProcessEnvironment(m_daemon->environment());
        revoke->start(binDir() + QStringLiteral("/airlockd"), args("token", "revoke", "laptop-2"));
        for (auto &p : running)
            QVERIFY(p->waitForFinished(20000) && p->exitCode() == 0);
        QVERIFY(revoke->waitForFinished(20000));
        QProcess ls;
        ls.setProcessEnvironment(m_daemon->environment());
        ls.start(binDir() + QStringLiteral("/airlockd"), args("token", "ls"));
        QVERIFY(ls.waitForFinished(10000));
        const QByteArray listed = ls.readAllStandardOutput();
        for (int i = 0; i < 6; ++i)
            QVERIFY2(listed.contains(QStringLiteral("burst-%1 ").arg(i).toLatin1()), listed.constData());
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
