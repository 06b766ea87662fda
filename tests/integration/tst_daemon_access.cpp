// SPDX-License-Identifier: Apache-2.0
// Who may reach a daemon: its socket and folder are the user's alone, a folder another user made
// first is refused with its owner and the fix, a connection that never says hello is closed, and a
// token written to a file is private. (The daemon's life, its sandboxes and its history are
// tst_daemon.)
#include "TestHelpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLocalSocket>
#include <QProcess>
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

using namespace airlock;
using namespace airlock::test;

class TestDaemonAccess final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void socketAndItsDirectoryArePrivate()
    {
        TestDaemon d;
        QVERIFY(d.start());
        struct stat st { };
        QCOMPARE(::lstat(native(d.socketPath()).constData(), &st), 0);
        QVERIFY(S_ISSOCK(st.st_mode));
        QCOMPARE(uid_t(st.st_uid), ::geteuid());
        QCOMPARE(st.st_mode & 077, 0u); // nothing for group or others, from the first moment
        // srw-------. The daemon chmods after Qt has renamed the socket into place as srwx------,
        // so a client as quick as the fixture can see 0700 for a fraction of a millisecond.
        QVERIFY2(waitFor([&] { return octalMode(d.socketPath()) == QLatin1String("600"); }, 1000),
            qPrintable(octalMode(d.socketPath())));
        QCOMPARE(octalMode(d.runtimeDir()), QStringLiteral("700"));
        QCOMPARE(octalMode(d.socketPath() + QStringLiteral(".lock")), QStringLiteral("600"));
        if (::geteuid() != 0)
            return;
        // Another user is stopped by the directory before the socket's own mode is even consulted.
        const QByteArray path = native(d.socketPath());
        const pid_t child = ::fork();
        if (child == 0) {
            const gid_t nogroup = 65534;
            if (::setgroups(0, nullptr) != 0 || ::setresgid(nogroup, nogroup, nogroup) != 0
                || ::setresuid(65534, 65534, 65534) != 0)
                ::_exit(200);
            const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un sa{};
            sa.sun_family = AF_UNIX;
            std::strncpy(sa.sun_path, path.constData(), sizeof sa.sun_path - 1);
            ::_exit(::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0 ? 0 : errno);
        }
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY(WIFEXITED(status));
        QCOMPARE(WEXITSTATUS(status), EACCES);
    }

    void aClientRefusesASocketDirectoryThatIsNotItsOwn()
    {
        // Someone else created the directory first (the /tmp fallback without XDG_RUNTIME_DIR):
        // connecting there would hand them commands, environment values and files.
        TestDaemon d;
        const QString dir = QFileInfo(d.socketPath()).path();
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(::chown(native(dir).constData(), 65534, 65534) == 0);
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"), args("ls"));
        QVERIFY(ctl.waitForFinished(15000));
        QCOMPARE(ctl.exitCode(), 4);
        QVERIFY2(ctl.readAllStandardError().contains(QByteArray(QByteArray("refusing ") + native(dir))), "no refusal");
        QVERIFY(!QFileInfo::exists(d.socketPath())); // and no daemon was started there
        QVERIFY(::chown(native(dir).constData(), ::getuid(), ::getgid()) == 0);
    }

    // Without XDG_RUNTIME_DIR the socket's folder is one another user cannot make first: a
    // /tmp/airlock-UID someone else made changes nothing, and a folder of someone else's where
    // the socket goes is refused with its path, its owner and the fix.
    void anotherUserCannotSquatTheSocketsFolder()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to act as two other users");
        constexpr uid_t victim = UnprivilegedDaemon::kUid, squatter = 65533;
        if (QFileInfo::exists(QStringLiteral("/run/user/%1").arg(victim)))
            QSKIP("this machine has a login runtime folder for the test user");
        const QString squatted = QStringLiteral("/tmp/airlock-%1").arg(victim);
        if (::mkdir(native(squatted).constData(), 0700) != 0)
            QSKIP("/tmp/airlock-65534 exists already");
        const auto removeSquat = qScopeGuard([&] { QDir(squatted).removeRecursively(); });
        QVERIFY(::chown(native(squatted).constData(), squatter, squatter) == 0);
        QTemporaryDir home;
        QVERIFY(::chown(native(home.path()).constData(), victim, victim) == 0);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name : {"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "AIRLOCK_SOCKET", "AIRLOCK_HOST"})
            env.remove(QString::fromLatin1(name));
        env.insert(QStringLiteral("HOME"), home.path());
        env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
        const auto setpriv = [&](const QString &program) {
            return QStringList{QStringLiteral("--reuid=%1").arg(victim), QStringLiteral("--regid=%1").arg(victim),
                QStringLiteral("--clear-groups"), binDir() + QLatin1Char('/') + program};
        };
        const auto asVictim = [&](const QStringList &arguments) {
            QProcess p;
            p.setProcessEnvironment(env);
            p.start(QStringLiteral("setpriv"), setpriv(QStringLiteral("airlockctl")) + arguments);
            p.waitForFinished(30000);
            return CliResult{p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError(),
                p.exitStatus() != QProcess::NormalExit};
        };
        const QString socket = home.filePath(QStringLiteral(".local/state/airlock/run/airlockd.sock"));
        KillOnExit guard;
        const CliResult started = asVictim(args("ls"));
        QFile lock(socket + QStringLiteral(".lock"));
        if (lock.open(QIODevice::ReadOnly))
            guard.pid = lock.readAll().trimmed().toLongLong();
        QVERIFY2(started.exitCode == 0 && started.out.startsWith("NAME"), qPrintable(started.describe()));
        struct stat st { };
        QCOMPARE(::lstat(native(socket).constData(), &st), 0);
        QVERIFY(S_ISSOCK(st.st_mode) && st.st_uid == victim);
        QCOMPARE(::lstat(native(QFileInfo(socket).path()).constData(), &st), 0);
        QCOMPARE(st.st_mode & 0777, 0700u);
        QVERIFY(QDir(squatted).isEmpty()); // never used
        QVERIFY(guard.pid > 0 && ::kill(pid_t(guard.pid), SIGTERM) == 0);
        QVERIFY(waitFor([&] { return !processRunning(guard.pid); }, 10000));
        guard.pid = 0;

        // The folder where the socket goes, made by someone else (only root could, in a home of
        // one's own): the daemon does not start, and both it and the client say what to do.
        const QString runDir = QFileInfo(socket).path();
        QVERIFY(QDir(runDir).removeRecursively() && QDir().mkpath(runDir));
        QVERIFY(::chown(native(runDir).constData(), squatter, squatter) == 0);
        const CliResult refused = asVictim(args("ls"));
        QCOMPARE(refused.exitCode, 4);
        QVERIFY2(refused.err.contains(QStringLiteral(
                     "refusing %1: it must be a directory owned by you with mode 0700, and it is owned by ")
                                          .arg(runDir)
                                          .toUtf8())
                && refused.err.contains("(uid 65533)")
                && refused.err.contains(QStringLiteral("rm -r %1").arg(runDir).toUtf8())
                && refused.err.contains("set XDG_RUNTIME_DIR (or AIRLOCK_SOCKET) to a folder of your own"),
            qPrintable(refused.describe()));
        QProcess daemon;
        daemon.setProcessEnvironment(env);
        daemon.start(QStringLiteral("setpriv"), setpriv(QStringLiteral("airlockd")));
        QVERIFY(daemon.waitForFinished(30000));
        QVERIFY(daemon.exitCode() != 0);
        const QByteArray why = daemon.readAllStandardError();
        QVERIFY2(why.contains(QStringLiteral("%1 belongs to ").arg(runDir).toUtf8())
                && why.contains("(uid 65533), not to you (uid 65534)")
                && why.contains(QStringLiteral("rm -r %1").arg(runDir).toUtf8())
                && why.contains("set XDG_RUNTIME_DIR (or AIRLOCK_SOCKET)"),
            why.constData());
    }

    // A connection that never says hello is closed after the deadline (here 500 ms); one that
    // does stays.
    void aConnectionThatNeverSaysHelloIsClosed()
    {
        TestDaemon d(args("--hello-timeout", "500ms"));
        QVERIFY(d.start());
        QLocalSocket silent, greeted;
        silent.connectToServer(d.socketPath());
        QVERIFY(silent.waitForConnected(5000));
        QElapsedTimer t;
        t.start();
        auto client = d.connect();
        QVERIFY(client);
        QVERIFY2(waitFor([&] { return silent.state() == QLocalSocket::UnconnectedState; }, 5000),
            "the silent connection stayed open");
        QVERIFY2(t.elapsed() >= 300 && t.elapsed() < 3000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(silent.readAll().contains("no \\\"hello\\\" within 500 ms of connecting"));
        QTest::qWait(700);
        QVERIFY(client->call(QStringLiteral("sandbox.list"))); // the greeted one answers still
    }

    // `airlockd token create > FILE`, as the README shows it, under the usual umask 022.
    void aTokenWrittenToAFileIsPrivate()
    {
        TestDaemon d;
        const QString file = d.rootDir() + QStringLiteral("/ci.token");
        QProcess p;
        p.setProcessEnvironment(d.environment());
        p.start(QStringLiteral("sh"),
            {QStringLiteral("-c"), QStringLiteral("umask 022; exec \"$0\" token create --name ci > \"$1\""),
                binDir() + QStringLiteral("/airlockd"), file});
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitCode(), 0);
        struct stat st { };
        QCOMPARE(::stat(native(file).constData(), &st), 0);
        QCOMPARE(st.st_mode & 0777, 0600u);
        QVERIFY(QFileInfo(file).size() > 50);
    }
};

QTEST_GUILESS_MAIN(TestDaemonAccess)
#include "tst_daemon_access.moc"
