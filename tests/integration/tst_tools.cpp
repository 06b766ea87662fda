// SPDX-License-Identifier: Apache-2.0
// Host tools, with the two examples shipped in resources/tools: package.version (a command, argv
// only: dpkg-query) and email.send (an HTTP request with the tool's own key from the secret store),
// reaching the host's real package database and a real HTTP server on loopback. Every call is validated against the
// tool's schema, decided by the sandbox's policy (with argument constraints), asked about when the policy says so, and
// recorded.
#include "LoopbackServer.h"
#include "TestHelpers.h"
#include "history/Sql.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

namespace {
const QByteArray kMailKey = "mk-9d1e0c5b77a24f3e";
}

class TestTools final : public QObject {
    Q_OBJECT
    std::unique_ptr<LoopbackServer> m_mail;
    std::unique_ptr<TestDaemon> m_daemon;
    QTemporaryDir m_tmp;
    QString m_bashLine; // "bash 5.2.15-2+b8 ii \n"

    CliResult call(const char *tool, const QByteArray &json, const QStringList &global = {}) const
    {
        return m_daemon->ctl(global + args("tool", "call", "tl", tool, "-"), json);
    }
    std::unique_ptr<QProcess> callInBackground(const char *tool, const QByteArray &json) const
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "tool", "call", "tl", tool, QString::fromUtf8(json)));
        return p;
    }
    QJsonObject waitForRequest() const { return waitForApproval(*m_daemon); }

