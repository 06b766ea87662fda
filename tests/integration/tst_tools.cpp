// SPDX-License-Identifier: Apache-2.0
// Host tools, with the two examples shipped in resources/tools: git.status (a command, argv only)
// and email.send (an HTTP request with the tool's own key from the secret store), reaching a real
// git repository and a real HTTP server on loopback. Every call is validated against the tool's
// schema, decided by the sandbox's policy (with argument constraints), asked about when the policy
// says so, and recorded.
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
    QString m_repo;

    CliResult call(const char *tool, const QByteArray &json, const QStringList &global = {}) const
    {
        return m_daemon->ctl(global + args("tool", "call", "tl", tool, "-"), json);
    }
    std::unique_ptr<QProcess> callInBackground(const char *tool, const QByteArray &json) const
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "--agent", "bot", "tool", "call", "tl", tool, QString::fromUtf8(json)));
        return p;
    }
    QJsonObject waitForRequest() const
    {
        QJsonObject found;
        waitFor([&] {
            found = jsonObject(m_daemon->ctl(args("approvals", "--json")).out).value(QStringLiteral("approvals")).toArray().first().toObject();
            return !found.isEmpty();
        }, 10000);
        return found;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_mail = std::make_unique<LoopbackServer>("mail");
        // The shipped declarations; only the mail API's address is this test's.
        const QString tools = m_tmp.filePath(QStringLiteral("tools"));
        QVERIFY(QDir().mkpath(tools));
        const QString shipped = QStringLiteral(AIRLOCK_SOURCE_DIR "/resources/tools/");
        QVERIFY(QFile::copy(shipped + QStringLiteral("git.status.json"), tools + QStringLiteral("/git.status.json")));
        QFile mail(shipped + QStringLiteral("email.send.json"));
        QVERIFY(mail.open(QIODevice::ReadOnly));
        QByteArray declaration = mail.readAll();
        QVERIFY(declaration.contains("http://127.0.0.1:8025/"));
        declaration.replace("http://127.0.0.1:8025/", QByteArray("http://127.0.0.1:" + QByteArray::number(m_mail->port()) + '/'));
        QFile copy(tools + QStringLiteral("/email.send.json"));
        QVERIFY(copy.open(QIODevice::WriteOnly) && copy.write(declaration) == declaration.size());
        copy.close();
        // A broken declaration is left out, the rest still load.
        QFile broken(tools + QStringLiteral("/broken.json"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(R"({"name": "broken", "description": "x", "arguments": {"type": "object"}, "command": {"argv": ["sh", "-c", "{x}"]}})");
        broken.close();
        // A careless tool that prints its own credential.
        QFile leaky(tools + QStringLiteral("/env.dump.json"));
        QVERIFY(leaky.open(QIODevice::WriteOnly));
        leaky.write(R"({"name": "env.dump", "description": "Prints its environment", "arguments": {"type": "object", "additionalProperties": false},
                        "command": {"argv": ["/usr/bin/env"], "env": {"TOOL_KEY": "{secret:MAIL_API_KEY}"}}})");
        leaky.close();

        m_daemon = std::make_unique<TestDaemon>(args("--tools", tools, "--approval-timeout", "20s"));
        QVERIFY(m_daemon->start());
        QCOMPARE(m_daemon->ctl(args("secret", "set", "MAIL_API_KEY"), kMailKey + '\n').exitCode, 0);
        const CliResult created = m_daemon->ctl(args("create", "--name", "tl", "--policy", "-"), R"({"tools": {
            "git.status": {"decision": "allow"}, "env.dump": {"decision": "allow"},
            "email.send": {"decision": "ask", "constraints": {"to": "*@example.com"}}}})");
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));

        m_repo = m_tmp.filePath(QStringLiteral("repo"));
        QVERIFY(QDir().mkpath(m_repo));
        QCOMPARE(QProcess::execute(QStringLiteral("git"), args("-C", m_repo, "init", "-q", "-b", "main")), 0);
        QFile f(m_repo + QStringLiteral("/notes.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void theSandboxSeesWhatItMayCall()
    {
        const CliResult r = m_daemon->ctl(args("tool", "ls", "tl"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QList<QByteArray> lines = r.out.split('\n');
        QVERIFY2(lines.value(1).startsWith("email.send  ask       to=*@example.com"), r.out.constData());
        QVERIFY2(lines.value(2).startsWith("env.dump    allow     -"), r.out.constData());
        QVERIFY2(lines.value(3).startsWith("git.status  allow     -"), r.out.constData());
        QVERIFY2(!r.out.contains("broken"), r.out.constData());
        const QJsonArray tools = jsonObject(m_daemon->ctl(args("tool", "ls", "tl", "--json")).out).value(QStringLiteral("tools")).toArray();
        QCOMPARE(tools.first().toObject().value(QStringLiteral("inputSchema")).toObject().value(QStringLiteral("required")).toArray().size(), 3);
        // The broken one is in the daemon's log, with why.
        QFile log(m_daemon->rootDir() + QStringLiteral("/state/airlock/airlockd.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY2(log.readAll().contains("broken.json: /command/argv: expected a program by absolute path"), "no reason logged");
    }

    void anAllowedCommandToolRuns()
    {
        const CliResult r = call("git.status", QStringLiteral("{\"repository\": \"%1\"}").arg(m_repo).toUtf8());
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject result = jsonObject(r.out);
        QCOMPARE(result.value(QStringLiteral("exitCode")).toInt(), 0);
        QCOMPARE(result.value(QStringLiteral("stdout")).toString(), QStringLiteral("## No commits yet on main\n?? notes.txt\n"));
    }

    void argumentsAreCheckedAgainstTheSchema_data()
    {
        QTest::addColumn<QByteArray>("arguments");
        QTest::addColumn<QByteArray>("error");
        QTest::newRow("wrong type") << QByteArray(R"({"repository": 5})") << QByteArray("airlockctl: git.status: /repository: expected string, got number\n");
        QTest::newRow("missing") << QByteArray("{}") << QByteArray("airlockctl: git.status: /repository: is required\n");
        QTest::newRow("unknown argument") << QByteArray(R"({"repository": "/tmp", "config": "x"})")
                                          << QByteArray("airlockctl: git.status: /config: is not an argument of this tool (expected: repository)\n");
        QTest::newRow("pattern") << QByteArray(R"({"repository": "-c core.pager=sh"})")
                                 << QByteArray("airlockctl: git.status: /repository: expected a string matching ^/\n");
    }
    void argumentsAreCheckedAgainstTheSchema()
    {
        QFETCH(QByteArray, arguments);
        QFETCH(QByteArray, error);
        const CliResult r = call("git.status", arguments);
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err, error);
    }

    void undeclaredAndUngrantedToolsAreRefused()
    {
        const CliResult unknown = call("shell.exec", "{}");
        QCOMPARE(unknown.exitCode, 3);
        QVERIFY2(unknown.err.contains("no tool named 'shell.exec' is declared"), qPrintable(unknown.describe()));
        QCOMPARE(m_daemon->ctl(args("create", "--name", "plain")).exitCode, 0);
        const CliResult ungranted = m_daemon->ctl(args("tool", "call", "plain", "git.status", "-"), QStringLiteral("{\"repository\": \"%1\"}").arg(m_repo).toUtf8());
        QCOMPARE(ungranted.exitCode, 6);
        QCOMPARE(ungranted.err, QByteArray("airlockctl: denied by policy: the policy does not give this sandbox the tool 'git.status'\n"));
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
        auto caller = callInBackground("email.send", R"({"to": "alice@example.com", "subject": "Build 42", "body": "green \u2713"})");
        const QJsonObject request = waitForRequest();
        QCOMPARE(request.value(QStringLiteral("kind")).toString(), QStringLiteral("tool"));
        QCOMPARE(request.value(QStringLiteral("tool")).toString(), QStringLiteral("email.send"));
        QCOMPARE(request.value(QStringLiteral("requester")).toString(), QStringLiteral("bot"));
        QVERIFY(m_daemon->ctl(args("approvals")).out.contains("  tool     email.send {\"body\":\"green \u2713\",\"subject\":\"Build 42\",\"to\":\"alice@example.com\"}"));
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
                 QJsonObject({{QStringLiteral("to"), QStringLiteral("alice@example.com")}, {QStringLiteral("subject"), QStringLiteral("Build 42")},
                              {QStringLiteral("text"), QStringLiteral("green \u2713")}}));
    }

    void aPersonCanDenyOrAllowAlways()
    {
        auto denied = callInBackground("email.send", R"({"to": "bob@example.com", "subject": "s", "body": "b"})");
        QJsonObject request = waitForRequest();
        QCOMPARE(m_daemon->ctl(args("deny", request.value(QStringLiteral("id")).toString(), "--reason", "not now")).exitCode, 0);
        QVERIFY(denied->waitForFinished(15000));
        QCOMPARE(denied->exitCode(), 6);
        QVERIFY(denied->readAllStandardError().endsWith(": not now\n"));

        auto always = callInBackground("email.send", R"({"to": "carol@example.com", "subject": "s", "body": "b"})");
        request = waitForRequest();
        QCOMPARE(m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString(), "--always")).exitCode, 0);
        QVERIFY(always->waitForFinished(15000));
        QCOMPARE(always->exitCode(), 0);
        // Allowed from now on, the constraint kept: another domain is still refused.
        const QJsonObject rule = jsonObject(m_daemon->ctl(args("policy", "show", "tl", "--json")).out)
                                     .value(QStringLiteral("policy")).toObject().value(QStringLiteral("tools")).toObject()
                                     .value(QStringLiteral("email.send")).toObject();
        QCOMPARE(rule, QJsonObject({{QStringLiteral("decision"), QStringLiteral("allow")},
                                    {QStringLiteral("constraints"), QJsonObject{{QStringLiteral("to"), QStringLiteral("*@example.com")}}}}));
        QCOMPARE(call("email.send", R"({"to": "dave@example.com", "subject": "s", "body": "b"})").exitCode, 0);
        QCOMPARE(call("email.send", R"({"to": "dave@evil.test", "subject": "s", "body": "b"})").exitCode, 6);
    }

    void codeInsideCallsThroughAirlockTool()
    {
        const auto inside = [&](const QString &script) { return execIn(*m_daemon, QStringLiteral("tl"), args("sh", "-c", script)); };
        CliResult r = inside(QStringLiteral("airlock-tool git.status '{\"repository\": \"%1\"}'").arg(m_repo));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(jsonObject(r.out).value(QStringLiteral("stdout")).toString(), QStringLiteral("## No commits yet on main\n?? notes.txt\n"));
        // The same refusals, with airlockctl's exit codes.
        r = inside(QStringLiteral("airlock-tool git.status '{\"repository\": 1}'"));
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err, QByteArray("airlock-tool: git.status: /repository: expected string, got number\n"));
        r = inside(QStringLiteral("airlock-tool email.send '{\"to\": \"x@evil.test\", \"subject\": \"s\", \"body\": \"b\"}'"));
        QCOMPARE(r.exitCode, 6);
        r = inside(QStringLiteral("echo '{\"repository\": \"/\"' | airlock-tool git.status -"));
        QCOMPARE(r.exitCode, 2); // not even JSON
        QCOMPARE(r.err, QByteArray("airlock-tool: expected {\"tool\": NAME, \"arguments\": {...}}\n"));
        // The tool's own key never comes back into the sandbox.
        r = inside(QStringLiteral("airlock-tool env.dump"));
        QVERIFY2(r.exitCode == 0 && !r.out.contains(kMailKey), qPrintable(r.describe()));
        QVERIFY2(r.out.contains("TOOL_KEY=[REDACTED"), qPrintable(r.describe()));
    }

    void aCallFromInsideCanWaitForAPerson()
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
                 args("--no-autostart", "exec", "tl", "-n", "--", "airlock-tool", "email.send", R"({"to": "erin@example.org", "subject": "s", "body": "b"})"));
        // (Not example.com: the "always" rule kept the constraint; this one is refused outright.)
        QVERIFY(p->waitForFinished(15000));
        QCOMPARE(p->exitCode(), 6);
        QCOMPARE(p->readAllStandardError(), QByteArray("airlock-tool: denied by policy: email.send: argument 'to' must match '*@example.com' (sandbox)\n"));
        const CliResult set = m_daemon->ctl(args("policy", "set", "tl", "-"), R"({"tools": {"email.send": {"decision": "ask"}}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        p->start(binDir() + QStringLiteral("/airlockctl"),
                 args("--no-autostart", "exec", "tl", "-n", "--", "airlock-tool", "email.send", R"({"to": "erin@example.org", "subject": "s", "body": "b"})"));
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
                deniedBy.append(QJsonDocument::fromJson(st.columnText(1).toUtf8()).object().value(QStringLiteral("by")).toString());
        }
        // Refused: 5 by the schema; by the policy the ungranted one (another sandbox) and four
        // constraints; 1 by a person. Ran: git.status twice, env.dump and 4 mails. (An undeclared
        // tool or a request that is not JSON is no call.)
        QCOMPARE(deniedBy.count(QStringLiteral("schema")), 5);
        QCOMPARE(deniedBy.count(QStringLiteral("policy")), 5);
        QCOMPARE(deniedBy.count(QStringLiteral("person")), 1);
        QCOMPARE(kinds.value(QStringLiteral("tool.finished")), 7);
        QCOMPARE(kinds.value(QStringLiteral("tool.requested")), 11 + 7);
        db->reset();
        QFile file(m_daemon->dataDir() + QStringLiteral("/history.db"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(!file.readAll().contains(kMailKey));
        QVERIFY(m_daemon->start());
    }
};

QTEST_GUILESS_MAIN(TestTools)
#include "tst_tools.moc"
