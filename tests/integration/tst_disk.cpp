// SPDX-License-Identifier: Apache-2.0
// A workspace's size: an ext4 image of its own that the sandbox cannot write past, reach from
// inside or from the host as its uid, or outlive its rm; the room the daemon keeps on the disk for
// the history; a workspace that outlives its daemon keeps its size; and a normal user's daemon
// does the same through fuse2fs, or says why it cannot.
#include "TestHelpers.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QTest>

#include <algorithm>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

QString workspaceOf(const QJsonObject &info)
{
    return info.value(QStringLiteral("workspace")).toString();
}

QJsonObject diskLimit(const QJsonObject &info)
{
    return info.value(QStringLiteral("limits")).toObject().value(QStringLiteral("diskBytes")).toObject();
}

// Lines of this process's mountinfo (the host's view) that mount something on `dir`.
int mountsOn(const QString &dir)
{
    QFile f(QStringLiteral("/proc/self/mountinfo"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    int n = 0;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.split(' ').value(4) == QFile::encodeName(dir))
            ++n;
    return n;
}

// A command run on the host as `uid` (no groups): what a local user, or a sandbox that got out
// as its own host uid, could do.
CliResult runAs(uid_t uid, const QStringList &command)
{
    QProcess p;
    p.start(QStringLiteral("setpriv"),
        QStringList{QStringLiteral("--reuid=%1").arg(uid), QStringLiteral("--regid=%1").arg(uid),
            QStringLiteral("--clear-groups")}
            + command);
    p.waitForFinished(10000);
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError(), p.exitStatus() != QProcess::NormalExit};
}

struct stat statOf(const QString &path)
{
    struct stat st { };
    if (::lstat(native(path).constData(), &st) != 0)
        st.st_mode = 0;
    return st;
}
} // namespace