private Q_SLOTS:
    void initTestCase()
    {
        m_mail = std::make_unique<LoopbackServer>("mail");
        // The shipped declarations; only the mail API's address is this test's.
        const QString tools = m_tmp.filePath(QStringLiteral("tools"));
        QVERIFY(QDir().mkpath(tools));
        const QString shipped = QStringLiteral(AIRLOCK_SOURCE_DIR "/resources/tools/");
        QVERIFY(QFile::copy(
            shipped + QStringLiteral("package.version.json"), tools + QStringLiteral("/package.version.json")));
        QFile mail(shipped + QStringLiteral("email.send.json"));
        QVERIFY(mail.open(QIODevice::ReadOnly));
        QByteArray declaration = mail.readAll();
        QVERIFY(declaration.contains("http://127.0.0.1:8025/"));
        declaration.replace(
            "http://127.0.0.1:8025/", QByteArray("http://127.0.0.1:" + QByteArray::number(m_mail->port()) + '/'));
        QFile copy(tools + QStringLiteral("/email.send.json"));
        QVERIFY(copy.open(QIODevice::WriteOnly) && copy.write(declaration) == declaration.size());
        copy.close();
        // A broken declaration is left out, the rest still load.
        QFile broken(tools + QStringLiteral("/broken.json"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(
            R"({"name": "broken", "description": "x", "arguments": {"type": "object"}, "command": {"argv": ["sh", "-c", "{x}"]}})");
        broken.close();
        // A careless tool that prints its own credential.
        QFile leaky(tools + QStringLiteral("/env.dump.json"));
        QVERIFY(leaky.open(QIODevice::WriteOnly));
        leaky.write(
            R"({"name": "env.dump", "description": "Prints its environment", "arguments": {"type": "object", "additionalProperties": false},
                        "command": {"argv": ["/usr/bin/env"], "env": {"TOOL_KEY": "{secret:MAIL_API_KEY}"}}})");
        leaky.close();
        // One that prints more than a frame into the sandbox can carry.
        QFile big(tools + QStringLiteral("/big.output.json"));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.write(
            R"({"name": "big.output", "description": "Prints a lot", "arguments": {"type": "object"}, "command": {"argv": ["/usr/bin/seq", "1", "400000"]}})");
        big.close();
        // An HTTP tool with an argument in its path.
        QFile notes(tools + QStringLiteral("/notes.add.json"));
        QVERIFY(notes.open(QIODevice::WriteOnly));
        // (No raw string here: moc reads the // of a URL in one as a comment.)
        notes.write("{\"name\": \"notes.add\", \"description\": \"Adds a note to a project\", \"arguments\": "
                    "{\"type\": \"object\", "
                    "\"required\": [\"project\"], \"properties\": {\"project\": {\"type\": \"string\"}}}, \"http\": "
                    "{\"url\": \"http:/"
                    "/127.0.0.1:"
            + QByteArray::number(m_mail->port()) + "/api/projects/{project}/notes\"}}");
        notes.close();

        m_daemon = std::make_unique<TestDaemon>(args("--tools", tools, "--approval-timeout", "20s"));
        QVERIFY(m_daemon->start());
        QCOMPARE(m_daemon->ctl(args("secret", "set", "MAIL_API_KEY"), kMailKey + '\n').exitCode, 0);
        // The same suite under each runtime: ctest runs it again as tst_tools_gvisor, and the test
        // daemon's create then asks for gVisor (TestDaemon::ctl).
        const CliResult created = m_daemon->ctl(args("create", "--name", "tl", "--policy", "-"), R"({"tools": {
            "package.version": {"decision": "allow"}, "env.dump": {"decision": "allow"}, "big.output": {"decision": "allow"},
            "notes.add": {"decision": "allow"},
            "email.send": {"decision": "ask", "constraints": {"to": "*@example.com"}}}})");
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));

        // What the tool should answer, asked directly.
        QProcess dpkg;
        dpkg.start(QStringLiteral("dpkg-query"),
            args("--show", "--showformat=${Package} ${Version} ${db:Status-Abbrev}\\n", "--", "bash"));
        QVERIFY(dpkg.waitForFinished());
        m_bashLine = QString::fromUtf8(dpkg.readAllStandardOutput());
        QVERIFY(m_bashLine.startsWith(QLatin1String("bash ")));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void theSandboxSeesWhatItMayCall()
    {
        const CliResult r = m_daemon->ctl(args("tool", "ls", "tl"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QByteArray> lines = r.out.split('\n');
        QVERIFY2(lines.value(1).startsWith("big.output       allow     -"), r.out.constData());
        QVERIFY2(lines.value(2).startsWith("email.send       ask       to=*@example.com"), r.out.constData());
        QVERIFY2(lines.value(3).startsWith("env.dump         allow     -"), r.out.constData());
        QVERIFY2(lines.value(5).startsWith("package.version  allow     -"), r.out.constData());
        QVERIFY2(!r.out.contains("broken"), r.out.constData());
        const QJsonArray tools = jsonObject(m_daemon->ctl(args("tool", "ls", "tl", "--json")).out)
                                     .value(QStringLiteral("tools"))
                                     .toArray();
        const auto email = std::find_if(tools.begin(), tools.end(), [](const QJsonValue &t) {
            return t.toObject().value(QStringLiteral("name")) == QStringLiteral("email.send");
        });
        QVERIFY(email != tools.end());
        QCOMPARE((*email)
                     .toObject()
                     .value(QStringLiteral("inputSchema"))
                     .toObject()
                     .value(QStringLiteral("required"))
                     .toArray()
                     .size(),
            3);
        // The broken one is in the daemon's log, with why.
        QFile log(m_daemon->rootDir() + QStringLiteral("/state/airlock/airlockd.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY2(log.readAll().contains("broken.json: /command/argv: expected a program by absolute path"),
            "no reason logged");
    }

    void anAllowedCommandToolRuns()
    {
        const CliResult r = call("package.version", R"({"package": "bash"})");
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject result = jsonObject(r.out);
        QCOMPARE(result.value(QStringLiteral("exitCode")).toInt(), 0);
        QCOMPARE(result.value(QStringLiteral("stdout")).toString(), m_bashLine);
        // The tool's own failure is the caller's to see: exit code and stderr, airlockctl exits 1.
        const CliResult missing = call("package.version", R"({"package": "no-such-package-here"})");
        QCOMPARE(missing.exitCode, 1);
        QCOMPARE(jsonObject(missing.out).value(QStringLiteral("stderr")).toString(),
            QStringLiteral("dpkg-query: no packages found matching no-such-package-here\n"));
    }

    void argumentsAreCheckedAgainstTheSchema_data()
    {
        QTest::addColumn<QByteArray>("arguments");
        QTest::addColumn<QByteArray>("error");
        QTest::newRow("wrong type") << QByteArray(
            R"({"package": 5})") << QByteArray("airlockctl: package.version: /package: expected string, got number\n");
        QTest::newRow("missing") << QByteArray("{}")
                                 << QByteArray("airlockctl: package.version: /package: is required\n");
        QTest::newRow("unknown argument")
            << QByteArray(R"({"package": "bash", "admindir": "/tmp"})")
            << QByteArray(
                   "airlockctl: package.version: /admindir: is not an argument of this tool (expected: package)\n");
        QTest::newRow("an option for an argument")
            << QByteArray(R"({"package": "--admindir=/tmp"})")
            << QByteArray(
                   "airlockctl: package.version: /package: expected a string matching ^[a-z0-9][a-z0-9+.-]{0,99}$\n");
    }
    void argumentsAreCheckedAgainstTheSchema()
    {
        QFETCH(QByteArray, arguments);
        QFETCH(QByteArray, error);
        const CliResult r = call("package.version", arguments);
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err, error);
    }

    void undeclaredAndUngrantedToolsAreRefused()
    {
        const CliResult unknown = call("shell.exec", "{}");
        QCOMPARE(unknown.exitCode, 3);
        QVERIFY2(unknown.err.contains("no tool named 'shell.exec' is declared"), qPrintable(unknown.describe()));
        QCOMPARE(m_daemon->ctl(args("create", "--name", "plain")).exitCode, 0);
        const CliResult ungranted
            = m_daemon->ctl(args("tool", "call", "plain", "package.version", "-"), R"({"package": "bash"})");
        QCOMPARE(ungranted.exitCode, 6);
        QCOMPARE(ungranted.err,
            QByteArray(
                "airlockctl: denied by policy: the policy does not give this sandbox the tool 'package.version'\n"));
        m_daemon->ctl(args("rm", "plain"));
    }

    void aConstraintDeniesOtherArguments()
    {
        const int before = m_mail->accepted();
        const CliResult r = call("email.send", R"({"to": "boss@evil.test", "subject": "hi", "body": "x"})");
        QCOMPARE(r.exitCode, 6);
        QVERIFY2(r.err.contains("argument 'to' must match '*@example.com'"), qPrintable(r.describe()));
        QCOMPARE(m_mail->accepted(), before);
    }

    void anAskedCallRunsOnceApprovedWithTheToolsOwnKey()
    {
        auto caller = callInBackground(
            "email.send", R"({"to": "alice@example.com", "subject": "Build 42", "body": "green \u2713"})");
        const QJsonObject request = waitForRequest();
        QCOMPARE(request.value(QStringLiteral("kind")).toString(), QStringLiteral("tool"));
        QCOMPARE(request.value(QStringLiteral("tool")).toString(), QStringLiteral("email.send"));
        QCOMPARE(request.value(QStringLiteral("requester")).toString(), QStringLiteral("bot"));
        QVERIFY(m_daemon->ctl(args("approvals"))
                    .out.contains("  tool     email.send {\"body\":\"green \u2713\",\"subject\":\"Build "
                                  "42\",\"to\":\"alice@example.com\"}"));
        QCOMPARE(m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(caller->waitForFinished(15000));
        QCOMPARE(caller->exitCode(), 0);
        const QJsonObject result = jsonObject(caller->readAllStandardOutput());
        QCOMPARE(result.value(QStringLiteral("status")).toInt(), 200);
        // What the mail API got: the declared request, the arguments as JSON values, the key.
        const QByteArray head = m_mail->heads().last();
        QVERIFY2(head.startsWith("POST /api/v1/send HTTP/1.1\r\n"), head.constData());
        QVERIFY2(head.contains(QByteArray("\r\nAuthorization: Bearer " + kMailKey)), head.constData());
        QCOMPARE(QJsonDocument::fromJson(m_mail->bodies().last()).object(),
            QJsonObject({{QStringLiteral("to"), QStringLiteral("alice@example.com")},
                {QStringLiteral("subject"), QStringLiteral("Build 42")},
                {QStringLiteral("text"), QStringLiteral("green \u2713")}}));
    }

    void aPersonCanDenyOrAllowAlways()
    {
        auto denied = callInBackground("email.send", R"({"to": "bob@example.com", "subject": "s", "body": "b"})");
        QJsonObject request = waitForRequest();
        QCOMPARE(
            m_daemon->ctl(args("deny", request.value(QStringLiteral("id")).toString(), "--reason", "not now")).exitCode,
            0);
        QVERIFY(denied->waitForFinished(15000));
        QCOMPARE(denied->exitCode(), 6);
        QVERIFY(denied->readAllStandardError().endsWith(": not now\n"));

        auto always = callInBackground("email.send", R"({"to": "carol@example.com", "subject": "s", "body": "b"})");
        request = waitForRequest();
        QCOMPARE(
            m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString(), "--always")).exitCode, 0);
        QVERIFY(always->waitForFinished(15000));
        QCOMPARE(always->exitCode(), 0);
        // Allowed from now on, the constraint kept: another domain is still refused.
        const QJsonObject rule = jsonObject(m_daemon->ctl(args("policy", "show", "tl", "--json")).out)
                                     .value(QStringLiteral("policy"))
                                     .toObject()
                                     .value(QStringLiteral("tools"))
                                     .toObject()
                                     .value(QStringLiteral("email.send"))
                                     .toObject();
        QCOMPARE(rule,
            QJsonObject({{QStringLiteral("decision"), QStringLiteral("allow")},
                {QStringLiteral("constraints"),
                    QJsonObject{{QStringLiteral("to"), QStringLiteral("*@example.com")}}}}));
        QCOMPARE(call("email.send", R"({"to": "dave@example.com", "subject": "s", "body": "b"})").exitCode, 0);
        QCOMPARE(call("email.send", R"({"to": "dave@evil.test", "subject": "s", "body": "b"})").exitCode, 6);
    }

    void codeInsideCallsThroughAirlockTool()
    {
        const auto inside
            = [&](const QString &script) { return execIn(*m_daemon, QStringLiteral("tl"), args("sh", "-c", script)); };
        CliResult r = inside(QStringLiteral("airlock-tool package.version '{\"package\": \"bash\"}'"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(jsonObject(r.out).value(QStringLiteral("stdout")).toString(), m_bashLine);
        // The same refusals, with airlockctl's exit codes.
        r = inside(QStringLiteral("airlock-tool package.version '{\"package\": 1}'"));
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err, QByteArray("airlock-tool: package.version: /package: expected string, got number\n"));
        r = inside(
            QStringLiteral("airlock-tool email.send '{\"to\": \"x@evil.test\", \"subject\": \"s\", \"body\": \"b\"}'"));
        QCOMPARE(r.exitCode, 6);
        r = inside(QStringLiteral("echo '{\"package\": \"bash\"' | airlock-tool package.version -"));
        QCOMPARE(r.exitCode, 2); // not even JSON
        QCOMPARE(r.err, QByteArray("airlock-tool: expected {\"tool\": NAME, \"arguments\": {...}}\n"));
        // The tool's own key never comes back into the sandbox.
        r = inside(QStringLiteral("airlock-tool env.dump"));
        QVERIFY2(r.exitCode == 0 && !r.out.contains(kMailKey), qPrintable(r.describe()));
        QVERIFY2(r.out.contains("TOOL_KEY=[REDACTED"), qPrintable(r.describe()));
    }

    void argumentsCannotMoveARequestOrOverflowTheSandbox()
    {
        const int before = m_mail->accepted();
        const CliResult ok = call("notes.add", R"({"project": "a/b c"})");
        QVERIFY2(ok.exitCode == 0, qPrintable(ok.describe()));
        QVERIFY2(m_mail->heads().last().startsWith("POST /api/projects/a%2Fb%20c/notes HTTP/1.1\r\n"),
            m_mail->heads().last().constData());
        for (const char *step : {R"({"project": ".."})", R"({"project": "."})"}) {
            const CliResult r = call("notes.add", step);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("it would change the URL's path"), qPrintable(r.describe()));
        }
        QCOMPARE(m_mail->accepted(), before + 1);
        // More output than one frame into the sandbox: cut, said so, and the sandbox lives on.
        const CliResult r = execIn(*m_daemon, QStringLiteral("tl"), args("airlock-tool", "big.output"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject result = jsonObject(r.out);
        QVERIFY(result.value(QStringLiteral("truncated")).toBool());
        QVERIFY(result.value(QStringLiteral("stdout")).toString().startsWith(QStringLiteral("1\n2\n3\n")));
        QCOMPARE(execIn(*m_daemon, QStringLiteral("tl"), args("echo", "alive")).out, QByteArray("alive\n"));
    }

    void aCallFromInsideCanWaitForAPerson()
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", "tl", "-n", "--", "airlock-tool", "email.send",
                R"({"to": "erin@example.org", "subject": "s", "body": "b"})"));
        // (Not example.com: the "always" rule kept the constraint; this one is refused outright.)
        QVERIFY(p->waitForFinished(15000));
        QCOMPARE(p->exitCode(), 6);
        QCOMPARE(p->readAllStandardError(),
            QByteArray(
                "airlock-tool: denied by policy: email.send: argument 'to' must match '*@example.com' (sandbox)\n"));
        const CliResult set
            = m_daemon->ctl(args("policy", "set", "tl", "-"), R"({"tools": {"email.send": {"decision": "ask"}}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", "tl", "-n", "--", "airlock-tool", "email.send",
                R"({"to": "erin@example.org", "subject": "s", "body": "b"})"));
        const QJsonObject request = waitForRequest();
        QCOMPARE(request.value(QStringLiteral("requester")).toString(), QStringLiteral("a process in the sandbox"));
        QCOMPARE(m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(p->waitForFinished(15000));
        QCOMPARE(p->exitCode(), 0);
        QCOMPARE(jsonObject(p->readAllStandardOutput()).value(QStringLiteral("status")).toInt(), 200);
    }

    void everyCallIsRecordedAndTheKeyIsNot()
    {
        m_daemon->stop();
        auto db = sql::open(m_daemon->dataDir() + QStringLiteral("/history.db"), true);
        QVERIFY(db);
        sql::Stmt st(db->get(), "SELECT kind, payload FROM events WHERE kind LIKE 'tool.%' ORDER BY sandbox_id, seq");
        QMap<QString, int> kinds;
        QStringList deniedBy;
        while (st.step()) {
            kinds[st.columnText(0)] += 1;
            if (st.columnText(0) == QLatin1String("tool.denied"))
                deniedBy.append(
                    QJsonDocument::fromJson(st.columnText(1).toUtf8()).object().value(QStringLiteral("by")).toString());
        }
        // Refused: 5 by the schema; by the policy the ungranted one (another sandbox) and four
        // constraints; 1 by a person. Ran: package.version three times, env.dump and 4 mails. (An undeclared
        // tool or a request that is not JSON is no call.)
        QCOMPARE(deniedBy.count(QStringLiteral("schema")), 5);
        QCOMPARE(deniedBy.count(QStringLiteral("policy")), 5);
        QCOMPARE(deniedBy.count(QStringLiteral("person")), 1);
        // Also: notes.add once, and big.output; the two dot-steps were refused by the runner.
        QCOMPARE(kinds.value(QStringLiteral("tool.finished")), 8 + 4);
        QCOMPARE(kinds.value(QStringLiteral("tool.requested")), 11 + 8 + 4);
        db->reset();
        QFile file(m_daemon->dataDir() + QStringLiteral("/history.db"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(!file.readAll().contains(kMailKey));
        QVERIFY(m_daemon->start());
    }
};

QTEST_GUILESS_MAIN(TestTools)
#include "tst_tools.moc"
