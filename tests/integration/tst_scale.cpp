// SPDX-License-Identifier: Apache-2.0
// Many sandboxes on one daemon (issue 23): each runtime starts from a mount namespace without the
// other sandboxes' workspaces (so a start does not cost what the others hold) while the host's
// mounts stay as they were; a list asked for briefly asks nothing of the file system; host uids
// rotate; and 200 sandboxes driven by 50 clients at once account for every exit code and byte.
#include "TestDaemon.h"
#include "TestHelpers.h"
#include "sandbox/WorkspaceVolume.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QScopeGuard>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <memory>

using namespace airlock;
using namespace airlock::test;

namespace {
// The mount points in a process's mount namespace (its /proc/PID/mountinfo).
QStringList mountPoints(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/mountinfo").arg(pid));
    QStringList points;
    if (f.open(QIODevice::ReadOnly))
        for (const QByteArray &line : f.readAll().split('\n'))
            if (!line.isEmpty())
                points.append(QString::fromUtf8(line.split(' ').value(4)));
    return points;
}

// The runtime's own process of a sandbox (bwrap outside the sandbox), by its hostname argument.
qint64 bwrapOf(const QString &name)
{
    const QList<qint64> pids = pidsWithCommandLine("--hostname " + name.toUtf8() + ' ');
    return pids.size() == 1 ? pids.first() : -1;
}

QString workspaceOf(const TestDaemon &d, const QString &sandbox)
{
    return sandboxInfo(d, sandbox).value(QStringLiteral("workspace")).toString();
}
} // namespace

