// SPDX-License-Identifier: Apache-2.0
// airlockctl run (issue 23, item 4): a sandbox made for one command, as one request (sandbox.run),
// that goes with its command; and the next one made ahead, nobody's and reachable by nobody until
// a run that would be made the same takes it. What is attacked: reaching the one made ahead
// before it is taken, getting one made under defaults the person has since tightened, a refused
// or abandoned agent's one-shot left behind, and one made ahead that a killed daemon leaves running.
#include "OutliveFixture.h"
#include "TestHelpers.h"
#include "history/Sql.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// The sandbox ids among a daemon's workspaces (spares of a workspace alone are left out).
QStringList workspaceIds(const QString &dir)
{
    static const QRegularExpression id(QStringLiteral("^[0-9a-f]{12}$"));
    QStringList ids;
    for (const QString &entry : sandboxWorkspaces(dir, QDir::Dirs | QDir::NoDotAndDotDot))
        if (id.match(entry).hasMatch())
            ids.append(entry);
    return ids;
}

// One column of the first row of a query on the daemon's history with one text parameter.
QString historyText(const TestDaemon &d, const char *query, const QString &param)
{
    auto db = sql::open(d.dataDir() + QStringLiteral("/history.db"), true);
    if (!db)
        return QStringLiteral("no history");
    sql::Stmt st(db->get(), query);
    st.text(1, param);
    return st.step() ? st.columnText(0) : QStringLiteral("no row");
}

qint64 initOf(const TestDaemon &d, const QString &id)
{
    return qint64(recordOf(d, id).value(QStringLiteral("init")).toObject().value(QStringLiteral("pid")).toDouble());
}
} // namespace

class TestOneShot final : public QObject {
    Q_OBJECT

