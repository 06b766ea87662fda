// SPDX-License-Identifier: Apache-2.0
// Sandboxes outlive their daemon (issue 19, item 1): a stop or a SIGKILL leaves them and what runs
// in them going; the next daemon takes them over from their records (checked, never trusted
// blindly) and the history; a client following a command misses nothing and sees nothing twice;
// a sandbox that ended meanwhile stays listed with its workspace until rm. Processes are checked
// by scanning /proc, the history with sqlite3 directly. Under gVisor (AIRLOCK_TEST_ISOLATION, as
// tst_outlive_gvisor) a sandbox's processes are the sentry's tasks, not host processes: what the
// bubblewrap runs check on the host is checked there by gVisor's own process (the one its record
// names) while no daemon is, and from inside or in the history once one is back.
// What a sandbox cannot reach of airlockd's own (its folders, its guest's resume socket):
// tst_outlive_hidden.
#include "OutliveFixture.h"
#include "TestHelpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/syscall.h>
#include <unistd.h>

#include <sqlite3.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// One column of a query on the daemon's history, rows joined by '|' (or `separator`).
QByteArray query(const TestDaemon &d, const QString &sql, char separator = '|')
{
    sqlite3 *h = nullptr;
    QByteArray out;
    if (sqlite3_open_v2(
            native(d.dataDir() + QStringLiteral("/history.db")).constData(), &h, SQLITE_OPEN_READONLY, nullptr)
        != SQLITE_OK)
        return "cannot open";
    sqlite3_stmt *st = nullptr;
    if (sqlite3_prepare_v2(h, sql.toUtf8().constData(), -1, &st, nullptr) != SQLITE_OK) {
        out = QByteArray("bad query: ") + sqlite3_errmsg(h);
    } else {
        while (sqlite3_step(st) == SQLITE_ROW)
            out += QByteArray(reinterpret_cast<const char *>(sqlite3_column_blob(st, 0)), sqlite3_column_bytes(st, 0))
                + separator;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

QByteArray numberedLines(int from, int to)
{
    QByteArray out;
    for (int i = from; i <= to; ++i)
        out += "line " + QByteArray::number(i) + '\n';
    return out;
}

bool alive(qint64 pid)
{
    return pid > 0 && ::kill(pid_t(pid), 0) == 0;
}

// The host process that stands for the sandbox in its record: its init (bubblewrap), or gVisor's
// runsc (its tasks are not host processes); killing it ends the sandbox.
qint64 recordedProcess(const TestDaemon &d, const QString &id)
{
    return qint64(recordOf(d, id)
                      .value(underGvisor() ? QStringLiteral("bwrap") : QStringLiteral("init"))
                      .toObject()
                      .value(QStringLiteral("pid"))
                      .toDouble());
}

// Whether what runs `command` in the sandbox goes on while no daemon is there: its host process
// (bubblewrap), or gVisor, whose tasks are not host processes, alive.
bool stillRuns(const TestDaemon &d, const QString &id, const QByteArray &command)
{
    return underGvisor() ? alive(recordedProcess(d, id)) : !pidsWithCommandLine(command).isEmpty();
}

// The payloads of one kind of event of a sandbox, in order.
QList<QJsonObject> eventsOf(const TestDaemon &d, const QString &id, const QString &kind)
{
    QList<QJsonObject> out;
    for (const QByteArray &row :
        query(d,
            QStringLiteral("SELECT payload FROM events WHERE sandbox_id='%1' AND kind='%2' ORDER BY seq").arg(id, kind),
            '\n')
            .split('\n'))
        if (!row.isEmpty())
            out.append(QJsonDocument::fromJson(row).object());
    return out;
}

// The exec.program event of the program at `path`, as a daemon recorded it.
QJsonObject programAt(const TestDaemon &d, const QString &id, const QString &path)
{
    for (const QJsonObject &p : eventsOf(d, id, QStringLiteral("exec.program")))
        if (p.value(QStringLiteral("path")).toString() == path)
            return p;
    return {};
}

// Puts a script into a sandbox's workspace (from the host: the test runs as root).
bool putScript(const QString &workspace, const QString &name, const QByteArray &script)
{
    QFile f(workspace + QLatin1Char('/') + name);
    return f.open(QIODevice::WriteOnly) && f.write(script) == script.size();
}

// What runs the agent's script `name` in `sb` (not the client that asked for it).
QList<qint64> scriptRunning(const QString &name, qint64 client)
{
    QList<qint64> pids = pidsWithCommandLine("sh " + name.toUtf8());
    pids.removeAll(client);
    return pids;
}
} // namespace

class TestOutlive : public QObject {
    Q_OBJECT
    // An agent may run two scripts; curl is refused wherever it runs.
    static constexpr const char *kJudgedRules = R"({"commands": {"rules": [
        {"decision": "allow", "command": "sh later-true.sh"}, {"decision": "allow", "command": "sh later-curl.sh"},
        {"decision": "allow", "command": "sh later-ask.sh"}, {"decision": "deny", "command": "curl"}]}})";