class TstScale : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (::geteuid() != 0)
            QSKIP("a root daemon's sandboxes (their workspaces are host mounts)");
    }

    // The daemon runs in a mount namespace whose root propagates shared, as on a systemd host:
    // without the runtime's namespace made private first, its detaching of B's workspace would
    // reach the daemon's and unmount it.
    void eachRuntimeStartsWithoutTheOtherWorkspacesAndTheHostKeepsThem()
    {
        TestDaemon d;
        d.setLauncher(args("unshare", "--mount", "--propagation", "shared"));
        QVERIFY(d.start());
        const qint64 daemon = d.pid();
        QVERIFY(!mountPoints(daemon).isEmpty());
        QString error;
        const QString b = d.create(args("--name", "scale-b"), &error);
        QVERIFY2(!b.isEmpty(), qPrintable(error));
        const QString bWorkspace = workspaceOf(d, b);
        if (!mountPoints(daemon).contains(bWorkspace))
            QSKIP("workspaces have no filesystem of their own here (no loop devices)");
        QCOMPARE(execIn(d, b, args("sh", "-c", "echo from-b > /workspace/b.txt")).exitCode, 0);

        // A disk the daemon's host mounts before A starts and unmounts while A runs: it goes from
        // A's runtime namespace too (a private one would hold it until A ends).
        QTemporaryDir disk;
        auto inDaemonsNamespace = [&](const QStringList &command) {
            return QProcess::execute(
                       QStringLiteral("nsenter"), args("-t", QString::number(daemon), "-m", "--") + command)
                == 0;
        };
        QVERIFY(inDaemonsNamespace(args("mount", "-t", "tmpfs", "airlock-held", disk.path())));

        const QString a = d.create(args("--name", "scale-a"), &error);
        QVERIFY2(!a.isEmpty(), qPrintable(error));
        const QString aWorkspace = workspaceOf(d, a);
        const qint64 aRuntime = bwrapOf(QStringLiteral("scale-a"));
        QVERIFY(aRuntime > 0);
        const QStringList aView = mountPoints(aRuntime);
        QVERIFY2(aView.contains(aWorkspace), qPrintable(aView.join(QLatin1Char('\n'))));
        QVERIFY2(!aView.contains(bWorkspace), qPrintable(bWorkspace + QStringLiteral(" is in A's runtime namespace")));
        QVERIFY2(!aView.join(QLatin1Char('\n')).contains(QFileInfo(bWorkspace).fileName()),
            qPrintable(aView.join(QLatin1Char('\n'))));
        QVERIFY(aView.contains(disk.path()));
        QVERIFY(inDaemonsNamespace(args("umount", disk.path())));
        QVERIFY2(waitFor([&] { return !mountPoints(aRuntime).contains(disk.path()); }, 2000),
            qPrintable(disk.path() + QStringLiteral(" is still held by A's runtime namespace")));
        // Its own namespace, not the daemon's.
        QVERIFY(QFile::symLinkTarget(QStringLiteral("/proc/%1/ns/mnt").arg(aRuntime))
            != QFile::symLinkTarget(QStringLiteral("/proc/%1/ns/mnt").arg(daemon)));

        // The daemon's namespace still has B's workspace, and B still works in it.
        QVERIFY2(mountPoints(daemon).contains(bWorkspace), qPrintable(bWorkspace + QStringLiteral(" was unmounted")));
        const CliResult read = execIn(d, b, args("sh", "-c", "cat /workspace/b.txt; echo more >> /workspace/b.txt"));
        QCOMPARE(read.exitCode, 0);
        QCOMPARE(read.out, QByteArray("from-b\n"));
        QFile fromHost(QStringLiteral("/proc/%1/root%2/b.txt").arg(daemon).arg(bWorkspace));
        QVERIFY(fromHost.open(QIODevice::ReadOnly));
        QCOMPARE(fromHost.readAll(), QByteArray("from-b\nmore\n"));
        QCOMPARE(d.ctl(args("rm", a)).exitCode, 0);
        QCOMPARE(d.ctl(args("rm", b)).exitCode, 0);
    }

    // The workspaces' folder is a mount of its own, so a runtime drops every other workspace with
    // one unmount, whatever their number: in its namespace the folder's mount alone is put back,
    // with its own workspace on it (clones), and nothing else below it.
    void theWorkspacesFolderIsOneMountEachRuntimeDropsWhole()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QString error;
        const QString a = d.create(args("--name", "whole-a"), &error);
        QVERIFY2(!a.isEmpty(), qPrintable(error));
        const QString b = d.create(args("--name", "whole-b"), &error);
        QVERIFY2(!b.isEmpty(), qPrintable(error));
        const QString aWorkspace = workspaceOf(d, a);
        const QString folder = QFileInfo(aWorkspace).path();
        if (!mountPoints(d.pid()).contains(aWorkspace))
            QSKIP("workspaces have no filesystem of their own here (no loop devices)");
        QVERIFY2(volume::isMountRoot(folder), qPrintable(folder + QStringLiteral(" is not a mount")));
        QCOMPARE(int(mountPoints(d.pid()).count(folder)), 1);
        const qint64 aRuntime = bwrapOf(QStringLiteral("whole-a"));
        QVERIFY(aRuntime > 0);
        QStringList below;
        for (const QString &point : mountPoints(aRuntime))
            if (point == folder || point.startsWith(folder + QLatin1Char('/')))
                below.append(point);
        QCOMPARE(below, (QStringList{folder, aWorkspace}));
        // Its own workspace is the one the host has: a file written inside is there.
        QCOMPARE(execIn(d, a, args("sh", "-c", "echo from-a > /workspace/a.txt")).exitCode, 0);
        QFile fromHost(aWorkspace + QStringLiteral("/a.txt"));
        QVERIFY(fromHost.open(QIODevice::ReadOnly));
        QCOMPARE(fromHost.readAll(), QByteArray("from-a\n"));
        // A folder's mount outlives its daemon (made once, on a start with nothing below it).
        d.stop();
        QVERIFY(volume::isMountRoot(folder));
        QVERIFY(d.start());
        QCOMPARE(int(mountPoints(d.pid()).count(folder)), 1);
    }

    // A folder with something mounted below it already when the daemon starts (an earlier
    // version's sandboxes that went on) is left as it is: each runtime detaches, one by one, what
    // is below it but its own workspace.
    void aFolderWithMountsBelowItIsDetachedMountByMount()
    {
        TestDaemon d;
        const QString folder = rootWorkspacesDir(d.dataDir());
        const QString earlier = folder + QStringLiteral("/earlier");
        QVERIFY(QDir().mkpath(earlier));
        QCOMPARE(QProcess::execute(QStringLiteral("mount"), args("-t", "tmpfs", "airlock-earlier", earlier)), 0);
        auto unmount = qScopeGuard([&] { QProcess::execute(QStringLiteral("umount"), args("-l", earlier)); });
        QVERIFY(d.start());
        QVERIFY(!volume::isMountRoot(folder));
        QString error;
        const QString a = d.create(args("--name", "byone-a"), &error);
        QVERIFY2(!a.isEmpty(), qPrintable(error));
        const QString aWorkspace = workspaceOf(d, a);
        const qint64 aRuntime = bwrapOf(QStringLiteral("byone-a"));
        QVERIFY(aRuntime > 0);
        const QStringList view = mountPoints(aRuntime);
        QVERIFY2(!view.contains(earlier), qPrintable(view.join(QLatin1Char('\n'))));
        QVERIFY(mountPoints(d.pid()).contains(earlier));
        if (mountPoints(d.pid()).contains(aWorkspace))
            QVERIFY(view.contains(aWorkspace));
        QCOMPARE(execIn(d, a, args("true")).exitCode, 0);
    }

    void aBriefListHoldsWhatATableShowsAndAWrongKindIsRefused()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QVERIFY(!d.create(args("--name", "brief")).isEmpty());
        auto client = d.connect();
        auto brief = client->call(QStringLiteral("sandbox.list"), {{QStringLiteral("brief"), true}});
        QVERIFY2(brief, qPrintable(brief ? QString() : brief.error().message));
        const QJsonObject one = brief->value(QStringLiteral("sandboxes")).toArray().first().toObject();
        QStringList keys = one.keys();
        keys.sort();
        QCOMPARE(keys,
            args(
                "agent", "createdAt", "executions", "failure", "hostNetwork", "id", "name", "network", "run", "state"));
        QCOMPARE(one.value(QStringLiteral("name")).toString(), QStringLiteral("brief"));
        QCOMPARE(one.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        auto full = client->call(QStringLiteral("sandbox.list"), {});
        QVERIFY(full);
        const QJsonObject described = full->value(QStringLiteral("sandboxes")).toArray().first().toObject();
        for (const QString &key : keys)
            QCOMPARE(described.value(key), one.value(key));
        QVERIFY(described.contains(QStringLiteral("isolation")) && described.contains(QStringLiteral("limits")));
        auto wrong = client->call(QStringLiteral("sandbox.list"), {{QStringLiteral("brief"), QStringLiteral("yes")}});
        QVERIFY(!wrong);
        QVERIFY2(wrong.error().message.contains(QLatin1String("params.brief: expected true or false")),
            qPrintable(wrong.error().message));
        const CliResult table = d.ctl(args("ls"));
        QCOMPARE(table.exitCode, 0);
        QVERIFY2(table.out.contains("brief") && table.out.contains("running"), table.out.constData());
    }

    void aHostUidLetGoOfIsNotTheNextHandedOut()
    {
        TestDaemon d;
        QVERIFY(d.start());
        auto uidOf = [&](const QString &sb) {
            return qint64(sandboxInfo(d, sb)
                              .value(QStringLiteral("isolation"))
                              .toObject()
                              .value(QStringLiteral("hostUid"))
                              .toDouble());
        };
        const QString first = d.create({});
        const qint64 firstUid = uidOf(first);
        QVERIFY(firstUid > 0);
        QCOMPARE(d.ctl(args("rm", first)).exitCode, 0);
        const QString second = d.create({});
        const qint64 secondUid = uidOf(second);
        QVERIFY(secondUid > 0);
        QVERIFY2(secondUid != firstUid, qPrintable(QString::number(secondUid)));
    }

    // A sandbox removed, or its daemon stopped, before its guest said hello. The daemon lets its
    // sandboxes outlive it and has no cgroups (a tmpfs over /sys/fs/cgroup), so killing bwrap
    // alone would leave the sandbox's init running: its init is found and killed too. Every create
    // is answered, and what the stopped daemon leaves running is what the next one takes over.
    void aSandboxEndedBeforeHelloLeavesNothingAndItsCreateIsAnswered()
    {
        // A guest whose bwrap is gone. Not bwrap itself (its arguments name the guest too): the
        // bwrap of a sandbox that went on past its daemon has init for a parent, as it should.
        auto orphans = [] {
            QSet<qint64> found;
            for (qint64 pid : pidsWithCommandLine("/.airlock/guest --fd")) {
                QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(pid));
                if (cmdline.open(QIODevice::ReadOnly) && cmdline.readAll().startsWith("/.airlock/guest")
                    && procStatusField(pid, "PPid:") == 1)
                    found.insert(pid);
            }
            return found;
        };
        const QSet<qint64> orphansBefore = orphans();
        TestDaemon d;
        d.setSandboxesOutlive(true);
        d.setLauncher(
            args("unshare", "--mount", "sh", "-c", "mount -t tmpfs none /sys/fs/cgroup && exec \"$0\" \"$@\""));
        QVERIFY(d.start());
        auto client = d.connect();
        int answered = 0;
        QStringList removedWhileCreated;
        for (int i = 0; i < 4; ++i) {
            const QString name = QStringLiteral("early%1").arg(i);
            client->callAsync(QStringLiteral("sandbox.create"),
                {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), name}}}},
                [&, name](Result<QJsonValue> r) {
                    ++answered;
                    if (!r && r.error().message.contains(QLatin1String("removed while it was being created")))
                        removedWhileCreated.append(name);
                });
            client->callAsync(
                QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), name}}, [](Result<QJsonValue>) {});
        }
        QVERIFY2(waitFor([&] { return answered == 4; }, 20000), qPrintable(QString::number(answered)));
        qInfo("removed while being created: %s", qPrintable(removedWhileCreated.join(QLatin1Char(' '))));
        QVERIFY2(waitFor([] { return pidsWithCommandLine("--hostname early").isEmpty(); }, 5000),
            "a removed sandbox's runtime is still running");
        QVERIFY2(waitFor([&] { return orphans() == orphansBefore; }, 5000),
            qPrintable(
                QStringLiteral("%1 sandbox inits left with no parent").arg(orphans().size() - orphansBefore.size())));

        // Stopped while four are being made: what is left running, the next daemon lists.
        for (int i = 0; i < 4; ++i)
            client->callAsync(QStringLiteral("sandbox.create"),
                {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), QStringLiteral("stopped%1").arg(i)}}}},
                [](Result<QJsonValue>) {});
        QVERIFY(waitFor([] { return !pidsWithCommandLine("--hostname stopped").isEmpty(); }, 10000));
        client.reset();
        d.stop();
        const int running = int(pidsWithCommandLine("--hostname stopped").size());
        QVERIFY(d.start());
        const QByteArray listed = d.ctl(args("ls")).out;
        QCOMPARE(int(listed.count("stopped")), running);
        QVERIFY2(waitFor([&] { return orphans() == orphansBefore; }, 5000), "a sandbox init left with no parent");
    }

    // The stress test: 200 sandboxes, 20 executions in each, from 50 clients at once;
    // every execution's exit code and output, byte for byte.
    void twoHundredSandboxesTwentyExecsEachFromFiftyClients()
    {
        const int sandboxes = 200, execsEach = 20, clients = 50;
        TestDaemon d;
        QVERIFY(d.start());
        QElapsedTimer clock;
        clock.start();
        // Made 8 at a time, each with no workspace image (the disk is not what this is about).
        QStringList ids;
        std::vector<std::unique_ptr<QProcess>> making;
        auto reap = [&](QProcess &p) {
            QVERIFY2(p.waitForFinished(120000), "airlockctl create hung");
            QCOMPARE(p.exitCode(), 0);
            ids.append(QString::fromUtf8(p.readAllStandardOutput().trimmed()));
        };
        for (int i = 0; i < sandboxes; ++i) {
            auto p = std::make_unique<QProcess>();
            p->setProcessEnvironment(d.environment());
            p->start(binDir() + QStringLiteral("/airlockctl"),
                args("--no-autostart", "create", "--disk", "none", "--name", QStringLiteral("stress-%1").arg(i)));
            making.push_back(std::move(p));
            if (making.size() == 8) {
                for (auto &m : making)
                    reap(*m);
                making.clear();
            }
        }
        for (auto &m : making)
            reap(*m);
        QCOMPARE(ids.size(), sandboxes);
        qInfo("%d sandboxes made in %lld ms", sandboxes, clock.elapsed());

        // Execution k of sandbox s prints 1000 + 37 * k bytes of a pattern that names both, and
        // exits with (s + k) % 7.
        struct Job {
            int sandbox, exec;
        };
        QList<Job> jobs;
        for (int k = 0; k < execsEach; ++k)
            for (int s = 0; s < sandboxes; ++s)
                jobs.append({s, k});
        auto expected = [](const Job &j) {
            const QByteArray unit = QStringLiteral("s%1e%2.").arg(j.sandbox).arg(j.exec).toUtf8();
            QByteArray out;
            while (out.size() < 1000 + 37 * j.exec)
                out += unit;
            return out.left(1000 + 37 * j.exec);
        };
        int next = 0, finished = 0, wrong = 0;
        QStringList failures;
        QEventLoop loop;
        std::function<void(QProcess *)> launch = [&](QProcess *p) {
            if (next == jobs.size()) {
                p->deleteLater();
                return;
            }
            const Job job = jobs.at(next++);
            p->setProperty("job", next - 1);
            const QByteArray want = expected(job);
            p->start(binDir() + QStringLiteral("/airlockctl"),
                args("--no-autostart", "exec", ids.at(job.sandbox), "-n", "--", "sh", "-c",
                    QStringLiteral("printf '%s' '%1'; exit %2")
                        .arg(QString::fromUtf8(want))
                        .arg((job.sandbox + job.exec) % 7)));
        };
        for (int c = 0; c < clients; ++c) {
            auto *p = new QProcess(this);
            p->setProcessEnvironment(d.environment());
            connect(p, &QProcess::finished, this, [&, p](int code, QProcess::ExitStatus status) {
                const Job job = jobs.at(p->property("job").toInt());
                const QByteArray out = p->readAllStandardOutput();
                if (status != QProcess::NormalExit || code != (job.sandbox + job.exec) % 7 || out != expected(job)) {
                    ++wrong;
                    if (failures.size() < 5)
                        failures.append(QStringLiteral("sandbox %1 exec %2: exit %3, %4 bytes: %5")
                                            .arg(job.sandbox)
                                            .arg(job.exec)
                                            .arg(code)
                                            .arg(out.size())
                                            .arg(QString::fromUtf8(p->readAllStandardError().left(200))));
                }
                if (++finished == jobs.size())
                    loop.quit();
                else
                    launch(p);
            });
            launch(p);
        }
        QTimer::singleShot(600000, &loop, &QEventLoop::quit);
        loop.exec();
        qInfo("%d executions from %d clients in %lld ms", finished, clients, clock.elapsed());
        QCOMPARE(finished, int(jobs.size()));
        QVERIFY2(wrong == 0, qPrintable(QStringLiteral("%1 wrong: ").arg(wrong) + failures.join(QStringLiteral("; "))));
        // And the history agrees: every execution recorded with its exit code.
        QVERIFY2(waitFor([&] { return storedEvents(d, QStringLiteral("exec.exited")).size() == jobs.size(); }, 20000),
            qPrintable(QString::number(storedEvents(d, QStringLiteral("exec.exited")).size())));
    }
};

QTEST_GUILESS_MAIN(TstScale)
#include "tst_scale.moc"
