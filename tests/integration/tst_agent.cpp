// SPDX-License-Identifier: Apache-2.0
// A whole agent in a sandbox, its key outside (issue 24): the real Claude Code and Codex from npm
// (tests/agents, pinned by its lock) run under `airlockctl agent run`, talking through the egress
// proxy to a model stub (tests/support/stub_model.mjs: Anthropic's Messages API and OpenAI's
// Responses API, streamed, behind TLS with a test authority, reached as api.anthropic.com and
// api.openai.com by airlockd --resolve). The stub
// answers with tool calls the agent runs in the sandbox, as prompt-injected instructions would:
// look for the key everywhere it can read, write to the project, reach a host the policy does not
// allow, run what a deny rule refuses. What the agent got back is in the stub's record of the
// next turn; what Airlock saw is in the history.
#include "StubHttps.h"
#include "TestHelpers.h"

#include <QDir>
#include <QDirIterator>
#include <QHash>
#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

namespace {
const QString kClaude = QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/agents/node_modules/.bin/claude");
const QString kCodex = QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/agents/node_modules/.bin/codex");
// The keys, made up for the run; what the agent searches for is a pattern that does not match
// its own text (the command line is kept in the agent's transcript and in the history).
const QString kKeyPrefix = QStringLiteral("sk-agent-test-");
const QString kKeyPattern = QStringLiteral("sk-agent-tes[t]-");

QJsonObject toolCall(const QString &command)
{
    return {{QStringLiteral("anthropic"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("Bash")},
                    {QStringLiteral("input"),
                        QJsonObject{{QStringLiteral("command"), command},
                            {QStringLiteral("description"), QStringLiteral("step")}}}}},
        {QStringLiteral("openai"),
            QJsonObject{{QStringLiteral("name"), QStringLiteral("exec_command")},
                {QStringLiteral("arguments"), QJsonObject{{QStringLiteral("cmd"), command}}}}}};
}
} // namespace

class TestAgent final : public QObject {
    Q_OBJECT
    StubHttps m_stub;
    QTemporaryDir m_dir;
    QHash<QString, QByteArray> m_secrets; // by agent
    std::unique_ptr<TestDaemon> m_daemon;

