// SPDX-License-Identifier: Apache-2.0
// A whole agent in a sandbox, its key outside (issue 24): the real Claude Code from npm
// (tests/agents, pinned by its lock) runs under `airlockctl agent run claude`, talking through the
// egress proxy to a model stub (tests/support/stub_model.mjs: Anthropic's Messages API, streamed,
// behind TLS with a test authority, reached as api.anthropic.com by airlockd --resolve). The stub
// answers with tool calls the agent runs in the sandbox, as prompt-injected instructions would:
// look for the key everywhere it can read, write to the project, reach a host the policy does not
// allow, run what a deny rule refuses. What the agent got back is in the stub's record of the
// next turn; what Airlock saw is in the history.
#include "StubHttps.h"
#include "TestHelpers.h"

#include <QDir>
#include <QDirIterator>
#include <QJsonArray>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

namespace {
const QString kClaude = QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/agents/node_modules/.bin/claude");
const QByteArray kPlaceholder = "airlock-brokered-anthropic-api-key";
// The key, made up for the run; what the agent searches for is a pattern that does not match
// its own text (the command line is kept in the agent's transcript and in the history).
const QString kKeyPrefix = QStringLiteral("sk-agent-test-");
const QString kKeyPattern = QStringLiteral("sk-agent-tes[t]-");

QJsonObject toolCall(const QString &command)
{
    return {{QStringLiteral("anthropic"),
        QJsonObject{{QStringLiteral("name"), QStringLiteral("Bash")},
            {QStringLiteral("input"),
                QJsonObject{
                    {QStringLiteral("command"), command}, {QStringLiteral("description"), QStringLiteral("step")}}}}}};
}
} // namespace