    // Where `d` keeps workspaces: learnt from a sandbox made and removed again.
    static QString workspacesOf(const TestDaemon &d)
    {
        const QJsonObject probe = jsonObject(d.ctl(args("create", "--json")).out);
        (void)d.ctl(args("rm", probe.value(QStringLiteral("id")).toString()));
        return QFileInfo(probe.value(QStringLiteral("workspace")).toString()).path();
    }
    // The one made ahead once the last one-shot went: its id, or empty after 10 s.
    static QString madeAhead(const QString &workspaces, const QStringList &besides = {})
    {
        QString found;
        waitFor(
            [&] {
                for (const QString &id : workspaceIds(workspaces))
                    if (!besides.contains(id))
                        found = id;
                return !found.isEmpty();
            },
            10000);
        return found;
    }
    // An agent's airlockctl run of `command`, started (its command asks a person).
    static std::unique_ptr<QProcess> agentRun(const TestDaemon &d, const QStringList &command)
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(d.environment());
        p->start(
            binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "--agent", "bot", "run", "--") + command);
        return p;
    }
    static CliResult ctlAs(const TestDaemon &d, const QString &run, const QStringList &a)
    {
        QProcess p;
        QProcessEnvironment env = d.environment();
        env.insert(QStringLiteral("AIRLOCK_RUN"), run);
        p.setProcessEnvironment(env);
        p.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart") + a);
        CliResult r;
        if (!p.waitForFinished(60000))
            return r;
        r.exitCode = p.exitCode();
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        return r;
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (underGvisor())
            QSKIP("one-shots are made ahead for bubblewrap's sandboxes only");
    }

    void aOneShotGoesWithItsCommandAndTheNextIsMadeAhead()
    {
        // (Sandboxes outlive this daemon: they have records, and the one made ahead must not.)
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        const QString workspaces = workspacesOf(d);
        QVERIFY2(QFileInfo(workspaces).isDir(), qPrintable(workspaces));
        QCOMPARE(workspaceIds(workspaces), QStringList());

        // One request: exit code and output exact, and once the client has its exit, nothing of
        // the sandbox is left: not listed, its workspace gone, deleted in the history.
        const CliResult first = d.ctl(args("run", "--json", "--", "sh", "-c", "echo hi; exit 4"));
        QVERIFY2(first.exitCode == 4, qPrintable(first.describe()));
        const QJsonObject ran = jsonObject(first.out);
        QCOMPARE(ran.value(QStringLiteral("stdout")).toString(), QStringLiteral("hi\n"));
        const QString id = ran.value(QStringLiteral("sandbox")).toString();
        QVERIFY2(
            QRegularExpression(QStringLiteral("^[0-9a-f]{12}$")).match(id).hasMatch(), qPrintable(first.describe()));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        QCOMPARE(d.ctl(args("info", id)).exitCode, 3);
        QVERIFY(!workspaceIds(workspaces).contains(id));
        QVERIFY(waitFor(
            [&] {
                return historyText(d, "SELECT deleted_ms IS NOT NULL FROM sandboxes WHERE id = ?", id)
                    == QLatin1String("1");
            },
            5000));

        // The next one like it is made ahead, and is nobody's: not listed, not found by its id
        // or a prefix of it, nothing can run in it, and nothing of it is in the history yet.
        const QString warm = madeAhead(workspaces, {id});
        QVERIFY2(!warm.isEmpty(), "no sandbox was made ahead after the one-shot ended");
        QVERIFY(waitFor([&] { return initOf(d, warm) > 0; }, 10000)); // it runs (its record names its init)
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        for (const QString &ref : {warm, warm.left(4)}) {
            const CliResult info = d.ctl(args("info", ref));
            QCOMPARE(info.exitCode, 3);
            const CliResult exec = d.ctl(args("exec", ref, "--", "true"));
            QCOMPARE(exec.exitCode, 3);
            QVERIFY2(exec.err.contains("no sandbox named"), qPrintable(exec.describe()));
            QCOMPARE(d.ctl(args("cp", "/etc/hostname", ref + QStringLiteral(":/workspace/x"))).exitCode, 3);
        }
        QCOMPARE(historyText(d, "SELECT count(*) FROM sandboxes WHERE id = ?", warm), QStringLiteral("0"));

        // The next one-shot takes it, as the run that asked: its creation is recorded then.
        const qint64 askedAt = QDateTime::currentMSecsSinceEpoch();
        const CliResult second = ctlAs(d, QStringLiteral("taker"), args("run", "--json", "--", "hostname"));
        QVERIFY2(second.exitCode == 0, qPrintable(second.describe()));
        QCOMPARE(jsonObject(second.out).value(QStringLiteral("sandbox")).toString(), warm);
        QCOMPARE(historyText(d, "SELECT r.name FROM sandboxes s JOIN runs r ON r.id = s.run_id WHERE s.id = ?", warm),
            QStringLiteral("taker"));
        QVERIFY(historyText(d, "SELECT created_ms FROM sandboxes WHERE id = ?", warm).toLongLong() >= askedAt);
        QCOMPARE(storedEvents(d, QStringLiteral("sandbox.created")).size(), 3); // the probe, the first and this one
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);

        // A named one is never made ahead (a name is asked for once), and is gone as well.
        const QString third = madeAhead(workspaces, {id});
        const CliResult named = d.ctl(args("run", "--name", "once", "--", "hostname"));
        QVERIFY2(named.exitCode == 0, qPrintable(named.describe()));
        QCOMPARE(named.out, QByteArray("once\n"));
        QCOMPARE(d.ctl(args("info", "once")).exitCode, 3);
        QVERIFY2(workspaceIds(workspaces).contains(third), "the named one-shot took the one made ahead");

        // The daemon stops: the one made ahead goes with it, workspace and all (others go on).
        const qint64 init = initOf(d, third);
        d.stop();
        QVERIFY(!processRunning(init));
        QCOMPARE(workspaceIds(workspaces), QStringList());
    }

    // The person tightens their defaults after a one-shot was made ahead under the old ones: the
    // next run is made under the new ones, and the old one is not used.
    void aOneShotMadeAheadUnderOtherDefaultsIsNotTaken()
    {
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        const QString workspaces = workspacesOf(d);
        const QString defaults = d.configDir() + QStringLiteral("/policy.json");
        const auto writeDefaults = [&](const QByteArray &json) {
            QFile f(defaults);
            return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(json) == json.size();
        };
        QVERIFY(writeDefaults(R"({"limits": {"tmpBytes": 67108864}})"));
        const QStringList tmpSize
            = args("run", "--json", "--", "sh", "-c", "df -k /tmp | tail -1 | tr -s ' ' | cut -d' ' -f2");
        const CliResult larger = d.ctl(tmpSize);
        QCOMPARE(jsonObject(larger.out).value(QStringLiteral("stdout")).toString(), QStringLiteral("65536\n"));
        const QString warm
            = madeAhead(workspaces, {jsonObject(larger.out).value(QStringLiteral("sandbox")).toString()});
        QVERIFY(!warm.isEmpty());
        QVERIFY(waitFor([&] { return initOf(d, warm) > 0; }, 10000));
        const qint64 warmInit = initOf(d, warm);

        QVERIFY(writeDefaults(R"({"limits": {"tmpBytes": 33554432}})"));
        const CliResult smaller = d.ctl(tmpSize);
        QVERIFY2(smaller.exitCode == 0, qPrintable(smaller.describe()));
        QCOMPARE(jsonObject(smaller.out).value(QStringLiteral("stdout")).toString(), QStringLiteral("32768\n"));
        QVERIFY(jsonObject(smaller.out).value(QStringLiteral("sandbox")).toString() != warm);
        // The one made under the old defaults is gone, not kept for later.
        QVERIFY(waitFor([&] { return !processRunning(warmInit) && !workspaceIds(workspaces).contains(warm); }, 5000));
        QCOMPARE(historyText(d, "SELECT count(*) FROM sandboxes WHERE id = ?", warm), QStringLiteral("0"));
    }

    // An agent's one-shot that does not run leaves no sandbox: refused by a rule, or abandoned
    // while it waits for a person. And it cannot ask for more than the person's defaults.
    void anAgentsOneShotThatDoesNotRunLeavesNothing()
    {
        TestDaemon d(args("--approval-timeout", "30s"));
        QVERIFY(d.start());
        const QString workspaces = workspacesOf(d);
        QFile defaults(d.configDir() + QStringLiteral("/policy.json"));
        QVERIFY(defaults.open(QIODevice::WriteOnly));
        defaults.write(R"({"commands": {"rules": [{"decision": "deny", "command": "rm"}]}})");
        defaults.close();

        const CliResult denied = d.ctl(args("--agent", "bot", "run", "--", "rm", "-rf", "/workspace"));
        QCOMPARE(denied.exitCode, 6);
        QCOMPARE(
            denied.err, QByteArray("airlockctl: denied by policy: 'rm -rf /workspace' matches rule 'rm' (user)\n"));
        QCOMPARE(storedEvents(d, QStringLiteral("command.denied")).size(), 1);
        const QString refused
            = historyText(d, "SELECT sandbox_id FROM events WHERE kind = ?", QStringLiteral("command.denied"));
        QVERIFY(waitFor([&] { return jsonArray(d.ctl(args("ls", "--json")).out).isEmpty(); }, 5000));
        QVERIFY(waitFor([&] { return !workspaceIds(workspaces).contains(refused); }, 5000));
        QCOMPARE(
            historyText(d, "SELECT deleted_ms IS NOT NULL FROM sandboxes WHERE id = ?", refused), QStringLiteral("1"));

        const CliResult wider = d.ctl(args("--agent", "bot", "run", "--network", "full", "--", "true"));
        QCOMPARE(wider.exitCode, 6);
        QVERIFY2(wider.err.contains("an agent connection creates sandboxes with the default policy only"),
            qPrintable(wider.describe()));

        // Asks a person (no rule matches), and the agent is killed while it waits.
        auto agent = agentRun(d, args("printf", "never"));
        const QJsonObject asked = waitForApproval(d);
        QVERIFY2(!asked.isEmpty(), "no approval request appeared");
        const QString sandbox = asked.value(QStringLiteral("sandbox")).toString();
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 1);
        agent->kill();
        QVERIFY(agent->waitForFinished(5000));
        QVERIFY(waitFor([&] { return pendingApprovals(d).isEmpty(); }, 5000));
        QVERIFY(waitFor([&] { return jsonArray(d.ctl(args("ls", "--json")).out).isEmpty(); }, 5000));
        QCOMPARE(d.ctl(args("info", sandbox)).exitCode, 3);
        QCOMPARE(storedEvents(d, QStringLiteral("exec.started")).size(), 0);
    }

    // Sandboxes outlive their daemon: a one-shot whose daemon stops goes on, and the next daemon
    // removes it when its command ends (its client, reconnected, gets the exit); one made ahead
    // that a SIGKILLed daemon left is ended and removed by the next.
    void aOneShotOutlivesItsDaemonAndWhatWasMadeAheadDoesNot()
    {
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        const QString workspaces = workspacesOf(d);
        QProcess client;
        client.setProcessEnvironment(d.environment());
        client.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "run", "--", "sh", "-c", "echo started; sleep 2; echo done; exit 5"));
        QVERIFY(waitFor([&] { return client.peek(100).contains("started"); }, 10000));
        d.stop();
        QVERIFY(d.start());
        QVERIFY(client.waitForFinished(20000));
        QCOMPARE(client.readAllStandardOutput(), QByteArray("started\ndone\n"));
        QCOMPARE(client.exitCode(), 5);
        QVERIFY(waitFor([&] { return jsonArray(d.ctl(args("ls", "--json")).out).isEmpty(); }, 5000));

        // One made ahead, then the daemon killed: the next one ends and removes it.
        const CliResult once = d.ctl(args("run", "--json", "--", "true"));
        QVERIFY2(once.exitCode == 0, qPrintable(once.describe()));
        const QString warm = madeAhead(workspaces, {jsonObject(once.out).value(QStringLiteral("sandbox")).toString()});
        QVERIFY(!warm.isEmpty());
        QVERIFY(waitFor([&] { return initOf(d, warm) > 0; }, 10000));
        QCOMPARE(recordOf(d, warm).value(QStringLiteral("warm")).toBool(), true);
        const qint64 init = initOf(d, warm);
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        QVERIFY(processRunning(init)); // it outlived that daemon, as every sandbox does
        QVERIFY(d.start());
        QVERIFY(!processRunning(init));
        QVERIFY(recordOf(d, warm).isEmpty());
        QVERIFY(!workspaceIds(workspaces).contains(warm));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
    }
    // Another execution in a one-shot whose own command waits for a person ends: the one-shot
    // stays for its command (it goes when that one ends).
    void aOneShotWaitingForItsCommandOutlastsAnotherExecution()
    {
        TestDaemon d(args("--approval-timeout", "30s"));
        QVERIFY(d.start());
        auto agent = agentRun(d, args("printf", "approved"));
        const QJsonObject asked = waitForApproval(d);
        QVERIFY2(!asked.isEmpty(), "no approval request appeared");
        const QString sandbox = asked.value(QStringLiteral("sandbox")).toString();
        QCOMPARE(d.ctl(args("exec", sandbox, "--", "true")).exitCode, 0);
        QTest::qWait(300); // (what would remove it runs at once)
        QCOMPARE(d.ctl(args("info", sandbox)).exitCode, 0);
        QCOMPARE(d.ctl(args("approve", asked.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(agent->waitForFinished(10000));
        QCOMPARE(agent->readAllStandardOutput(), QByteArray("approved"));
        QCOMPARE(agent->exitCode(), 0);
        QVERIFY(waitFor([&] { return d.ctl(args("info", sandbox)).exitCode == 3; }, 5000));
    }

    // With a mount, nothing is made ahead: a path is bound when the sandbox starts, and the
    // folder it names could be moved or made again before the next run.
    void aOneShotWithAMountIsNotMadeAhead()
    {
        TestDaemon d;
        QVERIFY(d.start());
        const QString workspaces = workspacesOf(d);
        QTemporaryDir base; // readable by the sandbox's own uid
        const auto readable = QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner
            | QFileDevice::ReadOther | QFileDevice::ExeOther;
        QVERIFY(QFile::setPermissions(base.path(), readable));
        const QString project = base.filePath(QStringLiteral("project"));
        const auto makeProject = [&](const QByteArray &marker) {
            QFile f(project + QStringLiteral("/marker"));
            return QDir().mkdir(project) && QFile::setPermissions(project, readable) && f.open(QIODevice::WriteOnly)
                && f.write(marker) == marker.size() && f.setPermissions(f.permissions() | QFileDevice::ReadOther);
        };
        QVERIFY(makeProject("old"));
        const QStringList catMarker = args("run", "--mount", project + QStringLiteral(":/p"), "--", "cat", "/p/marker");
        QCOMPARE(d.ctl(catMarker).out, QByteArray("old"));
        QTest::qWait(1000); // (time enough to make one ahead, and for it to start)
        // The folder is moved away and made again: the next run sees the new one.
        QVERIFY(QDir(base.path()).rename(QStringLiteral("project"), QStringLiteral("moved")));
        QVERIFY(makeProject("new"));
        QCOMPARE(d.ctl(catMarker).out, QByteArray("new"));
        QVERIFY(waitFor([&] { return workspaceIds(workspaces).isEmpty(); }, 5000)); // (the last one's, going)
        QTest::qWait(500);
        QCOMPARE(workspaceIds(workspaces), QStringList());
    }

    // A one-shot that the next daemon cannot take over (a secret its policy grants is gone) is
    // left running, like any sandbox that cannot be: what runs in it goes on until rm.
    void aOneShotThatCannotBeTakenOverGoesOn()
    {
        TestDaemon d(args("--secret-store", "file"));
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QCOMPARE(d.ctl(args("secret", "set", "TOK"), "0123456789abcdef0123\n").exitCode, 0);
        QTemporaryDir dir;
        QFile policy(dir.filePath(QStringLiteral("policy.json")));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(R"({"credentials": {"grants": [{"secret": "TOK", "env": "TOK"}]}})");
        policy.close();
        QProcess client;
        client.setProcessEnvironment(d.environment());
        client.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "run", "--policy", policy.fileName(), "-n", "--", "sh", "-c",
                "s=30.417; echo started; exec sleep $s"));
        QVERIFY(waitFor([&] { return client.peek(100).contains("started"); }, 10000));
        QCOMPARE(d.ctl(args("secret", "rm", "TOK")).exitCode, 0);
        d.stop();
        QVERIFY(d.start());
        const QJsonArray listed = jsonArray(d.ctl(args("ls", "--json")).out);
        QCOMPARE(listed.size(), 1);
        QCOMPARE(listed.first().toObject().value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        QTest::qWait(300);
        QCOMPARE(pidsWithCommandLine("sleep 30.417").size(), 1);
        client.kill();
        QCOMPARE(d.ctl(args("rm", listed.first().toObject().value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(waitFor([&] { return pidsWithCommandLine("sleep 30.417").isEmpty(); }, 5000));
    }

    // The same for an ordinary user's daemon (no root, no loop devices): made ahead, and taken.
    void anOrdinaryUsersNextOneShotIsMadeAheadToo()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to start the daemon as another, unprivileged user");
        UnprivilegedDaemon d;
        QVERIFY(d.start());
        const QString workspaces = d.dataDir() + QStringLiteral("/workspaces");
        const auto first = d.ctl(args("run", "--json", "--", "id", "-u"));
        QVERIFY2(first.first == 0, first.second.constData());
        const QString firstId = jsonObject(first.second).value(QStringLiteral("sandbox")).toString();
        QVERIFY2(!firstId.isEmpty(), first.second.constData());
        const QString warm = madeAhead(workspaces, {firstId});
        QVERIFY2(!warm.isEmpty(), "no sandbox was made ahead for an ordinary user");
        const auto second = d.ctl(args("run", "--json", "--", "id", "-u"));
        QVERIFY2(second.first == 0, second.second.constData());
        const QJsonObject ran = jsonObject(second.second);
        QCOMPARE(ran.value(QStringLiteral("sandbox")).toString(), warm);
        QCOMPARE(ran.value(QStringLiteral("stdout")).toString(), QStringLiteral("1000\n"));
        QCOMPARE(d.stop(), 0);
        QCOMPARE(workspaceIds(workspaces), QStringList());
    }
};

QTEST_GUILESS_MAIN(TestOneShot)
#include "tst_oneshot.moc"