private Q_SLOTS:
    void aCommandGoesOnAcrossAKilledDaemonAndItsClientMissesNothing()
    {
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        QCOMPARE(execIn(d, sb, args("sh", "-c", "echo kept > work.txt")).exitCode, 0);
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();

        // 400 numbered lines over about 4 s: the daemon is killed in the middle of them.
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", sb, "--", "sh", "-c",
                "i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo line $i; sleep 0.01; done; exit 7"));
        QVERIFY(ctl.waitForStarted(5000));
        QByteArray out;
        QVERIFY(waitFor(
            [&] {
                out += ctl.readAllStandardOutput();
                return out.contains("line 40\n");
            },
            15000));
        const qint64 killedAt = QDateTime::currentMSecsSinceEpoch();
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        // Its sandbox goes on without it: the loop still runs.
        QVERIFY(stillRuns(d, id, "i=0; while"));
        QTest::qWait(700); // output meanwhile is kept by the sandbox's guest
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        out += ctl.readAllStandardOutput();
        const QByteArray err = ctl.readAllStandardError();
        // Every line once, in order, nothing lost while the daemon was away, and the real exit.
        QCOMPARE(out, numberedLines(1, 400));
        QCOMPARE(ctl.exitCode(), 7);
        QVERIFY2(err.contains("airlockd went away") && err.contains("reconnected"), err.constData());

        // The history has it all too, once: an execution taken over is not "interrupted".
        QCOMPARE(
            query(d,
                QStringLiteral("SELECT status || ' ' || exit_code FROM executions WHERE sandbox_id='%1' AND exec_id=2")
                    .arg(id)),
            QByteArray("failed 7|"));
        QCOMPARE(query(d,
                     QStringLiteral("SELECT group_concat(data, '') FROM (SELECT data FROM chunks JOIN executions x ON "
                                    "x.id = chunks.execution "
                                    "WHERE x.sandbox_id='%1' AND x.exec_id=2 AND stream=1 ORDER BY offset)")
                         .arg(id)),
            numberedLines(1, 400) + '|');
        QCOMPARE(
            query(d,
                QStringLiteral("SELECT kind FROM events WHERE sandbox_id='%1' AND kind LIKE 'sandbox.%' ORDER BY seq")
                    .arg(id)),
            QByteArray("sandbox.created|sandbox.adopted|"));
        // Its stream goes on after what was stored (a number used twice would not have been stored).
        QCOMPARE(
            query(d, QStringLiteral("SELECT kind FROM events WHERE sandbox_id='%1' ORDER BY seq DESC LIMIT 1").arg(id)),
            QByteArray("exec.exited|"));

        // The sandbox is as it was: running, its files there, and it takes commands.
        const QJsonObject after = sandboxInfo(d, sb);
        QCOMPARE(after.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QVERIFY(QDateTime::fromString(after.value(QStringLiteral("createdAt")).toString(), Qt::ISODateWithMs)
                    .toMSecsSinceEpoch()
            < killedAt);
        const CliResult cat = execIn(d, sb, args("cat", "work.txt"));
        QCOMPARE(cat.out, QByteArray("kept\n"));
        QCOMPARE(
            query(d, QStringLiteral("SELECT exec_id FROM executions WHERE sandbox_id='%1' ORDER BY exec_id").arg(id)),
            QByteArray("1|2|3|"));
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QVERIFY(!QFileInfo::exists(d.dataDir() + QStringLiteral("/sandboxes/") + id));
    }

    void aStoppedDaemonLeavesSandboxesRunningAndTheNextTakesThemOver()
    {
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, args("--network", "allowlist"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();
        // A command that ends while no daemon is there: its end and its output are not lost.
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", sb, "--", "sh", "-c", "echo before; sleep 1.5; echo after; exit 3"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(waitFor([&] { return ctl.peek(100).contains("before"); }, 10000));
        const qint64 init = recordedProcess(d, id);
        QVERIFY2(alive(init), QJsonDocument(recordOf(d, id)).toJson().constData());
        d.stop(); // SIGTERM
        QCOMPARE(d.process().exitCode(), 0);
        QVERIFY(alive(init));
        QTest::qWait(2500); // it ends meanwhile
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        QCOMPARE(ctl.readAllStandardOutput(), QByteArray("before\nafter\n"));
        QCOMPARE(ctl.exitCode(), 3);
        QCOMPARE(
            query(d, QStringLiteral("SELECT status || ' ' || exit_code FROM executions WHERE sandbox_id='%1'").arg(id)),
            QByteArray("failed 3|"));
        QCOMPARE(sandboxInfo(d, sb).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        // The allowlist sandbox's proxy hand-over and exec check were handed over anew (gVisor's
        // egress socket listened on anew: tst_gvisor_outlive goes through it).
        const CliResult again = execIn(d, sb, args("sh", "-c", "echo $HTTPS_PROXY"));
        QCOMPARE(again.exitCode, 0);
        QCOMPARE(again.out, QByteArray("http://127.0.0.1:3128\n"));
    }

    // Red team: the next daemon waits for the guests it takes over (5 s at most) before it
    // listens. It waited with processEvents(flags, 50), which does not wait for events: a guest that
    // does not answer (stopped here) cost a whole core for those 5 s. Its CPU is measured.
    void aGuestThatDoesNotAnswerTheTakeoverCostsNoCpu()
    {
        if (underGvisor())
            QSKIP("the stopped process is bubblewrap's init here; under gVisor the sentry answers for it");
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const qint64 init = recordedProcess(d, sandboxInfo(d, sb).value(QStringLiteral("id")).toString());
        QVERIFY(alive(init));
        d.stop();
        QVERIFY(::kill(pid_t(init), SIGSTOP) == 0);
        const auto resumed = qScopeGuard([&] { ::kill(pid_t(init), SIGCONT); });
        QElapsedTimer waited;
        waited.start();
        QVERIFY(d.start()); // it listens once the takeover is over
        QVERIFY2(waited.elapsed() >= 4000, qPrintable(QString::number(waited.elapsed())));
        const qint64 ticks = cpuTicks(d.pid());
        QVERIFY2(ticks < 100, qPrintable(QStringLiteral("%1 ticks of CPU in %2 ms").arg(ticks).arg(waited.elapsed())));
        ::kill(pid_t(init), SIGCONT);
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
    }

    // A timeout holds while no daemon is there: the sandbox's guest kills the command at its
    // deadline (a second after it, so that a daemon that is there is the one that kills), and the
    // next daemon records it as the timeout it was. A command without one runs on.
    void anExecutionsTimeoutHoldsWhileTheDaemonIsAway_data()
    {
        QTest::addColumn<bool>("killed");
        QTest::newRow("a stopped daemon") << false;
        QTest::newRow("a daemon killed with SIGKILL") << true;
    }
    void anExecutionsTimeoutHoldsWhileTheDaemonIsAway()
    {
        QFETCH(bool, killed);
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();
        // Each command's host pid, once the daemon has stored its start (a start it never stored is
        // not the next daemon's to take over). Under gVisor there is none (1 stands for it): what
        // the host sees is checked in the history and from inside instead.
        const bool gvisor = underGvisor();
        const auto started = [&](QProcess &ctl, const QByteArray &command, int execId) -> qint64 {
            qint64 pid = 0;
            waitFor(
                [&] {
                    // (Under gVisor: the command says it runs; its Spawn reached the guest.)
                    QList<qint64> pids = !gvisor          ? pidsWithCommandLine(command)
                        : ctl.peek(16).startsWith("up\n") ? QList<qint64>{1}
                                                          : QList<qint64>{};
                    pids.removeAll(ctl.processId()); // the client's own command line names it too
                    pid = pids.size() == 1 ? pids.front() : 0;
                    return pid
                        && !query(d,
                            QStringLiteral("SELECT status FROM executions WHERE sandbox_id='%1' AND exec_id=%2")
                                .arg(id)
                                .arg(execId))
                                .isEmpty();
                },
                10000);
            return pid;
        };
        QProcess untimed;
        untimed.setProcessEnvironment(d.environment());
        untimed.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", sb, "--", "sh", "-c", "echo up; exec sleep 7432"));
        const qint64 runsOn = started(untimed, "sleep 7432", 1);
        QVERIFY(runsOn > 0);
        QProcess timed;
        timed.setProcessEnvironment(d.environment());
        timed.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", sb, "--timeout", "2s", "--", "sh", "-c", "echo up; exec sleep 7431"));
        QElapsedTimer clock;
        clock.start();
        const qint64 sleeper = started(timed, "sleep 7431", 2);
        QVERIFY(sleeper > 0);
        if (killed) {
            QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
            QVERIFY(d.process().waitForFinished(5000));
        } else {
            d.stop();
        }
        QVERIFY2(clock.elapsed() < 2000, "the daemon went after the timeout");
        if (gvisor) {
            // Back only well after the guest's deadline (2 s, and its second): how long the command
            // ran says who ended it.
            QTest::qWait(int(4500 - clock.elapsed()));
        } else {
            QVERIFY(alive(sleeper));
            // Gone at its deadline (2 s, and the guest's second), with no daemon there; the other goes on.
            QVERIFY2(waitFor([&] { return !alive(sleeper); }, 6000), "the command outlived its timeout");
            QVERIFY2(clock.elapsed() >= 2000, "killed before its timeout");
            QVERIFY(alive(runsOn));
        }
        QVERIFY(d.process().state() == QProcess::NotRunning);

        QVERIFY(d.start());
        QVERIFY(timed.waitForFinished(20000));
        QVERIFY2(timed.exitCode() == 124, timed.readAllStandardError().constData());
        QCOMPARE(query(d,
                     QStringLiteral("SELECT status || ' ' || json_extract(payload, '$.status') || ' ' || "
                                    "json_extract(payload, '$.reason') FROM executions x JOIN events e ON "
                                    "e.sandbox_id = x.sandbox_id AND e.exec_id = x.exec_id AND e.kind = 'exec.exited' "
                                    "WHERE x.sandbox_id='%1' AND x.exec_id=2")
                         .arg(id)),
            QByteArray("timed_out timed_out timeout|"));
        if (gvisor) {
            // The guest ended it at its deadline and its second, not the daemon when it came back.
            const double ran = query(d,
                QStringLiteral("SELECT json_extract(payload, '$.durationMs') FROM events WHERE sandbox_id='%1' AND "
                               "exec_id=2 AND kind='exec.exited'")
                    .arg(id))
                                   .chopped(1)
                                   .toDouble();
            QVERIFY2(ran >= 2900 && ran < 4000, qPrintable(QString::number(ran)));
        }
        // The one without a timeout was taken over running, and still is.
        if (gvisor)
            QVERIFY(
                execIn(d, sb, args("sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).out.contains("sleep 7432"));
        else
            QVERIFY(alive(runsOn));
        QCOMPARE(query(d, QStringLiteral("SELECT status FROM executions WHERE sandbox_id='%1' AND exec_id=1").arg(id)),
            QByteArray("running|"));
        QVERIFY(untimed.state() == QProcess::Running);
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QVERIFY(untimed.waitForFinished(20000));
        QVERIFY(gvisor || !alive(runsOn));
    }

    // An agent's command runs with its programs judged (the exec check). A program it starts while
    // no daemon is there waits in its execve: it neither runs unjudged nor fails. The next daemon
    // takes the exec check over with the sandbox and judges it by the rules and by how the command
    // was decided, as the daemon before would have.
    void aJudgedProgramWaitsForTheNextDaemonWhichLetsItRun()
    {
        if (underGvisor())
            QSKIP("gVisor has no exec check (decision 6): nothing is judged to wait for the next daemon");
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(d, sb);
        const QString id = info.value(QStringLiteral("id")).toString();
        const QString marker = info.value(QStringLiteral("workspace")).toString() + QStringLiteral("/marker");
        QCOMPARE(d.ctl(args("policy", "set", sb, "-"), kJudgedRules).exitCode, 0);
        const QString workspace = info.value(QStringLiteral("workspace")).toString();
        QVERIFY(putScript(
            workspace, QStringLiteral("later-true.sh"), "sleep 2.417\n/bin/true && touch marker && echo after\n"));

        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", sb, "-n", "--", "sh", "later-true.sh"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(waitFor([] { return !pidsWithCommandLine("sleep 2.417").isEmpty(); }, 10000));
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        // The sleep ends while no daemon is there; /bin/true waits in its execve: the script goes on
        // (a failed exec would have ended it) and nothing after it ran.
        QVERIFY(waitFor([] { return pidsWithCommandLine("sleep 2.417").isEmpty(); }, 10000));
        QTest::qWait(1500);
        QVERIFY(!scriptRunning(QStringLiteral("later-true.sh"), ctl.processId()).isEmpty());
        QVERIFY(!QFileInfo::exists(marker));

        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        const QByteArray err = ctl.readAllStandardError();
        QCOMPARE(ctl.readAllStandardOutput(), QByteArray("after\n"));
        QVERIFY2(ctl.exitCode() == 0, err.constData());
        QVERIFY(QFileInfo::exists(marker));
        // Judged by the new daemon, under the decision that let the command run.
        const QJsonObject truth = programAt(d, id, QStringLiteral("/bin/true"));
        QVERIFY2(!truth.isEmpty(),
            query(d, QStringLiteral("SELECT payload FROM events WHERE kind='exec.program'")).constData());
        QCOMPARE(truth.value(QStringLiteral("decision")).toString(), QStringLiteral("allow"));
        QCOMPARE(truth.value(QStringLiteral("rule")).toString(), QStringLiteral("covered"));
        QCOMPARE(truth.value(QStringLiteral("coveredBy")).toString(),
            QStringLiteral("allowed by rule 'sh later-true.sh' (sandbox)"));
        QCOMPARE(query(d, QStringLiteral("SELECT status FROM executions WHERE sandbox_id='%1' AND exec_id=1").arg(id)),
            QByteArray("succeeded|"));
    }

    // The same across a stop (SIGTERM): what waited is judged by the next daemon, and a program
    // the rules refuse is refused then (EPERM), with the rule recorded, and did not run.
    void aJudgedProgramTheRulesRefuseIsRefusedByTheNextDaemon()
    {
        if (underGvisor())
            QSKIP("gVisor has no exec check (decision 6): nothing is judged to wait for the next daemon");
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(d, sb);
        const QString id = info.value(QStringLiteral("id")).toString();
        const QString marker = info.value(QStringLiteral("workspace")).toString() + QStringLiteral("/marker");
        QCOMPARE(d.ctl(args("policy", "set", sb, "-"), kJudgedRules).exitCode, 0);
        const QString workspace = info.value(QStringLiteral("workspace")).toString();
        QVERIFY(putScript(workspace, QStringLiteral("later-curl.sh"),
            "sleep 2.423\n/usr/bin/curl --version\necho \"curl: $?\"\ntouch marker\n"));

        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", sb, "-n", "--", "sh", "later-curl.sh"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(waitFor([] { return !pidsWithCommandLine("sleep 2.423").isEmpty(); }, 10000));
        d.stop();
        QCOMPARE(d.process().exitCode(), 0);
        QVERIFY(waitFor([] { return pidsWithCommandLine("sleep 2.423").isEmpty(); }, 10000));
        QTest::qWait(1500);
        QVERIFY(!scriptRunning(QStringLiteral("later-curl.sh"), ctl.processId()).isEmpty());
        QVERIFY(!QFileInfo::exists(marker));

        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        const QByteArray err = ctl.readAllStandardError();
        // dash says what execve failed with: EPERM, the exec check's refusal (ENOSYS, had the
        // filter lost its listener, would read "Function not implemented").
        QCOMPARE(ctl.readAllStandardOutput(), QByteArray("curl: 126\n"));
        QVERIFY2(err.contains("/usr/bin/curl: Operation not permitted"), err.constData());
        QCOMPARE(ctl.exitCode(), 0);
        QVERIFY(QFileInfo::exists(marker));
        const QJsonObject curl = programAt(d, id, QStringLiteral("/usr/bin/curl"));
        QVERIFY2(!curl.isEmpty(),
            query(d, QStringLiteral("SELECT payload FROM events WHERE kind='exec.program'")).constData());
        QCOMPARE(curl.value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));
        QCOMPARE(curl.value(QStringLiteral("rule")).toString(), QStringLiteral("curl"));
        QCOMPARE(curl.value(QStringLiteral("layer")).toString(), QStringLiteral("sandbox"));
        // And the new daemon judges what starts after it took over, as usual.
        const CliResult again = d.ctl(args("--agent", "bot", "exec", sb, "-n", "--", "sh", "later-curl.sh"));
        QCOMPARE(again.out, QByteArray("curl: 126\n"));
    }

    // A program that waits for a person when the daemon goes is refused (EPERM), and recorded so:
    // the question goes with the daemon, and the kernel does not tell a later one of that exec
    // again (it was received). A daemon that stops refuses it itself; one that is killed leaves it
    // to the next, which finds the question in the history.
    void aJudgedProgramWaitingForAPersonWhenTheDaemonGoesIsRefused_data()
    {
        QTest::addColumn<bool>("killed");
        QTest::addColumn<QString>("reason");
        QTest::newRow("the daemon stops: it refuses what waits")
            << false << QStringLiteral("airlockd stopped before a person decided");
        QTest::newRow("the daemon is killed: the next one refuses it")
            << true << QStringLiteral("airlockd went away before a person decided");
    }
    void aJudgedProgramWaitingForAPersonWhenTheDaemonGoesIsRefused()
    {
        if (underGvisor())
            QSKIP("gVisor has no exec check (decision 6): nothing is judged to wait for the next daemon");
        QFETCH(bool, killed);
        QFETCH(QString, reason);
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(d, sb);
        const QString id = info.value(QStringLiteral("id")).toString();
        QCOMPARE(d.ctl(args("policy", "set", sb, "-"), kJudgedRules).exitCode, 0);
        // A shell reading its input asks wherever it runs (named by its path: a PATH search would
        // go on to the next directory's sh after a refusal, and ask again).
        QVERIFY(putScript(info.value(QStringLiteral("workspace")).toString(), QStringLiteral("later-ask.sh"),
            "echo 'echo piped' | /bin/sh\necho \"sh: $?\"\n"));
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", sb, "-n", "--", "sh", "later-ask.sh"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(!waitForApproval(d).isEmpty());
        if (killed) {
            // (Once the question is stored: what the daemon read and never recorded, the next
            // cannot know of.)
            QVERIFY(waitFor(
                [&] {
                    for (const QJsonObject &p : eventsOf(d, id, QStringLiteral("exec.program")))
                        if (p.value(QStringLiteral("decision")) == QLatin1String("ask"))
                            return true;
                    return false;
                },
                5000));
            QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
            QVERIFY(d.process().waitForFinished(5000));
            QTest::qWait(500);
            QVERIFY(!scriptRunning(QStringLiteral("later-ask.sh"), ctl.processId()).isEmpty()); // it waits
        } else {
            d.stop();
            QCOMPARE(d.process().exitCode(), 0);
        }
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        const QByteArray err = ctl.readAllStandardError();
        QCOMPARE(ctl.readAllStandardOutput(), QByteArray("sh: 126\n"));
        QVERIFY2(err.contains("/bin/sh: Operation not permitted"), err.constData());
        QJsonObject refused;
        for (const QJsonObject &p : eventsOf(d, id, QStringLiteral("exec.program")))
            if (p.value(QStringLiteral("decision")) == QLatin1String("deny"))
                refused = p;
        QCOMPARE(refused.value(QStringLiteral("rule")).toString(), QStringLiteral("airlockd"));
        QCOMPARE(refused.value(QStringLiteral("reason")).toString(), reason);
        QVERIFY(
            jsonObject(d.ctl(args("approvals", "--json")).out).value(QStringLiteral("approvals")).toArray().isEmpty());
    }

    // The same when the program waiting for a person is the command's first (a script whose
    // interpreter a rule asks about): the guest waits for that first execve inside its spawn, and a
    // killed daemon must not leave it stuck there, or no later daemon can take the sandbox over.
    void aCommandsFirstProgramWaitingForAPersonWhenTheDaemonIsKilledLeavesTheSandboxToTheNext()
    {
        if (underGvisor())
            QSKIP("gVisor has no exec check (decision 6): nothing is judged to wait for the next daemon");
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(d, sb);
        const QString id = info.value(QStringLiteral("id")).toString();
        QCOMPARE(d.ctl(args("policy", "set", sb, "-"), R"({"commands": {"rules": [
            {"decision": "allow", "command": "./first-ask.pl"}], "everywhere": [{"command": "perl"}]}})")
                     .exitCode,
            0);
        const QString workspace = info.value(QStringLiteral("workspace")).toString();
        QVERIFY(putScript(workspace, QStringLiteral("first-ask.pl"), "#!/usr/bin/perl\nprint \"ran\\n\";\n"));
        QVERIFY(QFile::setPermissions(workspace + QStringLiteral("/first-ask.pl"),
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner | QFileDevice::ReadGroup
                | QFileDevice::ExeGroup | QFileDevice::ReadOther | QFileDevice::ExeOther));
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", sb, "-n", "--", "./first-ask.pl"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(!waitForApproval(d).isEmpty());
        QVERIFY(waitFor(
            [&] {
                for (const QJsonObject &p : eventsOf(d, id, QStringLiteral("exec.program")))
                    if (p.value(QStringLiteral("decision")) == QLatin1String("ask"))
                        return true;
                return false;
            },
            5000));
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        QTest::qWait(500);

        QVERIFY(d.start());
        // Taken over: running, not failed for want of an answer from its agent.
        QVERIFY2(waitFor(
                     [&] {
                         return sandboxInfo(d, sb).value(QStringLiteral("state")).toString()
                             == QLatin1String("running");
                     },
                     15000),
            QJsonDocument(sandboxInfo(d, sb)).toJson().constData());
        const CliResult after = d.ctl(args("exec", sb, "-n", "--", "echo", "taken over"));
        QCOMPARE(after.out, QByteArray("taken over\n"));
        // And the program that waited did not run.
        QVERIFY(ctl.waitForFinished(20000));
        QVERIFY(!ctl.readAllStandardOutput().contains("ran"));
    }

    void aSandboxThatEndedWhileTheDaemonWasAwayKeepsItsWorkspaceUntilRm()
    {
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        QCOMPARE(execIn(d, sb, args("sh", "-c", "echo precious > result.txt")).exitCode, 0);
        const QJsonObject info = sandboxInfo(d, sb);
        const QString id = info.value(QStringLiteral("id")).toString();
        const QString workspace = info.value(QStringLiteral("workspace")).toString();
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "exec", sb, "--", "sleep", "7411"));
        QVERIFY(waitFor(
            [&] {
                if (underGvisor()) // started, by the history (see the top)
                    return query(d,
                               QStringLiteral("SELECT status FROM executions WHERE sandbox_id='%1' AND exec_id=2")
                                   .arg(id))
                        == "running|";
                QList<qint64> pids = pidsWithCommandLine("sleep 7411");
                pids.removeAll(ctl.processId()); // the client's own command line names it too
                return !pids.isEmpty();
            },
            10000));
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        // The sandbox dies while no daemon is there (its init, or gVisor, by the pid its record names).
        const qint64 init = recordedProcess(d, id);
        QVERIFY(::kill(pid_t(init), SIGKILL) == 0);
        QVERIFY(waitFor([&] { return !alive(init); }, 5000));
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        QVERIFY(ctl.exitCode() != 0);
        // Listed, failed, with why and what to do; its files are there.
        const CliResult ls = d.ctl(args("ls", "--json"));
        const QJsonObject row = jsonArray(ls.out).at(0).toObject();
        QCOMPARE(row.value(QStringLiteral("name")).toString(), sb);
        QCOMPARE(row.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        QVERIFY2(
            row.value(QStringLiteral("failure")).toString().contains(QStringLiteral("ended while airlockd was away")),
            ls.out.constData());
        QCOMPARE(QFile(workspace + QStringLiteral("/result.txt")).exists(), true);
        QCOMPARE(query(d, QStringLiteral("SELECT status FROM executions WHERE sandbox_id='%1' AND exec_id=2").arg(id)),
            QByteArray("interrupted|"));
        // Still there after another restart (said once in the history, not each time).
        d.stop();
        QVERIFY(d.start());
        const QByteArray again = d.ctl(args("ls", "--json")).out;
        QVERIFY2(again == ls.out, QByteArray(again + "\n---\n" + ls.out).constData());
        QCOMPARE(
            query(d,
                QStringLiteral("SELECT count(*) FROM events WHERE sandbox_id='%1' AND kind='sandbox.failed'").arg(id)),
            QByteArray("1|"));
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QVERIFY(!QFileInfo::exists(workspace));
        QVERIFY(!QFileInfo::exists(workspace + QStringLiteral(".runtime"))); // gVisor's bundle (red team: it stayed)
        QVERIFY(jsonArray(d.ctl(args("ls", "--json")).out).isEmpty());
    }

    // A mount's source removed while no daemon was there leaves the sandbox known: its record is
    // read as it was made (the source was checked then), not as a new request (it did not parse,
    // so the next daemon neither listed nor ended the running sandbox). Its policy names a source
    // that is gone, so it is not taken over: listed as failed, with why, and rm ends it.
    void aSandboxWhoseMountSourceWentMeanwhileStaysKnown()
    {
        auto source = std::make_unique<QTemporaryDir>();
        QFile kept(source->filePath(QStringLiteral("kept")));
        QVERIFY(kept.open(QIODevice::WriteOnly));
        kept.write("still here\n");
        kept.close();
        QCOMPARE(::chmod(QFile::encodeName(source->path()).constData(), 0755), 0);
        QCOMPARE(::chmod(QFile::encodeName(kept.fileName()).constData(), 0644), 0);
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, args("--mount", source->path() + QStringLiteral(":/data:ro")), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();
        const qint64 held = recordedProcess(d, id);
        d.stop();
        const QString gone = source->path();
        source.reset(); // removed from the host
        QVERIFY(d.start());
        const QJsonObject info = sandboxInfo(d, sb);
        QCOMPARE(info.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        const QString failure = info.value(QStringLiteral("failure")).toString();
        QVERIFY2(failure.contains(QStringLiteral("mount source '%1' does not exist").arg(gone))
                && failure.contains(QStringLiteral("'airlockctl rm %1' ends it").arg(sb)),
            qPrintable(failure));
        QVERIFY(alive(held)); // not this daemon's to end unasked
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QVERIFY(waitFor([&] { return !alive(held); }, 5000));
    }

    void aRecordIsCheckedNotTrusted()
    {
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();
        d.stop();
        // A bystander: the record is made to name it, with its pid but not its start time.
        QProcess bystander;
        bystander.start(QStringLiteral("sleep"), args("7423"));
        QVERIFY(bystander.waitForStarted(5000));
        const QString recordFile = d.dataDir() + QStringLiteral("/sandboxes/") + id + QStringLiteral("/record.json");
        QJsonObject record = recordOf(d, id);
        const QString named = underGvisor() ? QStringLiteral("bwrap") : QStringLiteral("init"); // recordedProcess()
        const QJsonObject realInit = record.value(named).toObject();
        QJsonObject forged = realInit;
        forged.insert(QStringLiteral("pid"), double(bystander.processId()));
        record.insert(named, forged);
        QFile f(recordFile);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QJsonDocument(record).toJson());
        f.close();
        // And a record that is not one at all, beside it.
        QDir().mkpath(d.dataDir() + QStringLiteral("/sandboxes/0123456789ab"));
        QFile junk(d.dataDir() + QStringLiteral("/sandboxes/0123456789ab/record.json"));
        QVERIFY(junk.open(QIODevice::WriteOnly));
        junk.write("{\"format\": 1, \"id\": \"../../etc\"}");
        junk.close();
        QVERIFY(d.start());
        // The bystander is untouched; the forged sandbox counts as gone (its real processes are
        // ended by the next step, rm, by the pids its record named); the junk is left alone.
        QVERIFY(bystander.state() == QProcess::Running);
        const QJsonObject info = sandboxInfo(d, sb);
        QCOMPARE(info.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        QVERIFY(QFileInfo::exists(d.dataDir() + QStringLiteral("/sandboxes/0123456789ab/record.json")));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 1);
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QVERIFY(bystander.state() == QProcess::Running);
        bystander.kill();
        bystander.waitForFinished(5000);
        // What the forged record hid is still the sandbox's: ended by the suite's cleanup.
        const qint64 realPid = qint64(realInit.value(QStringLiteral("pid")).toDouble());
        if (alive(realPid))
            ::kill(pid_t(realPid), SIGKILL);
    }
};

QTEST_GUILESS_MAIN(TestOutlive)
#include "tst_outlive.moc"
