// SPDX-License-Identifier: Apache-2.0
// `airlockctl mcp` driven by the official MCP TypeScript SDK client (tests/mcp/client.mjs, run by
// Node) beside a real daemon, whose approvals this test answers with `airlockctl approve` and
// `airlockctl deny` as a person would; then the history is read back. The protocol's edges
// (malformed JSON-RPC, batches, version negotiation, requests before initialize) are written as
// raw lines to the real server.
#include "TestHelpers.h"
#include "mcp/AgentConfig.h"
#include "util/Version.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace airlock;
using namespace airlock::test;

class TestMcp final : public QObject {
    Q_OBJECT
    QTemporaryDir m_tools;
    std::unique_ptr<TestDaemon> m_daemon;
    QStringList m_approved, m_denied;

    QString clientDir() const { return QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/mcp"); }

    // A person at the console: every request is approved, but one that mentions "forbidden" (denied)
    // or "ignored" (left to time out).
    void answerApprovals()
    {
        const QJsonArray waiting = pendingApprovals(*m_daemon);
        for (const QJsonValue &v : waiting) {
            const QJsonObject r = v.toObject();
            const QString id = r.value(QStringLiteral("id")).toString();
            if (m_approved.contains(id) || m_denied.contains(id))
                continue;
            const QByteArray argv = QJsonDocument(r.value(QStringLiteral("argv")).toArray()).toJson()
                + QJsonDocument(r.value(QStringLiteral("arguments")).toObject()).toJson();
            if (argv.contains("ignored"))
                continue;
            const bool forbidden = argv.contains("forbidden");
            const CliResult answered = forbidden ? m_daemon->ctl(args("deny", id, "--reason", "not on my machine"))
                                                 : m_daemon->ctl(args("approve", id));
            if (answered.exitCode == 0)
                (forbidden ? m_denied : m_approved).append(id);
        }
    }

    // Runs a scenario of client.mjs to its end, answering approvals meanwhile; its last line.
    QJsonObject runClient(const QString &scenario, const QStringList &mcpArgs = {})
    {
        QProcess node;
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("AIRLOCKCTL"), binDir() + QStringLiteral("/airlockctl"));
        env.insert(QStringLiteral("AIRLOCK_MCP_ARGS"),
            QString::fromUtf8(
                QJsonDocument(QJsonArray::fromStringList(args("--no-autostart", "mcp", "--lease", "2s") + mcpArgs))
                    .toJson(QJsonDocument::Compact)));
        node.setProcessEnvironment(env);
        node.setWorkingDirectory(clientDir());
        node.start(QStringLiteral("node"), {clientDir() + QStringLiteral("/client.mjs"), scenario});
        QTimer approver;
        connect(&approver, &QTimer::timeout, this, [this] { answerApprovals(); });
        approver.start(100);
        const bool ended = waitFor([&] { return node.state() == QProcess::NotRunning; }, 150000);
        approver.stop();
        if (!ended)
            node.kill();
        const QByteArray out = node.readAllStandardOutput(), err = node.readAllStandardError();
        const QList<QByteArray> lines = out.trimmed().split('\n');
        const QJsonObject last = jsonObject(lines.last());
        if (!ended || node.exitCode() != 0 || !last.value(QStringLiteral("ok")).toBool())
            qWarning().noquote() << "client.mjs" << scenario << "exit" << node.exitCode() << "\nstdout:" << out
                                 << "\nstderr:" << err.right(6000);
        return last;
    }

