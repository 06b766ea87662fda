// SPDX-License-Identifier: Apache-2.0
// airlockd --daytona-api driven by the official Daytona TypeScript SDK (tests/daytona/sdk.mjs, run
// by Node, pinned by its lock file) beside a real daemon whose approvals this test answers with
// `airlockctl approve` and `airlockctl deny` as a person would; then the history is read back. The
// HTTP edges (a head too large, a body of the wrong length, chunked bodies, a foreign Host or
// Origin, no key, a flood of wrong keys) are written to the real listener as raw bytes.
#include "LoopbackServer.h"
#include "TestHelpers.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <optional>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestDaytona final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    quint16 m_port = 0;
    LoopbackServer m_web{"daytona-web"}; // reached as allowed.test through the egress proxy
    QString m_token;
    QStringList m_approved, m_denied;

    static QString clientDir() { return QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/daytona"); }
    QString apiUrl() const { return QStringLiteral("http://127.0.0.1:%1/api").arg(m_port); }

    // A person at the console: every request is approved, but one that mentions "forbidden".
    void answerApprovals()
    {
        for (const QJsonValue &v : pendingApprovals(*m_daemon)) {
            const QJsonObject r = v.toObject();
            const QString id = r.value(QStringLiteral("id")).toString();
            if (m_approved.contains(id) || m_denied.contains(id))
                continue;
            const bool forbidden
                = QJsonDocument(r.value(QStringLiteral("argv")).toArray()).toJson().contains("forbidden");
            const CliResult answered = forbidden ? m_daemon->ctl(args("deny", id, "--reason", "not on my machine"))
                                                 : m_daemon->ctl(args("approve", id));
            if (answered.exitCode == 0)
                (forbidden ? m_denied : m_approved).append(id);
        }
    }

    // A scenario of sdk.mjs against this test's daemon, or another (`env`, `url`, `key`).
    QJsonObject runClient(const QString &scenario, std::optional<QProcessEnvironment> other = {},
        const QString &url = {}, const QString &key = {})
    {
        QProcess node;
        QProcessEnvironment env = other.value_or(m_daemon->environment());
        env.insert(QStringLiteral("DAYTONA_API_URL"), other ? url : apiUrl());
        env.insert(QStringLiteral("DAYTONA_API_KEY"), other ? key : m_token);
        env.insert(QStringLiteral("WEB_PORT"), QString::number(m_web.port()));
        node.setProcessEnvironment(env);
        node.setWorkingDirectory(clientDir());
        node.start(QStringLiteral("node"), {clientDir() + QStringLiteral("/sdk.mjs"), scenario});
        QTimer approver;
        connect(&approver, &QTimer::timeout, this, [this] { answerApprovals(); });
        approver.start(100);
        const bool ended = waitFor([&] { return node.state() == QProcess::NotRunning; }, 240000);
        approver.stop();
        if (!ended)
            node.kill();
        const QByteArray out = node.readAllStandardOutput(), err = node.readAllStandardError();
        const QJsonObject last = jsonObject(out.trimmed().split('\n').last());
        if (!ended || node.exitCode() != 0 || !last.value(QStringLiteral("ok")).toBool())
            qWarning().noquote() << "sdk.mjs" << scenario << "exit" << node.exitCode() << "\nstdout:" << out
                                 << "\nstderr:" << err.right(6000);
        return last;
    }

    // One request written as bytes; the answer's status line and body.
    struct Raw {
        QByteArray status, body;
    };
    Raw raw(const QByteArray &request) const
    {
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, m_port);
        if (!socket.waitForConnected(5000))
            return {};
        socket.write(request);
        QByteArray answer;
        waitFor(
            [&] {
                socket.waitForReadyRead(50);
                answer += socket.readAll();
                const qsizetype head = answer.indexOf("\r\n\r\n");
                if (head < 0)
                    return socket.state() != QAbstractSocket::ConnectedState;
                const qsizetype at = answer.toLower().indexOf("content-length: ");
                const qsizetype length
                    = at < 0 ? 0 : answer.mid(at + 16, answer.indexOf('\r', at) - at - 16).toLongLong();
                return answer.size() >= head + 4 + length;
            },
            10000);
        const qsizetype head = answer.indexOf("\r\n\r\n");
        return {answer.left(answer.indexOf("\r\n")), head < 0 ? QByteArray() : answer.mid(head + 4)};
    }
    // What the daemon answered on this socket, up to the end of the answer's head (5 s at most).
    static QByteArray awaitHead(QTcpSocket &socket)
    {
        QByteArray answer;
        waitFor(
            [&] {
                socket.waitForReadyRead(50);
                answer += socket.readAll();
                return answer.contains("\r\n\r\n");
            },
            5000);
        return answer;
    }
    QByteArray authorized() const { return "Authorization: Bearer " + m_token.toLatin1() + "\r\n"; }
    QByteArray host() const { return "Host: 127.0.0.1:" + QByteArray::number(m_port) + "\r\n"; }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(clientDir() + QStringLiteral("/node_modules/@daytonaio/sdk/package.json")),
            "the Daytona SDK is not installed: run 'npm ci --prefix tests/daytona' (installer/test.sh does)");
        m_port = freeLoopbackPort();
        m_daemon = std::make_unique<TestDaemon>(
            args("--daytona-api", QStringLiteral("127.0.0.1:%1").arg(m_port), "--daytona-allow", "allowed.test",
                "--resolve", "allowed.test=127.0.0.1", "--resolve", "elsewhere.test=127.0.0.1"));
        // The person's rules: some commands run, recursive deletes never; the rest asks.
        QDir().mkpath(m_daemon->configDir());
        QFile policy(m_daemon->configDir() + QStringLiteral("/policy.json"));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(R"({"version": 1, "commands": {"default": "ask", "rules": [
            {"decision": "allow", "command": "sh"}, {"decision": "allow", "command": "echo"}, {"decision": "allow", "command": "pwd"},
            {"decision": "allow", "command": "exit"}, {"decision": "allow", "command": "sleep"},
            {"decision": "allow", "command": "curl"}, {"decision": "allow", "command": "yes"},
            {"decision": "allow", "command": "head"}, {"decision": "allow", "command": "seq"},
            {"decision": "allow", "command": "cd"}, {"decision": "allow", "command": "export"},
            {"decision": "deny", "command": "rm -r"}]}})");
        policy.close();
        QVERIFY(m_daemon->start());
        QProcess token;
        token.setProcessEnvironment(m_daemon->environment());
        token.start(binDir() + QStringLiteral("/airlockd"), args("token", "create", "--name", "sdk"));
        QVERIFY(token.waitForFinished(10000) && token.exitCode() == 0);
        m_token
            = QString::fromLatin1(token.readAllStandardOutput()).trimmed().split(QLatin1Char('\n')).last().trimmed();
        QVERIFY2(m_token.startsWith(QLatin1String("alk_")), qPrintable(m_token));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // A framework's whole session through the SDK; then the run in the history.
    void aSessionThroughTheSdk()
    {
        const QJsonObject result = runClient(QStringLiteral("session"));
        QVERIFY(result.value(QStringLiteral("ok")).toBool());
        // Only the allowed host's request reached the server: elsewhere.test stopped at the proxy.
        const QList<QByteArray> heads = m_web.heads();
        QCOMPARE(heads.size(), 1);
        QVERIFY2(heads.first().startsWith("GET /ok.txt HTTP/1.1\r\n"), heads.first().constData());
        QVERIFY2(heads.first().toLower().contains("\r\nhost: allowed.test:"), heads.first().constData());
        qInfo().noquote()
            << "timings"
            << QJsonDocument(result.value(QStringLiteral("timings")).toObject()).toJson(QJsonDocument::Compact);
        QCOMPARE(m_denied.size(), 1);
        QVERIFY2(m_approved.size() >= 2, qPrintable(m_approved.join(QLatin1Char(',')))); // the env'd echo, rm -d

        // One run for the key's session, named after the key; every command the agent's.
        const QJsonArray runs
            = jsonObject(m_daemon->ctl(args("runs", "--json")).out).value(QStringLiteral("runs")).toArray();
        QStringList names;
        for (const QJsonValue &v : runs)
            names.append(v.toObject().value(QStringLiteral("name")).toString());
        QVERIFY2(names.count(QStringLiteral("sdk")) == 1, qPrintable(names.join(QLatin1Char(','))));
        const QJsonArray executions = jsonObject(m_daemon->ctl(args("history", "--run", "sdk", "--json")).out)
                                          .value(QStringLiteral("executions"))
                                          .toArray();
        QStringList commands, refused;
        for (const QJsonValue &v : executions) {
            const QJsonObject e = v.toObject();
            QCOMPARE(e.value(QStringLiteral("agent")).toString(), QStringLiteral("sdk"));
            const QString command = e.value(QStringLiteral("argv")).toArray().last().toString();
            // Asked about because of its variables, and let through by the person.
            if (command.startsWith(QLatin1String("echo \"$GREETING")))
                QVERIFY2(
                    !e.value(QStringLiteral("decidedBy")).toString().isEmpty(), QJsonDocument(e).toJson().constData());
            if (e.value(QStringLiteral("exec")).isDouble())
                commands.prepend(command);
            else
                refused.prepend(command + QLatin1Char('|') + e.value(QStringLiteral("status")).toString());
        }
        QVERIFY2(commands.contains(QStringLiteral("echo \"$GREETING/$EXTRA\"; pwd")),
            qPrintable(commands.join(QLatin1Char('|'))));
        QVERIFY2(
            commands.contains(QStringLiteral("/workspace/notes/a.txt")), qPrintable(commands.join(QLatin1Char('|'))));
        QCOMPARE(refused,
            QStringList({QStringLiteral("rm -r /workspace|denied"), QStringLiteral("touch forbidden|denied"),
                QStringLiteral("rm -r /workspace/bin|denied")}));
        // What it made is gone, and so is its record.
        QVERIFY(
            jsonObject(m_daemon->ctl(args("ls", "--json")).out).value(QStringLiteral("sandboxes")).toArray().isEmpty());
    }

    void aWrongKeyIsRefused() { QVERIFY(runClient(QStringLiteral("wrong-key")).value(QStringLiteral("ok")).toBool()); }

    // The non-root path: an ordinary user's daemon (uid 65534) serves the SDK the same way.
    void anOrdinaryUsersDaemon()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to run a daemon as another user");
        UnprivilegedDaemon user;
        const QString config = user.home().filePath(QStringLiteral("config/airlock"));
        QVERIFY(QDir().mkpath(config));
        QFile policy(config + QStringLiteral("/policy.json"));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(R"({"version": 1, "commands": {"default": "ask", "rules": [{"decision": "allow", "command": "sh"},
            {"decision": "allow", "command": "echo"}, {"decision": "allow", "command": "pwd"}]}})");
        policy.close();
        for (const QString &path : {user.home().filePath(QStringLiteral("config")), config, policy.fileName()})
            QVERIFY(
                ::chown(QFile::encodeName(path).constData(), UnprivilegedDaemon::kUid, UnprivilegedDaemon::kUid) == 0);
        const quint16 port = freeLoopbackPort();
        QVERIFY(user.start(args("--daytona-api", QStringLiteral("127.0.0.1:%1").arg(port))));
        const auto [code, out] = user.airlockd(args("token", "create", "--name", "user-sdk"));
        QVERIFY2(code == 0, out.constData());
        QString key;
        for (const QByteArray &line : out.split('\n'))
            if (line.trimmed().startsWith("alk_"))
                key = QString::fromLatin1(line.trimmed());
        QVERIFY(runClient(
            QStringLiteral("basic"), user.environment(), QStringLiteral("http://127.0.0.1:%1/api").arg(port), key)
                    .value(QStringLiteral("ok"))
                    .toBool());
        // Its record is the user's, in the user's data folder.
        QFileInfo record(user.dataDir() + QStringLiteral("/daytona.json"));
        QVERIFY(record.exists());
        QCOMPARE(record.ownerId(), UnprivilegedDaemon::kUid);
        QCOMPARE(octalMode(record.filePath()), QStringLiteral("600"));
    }

    // The listener's edges, as bytes.
    void malformedRequestsGetTheirStatus()
    {
        QCOMPARE(raw("GET /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "\r\n").status, "HTTP/1.1 200 OK");
        QVERIFY(raw("GET /api/sandbox HTTP/1.1\r\n" + host() + "X-Big: " + QByteArray(9000, 'a') + "\r\n\r\n")
                    .status.startsWith("HTTP/1.1 431"));
        QVERIFY(raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "Content-Length: nope\r\n\r\n")
                    .status.startsWith("HTTP/1.1 400"));
        QVERIFY(raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}")
                    .status.startsWith("HTTP/1.1 400"));
        QVERIFY(raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "Content-Length: 999999999999\r\n\r\n")
                    .status.startsWith("HTTP/1.1 413"));
        // A chunked body is read whole: an image asked for is refused by what it says.
        const Raw chunked = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
              "5\r\n{\"bui\r\n15\r\nldInfo\": {\"x\": 1}}   \r\n0\r\n\r\n");
        QVERIFY2(chunked.status.startsWith("HTTP/1.1 501") && chunked.body.contains("does not build images"),
            QByteArray(chunked.status + chunked.body).constData());
        QVERIFY(
            raw("GET /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "Transfer-Encoding: chunked\r\n\r\nZZ\r\n")
                .status.startsWith("HTTP/1.1 400"));
        // DNS rebinding and web pages.
        const Raw foreign = raw("GET /api/sandbox HTTP/1.1\r\nHost: evil.example:80\r\n" + authorized() + "\r\n");
        QVERIFY2(foreign.status.startsWith("HTTP/1.1 421") && foreign.body.contains("does not name this daemon"),
            foreign.body.constData());
        QVERIFY(raw("GET /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "Origin: http://evil.example\r\n\r\n")
                    .status.startsWith("HTTP/1.1 403"));
        // Paths that climb are refused before anything is looked up.
        QVERIFY(raw("GET /toolbox/x/../../api/sandbox HTTP/1.1\r\n" + host() + authorized() + "\r\n")
                    .status.startsWith("HTTP/1.1 400"));
        // Two requests in one write: both answered, in order.
        {
            QTcpSocket socket;
            socket.connectToHost(QHostAddress::LocalHost, m_port);
            QVERIFY(socket.waitForConnected(5000));
            const QByteArray missing = "GET /api/nothing-here HTTP/1.1\r\n" + host() + authorized() + "\r\n";
            const QByteArray listed = "GET /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "\r\n";
            socket.write(missing + listed);
            QByteArray answers;
            QVERIFY2(waitFor(
                         [&] {
                             socket.waitForReadyRead(50);
                             answers += socket.readAll();
                             return answers.contains("HTTP/1.1 404") && answers.contains("HTTP/1.1 200");
                         },
                         5000),
                answers.constData());
            QVERIFY2(answers.indexOf("HTTP/1.1 404") < answers.indexOf("HTTP/1.1 200"), answers.constData());
        }
        // Another key's sandbox, or none: not found, whatever the path asks.
        QVERIFY(raw("POST /toolbox/0123456789ab/process/execute HTTP/1.1\r\n" + host() + authorized()
            + "Content-Length: 21\r\n\r\n{\"command\": \"echo x\"}")
                    .status.startsWith("HTTP/1.1 404"));
    }

    // A command waiting for a person whose client leaves: the question is taken back, not left to
    // be answered for nobody (and then run).
    void aCommandWhoseClientLeavesIsWithdrawn()
    {
        const Raw created = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        const QString id = jsonObject(created.body).value(QStringLiteral("id")).toString();
        QVERIFY2(!id.isEmpty(), created.body.constData());
        const QByteArray body = R"({"command": "touch left-behind"})";
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(socket.waitForConnected(5000));
        socket.write("POST /toolbox/" + id.toLatin1() + "/process/execute HTTP/1.1\r\n" + host() + authorized()
            + "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QVERIFY(waitFor(
            [&] {
                socket.waitForBytesWritten(10);
                return !pendingApprovals(*m_daemon).isEmpty();
            },
            10000));
        socket.abort();
        QVERIFY2(waitFor([&] { return pendingApprovals(*m_daemon).isEmpty(); }, 10000),
            "the request of a client that left is still waiting for a person");
        const QJsonArray executions = jsonObject(m_daemon->ctl(args("history", "--run", "sdk", "--json")).out)
                                          .value(QStringLiteral("executions"))
                                          .toArray();
        QVERIFY(!executions.isEmpty());
        const QJsonObject last = executions.first().toObject();
        QCOMPARE(last.value(QStringLiteral("argv")).toArray().last().toString(), QStringLiteral("touch left-behind"));
        QVERIFY2(last.value(QStringLiteral("exec")).isNull(), QJsonDocument(last).toJson().constData());
        QVERIFY(raw("DELETE /api/sandbox/" + id.toLatin1() + " HTTP/1.1\r\n" + host() + authorized() + "\r\n")
                    .status.startsWith("HTTP/1.1 200"));
    }

    // Nothing of a body is taken before its head passed: no key, no 100 Continue, no buffering.
    void theHeadIsCheckedBeforeTheBody()
    {
        QTcpSocket socket;
        socket.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(socket.waitForConnected(5000));
        socket.write("POST /api/sandbox HTTP/1.1\r\n" + host() + "Content-Length: 200000000\r\n\r\n");
        const QByteArray answer = awaitHead(socket);
        QVERIFY(answer.contains("\r\n\r\n"));
        QVERIFY2(answer.startsWith("HTTP/1.1 401"), answer.constData());
        QVERIFY(waitFor(
            [&] {
                socket.waitForReadyRead(50);
                return socket.state() == QAbstractSocket::UnconnectedState;
            },
            5000));

        // With the key: told to go on once the head is in, before the body is sent.
        QTcpSocket keyed;
        keyed.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(keyed.waitForConnected(5000));
        keyed.write("POST /api/sandbox/nothing/labels HTTP/1.1\r\n" + host() + authorized()
            + "Expect: 100-continue\r\nContent-Length: 13\r\n\r\n");
        const QByteArray go = awaitHead(keyed);
        QVERIFY(go.contains("\r\n\r\n"));
        QCOMPARE(go, QByteArray("HTTP/1.1 100 Continue\r\n\r\n"));
    }

    // A connection that says nothing is closed; one that sends while its request is answered is
    // not read (TCP makes it wait), whatever it sends.
    void connectionsCannotHoldTheDaemon()
    {
        QTcpSocket silent;
        silent.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(silent.waitForConnected(5000));
        QVERIFY2(waitFor(
                     [&] {
                         silent.waitForReadyRead(100);
                         return silent.state() == QAbstractSocket::UnconnectedState;
                     },
                     15000),
            "a silent connection was kept past 10 s");

        const Raw created = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        const QByteArray id = jsonObject(created.body).value(QStringLiteral("id")).toString().toLatin1();
        QVERIFY2(!id.isEmpty(), created.body.constData());
        const QByteArray body = R"({"command": "sleep 4"})";
        QTcpSocket busy;
        busy.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(busy.waitForConnected(5000));
        busy.write("POST /toolbox/" + id + "/process/execute HTTP/1.1\r\n" + host() + authorized()
            + "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body);
        busy.write(QByteArray(64 * 1024 * 1024, 'Z'));
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 2000)
            busy.waitForBytesWritten(100);
        QVERIFY2(busy.bytesToWrite() > 32 * 1024 * 1024,
            qPrintable(QStringLiteral("the daemon took %1 MiB from a busy connection")
                           .arg((64 * 1024 * 1024 - busy.bytesToWrite()) >> 20)));
        busy.abort();
        QVERIFY(raw("DELETE /api/sandbox/" + id + " HTTP/1.1\r\n" + host() + authorized() + "\r\n")
                    .status.startsWith("HTTP/1.1 200"));
    }

    // What one key may keep is bounded.
    void labelsAndEnvAreBounded()
    {
        QJsonObject many;
        for (int i = 0; i < 65; ++i)
            many.insert(QStringLiteral("k%1").arg(i), QStringLiteral("v"));
        const QByteArray body
            = QJsonDocument(QJsonObject{{QStringLiteral("labels"), many}}).toJson(QJsonDocument::Compact);
        const Raw refused = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Content-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n"
            + body);
        QVERIFY2(refused.status.startsWith("HTTP/1.1 400") && refused.body.contains("labels: at most 64"),
            refused.body.constData());
        const QByteArray env = "{\"env\": {\"BIG\": \"" + QByteArray(40000, 'x') + "\"}}";
        const Raw big = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + authorized()
            + "Content-Type: application/json\r\nContent-Length: " + QByteArray::number(env.size()) + "\r\n\r\n" + env);
        QVERIFY2(big.status.startsWith("HTTP/1.1 400") && big.body.contains("env.BIG"), big.body.constData());
    }

    // A key limited to some sandboxes gets no network, even a host the person allowed.
    void aScopedKeyGetsNoHosts()
    {
        QProcess make;
        make.setProcessEnvironment(m_daemon->environment());
        make.start(binDir() + QStringLiteral("/airlockd"),
            args("token", "create", "--name", "scoped", "--scope", "sandbox:scoped-one"));
        QVERIFY(make.waitForFinished(10000) && make.exitCode() == 0);
        const QByteArray key = make.readAllStandardOutput().trimmed().split('\n').last().trimmed();
        const QByteArray body = R"({"name": "scoped-one", "networkAllowList": "allowed.test"})";
        const Raw refused = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + "Authorization: Bearer " + key
            + "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n"
            + body);
        QVERIFY2(refused.status.startsWith("HTTP/1.1 403") && refused.body.contains("limited to some sandboxes"),
            refused.body.constData());
        QVERIFY(
            jsonObject(m_daemon->ctl(args("ls", "--json")).out).value(QStringLiteral("sandboxes")).toArray().isEmpty());
    }

    // A revoked key's requests are answered 401 at once, and what they started ends.
    void aRevokedKeyEndsItsWork()
    {
        QProcess make;
        make.setProcessEnvironment(m_daemon->environment());
        make.start(binDir() + QStringLiteral("/airlockd"), args("token", "create", "--name", "revokee"));
        QVERIFY(make.waitForFinished(10000) && make.exitCode() == 0);
        const QByteArray key = make.readAllStandardOutput().trimmed().split('\n').last().trimmed();
        const QByteArray auth = "Authorization: Bearer " + key + "\r\n";
        const Raw created = raw("POST /api/sandbox HTTP/1.1\r\n" + host() + auth
            + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        const QByteArray id = jsonObject(created.body).value(QStringLiteral("id")).toString().toLatin1();
        QVERIFY2(!id.isEmpty(), created.body.constData());
        const QByteArray body = R"({"command": "sleep 30"})";
        QTcpSocket waiting;
        waiting.connectToHost(QHostAddress::LocalHost, m_port);
        QVERIFY(waiting.waitForConnected(5000));
        waiting.write("POST /toolbox/" + id + "/process/execute HTTP/1.1\r\n" + host() + auth
            + "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QVERIFY(waitFor(
            [&] {
                waiting.waitForBytesWritten(10);
                return jsonObject(m_daemon->ctl(args("info", "--json", QString::fromLatin1(id))).out)
                           .value(QStringLiteral("executions"))
                           .toInt()
                    == 1;
            },
            10000));
        QProcess revoke;
        revoke.setProcessEnvironment(m_daemon->environment());
        QElapsedTimer sinceRevoked;
        sinceRevoked.start();
        revoke.start(binDir() + QStringLiteral("/airlockd"), args("token", "revoke", "revokee"));
        QVERIFY(revoke.waitForFinished(10000) && revoke.exitCode() == 0);
        const QByteArray answer = awaitHead(waiting);
        QVERIFY(answer.contains("\r\n\r\n"));
        QVERIFY2(answer.startsWith("HTTP/1.1 401") && answer.contains("revoked"), answer.constData());
        QVERIFY2(waitFor(
                     [&] {
                         return jsonObject(m_daemon->ctl(args("info", "--json", QString::fromLatin1(id))).out)
                                    .value(QStringLiteral("executions"))
                                    .toInt()
                             == 0;
                     },
                     10000),
            "the revoked key's command still runs");
        // Ended by the listener's look at the keys (every second), not by the 5 s lease running out.
        QVERIFY2(sinceRevoked.elapsed() < 4000, qPrintable(QString::number(sinceRevoked.elapsed())));
        QVERIFY(raw("GET /api/sandbox HTTP/1.1\r\n" + host() + auth + "\r\n").status.startsWith("HTTP/1.1 401"));
        QVERIFY(m_daemon->ctl(args("rm", QString::fromLatin1(id))).exitCode == 0);
    }

    // Past five failed keys from an address, it is refused without a check for a while; a valid
    // key is not (a local user cannot lock the keys out).
    void aFloodOfWrongKeysIsSlowedDown()
    {
        QByteArray last;
        for (int i = 0; i < 7; ++i)
            last = raw("GET /api/sandbox HTTP/1.1\r\n" + host() + "Authorization: Bearer alk_000000000000_"
                + QByteArray(43, 'B') + "\r\n\r\n")
                       .status;
        QVERIFY2(last.startsWith("HTTP/1.1 429"), last.constData());
        QCOMPARE(raw("GET /api/sandbox HTTP/1.1\r\n" + host() + authorized() + "\r\n").status,
            QByteArray("HTTP/1.1 200 OK"));
    }
};

QTEST_GUILESS_MAIN(TestDaytona)
#include "tst_daytona.moc"
