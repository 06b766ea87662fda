// SPDX-License-Identifier: Apache-2.0
// --isolation gvisor (issue 22, decision 6): asked for, it is gVisor or nothing. Where runsc is
// missing the create fails with the reason and the fix, and no sandbox of another kind is made.
// Where it is (the test command installs it), a sandbox runs on gVisor's kernel with bubblewrap's
// view, the same seccomp program and the same guest; what gVisor cannot enforce is refused.
// A gVisor sandbox across a killed daemon, and a user's daemon on gVisor: tst_gvisor_outlive.
#include "GvisorFixture.h"
#include "LoopbackServer.h"
#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QCryptographicHash>
#include <QDirIterator>
#include <QJsonArray>
#include <QRegularExpression>
#include <QSysInfo>
#include <QTest>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// Connects to a unix socket from a child that became `uid`: 0, or the errno. An abstract name, or
// a path (found through /proc/self/fd, however long). The address is made before the fork: the
// child of a process with threads (a LoopbackServer's) must not allocate.
int connectAs(const QByteArray &name, bool abstract, uid_t uid)
{
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    auto length = socklen_t(sizeof sa);
    int dir = -1;
    if (abstract) {
        std::memcpy(sa.sun_path + 1, name.constData(), size_t(name.size()));
        length = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + size_t(name.size()));
    } else {
        const QFileInfo path(QFile::decodeName(name));
        dir = ::open(QFile::encodeName(path.path()).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
            return errno;
        std::snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dir,
            QFile::encodeName(path.fileName()).constData());
    }
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)
            ::_exit(255);
        const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ::_exit(::connect(s, reinterpret_cast<sockaddr *>(&sa), length) == 0 ? 0 : errno);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (dir >= 0)
        ::close(dir);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
int connectAbstractAs(const QByteArray &name, uid_t uid)
{
    return connectAs(name, true, uid);
}

// Joins the namespaces of `pid` (user, then network) from a child that became `uid`: 0, the
// errno of the open that failed, or 100 + the errno of the setns.
int enterNamespacesAs(qint64 pid, uid_t uid)
{
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)
            ::_exit(255);
        for (const char *ns : {"user", "net"}) {
            const int fd = ::open(QByteArray("/proc/" + QByteArray::number(pid) + "/ns/" + ns).constData(), O_RDONLY);
            if (fd < 0)
                ::_exit(errno);
            if (::setns(fd, 0) != 0)
                ::_exit(100 + errno); // opened, not joined
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
} // namespace

