// SPDX-License-Identifier: Apache-2.0
// airlockd as a systemd user service: the units in installer/systemd as systemd itself reads them
// (systemd-analyze verify, every warning counts), and socket activation with systemd's own
// activator: the connection that starts the daemon is answered, the daemon knows its socket was
// passed, and the socket file outlives the daemon for the next start.
#include "TestHelpers.h"

#include <QDir>
#include <QLocalSocket>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestService final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theUnitsVerify()
    {
        const QString analyze = QStandardPaths::findExecutable(QStringLiteral("systemd-analyze"));
        if (analyze.isEmpty())
            QSKIP("systemd-analyze is not installed");
        QTemporaryDir dir;
        QFile in(QStringLiteral(AIRLOCK_SOURCE_DIR "/installer/systemd/airlockd.service.in"));
        QVERIFY(in.open(QIODevice::ReadOnly));
        QFile out(dir.filePath(QStringLiteral("airlockd.service")));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(in.readAll().replace("@AIRLOCK_BINDIR@", binDir().toUtf8()));
        out.close();
        QVERIFY(QFile::copy(QStringLiteral(AIRLOCK_SOURCE_DIR "/installer/systemd/airlockd.socket"),
            dir.filePath(QStringLiteral("airlockd.socket"))));
        QDir().mkpath(dir.filePath(QStringLiteral("run")));
        QProcess verify;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), dir.filePath(QStringLiteral("run")));
        verify.setProcessEnvironment(env);
        verify.setWorkingDirectory(dir.path());
        verify.start(analyze,
            {QStringLiteral("--user"), QStringLiteral("verify"), QStringLiteral("airlockd.socket"),
                QStringLiteral("airlockd.service")});
        QVERIFY(verify.waitForFinished(30000));
        const QByteArray said = verify.readAllStandardError() + verify.readAllStandardOutput();
        QVERIFY2(verify.exitCode() == 0 && said.trimmed().isEmpty(), said.constData());
    }

    void socketActivationAnswersTheFirstConnectionAndKeepsTheSocket()
    {
        const QString activate = QStandardPaths::findExecutable(QStringLiteral("systemd-socket-activate"));
        if (activate.isEmpty())
            QSKIP("systemd-socket-activate is not installed");
        TestDaemon paths; // only for its private XDG directories; never started
        const QString socket = paths.socketPath();
        QDir().mkpath(paths.runtimeDir());
        QFile::setPermissions(
            paths.runtimeDir(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        QProcess systemd;
        QProcessEnvironment env = paths.environment();
        systemd.setProcessEnvironment(env);
        systemd.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        systemd.start(activate,
            {QStringLiteral("-l"), socket, binDir() + QStringLiteral("/airlockd"), QStringLiteral("--socket"), socket,
                QStringLiteral("--secret-store"), QStringLiteral("file")});
        QVERIFY(waitFor([&] { return QFile::exists(socket); }, 5000));
        const auto command = [&] {
            QFile comm(QStringLiteral("/proc/%1/comm").arg(systemd.processId()));
            return comm.open(QIODevice::ReadOnly) ? comm.readAll().trimmed() : QByteArray();
        };
        QCOMPARE(command(), QByteArray("systemd-socket-")); // nobody connected: no daemon yet (comm is 15 bytes)

        const CliResult listed = paths.ctl(args("ls"));
        QVERIFY2(listed.exitCode == 0 && listed.out.startsWith("NAME"), qPrintable(listed.describe()));
        QCOMPARE(
            command(), QByteArray("airlockd")); // the activator became the daemon, which answered that first connection
        auto client = paths.connect();
        QVERIFY(client);
        auto info = client->call(QStringLiteral("daemon.info"));
        QVERIFY(info);
        QCOMPARE(info->value(QStringLiteral("socketActivated")).toBool(), true);
        client.reset();

        systemd.terminate(); // the activator exec'd the daemon: this is airlockd's SIGTERM
        QVERIFY(systemd.waitForFinished(15000));
        QCOMPARE(systemd.exitCode(), 0);
        QVERIFY2(QFileInfo(socket).exists(), "the daemon removed the socket systemd owns");
    }

    void aPassedSocketThatIsNotTheDaemonsIsRefused()
    {
        const QString activate = QStandardPaths::findExecutable(QStringLiteral("systemd-socket-activate"));
        if (activate.isEmpty())
            QSKIP("systemd-socket-activate is not installed");
        TestDaemon paths;
        QDir().mkpath(paths.runtimeDir());
        QFile::setPermissions(
            paths.runtimeDir(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        const QString other = paths.rootDir() + QStringLiteral("/other.sock");
        QProcess systemd;
        systemd.setProcessEnvironment(paths.environment());
        systemd.start(activate,
            {QStringLiteral("-l"), other, binDir() + QStringLiteral("/airlockd"), QStringLiteral("--socket"),
                paths.socketPath(), QStringLiteral("--secret-store"), QStringLiteral("file")});
        QVERIFY(waitFor([&] { return QFile::exists(other); }, 5000));
        QLocalSocket knock;
        knock.connectToServer(other);
        QVERIFY(systemd.waitForFinished(15000));
        QCOMPARE(systemd.exitCode(), 1);
        QVERIFY2(systemd.readAllStandardError().contains("make ListenStream= and --socket (or AIRLOCK_SOCKET) agree"),
            "no reason given");
    }
};

QTEST_GUILESS_MAIN(TestService)
#include "tst_service.moc"