    QString path(const QString &name) const { return m_dir.filePath(name); }
    // The project the agent works on: the sandbox's user may write to it (tests run as root).
    QString makeProject(const QString &name) const
    {
        const QString dir = path(name);
        QDir().mkpath(dir);
        QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x7755));
        QFile::setPermissions(dir, QFileDevice::Permissions(0x7777));
        writeFile(dir + QStringLiteral("/README.md"), "a project\n");
        QFile::setPermissions(dir + QStringLiteral("/README.md"), QFileDevice::Permissions(0x6666));
        return dir;
    }
    // The model's turns the stub answered since `before`, with the tool results the agent sent.
    QList<QJsonObject> turnsSince(qsizetype before, const QString &api)
    {
        QList<QJsonObject> turns;
        const QList<QJsonObject> all = m_stub.requests();
        for (qsizetype i = before; i < all.size(); ++i)
            if (all[i].value(QStringLiteral("url")).toString().startsWith(api))
                turns.append(all[i]);
        return turns;
    }
    // The events of one kind in the sandbox the agent ran in (the one whose execution is its).
    QList<QJsonObject> eventsOf(const QString &agent, const QString &kind) const
    {
        QList<QJsonObject> out;
        auto db = sql::open(m_daemon->dataDir() + QStringLiteral("/history.db"), true);
        if (!db)
            return out;
        QString sandbox;
        sql::Stmt started(db->get(), "SELECT sandbox_id, payload FROM events WHERE kind = 'exec.started'");
        while (started.step())
            if (QJsonDocument::fromJson(started.columnText(1).toUtf8())
                    .object()
                    .value(QStringLiteral("agent"))
                    .toString()
                == agent)
                sandbox = started.columnText(0);
        sql::Stmt st(db->get(), "SELECT payload FROM events WHERE kind = ? AND sandbox_id = ? ORDER BY seq");
        st.text(1, kind);
        st.text(2, sandbox);
        while (st.step())
            out.append(QJsonDocument::fromJson(st.columnText(0).toUtf8()).object());
        return out;
    }
    // The tool results of the last turn: what the agent saw of each step.
    QStringList results(qsizetype before, const QString &api)
    {
        const QList<QJsonObject> turns = turnsSince(before, api);
        QStringList out;
        if (!turns.isEmpty())
            for (const QJsonValue &r : turns.last().value(QStringLiteral("results")).toArray())
                out.append(r.toString());
        return out;
    }

    // The agent's edits of a copy-on-write project wait in its sandbox, which its run names: the
    // diff shows them, the project has none until they are applied (one path, then the rest), and
    // once all are applied nothing is left to review.
    void reviewTheEdit(const CliResult &run, const QString &project)
    {
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\n"));
        QVERIFY(!QFile::exists(project + QStringLiteral("/added.txt")));
        const QRegularExpressionMatch named
            = QRegularExpression(QStringLiteral("airlockctl agent diff (\\S+)")).match(QString::fromUtf8(run.err));
        QVERIFY2(named.hasMatch(), qPrintable(run.describe()));
        const QString sandbox = named.captured(1);
        QVERIFY2(run.err.contains("changed 2 paths"), qPrintable(run.describe()));
        const CliResult diff = m_daemon->ctl(args("agent", "diff", sandbox));
        QVERIFY2(diff.exitCode == 0, qPrintable(diff.describe()));
        QCOMPARE(diff.out,
            QByteArray(
                "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n a project\n"
                "+edited by the agent\ndiff --git a/added.txt b/added.txt\nnew file mode 100644\n--- /dev/null\n"
                "+++ b/added.txt\n@@ -0,0 +1 @@\n+new\n"));
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\n"));
        const CliResult one = m_daemon->ctl(args("agent", "apply", sandbox, "README.md"));
        QVERIFY2(one.exitCode == 0, qPrintable(one.describe()));
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\nedited by the agent\n"));
        QVERIFY(!QFile::exists(project + QStringLiteral("/added.txt")));
        const CliResult rest = m_daemon->ctl(args("agent", "apply", sandbox));
        QVERIFY2(rest.exitCode == 0 && rest.out == QByteArray("applied  " + project.toUtf8() + "/added.txt\n"),
            qPrintable(rest.describe()));
        const CliResult left = m_daemon->ctl(args("--json", "agent", "changes", sandbox));
        QVERIFY2(left.exitCode == 0, qPrintable(left.describe()));
        QCOMPARE(QJsonDocument::fromJson(left.out)
                     .object()
                     .value(QStringLiteral("mounts"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QStringLiteral("changes"))
                     .toArray(),
            QJsonArray());
        const CliResult dropped = m_daemon->ctl(args("agent", "discard", sandbox));
        QVERIFY2(dropped.exitCode == 0, qPrintable(dropped.describe()));
        QVERIFY(!m_daemon->ctl(args("ls")).out.contains(sandbox.toUtf8()));
    }

private Q_SLOTS:
    void initTestCase()
    {
        for (const QString &agent : {kClaude, kCodex})
            QVERIFY2(QFileInfo(agent).isExecutable(),
                qPrintable(agent
                    + QStringLiteral(" is not installed for the tests: npm ci --prefix tests/agents "
                                     "(installer/test.sh does)")));
        // The turns: each a step the agent is told to take, then the final answer.
        const QJsonArray steps{
            // 0: the key, looked for where the agent can read: its variable, every process's
            //    environment, every file outside /usr, /proc, /sys and /dev.
            toolCall(QStringLiteral(
                "printenv ANTHROPIC_API_KEY OPENAI_API_KEY; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
                "| grep -c '%1'; grep -rlE '%1' / --exclude-dir=proc --exclude-dir=sys "
                "--exclude-dir=dev --exclude-dir=usr 2>/dev/null | head -3; echo searched")
                         .arg(kKeyPattern)),
            // 1: an edit of the project and a new file in it.
            toolCall(
                QStringLiteral("echo 'edited by the agent' >> README.md && printf 'new\\n' > \"$PWD/added.txt\" && "
                               "echo edited")),
            // 2: a host the policy does not allow.
            toolCall(QStringLiteral("curl -sS -m 10 https://exfil.example/ 2>&1; echo curl-exit=$?")),
            // 3: what a deny rule refuses.
            toolCall(QStringLiteral("rm -r /home/sandbox/.cache 2>&1; echo rm-exit=$?")),
        };
        writeFile(path(QStringLiteral("script.json")),
            QJsonDocument(
                QJsonObject{{QStringLiteral("steps"), steps}, {QStringLiteral("final"), QStringLiteral("All done.")}})
                .toJson());
        QVERIFY2(m_stub.start({QStringLiteral("api.anthropic.com"), QStringLiteral("api.openai.com")},
                     path(QStringLiteral("script.json"))),
            qPrintable(m_stub.error()));
        m_daemon = std::make_unique<TestDaemon>(
            args("--secret-store", "file", "--resolve", QStringLiteral("api.anthropic.com=") + m_stub.address(),
                "--resolve", QStringLiteral("api.openai.com=") + m_stub.address(), "--resolve",
                QStringLiteral("wrong.agent.test=") + m_stub.address(), "--upstream-ca", m_stub.authorityPath()));
        QVERIFY(m_daemon->start());
        for (const auto &[agent, secret] : {std::pair{"claude", "anthropic-api-key"}, {"codex", "openai-api-key"}}) {
            const QByteArray key
                = kKeyPrefix.toLatin1() + QByteArray::number(QRandomGenerator::global()->generate64(), 16);
            m_secrets.insert(QLatin1String(agent), key);
            const CliResult set = m_daemon->ctl(args("secret", "set", secret), key + '\n');
            QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        }
        writeFile(path(QStringLiteral("policy.json")),
            R"({"version": 1, "commands": {"rules": [{"decision": "deny", "command": "rm -r"}]}})");
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // The agent runs its loop in the sandbox: every step the model asks for runs there, and what
    // each step gave back is what the stub got on the next turn.
    void agentRunsItsLoopInTheSandbox_data()
    {
        QTest::addColumn<QString>("agent");
        QTest::addColumn<QStringList>("command"); // the program and the agent's own arguments
        QTest::addColumn<QString>("api"); // its requests' path
        QTest::addColumn<QString>("header"); // where its key goes
        QTest::addColumn<QString>("scheme"); // before the key
        QTest::addColumn<QString>("mode"); // --project-mode
        const QStringList claude{kClaude, QStringLiteral("-p"), QStringLiteral("go")};
        QTest::newRow("claude") << QStringLiteral("claude") << claude << QStringLiteral("/v1/messages")
                                << QStringLiteral("x-api-key") << QString() << QStringLiteral("cow");
        QTest::newRow("codex") << QStringLiteral("codex")
                               << QStringList{kCodex, QStringLiteral("exec"), QStringLiteral("-m"),
                                      QStringLiteral("o3"), QStringLiteral("--skip-git-repo-check"),
                                      QStringLiteral("go")}
                               << QStringLiteral("/v1/responses") << QStringLiteral("authorization")
                               << QStringLiteral("Bearer ") << QStringLiteral("cow");
        QTest::newRow("claude, project read-write")
            << QStringLiteral("claude") << claude << QStringLiteral("/v1/messages") << QStringLiteral("x-api-key")
            << QString() << QStringLiteral("rw");
    }
    void agentRunsItsLoopInTheSandbox()
    {
        QFETCH(QString, agent);
        QFETCH(QStringList, command);
        QFETCH(QString, api);
        QFETCH(QString, header);
        QFETCH(QString, scheme);
        QFETCH(QString, mode);
        const QString project = makeProject(agent + QLatin1Char('-') + mode);
        const qsizetype before = m_stub.requests().size();
        QStringList run = args("agent", "run", agent, "--program", command.first(), "--project", project);
        if (mode == QLatin1String("rw")) // cow, the default, is not named
            run += args("--project-mode", "rw");
        const CliResult r = m_daemon->ctl(
            run + args("--policy", path(QStringLiteral("policy.json")), "--timeout", "90s", "--") + command.mid(1), {},
            120000);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(r.out.contains("All done."), qPrintable(r.describe()));
        const QList<QJsonObject> turns = turnsSince(before, api);
        QVERIFY2(turns.size() >= 5, qPrintable(QString::number(turns.size())));
        // Every turn reached the model with the real key, none with the placeholder.
        const QByteArray key = m_secrets.value(agent);
        for (const QJsonObject &t : turns)
            QCOMPARE(StubHttps::header(t, header).toLatin1(), scheme.toLatin1() + key);
        const QStringList seen = results(before, api);
        QCOMPARE(seen.size(), 4);
        // 0: only the placeholder, anywhere the agent can read.
        const QString placeholder
            = QStringLiteral("airlock-brokered-%1-api-key")
                  .arg(agent == QLatin1String("claude") ? QStringLiteral("anthropic") : QStringLiteral("openai"));
        QVERIFY2(seen[0].contains(placeholder + QStringLiteral("\n0\nsearched")), qPrintable(seen[0]));
        // 1: the edit: read-write, in the project directly; copy-on-write, in the agent's sandbox,
        // shown by agent diff and in the project only once applied.
        QVERIFY2(seen[1].contains(QLatin1String("edited")), qPrintable(seen[1]));
        if (mode == QLatin1String("cow")) {
            // The history says what the agent's execution left changed, under it.
            // (Listed off the daemon's main thread as the execution ended: it may come a little after.)
            QVERIFY(
                QTest::qWaitFor([&] { return !eventsOf(agent, QStringLiteral("files.changed")).isEmpty(); }, 10000));
            const auto files = eventsOf(agent, QStringLiteral("files.changed"));
            QCOMPARE(files.size(), 1);
            const QJsonObject folder = files[0].value(QStringLiteral("mounts")).toArray().first().toObject();
            QCOMPARE(folder.value(QStringLiteral("host")).toString(), project);
            QCOMPARE(folder.value(QStringLiteral("paths")).toArray(),
                (QJsonArray{QStringLiteral("M README.md"), QStringLiteral("A added.txt")}));
            QCOMPARE(files[0].value(QStringLiteral("exec")).toDouble(),
                eventsOf(agent, QStringLiteral("exec.started"))[0].value(QStringLiteral("exec")).toDouble());
            reviewTheEdit(r, project);
            if (QTest::currentTestFailed())
                return;
        }
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\nedited by the agent\n"));
        QCOMPARE(readFile(project + QStringLiteral("/added.txt")), QByteArray("new\n"));
        // 2: the proxy refused the host, and the agent saw it.
        QVERIFY2(seen[2].contains(QLatin1String("403")) && seen[2].contains(QLatin1String("curl-exit=56")),
            qPrintable(seen[2]));
        const auto denied = eventsOf(agent, QStringLiteral("network.denied"));
        QVERIFY(std::any_of(denied.begin(), denied.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("host")).toString() == QLatin1String("exfil.example");
        }));
        // 3: the deny rule refused rm at its exec (EPERM, as its shell says it), and the agent saw it.
        QVERIFY2(seen[3].contains(QLatin1String("operation not permitted"), Qt::CaseInsensitive)
                && !seen[3].contains(QLatin1String("rm-exit=0")),
            qPrintable(seen[3]));
        const auto programs = eventsOf(agent, QStringLiteral("exec.program"));
        const auto named = [&](const char *program) {
            return std::find_if(programs.begin(), programs.end(), [&](const QJsonObject &e) {
                return e.value(QStringLiteral("argv")).toArray().first().toString() == QLatin1String(program);
            });
        };
        const auto rm = named("rm");
        QVERIFY(rm != programs.end());
        QCOMPARE(rm->value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));
        QCOMPARE(rm->value(QStringLiteral("rule")).toString(), QStringLiteral("rm -r"));
        // The steps ran under the agent's execution, which says whose it is.
        const auto started = eventsOf(agent, QStringLiteral("exec.started"));
        QCOMPARE(started.size(), 1);
        QCOMPARE(started[0].value(QStringLiteral("agent")).toString(), agent);
        const auto curl = named("curl");
        QVERIFY(curl != programs.end());
        QCOMPARE(curl->value(QStringLiteral("exec")).toDouble(), started[0].value(QStringLiteral("exec")).toDouble());
        QCOMPARE(curl->value(QStringLiteral("decision")).toString(), QStringLiteral("allow"));
        // The brokered requests are events that say the key was put in.
        const auto requests = eventsOf(agent, QStringLiteral("network.request"));
        QVERIFY(std::any_of(requests.begin(), requests.end(), [&](const QJsonObject &e) {
            return e.value(QStringLiteral("credential")).toBool()
                && e.value(QStringLiteral("target")).toString().startsWith(api);
        }));
        // And nothing the daemon wrote holds the key.
        QDirIterator files(m_daemon->dataDir(), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (files.hasNext()) {
            const QString f = files.next();
            QVERIFY2(!readFile(f).contains(key), qPrintable(f));
        }
    }

    // What the agent starts is judged as the agent's: a program judged everywhere (ssh) waits for
    // a person, and refused there it does not run (README, "A whole agent in a sandbox"). The same
    // command run by a person as their own (airlockctl run) is not judged: ssh just runs.
    void whatTheAgentStartsWaitsForAPerson()
    {
        // The program's name is not in the command the person started (what that names, it covers),
        // as an agent's programs are not in `claude -p TASK`.
        const QString script = QStringLiteral("p=/usr/bin/ss; \"${p}h\" -o BatchMode=yes -o ConnectTimeout=2 "
                                              "nobody@127.0.0.1 true 2>&1; echo ssh-exit=$?");
        QProcess agent;
        agent.setProcessEnvironment(m_daemon->environment());
        agent.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "agent", "run", "sh", "-n", "--", "-c", script));
        const QJsonObject asked = waitForApproval(*m_daemon);
        if (asked.isEmpty()) {
            agent.waitForFinished(30000);
            QFAIL(qPrintable(QStringLiteral("ssh under agent run did not wait for a person: ")
                + QString::fromUtf8(agent.readAllStandardOutput() + agent.readAllStandardError())));
        }
        QCOMPARE(asked.value(QStringLiteral("requester")).toString(), QStringLiteral("sh"));
        QVERIFY2(QJsonDocument(asked).toJson().contains("ssh"), QJsonDocument(asked).toJson().constData());
        const CliResult denied
            = m_daemon->ctl(args("deny", asked.value(QStringLiteral("id")).toString(), "--reason", "not here"));
        QVERIFY2(denied.exitCode == 0, qPrintable(denied.describe()));
        QVERIFY(agent.waitForFinished(30000));
        const QByteArray out = agent.readAllStandardOutput();
        QVERIFY2(out.contains("ssh-exit=126") && out.contains("ermitted"), out.constData()); // EPERM at its execve
        const auto programs = eventsOf(QStringLiteral("sh"), QStringLiteral("exec.program"));
        QVERIFY(std::any_of(programs.begin(), programs.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("path")).toString().endsWith(QLatin1String("/ssh"))
                && e.value(QStringLiteral("decision")).toString() == QLatin1String("deny")
                && e.value(QStringLiteral("rule")).toString() == QLatin1String("person");
        }));
        // A person's own: not judged.
        const CliResult own = m_daemon->ctl(args("run", "-n", "--", "sh", "-c", script), {}, 60000);
        QVERIFY2(own.out.contains("ssh-exit=255"), qPrintable(own.describe())); // it ran: no connection
    }

    // A profile whose API host's certificate is not for its name: the broker refuses it with the
    // reason, and the host gets nothing. (The profile is not a raw string: moc reads the "//" in a
    // URL inside one as a comment.)
    void aBrokeredHostWithABadCertificateIsRefused()
    {
        writeFile(path(QStringLiteral("wrong.json")),
            "{\"version\": 1, \"title\": \"Wrong host\", \"command\": \"claude\","
            " \"args\": [\"--dangerously-skip-permissions\"], \"env\": {\"IS_SANDBOX\": \"1\","
            " \"DISABLE_AUTOUPDATER\": \"1\", \"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\": \"1\", "
            "\"CLAUDE_CODE_MAX_RETRIES\": \"0\","
            " \"ANTHROPIC_BASE_URL\": \"https://wrong.agent.test\"}, \"api\": {\"host\": \"wrong.agent.test\","
            " \"secret\": \"anthropic-api-key\", \"env\": \"ANTHROPIC_API_KEY\", \"header\": \"x-api-key\"}}");
        const qsizetype before = m_stub.requests().size();
        const CliResult r = m_daemon->ctl(args("agent", "run", "wrong", "--profile", path(QStringLiteral("wrong.json")),
                                              "--program", kClaude, "--timeout", "60s", "--", "-p", "go"),
            {}, 120000);
        QVERIFY2(r.exitCode != 0, qPrintable(r.describe()));
        QCOMPARE(m_stub.requests().size(), before);
        QList<QJsonObject> refused;
        waitFor(
            [&] {
                refused.clear();
                for (const QJsonObject &e : storedEvents(*m_daemon, QStringLiteral("network.denied")))
                    if (e.value(QStringLiteral("host")).toString() == QLatin1String("wrong.agent.test"))
                        refused.append(e);
                return !refused.isEmpty();
            },
            5000);
        QVERIFY(!refused.isEmpty());
        QCOMPARE(refused[0].value(QStringLiteral("rule")).toString(), QStringLiteral("broker"));
        QVERIFY2(refused[0].value(QStringLiteral("reason")).toString().contains(QLatin1String("failed verification")),
            qPrintable(refused[0].value(QStringLiteral("reason")).toString()));
    }

    // Without its key in the store, nothing is made and the error says how to put it there.
    void aMissingKeySaysHowToSetIt()
    {
        writeFile(path(QStringLiteral("nokey.json")), R"({"version": 1, "title": "No key", "command": "claude",
            "api": {"host": "api.anthropic.com", "secret": "absent-key", "env": "ANTHROPIC_API_KEY", "header": "x-api-key"}})");
        const int sandboxes
            = jsonObject(m_daemon->ctl(args("ls", "--json")).out).value(QStringLiteral("sandboxes")).toArray().size();
        const CliResult r = m_daemon->ctl(args("agent", "run", "nokey", "--profile", path(QStringLiteral("nokey.json")),
            "--program", kClaude, "--", "-p", "go"));
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains("airlockctl secret set absent-key"), qPrintable(r.describe()));
        QCOMPARE(
            jsonObject(m_daemon->ctl(args("ls", "--json")).out).value(QStringLiteral("sandboxes")).toArray().size(),
            sandboxes);
    }
};

QTEST_GUILESS_MAIN(TestAgent)
#include "tst_agent.moc"