class TestGvisor final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The kernel inside is gVisor's, and the host's facts stay out: its kernel, boot command
    // line, modules, mounts and processes.
    void aGvisorSandboxRunsOnGvisorsKernel()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "strong", "--isolation", "gvisor")), QStringLiteral("strong"));
        CliResult r = execIn(d, q("strong"), args("uname", "-r"));
        QCOMPARE(r.out, QByteArray("4.4.0\n"));
        QVERIFY(QSysInfo::kernelVersion() != QLatin1String("4.4.0"));
        r = execIn(d, q("strong"), args("cat", "/proc/version", "/proc/cmdline"));
        QVERIFY2(r.out.startsWith("Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n"
                                  "BOOT_IMAGE=/vmlinuz-4.4.0-gvisor quiet\n"),
            qPrintable(r.describe()));
        r = execIn(d, q("strong"), args("cat", "/proc/modules"));
        QCOMPARE(r.err, QByteArray("cat: /proc/modules: No such file or directory\n"));
        // No host path in its mount table (the workspace comes in through gVisor's gofer), and
        // its only processes are its own: the guest as pid 1, and the command.
        r = execIn(d, q("strong"), args("cat", "/proc/self/mountinfo"));
        QVERIFY(r.out.contains(" /workspace rw "));
        QVERIFY2(!r.out.contains(QFile::encodeName(workspaceOf(d, q("strong")))), r.out.constData());
        r = execIn(d, q("strong"), args("sh", "-c", "cat /proc/1/comm; for p in /proc/[0-9]*; do echo $p; done"));
        QCOMPARE(r.out.split('\n').first(), QByteArray("guest"));
        QVERIFY2(r.out.count('\n') <= 5, r.out.constData()); // the guest, its shepherd, sh, and the loop's own
        // A host syscall the sentry does not implement fails there, with ENOSYS.
        QCOMPARE(d.create(args("--name", "probed", "--isolation", "gvisor", "--mount", probeMount())),
            QStringLiteral("probed"));
        QCOMPARE(execIn(d, q("probed"), args("/opt/probe/airlock-probe", "pidfd_getfd")).out, QByteArray("ENOSYS\n"));
        // What holds it, for the person to see.
        const QJsonObject isolation = sandboxInfo(d, q("strong")).value(QStringLiteral("isolation")).toObject();
        QCOMPARE(isolation.value(QStringLiteral("runtime")).toString(), QStringLiteral("gvisor"));
        QCOMPARE(isolation.value(QStringLiteral("sandboxUid")).toInt(), 0);
        QCOMPARE(isolation.value(QStringLiteral("execCheck")), QJsonValue(false));
        QCOMPARE(isolation.value(QStringLiteral("landlockAbi")).toInt(), 0);
        const CliResult info = d.ctl(args("info", "strong"));
        QVERIFY2(info.out.contains("\nisolation:   gvisor (gVisor: a user-space kernel between the sandbox and the "
                                   "host's, rootless, seccomp inside)\n"),
            qPrintable(info.describe()));
        QVERIFY2(info.out.contains("\nfilters:     seccomp inside gVisor; no Landlock and no exec check (gVisor has "
                                   "neither); ends with the daemon\n"),
            qPrintable(info.describe()));
        QVERIFY2(!info.out.contains("namespaces:"), qPrintable(info.describe()));
        QVERIFY2(info.out.contains("RLIMIT_NPROC inside gVisor"), qPrintable(info.describe()));
    }

    // gVisor refuses statx's AT_NO_AUTOMOUNT (EINVAL), which Debian 12's ls and stat pass on every
    // path; the preload every command gets drops the flag, and a command's own LD_PRELOAD follows it.
    void lsAndStatWorkThroughThePreload()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "files", "--isolation", "gvisor", "--mount", probeMount())),
            QStringLiteral("files"));
        QCOMPARE(execIn(d, q("files"), args("/opt/probe/airlock-probe", "statx-no-automount", "/workspace")).out,
            QByteArray("EINVAL\n"));
        CliResult r
            = execIn(d, q("files"), args("sh", "-c", "printf abc > f; ls -l f; stat -c '%s %n' f /usr; ls -d /usr"));
        QVERIFY2(r.exitCode == 0 && r.err.isEmpty(), qPrintable(r.describe()));
        QVERIFY2(r.out.startsWith("-rw-r--r-- 1 root root 3 "), qPrintable(r.describe()));
        QVERIFY2(r.out.endsWith(" f\n3 f\n4096 /usr\n/usr\n"), qPrintable(r.describe()));
        r = execIn(d, q("files"), args("sh", "-c", "echo \"$LD_PRELOAD\""), args("-e", "LD_PRELOAD=libc.so.6"));
        QCOMPARE(r.out, QByteArray("/.airlock/gvisor-preload.so libc.so.6\n"));
    }

    // bubblewrap's view, through gVisor: the same identity files, masks, read-only host folders,
    // read-only startup files in the home, and a workspace the sandbox's host uid owns.
    void theViewIsBubblewrapsView()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "view", "--isolation", "gvisor")), QStringLiteral("view"));
        CliResult r
            = execIn(d, q("view"), args("sh", "-c", "cat /etc/passwd; wc -c < /etc/machine-id; cat /etc/shadow"));
        QCOMPARE(r.out,
            QByteArray(
                "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:Airlock sandbox:/home/sandbox:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n0\n"));
        QCOMPARE(r.err, QByteArray("cat: /etc/shadow: Permission denied\n")); // the host's, which that uid cannot read
        QFile machineId(QStringLiteral("/etc/machine-id"));
        QVERIFY(machineId.open(QIODevice::ReadOnly) && machineId.size() > 0); // the host's is not empty
        r = execIn(d, q("view"),
            args("sh", "-c",
                "echo x > ~/.bashrc; mv ~/.bashrc ~/.old; echo y > ~/.ssh/config; touch /usr/bin/planted; "
                "echo ok > ~/notes && cat ~/notes"));
        QCOMPARE(r.out, QByteArray("ok\n"));
        QCOMPARE(r.err,
            QByteArray("sh: 1: cannot create /home/sandbox/.bashrc: Permission denied\n"
                       "mv: cannot move '/home/sandbox/.bashrc' to '/home/sandbox/.old': Device or resource busy\n"
                       "sh: 1: cannot create /home/sandbox/.ssh/config: Permission denied\n"
                       "touch: cannot touch '/usr/bin/planted': Permission denied\n"));
        QVERIFY(!QFileInfo::exists(QStringLiteral("/usr/bin/planted")));
        // What it writes in the workspace is its host uid's: gVisor's root is that uid to the host.
        QCOMPARE(execIn(d, q("view"), args("sh", "-c", "echo made > /workspace/made")).exitCode, 0);
        const QString made = workspaceOf(d, q("view")) + QStringLiteral("/made");
        struct stat st { };
        QCOMPARE(::stat(QFile::encodeName(made).constData(), &st), 0);
        const auto hostUid = uid_t(sandboxInfo(d, q("view"))
                                       .value(QStringLiteral("isolation"))
                                       .toObject()
                                       .value(QStringLiteral("hostUid"))
                                       .toDouble());
        QCOMPARE(st.st_uid, hostUid);
        QVERIFY(hostUid != 0);
        // Its bundle (the mounts' host paths, the view's files) is for that uid's group alone.
        const QString bundle = workspaceOf(d, q("view")) + QStringLiteral(".runtime");
        const QList<std::pair<QString, int>> modes{{bundle, 0750}, {bundle + QStringLiteral("/config.json"), 0440},
            {bundle + QStringLiteral("/files/0"), 0440}, {bundle + QStringLiteral("/state"), 0700}};
        for (const auto &[path, mode] : modes) {
            struct stat b { };
            QCOMPARE(::stat(QFile::encodeName(path).constData(), &b), 0);
            QCOMPARE(int(b.st_mode & 07777), mode);
            QCOMPARE(b.st_gid, gid_t(hostUid));
        }
        // And gVisor itself runs as that uid, not as the root daemon.
        const QList<qint64> gvisor = runscProcessesOf(workspaceOf(d, q("view")));
        QCOMPARE(gvisor.size(), 3);
        for (qint64 pid : gvisor)
            QCOMPARE(procStatusField(pid, "Uid:"), qint64(hostUid));
    }

    // The sandbox's seccomp program holds inside gVisor exactly as under bubblewrap: every row is
    // one attack, with the errno each runtime answers. Where they differ, the row says why.
    void theSeccompBatteryHoldsInBothRuntimes_data()
    {
        QTest::addColumn<QStringList>("probe");
        QTest::addColumn<QByteArray>("bwrap");
        QTest::addColumn<QByteArray>("gvisor");
        const QByteArray eperm("EPERM\n");
        for (const char *call : {"bpf", "perf_event_open", "keyctl", "add_key", "mount", "kexec_load", "init_module",
                 "personality", "kcmp", "ptrace", "unshare", "clone-newns", "tiocsti"})
            QTest::newRow(call) << QStringList{q(call)} << eperm << eperm;
        QTest::newRow("openat2") << QStringList{q("openat2")} << QByteArray("ENOSYS\n") << QByteArray("ENOSYS\n");
        // The host kernel has pidfd_getfd (and refuses pid 1's fd: EINVAL); gVisor has no such call.
        QTest::newRow("pidfd_getfd") << QStringList{q("pidfd_getfd")} << QByteArray("EINVAL\n")
                                     << QByteArray("ENOSYS\n");
        // /usr is read-only in both; gVisor's gofer refuses the write before the mount does.
        QTest::newRow("write /usr") << QStringList{q("write"), q("/usr/planted")} << QByteArray("EROFS\n")
                                    << QByteArray("EACCES\n");
        QTest::newRow("read /etc/shadow")
            << QStringList{q("read"), q("/etc/shadow")} << QByteArray("EACCES\n") << QByteArray("EACCES\n");
        QTest::newRow("write /workspace")
            << QStringList{q("write"), q("/workspace/x")} << QByteArray("ok\n") << QByteArray("ok\n");
    }
    void theSeccompBatteryHoldsInBothRuntimes()
    {
        QFETCH(QStringList, probe);
        QFETCH(QByteArray, bwrap);
        QFETCH(QByteArray, gvisor);
        if (!m_battery) {
            m_battery = std::make_unique<TestDaemon>();
            QVERIFY(m_battery->start());
            QCOMPARE(m_battery->create(args("--name", "ns", "--mount", probeMount())), QStringLiteral("ns"));
            QCOMPARE(m_battery->create(args("--name", "gv", "--isolation", "gvisor", "--mount", probeMount())),
                QStringLiteral("gv"));
        }
        const QStringList command = QStringList{q("/opt/probe/airlock-probe")} + probe;
        const CliResult ns = execIn(*m_battery, q("ns"), command);
        QVERIFY2(ns.out.startsWith(bwrap.trimmed()), qPrintable(ns.describe()));
        const CliResult gv = execIn(*m_battery, q("gv"), command);
        QVERIFY2(gv.out.startsWith(gvisor.trimmed()), qPrintable(gv.describe()));
    }
    void cleanupTestCase() { m_battery.reset(); }

    // A secret reaches a gVisor sandbox as env or as a file, and what it prints of it is masked
    // before it is stored, as under bubblewrap. Neither is ever written to a disk.
    void aSecretGrantedAsEnvOrAsAFileNeverReachesADisk()
    {
        TestDaemon d({QStringLiteral("--secret-store"), QStringLiteral("file")});
        QVERIFY(d.start());
        const QByteArray value = "gv-5URYX45jqRO25g3uK5kbAAegiuE8LCAnmu";
        QCOMPARE(d.ctl(args("secret", "set", "API_TOKEN"), value + '\n').exitCode, 0);
        CliResult r = d.ctl(args("create", "--name", "sec", "--isolation", "gvisor", "--policy", "-"),
            R"({"credentials": {"grants": [{"secret": "API_TOKEN", "env": "API_TOKEN"}]}})");
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        r = execIn(d, q("sec"), args("sh", "-c", "echo \"plain $API_TOKEN\"; printf %s \"$API_TOKEN\" | sha256sum"));
        QCOMPARE(r.out.split('\n').value(0), "plain [REDACTED" + QByteArray(value.size() - 10, '*') + ']');
        QCOMPARE(
            r.out.split('\n').value(1).left(64), QCryptographicHash::hash(value, QCryptographicHash::Sha256).toHex());
        QVERIFY(!d.ctl(args("show", "sec:1", "--raw")).out.contains(value));
        // As a file: read-only, 0400, and never on a disk: runsc reads it from a folder in
        // /dev/shm, which is gone once the sandbox runs.
        r = d.ctl(args("create", "--name", "file", "--isolation", "gvisor", "--policy", "-"),
            R"({"credentials": {"grants": [{"secret": "API_TOKEN", "file": "/run/secrets/token"}]}})");
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        r = execIn(d, q("file"),
            args("sh", "-c",
                "sha256sum < /run/secrets/token; stat -c %a /run/secrets/token; grep -o '/run/secrets/token [^ ]* ro,' "
                "/proc/self/mounts; echo x > /run/secrets/token"));
        QCOMPARE(r.out,
            QCryptographicHash::hash(value, QCryptographicHash::Sha256).toHex()
                + "  -\n400\n/run/secrets/token 9p ro,\n");
        // gVisor checks the mode first (no capability overrides it), then the read-only mount.
        QVERIFY2(r.err.contains("Permission denied"), qPrintable(r.describe()));
        const QString id = sandboxInfo(d, q("file")).value(QStringLiteral("id")).toString();
        QVERIFY(!id.isEmpty());
        QCOMPARE(QDir(QStringLiteral("/dev/shm"))
                     .entryList({QStringLiteral(".airlock-secrets-*")}, QDir::Dirs | QDir::Hidden)
                     .filter(id),
            QStringList());
        for (const QString &root : QStringList{workspaceOf(d, q("file")) + QStringLiteral(".runtime"), d.rootDir()}) {
            QDirIterator it(root, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
            while (it.hasNext()) {
                const QString path = it.next();
                QFile f(path);
                if (!path.endsWith(QLatin1String("/secrets.json")) && f.open(QIODevice::ReadOnly))
                    QVERIFY2(!f.readAll().contains(value), qPrintable(path));
            }
        }
    }

    // A starting daemon removes the folders of secrets it staged and did not remove (killed in a
    // create): its own real folders alone. /dev/shm is every local user's, and a link or a folder
    // of another uid planted under the prefix is neither followed nor removed (red team: a planted
    // link had a root daemon empty the folder it named).
    void leftoverSecretsGoAndNothingPlantedIsFollowed()
    {
        TestDaemon d;
        QVERIFY(d.start());
        const QString prefix = QStringLiteral("/dev/shm/.airlock-secrets-%1-")
                                   .arg(QString::fromLatin1(QCryptographicHash::hash(
                                       QFile::encodeName(d.dataDir()), QCryptographicHash::Sha256)
                                                                .toHex()
                                                                .left(12)));
        d.stop();
        QTemporaryDir victim;
        QVERIFY(QDir(victim.path()).mkdir(QStringLiteral("sub")));
        for (const QString &name : {QStringLiteral("a"), QStringLiteral("sub/b")}) {
            QFile f(victim.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write("precious") == 8);
        }
        const QString link = prefix + QStringLiteral("link"), foreign = prefix + QStringLiteral("foreign"),
                      ours = prefix + QStringLiteral("ours-Xy12Ab");
        QVERIFY(QFile::link(victim.path(), link));
        for (const QString &dir : {foreign, ours}) {
            QVERIFY(QDir().mkpath(dir));
            QFile f(dir + QStringLiteral("/0"));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write("x") == 1);
        }
        for (const QString &path : QStringList{foreign, foreign + QStringLiteral("/0")})
            QCOMPARE(::chown(QFile::encodeName(path).constData(), 65534, 65534), 0);
        QVERIFY(d.start());
        QVERIFY(!QFileInfo::exists(ours));
        QVERIFY(QFileInfo::exists(victim.filePath(QStringLiteral("a"))));
        QVERIFY(QFileInfo::exists(victim.filePath(QStringLiteral("sub/b"))));
        QVERIFY(QFileInfo(link).isSymLink());
        QVERIFY(QFileInfo::exists(foreign + QStringLiteral("/0")));
        QFile::remove(link);
        QDir(foreign).removeRecursively();
    }

    // Under gVisor the sandbox's memory is the sentry's: at --memory the kernel ends all of it (not
    // one process, as under bubblewrap), and the sandbox says so; the daemon goes on.
    void reachingTheMemoryLimitEndsTheSandboxAndSaysWhy()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(
            d.create(args("--name", "small", "--isolation", "gvisor", "--memory", "256M")), QStringLiteral("small"));
        const CliResult r
            = execIn(d, q("small"), args("python3", "-c", "x = bytearray(600 * 1024 * 1024); print('allocated')"));
        QVERIFY2(!r.out.contains("allocated"), qPrintable(r.describe()));
        QVERIFY(waitFor(
            [&] {
                return sandboxInfo(d, q("small")).value(QStringLiteral("state")).toString() == QLatin1String("failed");
            },
            10000));
        QCOMPARE(sandboxInfo(d, q("small")).value(QStringLiteral("failure")).toString(),
            QStringLiteral("the sandbox reached its memory limit (256 MiB) and the kernel ended gVisor (runsc)"));
        QVERIFY(waitFor([&] { return runscProcessesOf(workspaceOf(d, q("small"))).isEmpty(); }, 5000));
        QCOMPARE(d.create(args("--name", "after", "--isolation", "gvisor")), QStringLiteral("after"));
    }

    // runsc serves its control API (run anything in the sandbox, as root with every capability)
    // on an abstract unix socket named after the container: it lives in a network namespace of
    // runsc's own, so no host user reaches it (red-team finding: from the host's namespace, any
    // local user could).
    void runscsControlSocketIsOutOfEveryHostUsersReach()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "target", "--isolation", "gvisor")), QStringLiteral("target"));
        const QString id = sandboxInfo(d, q("target")).value(QStringLiteral("id")).toString();
        const QByteArray name = "runsc-sandbox.airlock-" + id.toLatin1();
        const QList<qint64> gvisor = runscProcessesOf(workspaceOf(d, q("target")));
        QCOMPARE(gvisor.size(), 3);
        // The socket exists, in runsc's namespace, and not in the host's.
        QVERIFY2(fileText(QStringLiteral("/proc/%1/net/unix").arg(gvisor.first())).contains(QByteArray("@" + name)),
            fileText(QStringLiteral("/proc/%1/net/unix").arg(gvisor.first())).constData());
        QVERIFY(!fileText(QStringLiteral("/proc/self/net/unix")).contains(QByteArray("@" + name)));
        QCOMPARE(connectAbstractAs(name, 65534), ECONNREFUSED);
        QCOMPARE(connectAbstractAs(name, 0), ECONNREFUSED); // nor root's, outside that namespace
        // Nor can the sandbox's own host uid enter runsc's namespaces: they are root's (red team,
        // second pass: a namespace that uid owned let it in, and the child that made it was, for
        // a moment, a dumpable copy of the root daemon's memory owned by that uid).
        const auto hostUid = uid_t(sandboxInfo(d, q("target"))
                                       .value(QStringLiteral("isolation"))
                                       .toObject()
                                       .value(QStringLiteral("hostUid"))
                                       .toDouble());
        QVERIFY(hostUid != 0);
        for (qint64 pid : gvisor)
            QCOMPARE(enterNamespacesAs(pid, hostUid), EACCES); // not even opened: not that uid's to trace
        QCOMPARE(execIn(d, q("target"), args("uname", "-r")).out, QByteArray("4.4.0\n")); // and it works
    }

    // Allowlist under gVisor: the guest relays each connection to the daemon's egress socket, and
    // the proxy decides as for any sandbox (tst_egress_gvisor runs the whole egress suite so). The
    // socket gives nothing more: from inside, spoken to directly, the same proxy refuses the same
    // destinations; on the host, no other user reaches it, and a connection from anyone but the
    // runtime's uid is closed unread.
    void egressGoesThroughTheProxyAndTheSocketGivesNothingMore()
    {
        LoopbackServer web("web");
        TestDaemon d(args("--resolve", "allowed.test=127.0.0.1", "--resolve", "denied.test=127.0.0.1"));
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "net", "--isolation", "gvisor", "--allow", "allowed.test")), q("net"));
        const QString url = QStringLiteral("http://allowed.test:%1/through").arg(web.port());
        CliResult r = execIn(d, q("net"), args("curl", "-sS", "-m", "10", url));
        QVERIFY2(r.out == "web GET /through\n", qPrintable(r.describe()));
        // Straight to the socket, past the relay: the proxy's answer, and its rule.
        const QString connect
            = QStringLiteral("CONNECT denied.test:%1 HTTP/1.1\r\nHost: denied.test:%1\r\n\r\n").arg(web.port());
        r = execIn(d, q("net"),
            args("python3", "-c",
                "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect('/.airlock/egress/sock'); "
                "s.sendall(sys.argv[1].encode()); a=s.makefile('rb').read().decode().splitlines(); "
                "print(a[0]); print(a[-1])",
                connect));
        QCOMPARE(r.out,
            QStringLiteral("HTTP/1.1 403 Forbidden\nairlock: no rule names denied.test:%1\n").arg(web.port()).toUtf8());
        QVERIFY(waitFor(
            [&] {
                const QList<QJsonObject> denied = storedEvents(d, QStringLiteral("network.denied"));
                return std::any_of(denied.cbegin(), denied.cend(), [](const QJsonObject &e) {
                    return e.value(QStringLiteral("host")).toString() == QLatin1String("denied.test")
                        && e.value(QStringLiteral("decision")).toString() == QLatin1String("deny");
                });
            },
            5000));
        // The socket is in the bundle, reached by the runtime's group alone.
        const QString socket = workspaceOf(d, q("net")) + QStringLiteral(".runtime/egress/sock");
        QCOMPARE(octalMode(QFileInfo(socket).path()), q("750"));
        QCOMPARE(octalMode(socket), q("660"));
        QCOMPARE(connectAs(QFile::encodeName(socket), false, 65534), EACCES);
        // Root connects (the folder lets it), and is closed before it says a word: it is not the
        // runtime's uid. (The sandbox's own curl above came through the same socket.)
        const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        const int dir = ::open(QFile::encodeName(QFileInfo(socket).path()).constData(), O_PATH | O_CLOEXEC);
        std::snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/sock", dir);
        QCOMPARE(::connect(s, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
        const timeval fiveSeconds{5, 0};
        ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &fiveSeconds, sizeof fiveSeconds);
        char answer[64];
        QCOMPARE(::read(s, answer, sizeof answer), ssize_t(0));
        QCOMPARE(::send(s, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL), ssize_t(-1));
        QCOMPARE(errno, EPIPE);
        ::close(s);
        ::close(dir);
        // gVisor may reach the host's unix sockets only where there is egress, and make none.
        const auto runscFlags = [&](const QString &sandbox) {
            QByteArray all;
            for (qint64 pid : runscProcessesOf(workspaceOf(d, sandbox)))
                all += fileText(QStringLiteral("/proc/%1/cmdline").arg(pid)).replace('\0', ' ') + '\n';
            return all;
        };
        QVERIFY2(runscFlags(q("net")).contains(" --host-uds=open "), runscFlags(q("net")).constData());
        // And info says what that opens.
        QVERIFY(sandboxInfo(d, q("net"))
                    .value(QStringLiteral("isolation"))
                    .toObject()
                    .value(QStringLiteral("filters"))
                    .toString()
                    .endsWith(QLatin1String("; ends with the daemon; egress relayed to the daemon's socket; host unix "
                                            "sockets under its mounts reachable, as under bubblewrap")));
        QCOMPARE(d.create(args("--name", "closed", "--isolation", "gvisor")), q("closed"));
        QVERIFY(!runscFlags(q("closed")).contains("--host-uds"));
        QVERIFY(!QFileInfo::exists(workspaceOf(d, q("closed")) + QStringLiteral(".runtime/egress")));
        // --network full stays refused: gVisor's own network stack is never on.
        r = d.ctl(args("create", "--name", "full", "--isolation", "gvisor", "--network", "full"));
        QCOMPARE(r.exitCode, 5);
        QCOMPARE(r.err,
            QByteArray("airlockctl: --isolation gvisor has no direct network: use --network allowlist (through the "
                       "egress proxy) or none, or --isolation namespaces for --network full (nothing was created)\n"));
    }

    // A client that resets its connection while the destination reads nothing (the guest still
    // holds bytes for it) ends the relayed pair; the guest does not spin on the hang-up (red team:
    // it did, at full CPU, until the destination read or closed).
    void aResetConnectionEndsItsRelayWithoutSpinning()
    {
        const int sink = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); // listens, never accepts
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof sa;
        QCOMPARE(::bind(sink, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
        QCOMPARE(::listen(sink, 4), 0);
        QCOMPARE(::getsockname(sink, reinterpret_cast<sockaddr *>(&sa), &len), 0);
        TestDaemon d(args("--resolve", "sink.test=127.0.0.1"));
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "rst", "--isolation", "gvisor", "--allow", "sink.test")), q("rst"));
        CliResult r = execIn(d, q("rst"),
            args("python3", "-c",
                QStringLiteral("import socket,struct; s=socket.create_connection(('127.0.0.1', 3128)); "
                               "s.sendall(b'CONNECT sink.test:%1 HTTP/1.1\\r\\n\\r\\n'); "
                               "print(s.recv(100).split(b'\\r\\n')[0].decode()); s.settimeout(3)\n"
                               "try:\n  while True: s.send(b'x' * 65536)\nexcept OSError: pass\n"
                               "s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0)); s.close()")
                    .arg(ntohs(sa.sin_port))));
        QVERIFY2(r.out == "HTTP/1.1 200 Connection established\n", qPrintable(r.describe()));
        // The guest's (pid 1's) CPU time over a second, in gVisor's clock ticks: idle, not spinning.
        r = execIn(d, q("rst"),
            args("sh", "-c",
                "a=$(cut -d' ' -f14,15 /proc/1/stat); sleep 1; b=$(cut -d' ' -f14,15 /proc/1/stat); "
                "echo $(( $(echo $b | tr ' ' +) - $(echo $a | tr ' ' +) ))"));
        QVERIFY2(r.out.trimmed().toInt() < 15, qPrintable(r.describe()));
        ::close(sink);
    }

    // What gVisor cannot enforce is refused, with the reason and the fix; nothing is made.
    void whatGvisorCannotEnforceIsRefused()
    {
        TestDaemon d;
        QVERIFY(d.start());
        CliResult r;
        QTemporaryDir dir;
        QFile policy(dir.filePath(QStringLiteral("judged.json")));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(R"({"commands": {"judgeExecs": true}})");
        policy.close();
        r = d.ctl(args("create", "--name", "judged", "--isolation", "gvisor", "--policy", policy.fileName()));
        QCOMPARE(r.exitCode, 5);
        QVERIFY2(r.err.startsWith("airlockctl: /commands/judgeExecs: gVisor cannot judge the programs a command "
                                  "starts (it has no seccomp user notification); set it to false in "),
            qPrintable(r.describe()));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        // Not asked for, the programs a command starts are not judged, and the policy says so.
        QCOMPARE(d.create(args("--name", "plain", "--isolation", "gvisor")), QStringLiteral("plain"));
        // gVisor runs for that one alone.
        const QString plain = workspaceOf(d, q("plain"));
        QCOMPARE(runscProcessesOf(QFileInfo(plain).path()), runscProcessesOf(plain));
        const CliResult shown = d.ctl(args("policy", "show", "plain", "--effective"));
        QVERIFY2(QString::fromUtf8(shown.out).contains(
                     QRegularExpression(QStringLiteral("\n/commands/judgeExecs +false +runtime:gvisor\n"))),
            qPrintable(shown.describe()));
        // Nor can a running sandbox be given it.
        r = d.ctl(args("policy", "set", "plain", policy.fileName()));
        QCOMPARE(r.exitCode, 5);
        QVERIFY2(r.err.contains("/commands/judgeExecs: gVisor cannot judge"), qPrintable(r.describe()));
    }

    // rm ends every process of gVisor's and removes its bundle; so does a daemon whose sandboxes
    // end with it when it dies, and the next daemon removes what the sandbox left.
    void nothingOfGvisorsOutlivesTheSandbox()
    {
        TestDaemon d;
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "one", "--isolation", "gvisor")), QStringLiteral("one"));
        const QString workspace = workspaceOf(d, q("one"));
        QVERIFY(QFileInfo(workspace + QStringLiteral(".runtime/config.json")).isFile());
        QCOMPARE(runscProcessesOf(workspace).size(), 3); // runsc, its gofer and its sentry
        QCOMPARE(d.ctl(args("rm", "one")).exitCode, 0);
        QVERIFY2(waitFor([&] { return runscProcessesOf(workspace).isEmpty(); }, 5000),
            qPrintable(QString::number(runscProcessesOf(workspace).size())));
        QVERIFY(!QFileInfo::exists(workspace + QStringLiteral(".runtime")));

        TestDaemon ending; // --sandboxes-end-with-daemon
        QVERIFY(ending.start());
        QCOMPARE(ending.create(args("--name", "two", "--isolation", "gvisor")), QStringLiteral("two"));
        const QString second = workspaceOf(ending, q("two"));
        QVERIFY(!QFileInfo::exists(second + QStringLiteral(".runtime/resume"))); // nothing to come back to
        ::kill(pid_t(ending.pid()), SIGKILL);
        ending.process().waitForFinished(5000);
        QVERIFY2(waitFor([&] { return runscProcessesOf(second).isEmpty(); }, 5000),
            qPrintable(QString::number(runscProcessesOf(second).size())));
        QVERIFY(ending.start());
        QCOMPARE(jsonArray(ending.ctl(args("ls", "--json")).out).size(), 0);
        QVERIFY(!QFileInfo::exists(second + QStringLiteral(".runtime")));
        QVERIFY(!QFileInfo::exists(second));
    }

    void withoutRunscGvisorIsRefusedWithTheFix()
    {
        TestDaemon d({QStringLiteral("--runsc"), QStringLiteral("/nonexistent/runsc")});
        QVERIFY(d.start());
        const CliResult created = d.ctl(args("create", "--name", "strong", "--isolation", "gvisor"));
        QCOMPARE(created.exitCode, 5); // no boundary
        QCOMPARE(created.err,
            QByteArray("airlockctl: --isolation gvisor needs gVisor's runsc, which is not installed at "
                       "/nonexistent/runsc: install it with 'sudo apt install runsc' (or give airlockd --runsc "
                       "PATH)\n"));
        // Never another kind instead: nothing was made, nothing runs.
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        QVERIFY(pidsWithCommandLine(QFile::encodeName(d.dataDir())).isEmpty());
        const CliResult run = d.ctl(args("run", "--isolation", "gvisor", "--", "true"));
        QCOMPARE(run.exitCode, 5);
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        // What the daemon has, for the person to see.
        const CliResult info = d.ctl(args("info"));
        QVERIFY2(
            info.out.contains("\ngVisor:      --isolation gvisor needs gVisor's runsc"), qPrintable(info.describe()));
    }

    // Not asked for, it is namespaces (bubblewrap), and info says which runtime holds a sandbox.
    void theDefaultIsNamespacesAndInfoSaysWhichHoldsIt()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "plain")), QStringLiteral("plain"));
        const QJsonObject isolation
            = sandboxInfo(d, QStringLiteral("plain")).value(QStringLiteral("isolation")).toObject();
        QCOMPARE(isolation.value(QStringLiteral("runtime")).toString(), QStringLiteral("namespaces"));
        QVERIFY(isolation.value(QStringLiteral("namespaces")).toArray().contains(QStringLiteral("net")));
        const CliResult info = d.ctl(args("info", "plain"));
        QVERIFY2(info.out.contains(
                     "\nisolation:   namespaces (bubblewrap: namespaces, seccomp and Landlock on the host's kernel)\n"),
            qPrintable(info.describe()));
        QCOMPARE(d.ctl(args("create", "--name", "asked", "--isolation", "namespaces")).exitCode, 0);
        QCOMPARE(sandboxInfo(d, QStringLiteral("asked"))
                     .value(QStringLiteral("isolation"))
                     .toObject()
                     .value(QStringLiteral("runtime")),
            QJsonValue(QStringLiteral("namespaces")));
    }

    void anIsolationThatDoesNotExistIsRefusedByName()
    {
        TestDaemon d;
        QVERIFY(d.start());
        const CliResult cli = d.ctl(args("create", "--isolation", "vm"));
        QCOMPARE(cli.exitCode, 2);
        QCOMPARE(cli.err, QByteArray("airlockctl: invalid --isolation 'vm': expected namespaces or gvisor\n"));
        // The daemon's own check, for a client that sends the request itself.
        auto client = d.connect();
        QVERIFY(client);
        const auto reply = client->call(QStringLiteral("sandbox.create"),
            QJsonObject{{QStringLiteral("spec"), QJsonObject{{QStringLiteral("isolation"), QStringLiteral("vm")}}}});
        QVERIFY(!reply);
        QCOMPARE(reply.error().code, ErrorCode::InvalidArgument);
        QVERIFY2(reply.error().message.contains(QStringLiteral("/isolation: expected \"namespaces\" or \"gvisor\"")),
            qPrintable(reply.error().message));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
    }

private:
    std::unique_ptr<TestDaemon> m_battery;
};

QTEST_GUILESS_MAIN(TestGvisor)
#include "tst_gvisor.moc"