    // A server written to directly: one line in, the replies out.
    struct Raw {
        QProcess process;
        QByteArray buffer; // read, not yet taken
        QJsonObject next()
        {
            waitFor(
                [&] {
                    buffer += process.readAllStandardOutput();
                    return buffer.contains('\n');
                },
                10000);
            const qsizetype end = buffer.indexOf('\n');
            const QByteArray line = buffer.left(end);
            buffer.remove(0, end + 1);
            return jsonObject(line);
        }
        // Writes one line (or several); returns the last of that many replies.
        QJsonObject send(const QByteArray &line, int replies = 1)
        {
            process.write(line + '\n');
            QJsonObject reply;
            for (int i = 0; i < replies; ++i)
                reply = next();
            return reply;
        }
    };
    std::unique_ptr<Raw> rawServer()
    {
        auto raw = std::make_unique<Raw>();
        raw->process.setProcessEnvironment(m_daemon->environment());
        raw->process.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "mcp"));
        raw->process.waitForStarted();
        return raw;
    }
    static QByteArray initialize(const char *version)
    {
        return QByteArray("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"")
            + version + "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw-client\",\"version\":\"0\"}}}";
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(clientDir() + QStringLiteral("/node_modules/@modelcontextprotocol/sdk/package.json")),
            "the MCP SDK is not installed: run 'npm ci --prefix tests/mcp' (installer/test.sh does)");
        // The host tool shipped in resources/tools, and a sandbox of the person's that may call it
        // when they say so.
        QVERIFY(m_tools.isValid());
        QVERIFY(QFile::copy(QStringLiteral(AIRLOCK_SOURCE_DIR "/resources/tools/package.version.json"),
            m_tools.filePath(QStringLiteral("package.version.json"))));
        m_daemon = std::make_unique<TestDaemon>(args("--tools", m_tools.path(), "--approval-timeout", "2s"));
        QVERIFY(m_daemon->start());
        QString error;
        QVERIFY2(
            m_daemon->create(args("--name", "persons-own"), &error) == QLatin1String("persons-own"), qPrintable(error));
        const CliResult tooled = m_daemon->ctl(args("create", "--name", "tooled", "--policy", "-"),
            "{\"tools\": {\"package.version\": {\"decision\": \"ask\"}}}");
        QVERIFY2(tooled.exitCode == 0, qPrintable(tooled.describe()));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // Everything an agent does in a session, through the SDK; then the run in the history.
    void anAgentSessionThroughTheSdk()
    {
        QVERIFY(runClient(QStringLiteral("session")).value(QStringLiteral("ok")).toBool());
        QCOMPARE(m_denied.size(), 1);
        QVERIFY(m_approved.size() >= 3); // the shell loop, mkdir, seq

        // One run for the session, named after the client; what it ran, and what it was refused.
        QString run;
        for (const QJsonValue &v :
            jsonObject(m_daemon->ctl(args("runs", "--json")).out).value(QStringLiteral("runs")).toArray())
            if (v.toObject().value(QStringLiteral("name")).toString().startsWith(QLatin1String("airlock-test-agent-")))
                run = v.toObject().value(QStringLiteral("name")).toString();
        QVERIFY2(!run.isEmpty(), m_daemon->ctl(args("runs", "--json")).out.constData());
        const QJsonArray executions = jsonObject(m_daemon->ctl(args("history", "--run", run, "--json")).out)
                                          .value(QStringLiteral("executions"))
                                          .toArray();
        QStringList commands, refused;
        for (const QJsonValue &v : executions) {
            const QJsonObject e = v.toObject();
            const QString command = e.value(QStringLiteral("argv")).toArray().last().toString();
            if (e.value(QStringLiteral("exec")).isDouble())
                commands.prepend(command);
            else // never ran: a row of its own, with who asked and who refused
                refused.prepend(command + QLatin1Char('|') + e.value(QStringLiteral("status")).toString()
                    + QLatin1Char('|') + e.value(QStringLiteral("agent")).toString());
        }
        QCOMPARE(commands.first(), QStringLiteral("hello"));
        QVERIFY2(commands.contains(QStringLiteral("for i in 1 2 3; do echo tick $i; sleep 0.3; done")),
            qPrintable(commands.join(QLatin1Char('|'))));
        QVERIFY2(!commands.join(QLatin1Char('|')).contains(QLatin1String("forbidden")),
            qPrintable(commands.join(QLatin1Char('|'))));
        QCOMPARE(refused,
            QStringList({QStringLiteral("touch forbidden|denied|airlock-test-agent"),
                QStringLiteral("touch ignored|unanswered|airlock-test-agent")}));
        auto client = m_daemon->connect();
        auto events = client->call(QStringLiteral("history.events"),
            {{QStringLiteral("run"), run}, {QStringLiteral("kinds"), QJsonArray{QStringLiteral("approval.")}}});
        QVERIFY(events);
        const QByteArray recorded = QJsonDocument(*events).toJson(QJsonDocument::Compact);
        QVERIFY2(recorded.contains("\"requester\":\"airlock-test-agent\"") && recorded.contains("not on my machine"),
            recorded.left(4000).constData());
        // The sandbox it deleted is gone; the person's own was never touched.
        QVERIFY(!m_daemon->ctl(args("ls")).out.contains("agent-box"));
        QVERIFY(m_daemon->ctl(args("ls")).out.contains("persons-own"));
    }

    // A host tool the person's shared sandbox may call is an MCP tool; its calls wait for them.
    void hostToolsAreToolsToo()
    {
        const int approved = int(m_approved.size());
        // Shared by an id prefix, as a person may: still theirs, not the session's to delete.
        const QString prefix = jsonObject(m_daemon->ctl(args("info", "tooled", "--json")).out)
                                   .value(QStringLiteral("id"))
                                   .toString()
                                   .left(6);
        const QJsonObject last = runClient(QStringLiteral("tools"), args("--sandbox") + QStringList{prefix});
        QVERIFY(last.value(QStringLiteral("ok")).toBool());
        QCOMPARE(m_approved.size(), approved + 1);
        QVERIFY(m_daemon->ctl(args("ls")).out.contains("tooled"));
        auto client = m_daemon->connect();
        auto events = client->call(QStringLiteral("history.events"),
            {{QStringLiteral("sandbox"), QStringLiteral("tooled")},
                {QStringLiteral("kinds"), QJsonArray{QStringLiteral("approval.decided")}}});
        QVERIFY(events);
        const QByteArray recorded = QJsonDocument(*events).toJson(QJsonDocument::Compact);
        QVERIFY2(recorded.contains(
                     QByteArray("\"id\":\"" + last.value(QStringLiteral("withdrawn")).toString().toLatin1() + "\""))
                && recorded.contains("\"reason\":\"withdrawn by airlock-test-agent\""),
            recorded.constData());
    }

    // An agent over MCP, in a sandbox of the person's shared with it (sh run.sh allowed, curl
    // denied), tries the ways around the command rules: curl three levels down, through a path
    // the daemon cannot look up, as a script's #! interpreter, behind env. Each is refused in its
    // execve and recorded with the rule or reason that stopped it.
    void theWaysAroundTheRulesFailOverMcpToo()
    {
        const CliResult made = m_daemon->ctl(args("create", "--name", "judged", "--policy", "-"),
            R"({"commands": {"rules": [{"decision": "allow", "command": "sh run.sh"}, {"decision": "deny", "command": "curl"}]}})");
        QVERIFY2(made.exitCode == 0, qPrintable(made.describe()));
        const QJsonObject last = runClient(QStringLiteral("bypasses"), args("--sandbox", "judged"));
        QVERIFY2(last.value(QStringLiteral("ok")).toBool(), QJsonDocument(last).toJson().constData());
        auto client = m_daemon->connect();
        auto events = client->call(QStringLiteral("history.events"),
            {{QStringLiteral("sandbox"), QStringLiteral("judged")},
                {QStringLiteral("kinds"), QJsonArray{QStringLiteral("exec.program")}}});
        QVERIFY(events);
        QStringList byRule, byReason;
        for (const QJsonValue &v : events->value(QStringLiteral("events")).toArray()) {
            const QJsonObject p = v.toObject().value(QStringLiteral("payload")).toObject();
            if (p.value(QStringLiteral("decision")) != QLatin1String("deny"))
                continue;
            const QString argv0 = p.value(QStringLiteral("argv")).toArray().first().toString();
            if (p.value(QStringLiteral("rule")) == QLatin1String("curl"))
                byRule.append(argv0);
            else
                byReason.append(argv0 + QStringLiteral(": ") + p.value(QStringLiteral("reason")).toString());
        }
        byRule.sort();
        QCOMPARE(byRule,
            (QStringList{
                QStringLiteral("c2"), QStringLiteral("curl"), QStringLiteral("curl")})); // d2.py's, the #! one, env's
        QCOMPARE(byReason.size(), 1);
        QVERIFY2(byReason.first().startsWith(QLatin1String("c1: "))
                && byReason.first().contains(QLatin1String("cannot be opened to check it")),
            qPrintable(byReason.first()));
    }

    // The person's preset and hosts, given when the session starts; the agent gets no more.
    void presetsAndHostsAreThePersons()
    {
        QVERIFY(runClient(QStringLiteral("person"), args("--preset", "package-install", "--allow", "pypi.org"))
                    .value(QStringLiteral("ok"))
                    .toBool());
        const CliResult info = m_daemon->ctl(args("policy", "show", "with-host", "--effective", "--json"));
        QVERIFY2(info.out.contains("\"pypi.org\""), info.out.constData());
    }

    // What the console's "Connect an agent" gives a person to paste: each client's text says the
    // same command, read back with the tools those clients read it with (a shell, Python's TOML
    // reader, a JSON parser), and that command is a session the SDK client drives with the preset
    // and hosts chosen.
    void theConsolesAgentConfigurationsStartThatSession()
    {
        mcp::AgentSetup setup;
        setup.program = binDir() + QStringLiteral("/airlockctl");
        setup.preset = QStringLiteral("package-install");
        auto hosts = mcp::parseAllowedHosts(QStringLiteral("https://PyPI.org/simple/"));
        QVERIFY(hosts);
        QCOMPARE(*hosts, QStringList{QStringLiteral("pypi.org:443")});
        hosts = mcp::parseAllowedHosts(QStringLiteral("pypi.org, pypi.org"));
        QCOMPARE(*hosts, QStringList{QStringLiteral("pypi.org")});
        setup.allow = *hosts;
        const QStringList expected = QStringList{setup.program} + setup.arguments();
        QCOMPARE(setup.arguments(), args("mcp", "--preset", "package-install", "--allow", "pypi.org"));
        QHash<int, QString> text;
        for (const mcp::AgentConfig &c : mcp::agentConfigs(setup))
            text.insert(int(c.client), c.text);
        auto run = [](const QString &program, const QStringList &arguments, const QByteArray &input) {
            QProcess p;
            p.start(program, arguments);
            p.write(input);
            p.closeWriteChannel();
            p.waitForFinished(10000);
            return QString::fromUtf8(p.readAllStandardOutput()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        };
        // Claude Code: a shell line; the words after `--` are the command.
        const QString claude = text.value(int(mcp::AgentClient::ClaudeCode));
        QVERIFY2(claude.startsWith(QLatin1String("claude mcp add airlock -- ")), qPrintable(claude));
        QCOMPARE(run(QStringLiteral("sh"), args("-c", "eval \"set -- $(cat)\"; shift 5; printf '%s\\n' \"$@\""),
                     claude.toUtf8()),
            expected);
        // Codex: TOML, as Python reads it.
        QCOMPARE(run(QStringLiteral("python3"),
                     args("-c",
                         "import sys, tomllib; s = tomllib.loads(sys.stdin.read())['mcp_servers']['airlock']; "
                         "print(s['command']); [print(a) for a in s['args']]"),
                     text.value(int(mcp::AgentClient::Codex)).toUtf8()),
            expected);
        // Cursor, VS Code and the rest: JSON.
        for (const auto &[client, key] : {std::pair{mcp::AgentClient::Cursor, "mcpServers"},
                 {mcp::AgentClient::VsCode, "servers"}, {mcp::AgentClient::Generic, "mcpServers"}}) {
            const QJsonObject server = QJsonDocument::fromJson(text.value(int(client)).toUtf8())
                                           .object()
                                           .value(QLatin1String(key))
                                           .toObject()
                                           .value(QStringLiteral("airlock"))
                                           .toObject();
            QStringList argv{server.value(QStringLiteral("command")).toString()};
            for (const QJsonValue &a : server.value(QStringLiteral("args")).toArray())
                argv.append(a.toString());
            QCOMPARE(argv, expected);
        }
        QCOMPARE(QJsonDocument::fromJson(text.value(int(mcp::AgentClient::VsCode)).toUtf8())
                     .object()
                     .value(QStringLiteral("servers"))
                     .toObject()
                     .value(QStringLiteral("airlock"))
                     .toObject()
                     .value(QStringLiteral("type"))
                     .toString(),
            QStringLiteral("stdio"));
        // A path with a space and a quote stays one word everywhere.
        setup.program = QStringLiteral("/opt/my tools/air'lock/airlockctl");
        for (const mcp::AgentConfig &c : mcp::agentConfigs(setup))
            text.insert(int(c.client), c.text);
        QCOMPARE(run(QStringLiteral("sh"), args("-c", "eval \"set -- $(cat)\"; shift 5; printf '%s\\n' \"$1\""),
                     text.value(int(mcp::AgentClient::ClaudeCode)).toUtf8()),
            QStringList{setup.program});
        QCOMPARE(
            run(QStringLiteral("python3"),
                args("-c",
                    "import sys, tomllib; print(tomllib.loads(sys.stdin.read())['mcp_servers']['airlock']['command'])"),
                text.value(int(mcp::AgentClient::Codex)).toUtf8()),
            QStringList{setup.program});
        // What is not a host is said, not used.
        const auto bad = mcp::parseAllowedHosts(QStringLiteral("pypi.org ftp://x"));
        QVERIFY(!bad);
        QVERIFY2(bad.error().message.startsWith(QLatin1String("'ftp://x' is not a URL with a host and a port")),
            qPrintable(bad.error().message));
        QVERIFY(!mcp::parseAllowedHosts(QStringLiteral("exa mple..com")));

        // The session those texts start, driven by the SDK: the preset and host took effect.
        for (const char *name : {"with-preset", "with-host"})
            m_daemon->ctl(args("rm", name));
        QVERIFY(runClient(QStringLiteral("person"), setup.arguments().mid(1)).value(QStringLiteral("ok")).toBool());
        QVERIFY(
            m_daemon->ctl(args("policy", "show", "with-host", "--effective", "--json")).out.contains("\"pypi.org\""));
    }

    // Cancelling a call kills its execution, and the session goes on.
    void aCancelledCallKillsItsExecution()
    {
        const QJsonObject last
            = runClient(QStringLiteral("cancel"), args("--run", "cancelled-work")); // a run named by the person
        QVERIFY(last.value(QStringLiteral("ok")).toBool());
        const QString execution = last.value(QStringLiteral("execution")).toString();
        const CliResult shown = m_daemon->ctl(args("show", "--json") + QStringList{execution});
        const QJsonObject e = jsonObject(shown.out);
        QVERIFY2(e.value(QStringLiteral("status")).toString() == QLatin1String("killed")
                && e.value(QStringLiteral("signal")).toInt() == 9,
            shown.out.constData());
        QVERIFY2(qint64(e.value(QStringLiteral("endedMs")).toDouble())
                    - qint64(e.value(QStringLiteral("startedMs")).toDouble())
                < 10000,
            shown.out.constData());
        QCOMPARE(e.value(QStringLiteral("run")).toString(), QStringLiteral("cancelled-work"));
        // The request cancelled while it waited was withdrawn at once, not left to time out.
        const QString withdrawn = last.value(QStringLiteral("withdrawn")).toString();
        auto client = m_daemon->connect();
        auto events = client->call(QStringLiteral("history.events"),
            {{QStringLiteral("run"), QStringLiteral("cancelled-work")},
                {QStringLiteral("kinds"), QJsonArray{QStringLiteral("approval.decided")}}});
        QVERIFY(events);
        const QByteArray recorded = QJsonDocument(*events).toJson(QJsonDocument::Compact);
        QVERIFY2(recorded.contains(QByteArray("\"id\":\"" + withdrawn.toLatin1() + "\""))
                && recorded.contains("\"reason\":\"withdrawn by airlock-test-agent\""),
            recorded.constData());
    }

    // A client that leaves mid-command: the server kills it, says so in the history and exits.
    void aClientThatLeavesTakesItsCommandsWithIt()
    {
        const QJsonObject last = runClient(QStringLiteral("disconnect"));
        QVERIFY(last.value(QStringLiteral("ok")).toBool());
        QVERIFY2(last.value(QStringLiteral("closeMs")).toInt() < 2000,
            "the server took the SDK's SIGTERM path, not end of input");
        const QString execution = last.value(QStringLiteral("execution")).toString();
        const CliResult shown = m_daemon->ctl(args("show", "--json") + QStringList{execution});
        const QJsonObject e = jsonObject(shown.out);
        QVERIFY2(e.value(QStringLiteral("status")).toString() == QLatin1String("killed"), shown.out.constData());
    }

    void malformedMessagesGetPreciseErrors()
    {
        auto raw = rawServer();
        QJsonObject r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");
        QCOMPARE(r.value(QStringLiteral("id")).toInt(), 7);
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(), -32600);
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("send initialize first"));
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":8,");
        QVERIFY(r.value(QStringLiteral("id")).isNull());
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(), -32700);
        QVERIFY(r.value(QStringLiteral("error"))
                    .toObject()
                    .value(QStringLiteral("message"))
                    .toString()
                    .startsWith(QLatin1String("not JSON: ")));
        r = raw->send("[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]");
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("batches are not part of MCP: send one message per line"));
        r = raw->send("{\"jsonrpc\":\"1.0\",\"id\":\"x\",\"method\":\"ping\"}");
        QCOMPARE(r.value(QStringLiteral("id")).toString(), QStringLiteral("x"));
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("\"jsonrpc\" must be \"2.0\""));
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":{\"no\":1},\"method\":\"ping\"}");
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("\"id\" must be a string or an integer"));
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-"
                      "06-18\"}}");
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(), -32602);
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("params.clientInfo.name: expected the client's name"));
        QCOMPARE(
            raw->send("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}").value(QStringLiteral("result")).toObject(),
            QJsonObject{}); // ping at any time

        // An older revision is spoken as such: no titles or output schemas.
        r = raw->send(initialize("2024-11-05"));
        QCOMPARE(r.value(QStringLiteral("result")).toObject().value(QStringLiteral("protocolVersion")).toString(),
            QStringLiteral("2024-11-05"));
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\"}");
        const QJsonObject exec
            = r.value(QStringLiteral("result")).toObject().value(QStringLiteral("tools")).toArray().at(2).toObject();
        QCOMPARE(exec.value(QStringLiteral("name")).toString(), QStringLiteral("sandbox_exec"));
        QVERIFY(!exec.contains(QStringLiteral("outputSchema")) && !exec.contains(QStringLiteral("title")));
        r = raw->send(initialize("2024-11-05"));
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("already initialized"));
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"resources/list\"}");
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toInt(), -32601);
        r = raw->send("{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/"
                      "call\",\"params\":{\"name\":\"sandbox_list\",\"arguments\":[1]}}");
        QCOMPARE(r.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("params.arguments: expected an object"));

        // End of input: a clean exit.
        raw->process.closeWriteChannel();
        QVERIFY(raw->process.waitForFinished(5000));
        QCOMPARE(raw->process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(raw->process.exitCode(), 0);
    }

    void anUnknownRevisionGetsTheLatest()
    {
        auto raw = rawServer();
        const QJsonObject r = raw->send(initialize("1999-01-01"));
        QCOMPARE(r.value(QStringLiteral("result")).toObject().value(QStringLiteral("protocolVersion")).toString(),
            QStringLiteral("2025-11-25"));
        QCOMPARE(r.value(QStringLiteral("result"))
                     .toObject()
                     .value(QStringLiteral("serverInfo"))
                     .toObject()
                     .value(QStringLiteral("version"))
                     .toString(),
            airlock::version());
        raw->process.closeWriteChannel();
        QVERIFY(raw->process.waitForFinished(5000));
    }

    // Lines that arrive while initialize waits for the daemon wait their turn: each request is
    // answered once, in order (they once re-entered initialize and crashed the server). A
    // client's name with spaces becomes a name the daemon takes.
    void requestsInOneWriteAreEachAnsweredOnce()
    {
        auto raw = rawServer();
        QByteArray burst = QByteArray(initialize("2025-11-25")).replace("raw-client", "Visual Studio Code") + '\n';
        for (int id = 2; id <= 6; ++id)
            burst += "{\"jsonrpc\":\"2.0\",\"id\":" + QByteArray::number(id) + ",\"method\":\"ping\"}\n";
        burst += "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/"
                 "call\",\"params\":{\"name\":\"sandbox_create\",\"arguments\":{\"name\":\"raw-box\"}}}";
        const QJsonObject last = raw->send(burst, 7);
        QCOMPARE(last.value(QStringLiteral("id")).toInt(), 7);
        QVERIFY2(!last.value(QStringLiteral("result")).toObject().value(QStringLiteral("isError")).toBool(),
            QJsonDocument(last).toJson().constData());
        QTest::qWait(300);
        const QByteArray rest = raw->buffer + raw->process.readAllStandardOutput();
        QVERIFY2(rest.isEmpty(), rest.constData()); // nothing answered twice
        QVERIFY(m_daemon->ctl(args("runs")).out.contains("Visual-Studio-Code-"));

        // At most 8 calls at once; the ninth is told to wait. A request id in use is refused on no id.
        QByteArray calls;
        for (int id = 10; id <= 18; ++id)
            calls += "{\"jsonrpc\":\"2.0\",\"id\":" + QByteArray::number(id)
                + ",\"method\":\"tools/"
                  "call\",\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox\":\"raw-box\",\"command\":"
                  "\"touch ignored\"}}}\n";
        calls += "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}";
        const QJsonObject ninth = raw->send(calls);
        QCOMPARE(ninth.value(QStringLiteral("id")).toInt(), 18);
        QCOMPARE(ninth.value(QStringLiteral("result"))
                     .toObject()
                     .value(QStringLiteral("content"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QStringLiteral("text"))
                     .toString(),
            QStringLiteral("8 calls are already in progress: wait for one to finish"));
        const QJsonObject reused = raw->next();
        QVERIFY2(reused.value(QStringLiteral("id")).isNull(), QJsonDocument(reused).toJson().constData());
        QCOMPARE(reused.value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString(),
            QStringLiteral("request id 10 is already in use by a call in progress"));
        raw->process.closeWriteChannel();
        QVERIFY(raw->process.waitForFinished(10000));
        QCOMPARE(raw->process.exitCode(), 0);
    }
};

QTEST_MAIN(TestMcp)
#include "tst_mcp.moc"
