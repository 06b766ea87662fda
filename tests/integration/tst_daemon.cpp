// SPDX-License-Identifier: Apache-2.0
// The life of sandboxes and of the daemon that owns them: who may reach the socket, what a second
// daemon, SIGTERM and SIGKILL do to running sandboxes, what `rm` leaves behind, autostart, the
// history of every execution, and failing closed. Processes are checked by scanning /proc.
#include "DaemonLeftovers.h"
#include "TestHelpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QLocalSocket>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// `airlockctl ls` in d's environment, allowed to start a daemon; `guard` holds the one it started.
void autostart(const TestDaemon &d, QProcess &ctl, KillOnExit &guard)
{
    ctl.setProcessEnvironment(d.environment());
    ctl.start(binDir() + QStringLiteral("/airlockctl"), args("ls"));
    ctl.waitForFinished(30000);
    QFile lock(d.socketPath() + QStringLiteral(".lock"));
    if (lock.open(QIODevice::ReadOnly))
        guard.pid = lock.readAll().trimmed().toLongLong();
}
} // namespace

class TestDaemonLife final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon; // shared by the tests that need no daemon of their own

    static CliResult exec(const TestDaemon &d, const QString &sandbox, const QStringList &command,
        const QStringList &options = {}, int timeoutMs = 60000)
    {
        return execIn(d, sandbox, command, options, timeoutMs);
    }
    static QJsonObject info(const TestDaemon &d, const QString &sandbox) { return sandboxInfo(d, sandbox); }
    // Starts the leftovers in a sandbox and waits until the host sees both, running as the
    // sandbox's own host uid. Returns an error text, empty on success.
    // (Under gVisor: both run inside, seen from there, and gVisor's processes run on the host as
    // that uid.)
    static QString startLeftovers(const TestDaemon &d, const QString &sandbox, Leftovers &l)
    {
        const CliResult r = exec(d, sandbox, args("sh", "-c", l.script()));
        if (r.exitCode != 0)
            return QStringLiteral("starting the leftovers: ") + r.describe();
        if (underGvisor()) {
            l.gvisorBundle
                = QFile::encodeName(info(d, sandbox).value(QStringLiteral("workspace")).toString()) + ".runtime/";
            const auto inside
                = [&] { return exec(d, sandbox, args("sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).out; };
            if (!waitFor([&] { return inside().contains(l.plain()) && inside().contains(l.detached()); }, 5000))
                return QStringLiteral("the leftovers never showed up in gVisor: ") + QString::fromUtf8(inside());
        } else if (!waitFor([&] { return l.bothRunning(); }, 5000)) {
            return QStringLiteral("the leftovers never showed up on the host: ") + l.describe();
        }
        const qint64 hostUid = qint64(
            info(d, sandbox).value(QStringLiteral("isolation")).toObject().value(QStringLiteral("hostUid")).toDouble());
        for (qint64 pid : l.alive())
            if (procStatusField(pid, "Uid:") != hostUid)
                return QStringLiteral("pid %1 runs as uid %2, not the sandbox's %3")
                    .arg(pid)
                    .arg(procStatusField(pid, "Uid:"))
                    .arg(hostUid);
        return {};
    }
    // Two sandboxes on d, each running its leftovers. Returns an error text, empty on success.
    static QString twoSandboxesWithLeftovers(const TestDaemon &d, QString &a, QString &b, Leftovers &la, Leftovers &lb)
    {
        QString error;
        a = d.create({}, &error);
        if (a.isEmpty())
            return error;
        b = d.create({}, &error);
        if (b.isEmpty())
            return error;
        const QString failed = startLeftovers(d, a, la);
        return failed.isEmpty() ? startLeftovers(d, b, lb) : failed;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void aSecondDaemonOnTheSameSocketIsRefused()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QProcess second;
        second.setProcessEnvironment(d.environment());
        second.start(binDir() + QStringLiteral("/airlockd"), args("--socket", d.socketPath()));
        QVERIFY(second.waitForFinished(15000));
        QCOMPARE(second.exitStatus(), QProcess::NormalExit);
        QCOMPARE(second.exitCode(), 3);
        const QString err = QString::fromUtf8(second.readAllStandardError());
        QVERIFY2(err.contains(
                     QStringLiteral("another airlockd (pid %1) already serves %2").arg(d.pid()).arg(d.socketPath())),
            qPrintable(err));
        // The first one keeps its socket and its lock and still answers.
        QCOMPARE(d.ctl(args("ls")).exitCode, 0);
        QFile lock(d.socketPath() + QStringLiteral(".lock"));
        QVERIFY(lock.open(QIODevice::ReadOnly));
        QCOMPARE(lock.readAll().trimmed().toLongLong(), d.pid());
    }

    void aRefusedSecondDaemonLeavesLiveWorkspacesAlone_data()
    {
        QTest::addColumn<bool>("sameSocket");
        QTest::newRow("same socket, same data directory") << true;
        // Another runtime dir, same data dir: it would take the live workspaces for orphans.
        QTest::newRow("another socket, same data directory") << false;
    }
    void aRefusedSecondDaemonLeavesLiveWorkspacesAlone()
    {
        QFETCH(bool, sameSocket);
        TestDaemon d;
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        QCOMPARE(exec(d, sb, args("sh", "-c", "echo precious > /workspace/work.txt")).exitCode, 0);
        const QString ws = info(d, sb).value(QStringLiteral("workspace")).toString();
        QVERIFY(QFileInfo::exists(ws + QStringLiteral("/work.txt")));

        QProcess second;
        second.setProcessEnvironment(d.environment()); // same user, same data directory
        QTemporaryDir otherRuntime;
        const QString socket
            = sameSocket ? d.socketPath() : otherRuntime.filePath(QStringLiteral("airlock/airlockd.sock"));
        second.start(binDir() + QStringLiteral("/airlockd"), args("--socket", socket));
        QVERIFY(second.waitForFinished(15000));
        QCOMPARE(second.exitCode(), 3);
        const QByteArray why = second.readAllStandardError();
        QVERIFY2(why.contains(sameSocket ? "already serves" : "already uses the data directory"), why.constData());
        QVERIFY2(QFileInfo::exists(ws + QStringLiteral("/work.txt")), qPrintable(ws));
        QCOMPARE(exec(d, sb, args("cat", "/workspace/work.txt")).out, QByteArray("precious\n"));
    }

    void aStaleSocketFromAKilledDaemonIsReplaced()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        QCOMPARE(d.process().exitStatus(), QProcess::CrashExit);
        // Nobody removed it: the file is still a socket, but nothing accepts on it.
        struct stat stale { };
        QCOMPARE(::lstat(native(d.socketPath()).constData(), &stale), 0);
        QVERIFY(S_ISSOCK(stale.st_mode));
        const CliResult refused = d.ctl(args("ls"));
        QCOMPARE(refused.exitCode, 4);
        QVERIFY2(refused.err.contains("cannot reach airlockd at"), qPrintable(refused.describe()));
        // Pin the stale inode with a second name so its number cannot be reused for the new socket.
        const QString pin = d.runtimeDir() + QStringLiteral("/stale-pin");
        QCOMPARE(::link(native(d.socketPath()).constData(), native(pin).constData()), 0);

        QVERIFY(d.start());
        struct stat fresh { };
        QCOMPARE(::lstat(native(d.socketPath()).constData(), &fresh), 0);
        QVERIFY(S_ISSOCK(fresh.st_mode));
        QVERIFY(fresh.st_ino != stale.st_ino);
        struct stat pinned { };
        QCOMPARE(::lstat(native(pin).constData(), &pinned), 0);
        QCOMPARE(pinned.st_nlink, nlink_t(1)); // the daemon unlinked the stale name
        QCOMPARE(fresh.st_mode & 077, 0u);
        QCOMPARE(d.ctl(args("ls")).exitCode, 0);
    }

    // ---- 2./3. Daemon death ------------------------------------------------------------------

    void sigtermStopsEverySandboxAndExitsZero()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QString a, b;
        Leftovers la{732001, {}}, lb{732011, {}};
        const QString failed = twoSandboxesWithLeftovers(d, a, b, la, lb);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        const QString wsA = info(d, a).value(QStringLiteral("workspace")).toString();
        const QString wsB = info(d, b).value(QStringLiteral("workspace")).toString();
        QVERIFY2(QFileInfo(wsA).isDir() && QFileInfo(wsB).isDir(), qPrintable(QString(wsA + QLatin1Char(' ') + wsB)));

        QVERIFY(::kill(pid_t(d.pid()), SIGTERM) == 0);
        QVERIFY(d.process().waitForFinished(15000));
        QCOMPARE(d.process().exitStatus(), QProcess::NormalExit);
        QCOMPARE(d.process().exitCode(), 0);
        // The daemon took everything down before it exited: no waiting here.
        QVERIFY2(la.alive().isEmpty(), qPrintable(la.describe()));
        QVERIFY2(lb.alive().isEmpty(), qPrintable(lb.describe()));
        QVERIFY2(!QFileInfo::exists(wsA), qPrintable(wsA));
        QVERIFY2(!QFileInfo::exists(wsB), qPrintable(wsB));
        QVERIFY(!QFileInfo::exists(d.socketPath()));
    }

    void sigkillOfTheDaemonTakesItsSandboxesDown()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QString a, b;
        Leftovers la{733001, {}}, lb{733011, {}};
        const QString failed = twoSandboxesWithLeftovers(d, a, b, la, lb);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        const QJsonObject infoA = info(d, a);
        const QString wsA = infoA.value(QStringLiteral("workspace")).toString();
        // With cgroup v1 (root) each sandbox has its own pids group, named by its id.
        const bool v1Pids = infoA.value(QStringLiteral("limits"))
                                .toObject()
                                .value(QStringLiteral("pids"))
                                .toObject()
                                .value(QStringLiteral("enforcedBy"))
                                .toString()
            == QLatin1String("cgroup v1 pids");
        // Each daemon owns the subtree airlock/<instance>/ in every controller; find it by the id.
        auto cgroupOf = [](const QString &id) {
            const QStringList hits
                = QDir(QStringLiteral("/sys/fs/cgroup/pids/airlock")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
            for (const QString &instance : hits) {
                const QString dir = QStringLiteral("/sys/fs/cgroup/pids/airlock/%1/%2").arg(instance, id);
                if (QFileInfo(dir).isDir())
                    return dir;
            }
            return QString(QStringLiteral("/sys/fs/cgroup/pids/airlock/?/") + id);
        };
        const QString cgroupA = cgroupOf(infoA.value(QStringLiteral("id")).toString());
        const QString cgroupB = cgroupOf(info(d, b).value(QStringLiteral("id")).toString());
        QVERIFY(!v1Pids || (QFileInfo(cgroupA).isDir() && QFileInfo(cgroupB).isDir()));

        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        // bwrap got PDEATHSIG from the daemon's death, the guest (pid 1 of the sandbox) got it
        // from bwrap's (--die-with-parent), and the kernel kills a PID namespace with its init.
        QVERIFY2(waitFor([&] { return la.alive().isEmpty() && lb.alive().isEmpty(); }, 3000),
            qPrintable(QString(la.describe() + QLatin1Char('\n') + lb.describe())));
        // Nothing was left to clean the workspace up; the next daemon does, as an orphan.
        QVERIFY2(QFileInfo(wsA).isDir(), qPrintable(wsA));
        QVERIFY(d.start());
        QVERIFY2(!QFileInfo::exists(wsA), qPrintable(wsA));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        if (v1Pids) {
            QVERIFY2(!QFileInfo::exists(cgroupA), qPrintable(cgroupA));
            // Empty by now (the PID namespaces are gone), so this test at least cleans up after itself.
            ::rmdir(native(cgroupA).constData());
            ::rmdir(native(cgroupB).constData());
        }
    }

    // ---- 4. rm -------------------------------------------------------------------------------

    void rmKillsEverythingBeforeItReturns()
    {
        QString error;
        const QString sb = m_daemon->create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        Leftovers l{734001, {}};
        const QString failed = startLeftovers(*m_daemon, sb, l);
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
        QCOMPARE(exec(*m_daemon, sb, args("sh", "-c", "echo doomed > /workspace/f")).exitCode, 0);
        const QString ws = info(*m_daemon, sb).value(QStringLiteral("workspace")).toString();
        QVERIFY2(QFileInfo::exists(ws + QStringLiteral("/f")), qPrintable(ws));

        const CliResult r = m_daemon->ctl(args("rm", sb));
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QByteArray(sb.toUtf8() + '\n'));
        // Checked at once: the reply comes only after the sandbox's init (and with it the whole
        // PID namespace) is gone and the workspace removed.
        QVERIFY2(l.alive().isEmpty(), qPrintable(l.describe()));
        QVERIFY2(!QFileInfo::exists(ws), qPrintable(ws));
        const CliResult gone = m_daemon->ctl(args("info", sb));
        QCOMPARE(gone.exitCode, 3);
        QVERIFY2(gone.err.contains(QByteArray("no sandbox named '" + sb.toUtf8() + "'")), qPrintable(gone.describe()));
    }

    void rmKeepKeepsTheWorkspace_data()
    {
        QTest::addColumn<bool>("json");
        QTest::newRow("the JSON output names the kept directory") << true;
        QTest::newRow("the text output names the kept directory") << false;
    }
    void rmKeepKeepsTheWorkspace()
    {
        QFETCH(bool, json);
        const QString name = json ? QStringLiteral("keep-json") : QStringLiteral("keep-text");
        QString error;
        QCOMPARE(m_daemon->create(args("--name", name), &error), name);
        const QJsonObject before = info(*m_daemon, name);
        const QString id = before.value(QStringLiteral("id")).toString();
        const QString ws = before.value(QStringLiteral("workspace")).toString();
        QCOMPARE(exec(*m_daemon, name, args("sh", "-c", "printf 'kept-%s' \"$(hostname)\" > /workspace/result.txt"))
                     .exitCode,
            0);

        const CliResult r = m_daemon->ctl(json ? args("rm", "--keep", "--json", name) : args("rm", "--keep", name));
        QCOMPARE(r.exitCode, 0);
        QString keptAt;
        if (json) {
            const QJsonArray removed = jsonArray(r.out);
            QCOMPARE(removed.size(), 1);
            QCOMPARE(removed.at(0).toObject().value(QStringLiteral("name")).toString(), name);
            QCOMPARE(removed.at(0).toObject().value(QStringLiteral("id")).toString(), id);
            keptAt = removed.at(0).toObject().value(QStringLiteral("workspace")).toString();
        } else {
            const auto m = QRegularExpression(QStringLiteral("^%1 \\(workspace kept at (.+)\\)\n$").arg(name))
                               .match(QString::fromUtf8(r.out));
            QVERIFY2(m.hasMatch(), qPrintable(r.describe()));
            keptAt = m.captured(1);
        }
        // Kept workspaces sit beside the workspaces directory ("kept" for "workspaces", "kept-H"
        // for "workspaces-H"), on the same filesystem, so keeping is a rename.
        const QString wsParent = QFileInfo(QFileInfo(ws).path()).path();
        QVERIFY2(
            keptAt.startsWith(wsParent + QStringLiteral("/kept")), qPrintable(keptAt + QStringLiteral(" vs ") + ws));
        QVERIFY2(keptAt.endsWith(QLatin1Char('/') + name + QLatin1Char('-') + id), qPrintable(keptAt));
        QVERIFY2(!QFileInfo::exists(ws), qPrintable(ws)); // moved, not copied
        QFile kept(keptAt + QStringLiteral("/result.txt"));
        QVERIFY2(kept.open(QIODevice::ReadOnly), qPrintable(kept.fileName()));
        QCOMPARE(kept.readAll(), QByteArray(QByteArray("kept-") + name.toUtf8()));
        QCOMPARE(m_daemon->ctl(args("info", name)).exitCode, 3);
    }

    void rmKeepAfterTheNameAsItsUsageShowsKeepsTheWorkspace()
    {
        const CliResult help = m_daemon->ctl(args("rm", "--help"));
        QVERIFY2(help.out.contains("Usage: airlockctl rm SANDBOX... [--keep]"), qPrintable(help.describe()));
        QString error;
        QCOMPARE(m_daemon->create(args("--name", "keep-after"), &error), QStringLiteral("keep-after"));
        const QString id = info(*m_daemon, QStringLiteral("keep-after")).value(QStringLiteral("id")).toString();
        QCOMPARE(exec(*m_daemon, QStringLiteral("keep-after"), args("sh", "-c", "echo work > /workspace/result.txt"))
                     .exitCode,
            0);
        const CliResult r = m_daemon->ctl(args("rm", "keep-after", "--keep"));
        QCOMPARE(r.exitCode, 0);
        const auto m = QRegularExpression(QStringLiteral("^keep-after \\(workspace kept at (.+)\\)\n$"))
                           .match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), qPrintable(r.describe()));
        QVERIFY2(m.captured(1).endsWith(QStringLiteral("/keep-after-") + id), qPrintable(r.describe()));
        QVERIFY2(QFileInfo::exists(m.captured(1) + QStringLiteral("/result.txt")), qPrintable(r.describe()));
    }

    // ---- 5. Sandboxes outlive their client -----------------------------------------------------

    void sandboxesOutliveTheClientThatCreatedThem()
    {
        QProcess creator;
        creator.setProcessEnvironment(m_daemon->environment());
        creator.start(binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "create", "--name", "outlives"));
        QVERIFY(creator.waitForFinished(30000));
        QCOMPARE(creator.exitCode(), 0);
        QCOMPARE(creator.readAllStandardOutput(), QByteArray("outlives\n"));
        QVERIFY(!processRunning(creator.processId()));

        const QJsonArray listed = jsonArray(m_daemon->ctl(args("ls", "--json")).out);
        QJsonObject found;
        for (const QJsonValue &v : listed)
            if (v.toObject().value(QStringLiteral("name")).toString() == QLatin1String("outlives"))
                found = v.toObject();
        QCOMPARE(found.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        // Two later clients share the same sandbox: what one wrote, the next one reads.
        QCOMPARE(
            exec(*m_daemon, QStringLiteral("outlives"), args("sh", "-c", "echo still-here > /workspace/mark; hostname"))
                .out,
            QByteArray("outlives\n"));
        const CliResult r = exec(*m_daemon, QStringLiteral("outlives"), args("cat", "/workspace/mark"));
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QByteArray("still-here\n"));
        QCOMPARE(m_daemon->ctl(args("rm", "outlives")).exitCode, 0);
    }

    // ---- 6. Autostart --------------------------------------------------------------------------

    void aClientStartsTheDaemonOnDemand()
    {
        TestDaemon d; // private XDG directories; never started by the fixture
        QVERIFY(!QFileInfo::exists(d.socketPath()));
        QProcess ctl;
        KillOnExit guard;
        autostart(d, ctl, guard);
        QCOMPARE(ctl.exitCode(), 0);
        QVERIFY(ctl.readAllStandardOutput().startsWith("NAME"));
        struct stat st { };
        QCOMPARE(::lstat(native(d.socketPath()).constData(), &st), 0);
        QVERIFY(S_ISSOCK(st.st_mode));
        QVERIFY2(guard.pid > 0, "the lock file names no daemon");
        QVERIFY(processRunning(guard.pid));
        QCOMPARE(QFileInfo(QStringLiteral("/proc/%1/exe").arg(guard.pid)).symLinkTarget(),
            QFileInfo(binDir() + QStringLiteral("/airlockd")).canonicalFilePath());
        // Detached (double fork): neither the client's nor ours.
        QVERIFY(guard.pid != ctl.processId());
        QFile status(QStringLiteral("/proc/%1/status").arg(guard.pid));
        QVERIFY(status.open(QIODevice::ReadOnly));
        QVERIFY(!status.readAll().contains(
            QByteArray("\nPPid:\t" + QByteArray::number(QCoreApplication::applicationPid()) + '\n')));
        // The next client finds that same daemon.
        const QJsonObject daemon = jsonObject(d.ctl(args("info", "--json")).out);
        QCOMPARE(qint64(daemon.value(QStringLiteral("pid")).toDouble()), guard.pid);
        // Its stderr was the client's pipe until it was ready: /dev/null now (nothing it starts
        // writes into a pipe nobody reads).
        QCOMPARE(
            QFileInfo(QStringLiteral("/proc/%1/fd/2").arg(guard.pid)).symLinkTarget(), QStringLiteral("/dev/null"));

        QVERIFY(::kill(pid_t(guard.pid), SIGTERM) == 0);
        QVERIFY(waitFor([&] { return !processRunning(guard.pid); }, 10000));
        guard.pid = 0;
        QVERIFY(!QFileInfo::exists(d.socketPath()));
    }

    void aDaemonThatCannotStartSaysWhyAtOnce()
    {
        // The history's place taken by a folder: the daemon exits at start. The client that
        // started it says so with the daemon's words at once (it waited 10 s, then a socket error).
        TestDaemon d;
        QVERIFY(QDir().mkpath(d.dataDir() + QStringLiteral("/history.db")));
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        QElapsedTimer t;
        t.start();
        ctl.start(binDir() + QStringLiteral("/airlockctl"), args("ls"));
        QVERIFY(ctl.waitForFinished(30000));
        const qint64 took = t.elapsed();
        const QByteArray err = ctl.readAllStandardError();
        QCOMPARE(ctl.exitCode(), 4);
        QVERIFY2(
            err.contains("airlockd exited before it was ready: history database: ") && err.contains("airlockd.log"),
            err.constData());
        QVERIFY2(took < 5000, qPrintable(QString::number(took)));
    }

    void aDamagedHistoryIsSetAsideAndANewOneStarted()
    {
        // Overwritten with something that is not a database: kept aside byte for byte, a new
        // history started, and said where it is and how to recover it.
        TestDaemon d;
        QVERIFY(QDir().mkpath(d.dataDir()));
        const QString path = d.dataDir() + QStringLiteral("/history.db");
        QByteArray junk;
        for (int i = 0; i < 2000; ++i)
            junk += "this is not a database ";
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(junk) == junk.size());
        file.close();
        QProcess ctl;
        KillOnExit guard;
        autostart(d, ctl, guard);
        const QByteArray err = ctl.readAllStandardError();
        QVERIFY2(ctl.exitCode() == 0, err.constData());
        QVERIFY2(
            err.contains(QByteArray("the history at " + path.toUtf8() + " was damaged")) && err.contains(".recover"),
            err.constData());
        const QStringList aside = QDir(d.dataDir()).entryList({QStringLiteral("history.db.damaged-*")});
        QCOMPARE(aside.size(), 1);
        QFile kept(d.dataDir() + QLatin1Char('/') + aside.first());
        QVERIFY(kept.open(QIODevice::ReadOnly));
        QCOMPARE(kept.readAll(), junk);
        // The daemon works, its history included, and says what happened to whoever asks.
        QCOMPARE(d.create(args("--name", "after-damage")), QStringLiteral("after-damage"));
        QCOMPARE(d.ctl(args("exec", "after-damage", "-n", "--", "echo", "kept")).exitCode, 0);
        QVERIFY(d.ctl(args("history", "--json")).out.contains("kept"));
        const QJsonObject info = jsonObject(d.ctl(args("info", "--json")).out);
        QVERIFY2(info.value(QStringLiteral("notices")).toArray().first().toString().contains(aside.first()),
            QJsonDocument(info).toJson().constData());
        const CliResult shown = d.ctl(args("info"));
        QVERIFY2(shown.out.contains("NOTICE:      the history at ") && shown.out.contains(aside.first().toUtf8()),
            qPrintable(shown.describe()));
        QVERIFY(::kill(pid_t(guard.pid), SIGTERM) == 0);
        QVERIFY(waitFor([&] { return !processRunning(guard.pid); }, 10000));
        guard.pid = 0;
    }

    // Damage inside the file, which opening it does not read (issue 19, item 9): found after the
    // start by SQLite's quick_check, on a thread of its own, and said; the history stays where it
    // is and the daemon works.
    void damageInsideTheHistoryIsFoundAfterTheStartAndSaid()
    {
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "dense")), QStringLiteral("dense"));
        for (int i = 0; i < 4; ++i)
            QCOMPARE(d.ctl(args("exec", "dense", "-n", "--", "seq", "1", "100000")).exitCode, 0);
        d.stop();
        const QString path = d.dataDir() + QStringLiteral("/history.db");
        sqlite3 *h = nullptr;
        QCOMPARE(sqlite3_open(native(path).constData(), &h), SQLITE_OK);
        QCOMPARE(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_stmt *st = nullptr;
        QCOMPARE(sqlite3_prepare_v2(h,
                     "SELECT (SELECT page_size FROM pragma_page_size), pageno FROM dbstat WHERE name = 'chunks' "
                     "AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 3",
                     -1, &st, nullptr),
            SQLITE_OK);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        const qint64 pageSize = sqlite3_column_int64(st, 0), page = sqlite3_column_int64(st, 1);
        sqlite3_finalize(st);
        sqlite3_close(h);
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadWrite));
        QVERIFY(file.seek((page - 1) * pageSize));
        QCOMPARE(file.write(QByteArray(64, '\xff')), qint64(64)); // its header: a b-tree page no more
        file.close();

        QVERIFY(d.start());
        QVERIFY2(waitFor(
                     [&] {
                         return !jsonObject(d.ctl(args("info", "--json")).out)
                                     .value(QStringLiteral("notices"))
                                     .toArray()
                                     .isEmpty();
                     },
                     15000),
            "no notice of the damage");
        const QString notice = jsonObject(d.ctl(args("info", "--json")).out)
                                   .value(QStringLiteral("notices"))
                                   .toArray()
                                   .first()
                                   .toString();
        QVERIFY2(notice.contains(QStringLiteral("is damaged inside (quick_check: Page "))
                && notice.contains(QStringLiteral("Restart airlockd")) && notice.contains(QStringLiteral(".recover")),
            qPrintable(notice));
        QVERIFY(QDir(d.dataDir())
                    .entryList({QStringLiteral("history.db.damaged-*")})
                    .isEmpty()); // nothing moved under a running daemon
        // The restart it asks for sets the file aside and starts a new one; the sandbox goes on.
        d.stop();
        QVERIFY(d.start());
        QStringList aside = QDir(d.dataDir()).entryList({QStringLiteral("history.db.damaged-*")});
        aside.removeIf([](const QString &name) {
            return name.endsWith(QLatin1String("-wal")) || name.endsWith(QLatin1String("-shm"));
        });
        QCOMPARE(aside.size(), 1);
        const QString said = jsonObject(d.ctl(args("info", "--json")).out)
                                 .value(QStringLiteral("notices"))
                                 .toArray()
                                 .first()
                                 .toString();
        QVERIFY2(said.contains(QStringLiteral("was damaged (quick_check found damage inside); it was moved to ")),
            qPrintable(said));
        QCOMPARE(d.ctl(args("exec", "dense", "-n", "--", "echo", "still")).out, QByteArray("still\n"));
        QVERIFY(d.ctl(args("history", "--json")).out.contains("still"));
    }

    void everyExecutionIsInTheHistoryBeforeItsExitIsAcknowledged()
    {
        QString error;
        const QString sb = m_daemon->create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const CliResult r = exec(*m_daemon, sb, args("sh", "-c", "printf 'hello\\033[2J\\n'; echo oops >&2; exit 3"));
        QCOMPARE(r.exitCode, 3);
        // No waiting: the exit was committed before airlockctl heard of it.
        const QString db = m_daemon->dataDir() + QStringLiteral("/history.db");
        QProcess sqlite;
        auto query = [&](const QString &sql) {
            sqlite3 *h = nullptr;
            sqlite3_open_v2(native(db).constData(), &h, SQLITE_OPEN_READONLY, nullptr);
            sqlite3_stmt *st = nullptr;
            QByteArray out;
            if (sqlite3_prepare_v2(h, sql.toUtf8().constData(), -1, &st, nullptr) == SQLITE_OK)
                while (sqlite3_step(st) == SQLITE_ROW)
                    out += QByteArray(
                               static_cast<const char *>(sqlite3_column_blob(st, 0)), sqlite3_column_bytes(st, 0))
                        + '|';
            sqlite3_finalize(st);
            sqlite3_close(h);
            return out;
        };
        const QString id = info(*m_daemon, sb).value(QStringLiteral("id")).toString();
        QCOMPARE(query(QStringLiteral(
                     "SELECT status || ' ' || exit_code || ' ' || argv_json FROM executions WHERE sandbox_id='%1'")
                           .arg(id)),
            QByteArray(R"(failed 3 ["sh","-c","printf 'hello\\033[2J\\n'; echo oops >&2; exit 3"]|)"));
        // Raw bytes as they came, escape sequence and all, each stream on its own.
        QCOMPARE(query(QStringLiteral("SELECT data FROM chunks JOIN executions e ON e.id = chunks.execution WHERE "
                                      "e.sandbox_id='%1' AND stream=1")
                           .arg(id)),
            QByteArray("hello\x1b[2J\n|"));
        QCOMPARE(query(QStringLiteral("SELECT data FROM chunks JOIN executions e ON e.id = chunks.execution WHERE "
                                      "e.sandbox_id='%1' AND stream=2")
                           .arg(id)),
            QByteArray("oops\n|"));
        // (gVisor has no exec check, so no exec.program: decision 6.)
        QCOMPARE(query(QStringLiteral("SELECT kind FROM events WHERE sandbox_id='%1' ORDER BY seq").arg(id)),
            underGvisor() ? QByteArray("sandbox.created|exec.started|exec.exited|")
                          : QByteArray("sandbox.created|exec.started|exec.program|exec.exited|"));
        m_daemon->ctl(args("rm", sb));
    }

    void anExecutionInFlightWhenTheDaemonIsKilledIsInterrupted()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create({}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = info(d, sb).value(QStringLiteral("id")).toString();
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(
            binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "exec", "-n", sb, "--", "sleep", "734.5"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(waitFor(
            [&] {
                if (underGvisor()) // its processes are gVisor's tasks: seen from inside
                    return exec(d, sb, args("sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"))
                        .out.contains("sleep 734.5");
                QList<qint64> pids = pidsWithCommandLine("sleep 734.5");
                pids.removeAll(ctl.processId()); // the client's own command line names it too
                return !pids.isEmpty();
            },
            10000));
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        // Its sandbox ended with it (--sandboxes-end-with-daemon): the client, reconnected to the
        // next daemon, hears that from the history, not a result it did not get.
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        const QByteArray said = ctl.readAllStandardError();
        QVERIFY2(ctl.exitCode() == 1 && said.contains("airlockd went away") && said.contains("interrupted"),
            said.constData());
        sqlite3 *h = nullptr;
        QCOMPARE(sqlite3_open_v2(native(d.dataDir() + QStringLiteral("/history.db")).constData(), &h,
                     SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
        sqlite3_stmt *st = nullptr;
        QCOMPARE(sqlite3_prepare_v2(h, // (under gVisor the test's own look inside is an execution too)
                     "SELECT status FROM executions WHERE sandbox_id=? AND argv_json LIKE '%734.5%'", -1, &st, nullptr),
            SQLITE_OK);
        const QByteArray sid = id.toUtf8();
        sqlite3_bind_text(st, 1, sid.constData(), int(sid.size()), SQLITE_TRANSIENT);
        QCOMPARE(sqlite3_step(st), SQLITE_ROW);
        QCOMPARE(QByteArray(reinterpret_cast<const char *>(sqlite3_column_text(st, 0))), QByteArray("interrupted"));
        sqlite3_finalize(st);
        QCOMPARE(sqlite3_exec(h, "PRAGMA quick_check", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(h);
    }

    void withoutAutostartNoDaemonMeansExit4()
    {
        TestDaemon d;
        const CliResult r = d.ctl(args("ls")); // the fixture always passes --no-autostart
        QCOMPARE(r.exitCode, 4);
        QVERIFY2(
            r.err.contains(QByteArray("cannot reach airlockd at " + native(d.socketPath()))), qPrintable(r.describe()));
        QVERIFY2(r.err.contains("start it with 'airlockd'"), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
        // And nothing was started behind our back.
        QVERIFY(!QFileInfo::exists(d.socketPath()));
        QVERIFY(!QFileInfo::exists(d.socketPath() + QStringLiteral(".lock")));
    }
    // ---- 12. Fail closed ---------------------------------------------------------------------

    void withoutBubblewrapNothingIsCreated()
    {
        if (underGvisor())
            QSKIP("a gVisor sandbox needs runsc, not bubblewrap: tst_gvisor's withoutRunscGvisorIsRefusedWithTheFix");
        TestDaemon d({QStringLiteral("--bwrap"), QStringLiteral("/nonexistent/bwrap")});
        QVERIFY(d.start());
        const CliResult r = d.ctl(args("create", "--name", "no-bwrap"));
        QCOMPARE(r.exitCode, 5);
        QVERIFY2(r.err.contains("bubblewrap (bwrap) is not installed at /nonexistent/bwrap"), qPrintable(r.describe()));
        QVERIFY2(r.err.contains("apt install bubblewrap"), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        QCOMPARE(d.ctl(args("exec", "no-bwrap", "--", "true")).exitCode, 3);
        // The daemon says why when asked.
        const QJsonObject caps
            = jsonObject(d.ctl(args("info", "--json")).out).value(QStringLiteral("capabilities")).toObject();
        QVERIFY(caps.value(QStringLiteral("bwrap")).toString().contains(QStringLiteral("apt install bubblewrap")));
    }

    void anUnprivilegedDaemonRefusesALimitItCannotEnforce()
    {
        // As an ordinary user (no writable cgroup) the daemon still sandboxes, but a memory limit
        // it cannot enforce makes create fail instead of running without it.
        if (::geteuid() != 0)
            QSKIP("needs root to start the daemon as another, unprivileged user");
        UnprivilegedDaemon daemon;
        QVERIFY(daemon.start());
        const auto ctl = [&](const QStringList &a) { return daemon.ctl(a); };
        const auto refused = ctl(args("create", "--name", "mem", "--memory", "64M"));
        const auto plain
            = ctl(args("run", "--pids", "64", "--", "sh", "-c", "id -u; cat /proc/self/status | grep NoNewPrivs"));
        const auto info = ctl(args("info", "--json"));
        const int exited = daemon.stop();
        QCOMPARE(refused.first, 5);
        QVERIFY2(
            refused.second.contains("a memory limit needs the cgroup memory controller"), refused.second.constData());
        QCOMPARE(plain.first, 0);
        QVERIFY2(plain.second.startsWith("1000\nNoNewPrivs:\t1"), plain.second.constData());
        QVERIFY2(info.second.contains("\"cgroup\": \"none\""), info.second.constData());
        QCOMPARE(exited, 0);
    }

    void anUnprivilegedDaemonSeesWhatItsSandboxesUse()
    {
        // sandbox.stats reads each sandbox's processes in /proc as the daemon's own user: a second
        // of CPU burned by a command that has ended stays counted (its time went to the sandbox's
        // init, which reaped it), and the other sandbox is not charged for it.
        if (::geteuid() != 0)
            QSKIP("needs root to start the daemon as another, unprivileged user");
        UnprivilegedDaemon daemon;
        QVERIFY(daemon.start());
        QCOMPARE(daemon.ctl(args("create", "--name", "burner")).first, 0);
        QCOMPARE(daemon.ctl(args("create", "--name", "bystander")).first, 0);
        // One second of CPU (not of the clock: a loaded machine takes longer, it burns the same).
        const auto burned
            = daemon.ctl(args("exec", "burner", "--", "sh", "-c", "perl -e '1 while (times)[0] < 1'; echo burned"));
        const auto stats = daemon.ctl(args("stats", "--json"));
        daemon.stop();
        QVERIFY2(burned.second.contains("burned"), burned.second.constData());
        QCOMPARE(stats.first, 0);
        QHash<QString, QJsonObject> byName;
        for (const QJsonValue &v : QJsonDocument::fromJson(stats.second).array())
            byName.insert(v.toObject().value(QStringLiteral("name")).toString(), v.toObject());
        QVERIFY2(byName.size() == 2, stats.second.constData());
        QVERIFY2(byName[QStringLiteral("burner")].value(QStringLiteral("cpuNs")).toDouble() >= 0.95e9,
            stats.second.constData());
        QVERIFY2(byName[QStringLiteral("bystander")].value(QStringLiteral("cpuNs")).toDouble() < 0.3e9,
            stats.second.constData());
        QCOMPARE(
            byName[QStringLiteral("burner")].value(QStringLiteral("lastOutput")).toString(), QStringLiteral("burned"));
        QCOMPARE(byName[QStringLiteral("burner")].value(QStringLiteral("executions")).toInt(), 0);
        QVERIFY(byName[QStringLiteral("bystander")].value(QStringLiteral("memoryBytes")).toDouble() > 0);
        QVERIFY(byName[QStringLiteral("bystander")].value(QStringLiteral("processes")).toInt() >= 1);
    }

    void aGuestThatCannotSealTheSandboxFailsCreate()
    {
        if (underGvisor())
            QSKIP("the bad guest fails at Landlock, which the guest applies under bubblewrap only");
        TestDaemon d({QStringLiteral("--guest"), binDir() + QStringLiteral("/airlock-bad-guest")});
        QVERIFY(d.start());
        // A sandbox whose (bad) guest says hello and idles: it shows where workspaces live.
        QString error;
        QCOMPARE(d.create(args("--name", "bg-idle"), &error), QStringLiteral("bg-idle"));
        const QString idleWs = info(d, QStringLiteral("bg-idle")).value(QStringLiteral("workspace")).toString();
        const QDir workspaces = QFileInfo(idleWs).dir();

        const CliResult r = d.ctl(args("create", "--name", "bg-fatal"));
        QCOMPARE(r.exitCode, 5);
        QVERIFY2(
            r.err.contains("the sandbox agent failed: landlock_restrict_self failed: test"), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
        const QJsonArray listed = jsonArray(d.ctl(args("ls", "--json")).out);
        QCOMPARE(listed.size(), 1);
        QCOMPARE(listed.at(0).toObject().value(QStringLiteral("name")).toString(), QStringLiteral("bg-idle"));
        QCOMPARE(d.ctl(args("info", "bg-fatal")).exitCode, 3);
        // Its workspace went with it: only the idle sandbox's remains.
        QCOMPARE(sandboxWorkspaces(workspaces.path(), QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden),
            QStringList{QFileInfo(idleWs).fileName()});
        // The name is free again, so nothing half-made holds it.
        const CliResult again = d.ctl(args("create", "--name", "bg-fatal"));
        QCOMPARE(again.exitCode, 5);
        QVERIFY2(!again.err.contains("already exists"), qPrintable(again.describe()));
    }
};

QTEST_GUILESS_MAIN(TestDaemonLife)
#include "tst_daemon.moc"
