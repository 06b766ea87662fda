// SPDX-License-Identifier: Apache-2.0
// What a sandboxed process can see and touch, checked by asking the kernel from inside real
// sandboxes (airlock-probe) and, where it proves the test can fail, from the host as a baseline.
#include "TestDaemon.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstddef>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestIsolation final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon;
    QString m_sb;

    // Runs the probe inside a sandbox; returns its first output line.
    QString probe(const QString &sandbox, const QStringList &args, int *exitCode = nullptr)
    {
        const CliResult r = m_daemon->ctl(QStringList{QStringLiteral("exec"), sandbox, QStringLiteral("--no-stdin"),
                                              QStringLiteral("--"), QStringLiteral("/opt/probe/airlock-probe")}
            + args);
        if (exitCode)
            *exitCode = r.exitCode;
        return QString::fromUtf8(r.out).section(QLatin1Char('\n'), 0, 0).trimmed();
    }
    static QString hostProbe(const QStringList &args)
    {
        QProcess p;
        p.start(probePath(), args);
        p.waitForFinished(10000);
        return QString::fromUtf8(p.readAllStandardOutput()).section(QLatin1Char('\n'), 0, 0).trimmed();
    }
    // The errno of a write to a read-only mount: gVisor checks the file's mode first, and its root
    // has no capability to pass a file that is not its own.
    static QString readOnly() { return underGvisor() ? QStringLiteral("EACCES") : QStringLiteral("EROFS"); }
    QString sh(const QString &sandbox, const QString &script)
    {
        return QString::fromUtf8(m_daemon
                                     ->ctl({QStringLiteral("exec"), sandbox, QStringLiteral("--no-stdin"),
                                         QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"), script})
                                     .out);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QProcessEnvironment env;
        env.insert(QStringLiteral("AIRLOCK_CANARY_TOKEN"), QStringLiteral("canary-7f3a9c"));
        m_daemon = std::make_unique<TestDaemon>(QStringList{}, env);
        QVERIFY(m_daemon->start());
        QString error;
        m_sb = m_daemon->create(
            {QStringLiteral("--name"), QStringLiteral("iso"), QStringLiteral("--mount"), probeMount()}, &error);
        QVERIFY2(!m_sb.isEmpty(), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void loopbackServerOnTheHostIsUnreachableWithoutNetwork()
    {
        QTcpServer server;
        QVERIFY(server.listen(QHostAddress::LocalHost));
        connect(&server, &QTcpServer::newConnection, &server, [&server] {
            QTcpSocket *s = server.nextPendingConnection();
            s->write("hello-from-host");
            s->flush();
        });
        const QString port = QString::number(server.serverPort());
        // The sandbox has its own empty loopback: nothing listens there, so the kernel refuses.
        QCOMPARE(probe(m_sb, {QStringLiteral("connect"), QStringLiteral("127.0.0.1"), port}),
            QStringLiteral("ECONNREFUSED"));
        // Other host addresses have no route at all (gVisor's own network stack, with only
        // loopback, answers EHOSTUNREACH where Linux's says ENETUNREACH).
        QCOMPARE(probe(m_sb, {QStringLiteral("connect"), QStringLiteral("10.255.255.1"), port}),
            underGvisor() ? QStringLiteral("EHOSTUNREACH") : QStringLiteral("ENETUNREACH"));
        if (underGvisor())
            QSKIP("the rest is --network full, which gVisor refuses (tst_gvisor shows the refusal)");
        // A `full` sandbox shares the host network and reads the server's exact bytes.
        const QString full = m_daemon->create(
            {QStringLiteral("--network"), QStringLiteral("full"), QStringLiteral("--mount"), probeMount()});
        QVERIFY(!full.isEmpty());
        QProcess ctl;
        ctl.setProcessEnvironment(m_daemon->environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("exec"), full, QStringLiteral("-n"), QStringLiteral("--"),
                QStringLiteral("/opt/probe/airlock-probe"), QStringLiteral("connect"), QStringLiteral("127.0.0.1"),
                port});
        QVERIFY(waitFor([&] { return ctl.state() == QProcess::NotRunning; }, 20000)); // serve while waiting
        QCOMPARE(QString::fromUtf8(ctl.readAllStandardOutput()).trimmed(), QStringLiteral("ok hello-from-host"));
        // And `ls` says so loudly.
        QVERIFY(m_daemon->ctl({QStringLiteral("ls")}).out.contains("FULL (host network)"));
        m_daemon->ctl({QStringLiteral("rm"), full});
    }

    void hostAbstractUnixSocketsAreOutOfReach()
    {
        // Abstract unix sockets are per network namespace: a `full` sandbox shares the host's, so
        // Landlock's scoping (ABI 6+) is what keeps X11, D-Bus and friends out of reach there.
        const QByteArray name = "airlock-test-" + QByteArray::number(::getpid());
        const int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        memcpy(sa.sun_path + 1, name.constData(), size_t(name.size()));
        const auto len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + size_t(name.size()));
        QCOMPARE(::bind(server, reinterpret_cast<sockaddr *>(&sa), len), 0);
        QCOMPARE(::listen(server, 8), 0);
        QCOMPARE(hostProbe({QStringLiteral("abstract"), QString::fromLatin1(name)}), QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("abstract"), QString::fromLatin1(name)}), QStringLiteral("ECONNREFUSED"));
        if (underGvisor()) {
            ::close(server);
            QSKIP("the rest is --network full, which gVisor refuses (tst_gvisor shows the refusal)");
        }
        const QString full = m_daemon->create(
            {QStringLiteral("--network"), QStringLiteral("full"), QStringLiteral("--mount"), probeMount()});
        QVERIFY(!full.isEmpty());
        const QString got = probe(full, {QStringLiteral("abstract"), QString::fromLatin1(name)});
        m_daemon->ctl({QStringLiteral("rm"), full});
        ::close(server);
        QCOMPARE(got, QStringLiteral("EPERM"));
    }

    void localServersInsideStillWork() { QCOMPARE(probe(m_sb, {QStringLiteral("loopback")}), QStringLiteral("ok")); }

    void hostHomeIsHidden()
    {
        const QString canary = QDir::homePath() + QStringLiteral("/airlock-canary-%1").arg(::getpid());
        QFile f(canary);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("secret");
        f.close();
        QCOMPARE(hostProbe({QStringLiteral("read"), canary}), QStringLiteral("ok")); // the baseline can read it
        QCOMPARE(probe(m_sb, {QStringLiteral("read"), canary}), QStringLiteral("ENOENT"));
        QCOMPARE(probe(m_sb, {QStringLiteral("read"), QStringLiteral("/root/.bashrc")}), QStringLiteral("ENOENT"));
        // /home holds the sandbox's own home alone.
        QCOMPARE(sh(m_sb, QStringLiteral("ls -A /home 2>&1")), QStringLiteral("sandbox\n"));
        QCOMPARE(sh(m_sb, QStringLiteral("ls -d /root 2>&1")).count(QStringLiteral("No such file")), 1);
        QFile::remove(canary);
    }

    void writesOutsideTheWorkspaceFail_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QStringList>("errnos");
        // gVisor checks a file's mode before its mount's read-only flag: its root (no capability)
        // meets the host's root-owned /usr/bin first.
        QTest::newRow("system binaries are a read-only bind")
            << "/usr/bin/evil" << QStringList{underGvisor() ? QStringLiteral("EACCES") : QStringLiteral("EROFS")};
        QTest::newRow("/etc is a read-only bind")
            << "/etc/passwd" << QStringList{QStringLiteral("EROFS"), QStringLiteral("EACCES")};
        QTest::newRow("the root of the sandbox")
            << "/evil" << QStringList{QStringLiteral("EROFS"), QStringLiteral("EACCES")};
        QTest::newRow("the agent binary")
            << "/.airlock/guest" << QStringList{QStringLiteral("EROFS"), QStringLiteral("EACCES")};
        // /dev is a writable tmpfs as far as mounts go: only Landlock stops this one. gVisor has no
        // Landlock: there the write lands in gVisor's own memory (writesInGvisorsDevStayThere).
        if (!underGvisor()) {
            QTest::newRow("Landlock blocks /dev/shm") << "/dev/shm/x" << QStringList{QStringLiteral("EACCES")};
            QTest::newRow("Landlock blocks new files in /dev") << "/dev/evil" << QStringList{QStringLiteral("EACCES")};
        }
    }
    void writesOutsideTheWorkspaceFail()
    {
        QFETCH(QString, path);
        QFETCH(QStringList, errnos);
        const QString got = probe(m_sb, {QStringLiteral("write"), path});
        QVERIFY2(errnos.contains(got), qPrintable(path + QStringLiteral(": ") + got));
    }

    // gVisor: /dev is a tmpfs of gVisor's own, and nothing written there reaches the host's.
    void writesInGvisorsDevStayThere()
    {
        if (!underGvisor())
            QSKIP("under bubblewrap Landlock refuses these writes (writesOutsideTheWorkspaceFail)");
        const QByteArray name = "airlock-dev-" + QByteArray::number(::getpid());
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/dev/shm/") + QString::fromLatin1(name)}),
            QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/dev/") + QString::fromLatin1(name)}),
            QStringLiteral("ok"));
        QCOMPARE(sh(m_sb, QStringLiteral("stat -f -c %T /dev")).trimmed(), QStringLiteral("tmpfs"));
        QVERIFY(!QFileInfo::exists(QStringLiteral("/dev/shm/") + QString::fromLatin1(name)));
        QVERIFY(!QFileInfo::exists(QStringLiteral("/dev/") + QString::fromLatin1(name)));
    }

    void workspaceAndTmpAreWritable()
    {
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/workspace/out.txt")}), QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/tmp/t")}), QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/dev/null")}), QStringLiteral("ok"));
    }

    void hostProcessesAreInvisible()
    {
        QCOMPARE(hostProbe({QStringLiteral("kill"), QString::number(m_daemon->pid())}), QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("kill"), QString::number(m_daemon->pid())}), QStringLiteral("ESRCH"));
        // Only the guest (pid 1), this execution's shepherd and the shell pipeline (sh, ls, grep)
        // exist in the sandbox's PID namespace.
        const QStringList pids
            = sh(m_sb, QStringLiteral("ls /proc | grep -E '^[0-9]+$'")).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QVERIFY2(pids.contains(QStringLiteral("1")) && pids.size() <= 5, qPrintable(pids.join(QLatin1Char(' '))));
    }

    void noCapabilitiesAndNoNewPrivsEvenAsRoot()
    {
        const QString status = sh(m_sb, QStringLiteral("/opt/probe/airlock-probe status"));
        QVERIFY2(status.contains(QStringLiteral("CapEff:\t0000000000000000")), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("CapPrm:\t0000000000000000")), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("PR_GET_NO_NEW_PRIVS:\t1")), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("Seccomp:\t2")), qPrintable(status));
        // Under gVisor every command is gVisor's root (no capability; an unprivileged uid to the
        // host), whose /proc has no NoNewPrivs line.
        if (underGvisor()) {
            QVERIFY2(status.contains(QStringLiteral("Uid:\t0\t0\t0\t0")), qPrintable(status));
        } else {
            QVERIFY2(status.contains(QStringLiteral("NoNewPrivs:\t1")), qPrintable(status));
            QVERIFY2(status.contains(QStringLiteral("Uid:\t1000\t1000\t1000\t1000")), qPrintable(status));
        }
    }

    void sandboxUserIsNotHostRootForFiles()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to plant a root-owned file; the daemon then runs sandboxes as an unprivileged host uid");
        // A root-owned 0600 file under a read-only bind: readable by host root, not from the sandbox.
        QTemporaryDir dir;
        QVERIFY(::chmod(QFile::encodeName(dir.path()).constData(), 0755) == 0);
        const QString secret = dir.filePath(QStringLiteral("secret"));
        QFile f(secret);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("root only");
        f.close();
        QVERIFY(::chmod(QFile::encodeName(secret).constData(), 0600) == 0);
        const QString sb = m_daemon->create({QStringLiteral("--mount"), probeMount(), QStringLiteral("--mount"),
            dir.path() + QStringLiteral(":/data:ro")});
        QVERIFY(!sb.isEmpty());
        QCOMPARE(probe(sb, {QStringLiteral("read"), QStringLiteral("/data/secret")}), QStringLiteral("EACCES"));
        QCOMPARE(probe(sb, {QStringLiteral("write"), QStringLiteral("/data/new")}), readOnly());
        QVERIFY(m_daemon->ctl({QStringLiteral("info"), sb}).out.contains("host uid 1879"));
        m_daemon->ctl({QStringLiteral("rm"), sb});
    }

    void shadowIsMasked()
    {
        QVERIFY(QFile::exists(QStringLiteral("/etc/shadow")));
        const QString got = probe(m_sb, {QStringLiteral("read"), QStringLiteral("/etc/shadow")});
        QVERIFY2(got == QLatin1String("EACCES") || got == QLatin1String("ok"), qPrintable(got));
        // Whatever the answer, no hash leaks: the file is a masked device node or empty.
        QCOMPARE(sh(m_sb, QStringLiteral("cat /etc/shadow 2>/dev/null | wc -c")).trimmed(), QStringLiteral("0"));
    }

    void daemonEnvironmentNeverReachesTheSandbox()
    {
        const QString inside
            = sh(m_sb, QStringLiteral("env; cat /proc/1/environ | tr '\\0' '\\n'; cat /proc/self/environ"));
        QVERIFY(!inside.isEmpty());
        QVERIFY2(!inside.contains(QStringLiteral("canary-7f3a9c")), qPrintable(inside));
        QVERIFY(inside.contains(QStringLiteral("HOME=/home/sandbox")));
        // The daemon itself does have it: the test would notice a leak.
        QFile environ(QStringLiteral("/proc/%1/environ").arg(m_daemon->pid()));
        QVERIFY(environ.open(QIODevice::ReadOnly));
        QVERIFY(environ.readAll().contains("canary-7f3a9c"));
    }

    // An agent that could write a startup file would run code that no rule judged: the next
    // `bash -c ls` with a socket as stdin (as sshd gives) reads ~/.bashrc first.
    void startupFilesCannotBePlanted()
    {
        QTemporaryDir dir;
        const QString rc = dir.filePath(QStringLiteral("rc"));
        QFile f(rc);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("echo PLANTED\n");
        f.close();
        // The agent's own way in: a file copy into the workspace, no command asked about.
        QCOMPARE(m_daemon->ctl({QStringLiteral("cp"), rc, m_sb + QStringLiteral(":/workspace/.bashrc")}).exitCode, 0);
        const QStringList bash = {
            QStringLiteral("socket-stdin"), QStringLiteral("bash"), QStringLiteral("-c"), QStringLiteral("echo ran")};
        // The baseline: with the workspace as HOME (as it was), bash runs the planted file.
        const CliResult planted = m_daemon->ctl(
            QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("--no-stdin"), QStringLiteral("--env"),
                QStringLiteral("HOME=/workspace"), QStringLiteral("--"), QStringLiteral("/opt/probe/airlock-probe")}
            + bash);
        QCOMPARE(planted.out, QByteArray("PLANTED\nran\n"));
        int exitCode = -1;
        QCOMPARE(probe(m_sb, bash, &exitCode), QStringLiteral("ran"));
        // Inside, no command can plant one either: each startup file is a read-only mount point.
        for (const char *file : {".bashrc", ".profile", ".bash_profile", ".zshenv", ".inputrc"}) {
            const QString path = QStringLiteral("/home/sandbox/") + QLatin1String(file);
            QCOMPARE(probe(m_sb, {QStringLiteral("write"), path}), readOnly());
            // (gVisor made the mount point in its tmpfs home as a folder, with the file bound over
            // it: unlink says EISDIR there, rmdir and rename EBUSY.)
            QCOMPARE(probe(m_sb, {QStringLiteral("unlink"), path}),
                underGvisor() ? QStringLiteral("EISDIR") : QStringLiteral("EBUSY"));
            QCOMPARE(probe(m_sb, {QStringLiteral("rename"), path, QStringLiteral("/home/sandbox/moved")}),
                QStringLiteral("EBUSY"));
        }
        // Python's user site (its .pth files run at every start) cannot be made, nor moved aside
        // with its parent and made anew.
        QCOMPARE(probe(m_sb, {QStringLiteral("mkdir"), QStringLiteral("/home/sandbox/.local/lib/python3")}),
            QStringLiteral("EROFS"));
        QCOMPARE(
            probe(m_sb,
                {QStringLiteral("rename"), QStringLiteral("/home/sandbox/.local"), QStringLiteral("/home/sandbox/l")}),
            QStringLiteral("EBUSY"));
        QCOMPARE(probe(m_sb,
                     {QStringLiteral("rename"), QStringLiteral("/home/sandbox/.local/lib"),
                         QStringLiteral("/home/sandbox/.local/l")}),
            QStringLiteral("EBUSY"));
        // The rest of the home is the programs' to use: caches, data, config.
        QCOMPARE(probe(m_sb, {QStringLiteral("mkdir"), QStringLiteral("/home/sandbox/.cache")}), QStringLiteral("ok"));
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/home/sandbox/.config/tool.conf")}),
            QStringLiteral("ok"));
        // Configuration that makes programs start others is read-only too (git core.fsmonitor, aliases).
        QCOMPARE(probe(m_sb, {QStringLiteral("write"), QStringLiteral("/home/sandbox/.gitconfig")}), readOnly());
        // And a mount may not cover them.
        const CliResult mounted = m_daemon->ctl({QStringLiteral("create"), QStringLiteral("--mount"),
            dir.path() + QStringLiteral(":/home/sandbox/.bashrc")});
        QCOMPARE(mounted.exitCode, 2);
        QVERIFY2(mounted.err.contains("is reserved by Airlock"), mounted.err.constData());
    }

    void hostnameAndIdentityAreTheSandboxes()
    {
        QCOMPARE(sh(m_sb, QStringLiteral("hostname")).trimmed(), m_sb);
        QCOMPARE(sh(m_sb, QStringLiteral("id -u; pwd")).trimmed(),
            underGvisor() ? QStringLiteral("0\n/workspace") : QStringLiteral("1000\n/workspace"));
    }
};

QTEST_GUILESS_MAIN(TestIsolation)
#include "tst_isolation.moc"