class TestDisk final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon;

    CliResult exec(const QString &sandbox, const QStringList &command) const
    {
        return execIn(*m_daemon, sandbox, command);
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (::geteuid() != 0)
            QSKIP("the loop-device path is root's; a normal user's is the last test (fuse2fs)");
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void aWorkspaceCannotGrowPastItsSize()
    {
        QString error;
        const QString sb = m_daemon->create(args("--name", "small", "--disk", "64M"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(*m_daemon, sb);
        QCOMPARE(diskLimit(info).value(QStringLiteral("value")).toDouble(), 64 * kMiB);
        QCOMPARE(diskLimit(info).value(QStringLiteral("enforcedBy")).toString(),
            QStringLiteral("ext4 image on a loop device"));
        const QString ws = workspaceOf(info);
        const QString image = ws + QStringLiteral(".ext4");
        QCOMPARE(statOf(image).st_size, off_t(64 << 20));
        QCOMPARE(mountsOn(ws), 1);

        // The agent fills it: ENOSPC at its size, in the sandbox, and nowhere else.
        const CliResult fill = exec(sb, args("dd", "if=/dev/zero", "of=/workspace/fill", "bs=1M", "count=100"));
        QCOMPARE(fill.exitCode, 1);
        QVERIFY2(fill.err.contains("dd: error writing '/workspace/fill': No space left on device"),
            qPrintable(fill.describe()));
        const CliResult more = exec(sb,
            args("sh", "-c",
                "fallocate -l 8M /workspace/more; truncate -s 1T /workspace/holes && "
                "dd if=/dev/zero of=/workspace/holes bs=1M count=4 seek=1000 conv=notrunc"));
        QVERIFY2(
            more.err.contains("fallocate: fallocate failed: No space left on device"), qPrintable(more.describe()));
        QVERIFY2(more.err.contains("No space left on device"), qPrintable(more.describe()));
        // What the host gives it is the image's size at most, however it writes.
        QVERIFY2(statOf(image).st_blocks * 512 <= 64 << 20, qPrintable(QString::number(statOf(image).st_blocks * 512)));
        QCOMPARE(statOf(image).st_size, off_t(64 << 20));

        // A full workspace is the sandbox's problem only: it runs on, and so does everyone else.
        QCOMPARE(
            exec(sb, args("sh", "-c", "echo still here > /tmp/note && cat /tmp/note")).out, QByteArray("still here\n"));
        const QString other = m_daemon->create(args("--name", "neighbour"), &error);
        QVERIFY2(!other.isEmpty(), qPrintable(error));
        QCOMPARE(
            exec(other, args("sh", "-c", "echo fine > /workspace/f && cat /workspace/f")).out, QByteArray("fine\n"));
        const QJsonObject used = sandboxInfo(*m_daemon, sb).value(QStringLiteral("disk")).toObject();
        QVERIFY2(
            used.value(QStringLiteral("usedBytes")).toDouble() > 50 * kMiB, QJsonDocument(used).toJson().constData());
        QVERIFY(
            used.value(QStringLiteral("usedBytes")).toDouble() <= used.value(QStringLiteral("sizeBytes")).toDouble());
        QVERIFY2(
            m_daemon->ctl(args("info", sb)).out.contains("\ndisk:        "), "info shows what the workspace holds");

        // rm leaves nothing: no mount, no image, no folder, no loop device on it.
        QCOMPARE(m_daemon->ctl(args("rm", sb, other)).exitCode, 0);
        QCOMPARE(mountsOn(ws), 0);
        QVERIFY(!QFileInfo::exists(image));
        QVERIFY(!QFileInfo::exists(ws));
        QDir loops(QStringLiteral("/sys/block"));
        for (const QString &loop : loops.entryList({QStringLiteral("loop*")})) {
            QFile backing(loops.filePath(loop) + QStringLiteral("/loop/backing_file"));
            QVERIFY2(!backing.open(QIODevice::ReadOnly) || !backing.readAll().contains(QFile::encodeName(ws)),
                qPrintable(loop));
        }
    }

    void theDefaultIsTenGibibytesOrWhatIsFreeBeyondTheReserveAndNoneIsAPlainFolder()
    {
        struct statvfs sv { };
        QVERIFY(::statvfs("/var/lib/airlock", &sv) == 0);
        const double beyondReserve = double(sv.f_bavail) * double(sv.f_frsize) - 512 * kMiB;
        QString error;
        const QString plain = m_daemon->create(args("--name", "default"), &error);
        QVERIFY2(!plain.isEmpty(), qPrintable(error));
        const QJsonObject limit = diskLimit(sandboxInfo(*m_daemon, plain));
        QCOMPARE(limit.value(QStringLiteral("enforcedBy")).toString(),
            QStringLiteral("ext4 image on a loop device (the default; --disk changes it)"));
        const double value = limit.value(QStringLiteral("value")).toDouble();
        if (beyondReserve > 11 * 1024 * kMiB)
            QCOMPARE(value, 10 * 1024 * kMiB);
        else
            QVERIFY2(std::abs(value - beyondReserve) < 1024 * kMiB, qPrintable(QString::number(value)));

        const QString none = m_daemon->create(args("--name", "unbounded", "--disk", "none"), &error);
        QVERIFY2(!none.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(*m_daemon, none);
        QCOMPARE(diskLimit(info).value(QStringLiteral("enforcedBy")).toString(), QStringLiteral("unlimited"));
        QVERIFY(diskLimit(info).value(QStringLiteral("value")).isNull());
        QVERIFY(info.value(QStringLiteral("disk")).isNull());
        QVERIFY(!QFileInfo::exists(workspaceOf(info) + QStringLiteral(".ext4")));
        QCOMPARE(mountsOn(workspaceOf(info)), 0);

        // A size the kernel's ext4 cannot be is a usage error that names the range.
        const CliResult tiny = m_daemon->ctl(args("create", "--disk", "1M"));
        QCOMPARE(tiny.exitCode, 2);
        QVERIFY2(tiny.err.contains("--disk 1M: 1.0 MiB is out of range: 0 (no limit) or from 16 MiB to 1024 TiB"),
            qPrintable(tiny.describe()));
        QCOMPARE(m_daemon->ctl(args("rm", plain, none)).exitCode, 0);
    }

    // The attacker is the agent's code, or a local user, or that code out on the host as its uid.
    void theImageIsOutOfReachOfTheSandboxAndOfOtherUsers()
    {
        QString error;
        const QString sb = m_daemon->create(args("--name", "reach", "--disk", "32M"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(*m_daemon, sb);
        const QString ws = workspaceOf(info);
        const QString image = ws + QStringLiteral(".ext4");
        const auto hostUid
            = uid_t(info.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("hostUid")).toDouble());
        QCOMPARE(exec(sb, args("sh", "-c", "echo secret > /workspace/notes")).exitCode, 0);

        // Inside: no loop device to write raw blocks to, no image anywhere in its view.
        const CliResult inside = exec(sb,
            args("sh", "-c",
                "ls /dev/loop-control /dev/loop0; find / -xdev -name '*.ext4' 2>/dev/null | head -1; "
                "echo found-end"));
        QVERIFY2(inside.err.contains("ls: cannot access '/dev/loop-control': No such file or directory"),
            qPrintable(inside.describe()));
        QVERIFY2(inside.out.endsWith("found-end\n") && !inside.out.contains(".ext4"), qPrintable(inside.describe()));

        // On the host: the image is root's, 0600; the workspace is the sandbox uid's, 0700.
        QCOMPARE(statOf(image).st_uid, uid_t(0));
        QCOMPARE(octalMode(image), QStringLiteral("600"));
        QCOMPARE(statOf(ws).st_uid, hostUid);
        QCOMPARE(octalMode(ws), QStringLiteral("700"));
        const CliResult asSandbox = runAs(
            hostUid, args("dd", "if=/dev/zero", QStringLiteral("of=") + image, "bs=1k", "count=1", "conv=notrunc"));
        QCOMPARE(asSandbox.exitCode, 1);
        QVERIFY2(asSandbox.err.contains("Permission denied"), qPrintable(asSandbox.describe()));
        const CliResult asBystander = runAs(65534, args("cat", ws + QStringLiteral("/notes")));
        QCOMPARE(asBystander.exitCode, 1);
        QVERIFY2(asBystander.err.contains("Permission denied"), qPrintable(asBystander.describe()));
        QCOMPARE(m_daemon->ctl(args("rm", sb)).exitCode, 0);
    }

    void rmKeepLeavesThePlainFilesAndNoImage()
    {
        QString error;
        const QString sb = m_daemon->create(args("--name", "kept", "--disk", "32M"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QJsonObject info = sandboxInfo(*m_daemon, sb);
        const QString ws = workspaceOf(info);
        const auto hostUid
            = uid_t(info.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("hostUid")).toDouble());
        QCOMPARE(exec(sb,
                     args("sh", "-c",
                         "mkdir -p /workspace/src && printf 'kept bytes' > /workspace/src/a.txt && chmod 640 "
                         "/workspace/src/a.txt && "
                         "ln -s src/a.txt /workspace/link"))
                     .exitCode,
            0);
        const CliResult rm = m_daemon->ctl(args("rm", "--keep", "--json", sb));
        QCOMPARE(rm.exitCode, 0);
        const QString kept = jsonArray(rm.out).at(0).toObject().value(QStringLiteral("workspace")).toString();
        QVERIFY2(kept.contains(QStringLiteral("/kept-")), qPrintable(rm.describe()));
        QFile a(kept + QStringLiteral("/src/a.txt"));
        QVERIFY(a.open(QIODevice::ReadOnly));
        QCOMPARE(a.readAll(), QByteArray("kept bytes"));
        QCOMPARE(octalMode(a.fileName()), QStringLiteral("640"));
        QCOMPARE(statOf(a.fileName()).st_uid, hostUid);
        QCOMPARE(QFileInfo(kept + QStringLiteral("/link")).symLinkTarget(), kept + QStringLiteral("/src/a.txt"));
        QCOMPARE(octalMode(kept), QStringLiteral("700"));
        QVERIFY(!QFileInfo::exists(ws + QStringLiteral(".ext4")));
        QCOMPARE(mountsOn(ws), 0);
        QCOMPARE(mountsOn(kept), 0);
    }

    // What cp cannot copy out (the sandbox chose a path longer than PATH_MAX) is kept as the image
    // itself: never lost, never orphaned.
    void whatCannotBeCopiedOutIsKeptAsItsImage()
    {
        QString error;
        const QString sb = m_daemon->create(args("--name", "deep", "--disk", "32M"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString ws = workspaceOf(sandboxInfo(*m_daemon, sb));
        const CliResult deep = exec(sb,
            args("python3", "-c",
                "import os; os.chdir('/workspace'); open('precious.txt', 'w').write('important\\n')\n"
                "for _ in range(30): os.mkdir('0' * 200); os.chdir('0' * 200)"));
        QVERIFY2(deep.exitCode == 0, qPrintable(deep.describe()));
        const CliResult rm = m_daemon->ctl(args("rm", "--keep", "--json", sb));
        QCOMPARE(rm.exitCode, 0);
        const QString kept = jsonArray(rm.out).at(0).toObject().value(QStringLiteral("workspace")).toString();
        QVERIFY2(kept.endsWith(QStringLiteral("/deep-") + QFileInfo(ws).fileName() + QStringLiteral(".ext4")),
            qPrintable(rm.describe()));
        QCOMPARE(statOf(kept).st_size, off_t(32 << 20));
        QCOMPARE(octalMode(kept), QStringLiteral("600"));
        QVERIFY(!QFileInfo::exists(ws) && !QFileInfo::exists(ws + QStringLiteral(".ext4")));
        QVERIFY(!QFileInfo::exists(kept.chopped(5))); // no half-copied folder beside it
        QCOMPARE(mountsOn(ws), 0);
        // It holds the files: debugfs reads them without mounting anything.
        QProcess debugfs;
        debugfs.start(QStringLiteral("/usr/sbin/debugfs"), args("-R", "cat /precious.txt", kept));
        QVERIFY(debugfs.waitForFinished(10000));
        QCOMPARE(debugfs.readAllStandardOutput(), QByteArray("important\n"));
        QFile::remove(kept);
    }

    void belowTheReserveNoWorkspaceIsMade()
    {
        TestDaemon tight(args("--disk-reserve", "1000T"));
        QVERIFY(tight.start());
        for (const QStringList &options : {args("--disk", "32M"), args("--disk", "none"), QStringList{}}) {
            const CliResult r = tight.ctl(args("create", "--json") + options);
            QCOMPARE(r.exitCode, 1);
            const QJsonObject e = jsonObject(r.out).value(QStringLiteral("error")).toObject();
            QCOMPARE(e.value(QStringLiteral("code")).toString(), QStringLiteral("disk_full"));
            QVERIFY2(e.value(QStringLiteral("message"))
                         .toString()
                         .contains(QStringLiteral("airlockd keeps 1000 TiB of it for the history")),
                qPrintable(r.describe()));
        }
        QCOMPARE(jsonArray(tight.ctl(args("ls", "--json")).out).size(), 0);
        QProcess bad;
        bad.start(binDir() + QStringLiteral("/airlockd"), args("--disk-reserve", "lots", "--socket", "/nonexistent/s"));
        QVERIFY(bad.waitForFinished(10000));
        QCOMPARE(bad.exitCode(), 2);
        QVERIFY2(bad.readAllStandardError().startsWith("airlockd: --disk-reserve: "), "the option is named");
        // Past any disk (sums of it would overflow): refused, not wrapped round.
        bad.start(
            binDir() + QStringLiteral("/airlockd"), args("--disk-reserve", "14000000t", "--socket", "/nonexistent/s"));
        QVERIFY(bad.waitForFinished(10000));
        QCOMPARE(bad.exitCode(), 2);
        QCOMPARE(bad.readAllStandardError(),
            QByteArray("airlockd: --disk-reserve: 14000000t is more than any disk (at most 1P)\n"));
    }

    // Sizes are promises, not reservations: together they may exceed the disk. Once less than the
    // reserve is free, a sandbox whose image still grows is ended (its workspace kept), and the
    // others go on. The disk here is a 512 MiB tmpfs under the daemon's workspaces.
    void aSandboxThatFillsTheDiskPastTheReserveIsEndedAndTheOthersGoOn()
    {
        TestDaemon d(args("--disk-reserve", "192M"));
        const QString workspaces = rootWorkspacesDir(d.dataDir());
        QVERIFY(QDir().mkpath(workspaces));
        QCOMPARE(::mount("airlock-test", native(workspaces).constData(), "tmpfs", 0, "size=512m,mode=0711"), 0);
        const auto unmount = qScopeGuard([&] {
            d.stop();
            ::umount2(native(workspaces).constData(), MNT_DETACH);
            ::rmdir(native(workspaces).constData());
        });
        QVERIFY(d.start());
        QString error;
        QCOMPARE(d.create(args("--name", "writer", "--disk", "1G"), &error), QStringLiteral("writer"));
        QCOMPARE(d.create(args("--name", "quiet", "--disk", "32M"), &error), QStringLiteral("quiet"));
        QCOMPARE(execIn(d, QStringLiteral("quiet"), args("sh", "-c", "echo kept > /workspace/note")).exitCode, 0);
        // 1 MiB at a time, each on the disk before the next, into an image larger than the disk:
        // only the guard stops it before the disk is full (dd would fail, exit 3).
        const CliResult writer = execIn(d, QStringLiteral("writer"),
            args("sh", "-c",
                "i=0; while [ $i -lt 600 ]; do "
                "dd if=/dev/zero of=/workspace/f$i bs=1M count=1 conv=fsync status=none || exit 3; "
                "i=$((i+1)); done"));
        QCOMPARE(writer.exitCode, 137);
        const QJsonObject ended = sandboxInfo(d, QStringLiteral("writer"));
        QCOMPARE(ended.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        QVERIFY2(ended.value(QStringLiteral("failure"))
                     .toString()
                     .startsWith(QStringLiteral("its workspace grew while the disk was full (")),
            qPrintable(ended.value(QStringLiteral("failure")).toString()));
        QVERIFY2(ended.value(QStringLiteral("failure"))
                     .toString()
                     .endsWith(QStringLiteral(" below the 192 MiB airlockd keeps for the history): it "
                                              "was ended and its workspace is kept until 'airlockctl rm writer'")),
            qPrintable(ended.value(QStringLiteral("failure")).toString()));
        const QList<QJsonObject> exits = storedEvents(d, QStringLiteral("exec.exited"));
        QVERIFY(std::any_of(exits.begin(), exits.end(), [](const QJsonObject &e) {
            return e.value(QStringLiteral("reason")).toString() == QLatin1String("disk_full");
        }));
        struct statvfs sv { };
        QVERIFY(::statvfs(native(workspaces).constData(), &sv) == 0);
        QVERIFY2(double(sv.f_bavail) * sv.f_frsize > 64 * kMiB, "the guard ended it within the reserve");
        // The others go on, and their workspaces hold what they wrote.
        QCOMPARE(execIn(d, QStringLiteral("quiet"), args("cat", "/workspace/note")).out, QByteArray("kept\n"));
        QCOMPARE(d.ctl(args("rm", "writer", "quiet")).exitCode, 0);
    }

    void aWorkspaceThatOutlivesItsDaemonKeepsItsSize()
    {
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create(args("--name", "lasting", "--disk", "48M"), &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString ws = workspaceOf(sandboxInfo(d, sb));
        QCOMPARE(execIn(d, sb, args("sh", "-c", "echo before > /workspace/f")).exitCode, 0);
        d.stop();
        QCOMPARE(mountsOn(ws), 1); // the sandbox still works in it
        QVERIFY(d.start());
        const QJsonObject info = sandboxInfo(d, sb);
        QCOMPARE(diskLimit(info).value(QStringLiteral("value")).toDouble(), 48 * kMiB);
        QCOMPARE(execIn(d, sb, args("cat", "/workspace/f")).out, QByteArray("before\n"));
        const CliResult fill = execIn(d, sb, args("dd", "if=/dev/zero", "of=/workspace/fill", "bs=1M", "count=80"));
        QVERIFY2(fill.err.contains("No space left on device"), qPrintable(fill.describe()));
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
        QCOMPARE(mountsOn(ws), 0);
        QVERIFY(!QFileInfo::exists(ws + QStringLiteral(".ext4")));
    }

    // A normal user's daemon: no loop devices, so fuse2fs serves the image, as that user. Where
    // /dev/fuse is not open to the user (a container; Debian's udev makes it 0666), a size is
    // refused with the reason, and a default workspace has none.
    void aNormalUsersDaemonUsesFuse2fsOrSaysWhyItCannot()
    {
        struct stat fuse { };
        QVERIFY2(::stat("/dev/fuse", &fuse) == 0, "/dev/fuse");
        const auto restore = qScopeGuard([&] { ::chmod("/dev/fuse", fuse.st_mode & 07777); });
        QVERIFY(::chmod("/dev/fuse", 0600) == 0);
        {
            UnprivilegedDaemon closed;
            QVERIFY(closed.start());
            const auto [code, out] = closed.ctl(args("create", "--disk", "32M"));
            QCOMPARE(code, 5);
            QVERIFY2(out.contains("a disk limit needs a workspace image, which this daemon cannot mount (/dev/fuse is "
                                  "not open to this user "
                                  "(Permission denied)); drop --disk or fix the host"),
                out.constData());
            const auto [made, name] = closed.ctl(args("create", "--name", "nofuse"));
            QCOMPARE(made, 0);
            const auto [shown, json] = closed.ctl(args("info", "--json", "nofuse"));
            QCOMPARE(diskLimit(jsonObject(json)).value(QStringLiteral("enforcedBy")).toString(),
                QStringLiteral("unlimited"));
            QCOMPARE(closed.ctl(args("rm", "nofuse")).first, 0);
        }

        QVERIFY(::chmod("/dev/fuse", 0666) == 0);
        UnprivilegedDaemon user;
        QVERIFY(user.start());
        const auto [made, madeOut] = user.ctl(args("create", "--name", "mine", "--disk", "32M"));
        QVERIFY2(made == 0, madeOut.constData());
        const QJsonObject info = jsonObject(user.ctl(args("info", "--json", "mine")).second);
        QCOMPARE(diskLimit(info).value(QStringLiteral("enforcedBy")).toString(),
            QStringLiteral("ext4 image served by fuse2fs"));
        const QString ws = workspaceOf(info);
        QCOMPARE(mountsOn(ws), 1);
        const QList<qint64> servers = pidsWithCommandLine(QFile::encodeName(ws + QStringLiteral(".ext4")));
        QCOMPARE(servers.size(), 1);
        QCOMPARE(procStatusField(servers.first(), "Uid:"), qint64(UnprivilegedDaemon::kUid)); // the user's, not root's
        // It outlives the daemon, so it holds nothing of the daemon's (its log, sockets, history).
        const QDir fds(QStringLiteral("/proc/%1/fd").arg(servers.first()));
        for (const QString &fd : fds.entryList(QDir::System | QDir::NoDotAndDotDot)) {
            const QString target = QFile::symLinkTarget(fds.filePath(fd));
            QVERIFY2(target == QLatin1String("/dev/null") || target == QLatin1String("/dev/fuse")
                    || target == ws + QStringLiteral(".ext4"),
                qPrintable(fd + QStringLiteral(" -> ") + target));
        }
        const auto [filled, fillOut] = user.ctl(
            args("exec", "mine", "-n", "--", "dd", "if=/dev/zero", "of=/workspace/fill", "bs=1M", "count=64"));
        QCOMPARE(filled, 1);
        QVERIFY2(fillOut.contains("No space left on device"), fillOut.constData());
        QVERIFY(statOf(ws + QStringLiteral(".ext4")).st_blocks * 512 <= 32 << 20);
        const auto [listed, files]
            = user.ctl(args("exec", "mine", "-n", "--", "sh", "-c", "echo ok > /tmp/x && ls -A /workspace"));
        QCOMPARE(listed, 0);
        QCOMPARE(files, QByteArray("fill\n")); // what was written, and no lost+found
        QCOMPARE(user.ctl(args("rm", "mine")).first, 0);
        QCOMPARE(mountsOn(ws), 0);
        QVERIFY(waitFor([&] { return !processRunning(servers.first()); }, 5000));
        QVERIFY(!QFileInfo::exists(ws + QStringLiteral(".ext4")));
    }
};

QTEST_GUILESS_MAIN(TestDisk)
#include "tst_disk.moc"