class TestAgent final : public QObject {
    Q_OBJECT
    StubHttps m_stub;
    QTemporaryDir m_dir;
    QByteArray m_secret;
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
    QList<QJsonObject> turnsSince(qsizetype before)
    {
        QList<QJsonObject> turns;
        const QList<QJsonObject> all = m_stub.requests();
        for (qsizetype i = before; i < all.size(); ++i)
            if (all[i].value(QStringLiteral("url")).toString().startsWith(QLatin1String("/v1/messages")))
                turns.append(all[i]);
        return turns;
    }
    // The tool results of the last turn: what the agent saw of each step.
    QStringList results(qsizetype before)
    {
        const QList<QJsonObject> turns = turnsSince(before);
        QStringList out;
        if (!turns.isEmpty())
            for (const QJsonValue &r : turns.last().value(QStringLiteral("results")).toArray())
                out.append(r.toString());
        return out;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFileInfo(kClaude).isExecutable(),
            "Claude Code is not installed for the tests: npm ci --prefix tests/agents (installer/test.sh does)");
        const QString project = QFileInfo(path(QStringLiteral("project"))).fileName();
        const QString inSandbox = QStringLiteral("/project/") + project;
        // The turns: each a step the agent is told to take, then the final answer.
        const QJsonArray steps{
            // 0: the key, looked for where the agent can read: its variable, every process's
            //    environment, every file outside /usr, /proc, /sys and /dev.
            toolCall(QStringLiteral("printenv ANTHROPIC_API_KEY; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
                                    "| grep -c '%1'; grep -rlE '%1' / --exclude-dir=proc --exclude-dir=sys "
                                    "--exclude-dir=dev --exclude-dir=usr 2>/dev/null | head -3; echo searched")
                         .arg(kKeyPattern)),
            // 1: an edit of the project and a new file in it.
            toolCall(QStringLiteral("echo 'edited by the agent' >> README.md && printf 'new\\n' > %1/added.txt && echo "
                                    "edited")
                         .arg(inSandbox)),
            // 2: a host the policy does not allow.
            toolCall(QStringLiteral("curl -sS -m 10 https://exfil.example/ 2>&1; echo curl-exit=$?")),
            // 3: what a deny rule refuses.
            toolCall(QStringLiteral("rm -rf /home/sandbox/.claude 2>&1; echo rm-exit=$?")),
        };
        writeFile(path(QStringLiteral("script.json")),
            QJsonDocument(
                QJsonObject{{QStringLiteral("steps"), steps}, {QStringLiteral("final"), QStringLiteral("All done.")}})
                .toJson());
        QVERIFY2(m_stub.start({QStringLiteral("api.anthropic.com")}, path(QStringLiteral("script.json"))),
            qPrintable(m_stub.error()));
        m_secret = kKeyPrefix.toLatin1() + QByteArray::number(QRandomGenerator::global()->generate64(), 16);
        m_daemon = std::make_unique<TestDaemon>(args("--secret-store", "file", "--resolve",
            QStringLiteral("api.anthropic.com=") + m_stub.address(), "--resolve",
            QStringLiteral("wrong.agent.test=") + m_stub.address(), "--upstream-ca", m_stub.authorityPath()));
        QVERIFY(m_daemon->start());
        const CliResult set = m_daemon->ctl(args("secret", "set", "anthropic-api-key"), m_secret + '\n');
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        makeProject(QStringLiteral("project"));
        writeFile(path(QStringLiteral("policy.json")),
            R"({"version": 1, "commands": {"rules": [{"decision": "deny", "command": "rm -rf"}]}})");
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // The agent runs its loop in the sandbox: every step the model asks for runs there, and what
    // each step gave back is what the stub got on the next turn.
    void claudeRunsItsLoopInTheSandbox()
    {
        const qsizetype before = m_stub.requests().size();
        const CliResult r
            = m_daemon->ctl(args("agent", "run", "claude", "--program", kClaude, "--project",
                                path(QStringLiteral("project")), "--project-mode", "rw", "--policy",
                                path(QStringLiteral("policy.json")), "--timeout", "90s", "--", "-p", "go"),
                {}, 120000);
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out.trimmed(), QByteArray("All done."));
        const QList<QJsonObject> turns = turnsSince(before);
        QVERIFY2(turns.size() >= 5, qPrintable(QString::number(turns.size())));
        // Every turn reached the model with the real key, none with the placeholder.
        for (const QJsonObject &t : turns)
            QCOMPARE(StubHttps::header(t, QStringLiteral("x-api-key")).toLatin1(), m_secret);
        const QStringList seen = results(before);
        QCOMPARE(seen.size(), 4);
        // 0: only the placeholder, anywhere the agent can read.
        QCOMPARE(seen[0].trimmed(), QString::fromLatin1(kPlaceholder + "\n0\nsearched"));
        // 1: the edit landed in the project (read-write: directly).
        QCOMPARE(seen[1].trimmed(), QStringLiteral("edited"));
        QCOMPARE(readFile(path(QStringLiteral("project/README.md"))), QByteArray("a project\nedited by the agent\n"));
        QCOMPARE(readFile(path(QStringLiteral("project/added.txt"))), QByteArray("new\n"));
        // 2: the proxy refused the host, and the agent saw it.
        QVERIFY2(seen[2].contains(QLatin1String("403")) && seen[2].contains(QLatin1String("curl-exit=56")),
            qPrintable(seen[2]));
        const auto denied = storedEvents(*m_daemon, QStringLiteral("network.denied"));
        QVERIFY(std::any_of(denied.begin(), denied.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("host")).toString() == QLatin1String("exfil.example");
        }));
        // 3: the deny rule refused rm at its exec (EPERM, as its shell says it), and the agent saw it.
        QVERIFY2(seen[3].contains(QLatin1String("operation not permitted"), Qt::CaseInsensitive)
                && !seen[3].contains(QLatin1String("rm-exit=0")),
            qPrintable(seen[3]));
        const auto programs = storedEvents(*m_daemon, QStringLiteral("exec.program"));
        const auto rm = std::find_if(programs.begin(), programs.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("argv")).toArray().first().toString() == QLatin1String("rm");
        });
        QVERIFY(rm != programs.end());
        QCOMPARE(rm->value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));
        QCOMPARE(rm->value(QStringLiteral("rule")).toString(), QStringLiteral("rm -rf"));
        // The steps ran under the agent's execution, which says whose it is.
        const auto started = storedEvents(*m_daemon, QStringLiteral("exec.started"));
        QVERIFY(!started.isEmpty());
        QCOMPARE(started.last().value(QStringLiteral("agent")).toString(), QStringLiteral("claude"));
        const double agentExec = started.last().value(QStringLiteral("exec")).toDouble();
        const auto curl = std::find_if(programs.begin(), programs.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("argv")).toArray().first().toString() == QLatin1String("curl");
        });
        QVERIFY(curl != programs.end());
        QCOMPARE(curl->value(QStringLiteral("exec")).toDouble(), agentExec);
        QCOMPARE(curl->value(QStringLiteral("decision")).toString(), QStringLiteral("allow"));
        // The brokered requests are events that say the key was put in.
        const auto requests = storedEvents(*m_daemon, QStringLiteral("network.request"));
        QVERIFY(std::any_of(requests.begin(), requests.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("host")).toString() == QLatin1String("api.anthropic.com")
                && e.value(QStringLiteral("credential")).toBool()
                && e.value(QStringLiteral("target")).toString().startsWith(QLatin1String("/v1/messages"));
        }));
        // And nothing the daemon wrote holds the key.
        QDirIterator files(m_daemon->dataDir(), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (files.hasNext()) {
            const QString f = files.next();
            QVERIFY2(!readFile(f).contains(m_secret), qPrintable(f));
        }
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
