// SPDX-License-Identifier: Apache-2.0
// The syscall filter, call by call: each row runs the probe inside a sandbox and compares the
// exact errno; the host run of the same probe shows the call is not refused by nature.
#include "TestDaemon.h"

#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using namespace airlock;
using namespace airlock::test;

class TestSeccomp final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon;
    QString m_sb;

    CliResult probe(const QStringList &args)
    {
        return m_daemon->ctl(QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("-n"), QStringLiteral("--"),
                                 QStringLiteral("/opt/probe/airlock-probe")}
            + args);
    }
    static QString firstLine(const QByteArray &out)
    {
        return QString::fromUtf8(out).section(QLatin1Char('\n'), 0, 0).trimmed();
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
        QString error;
        m_sb = m_daemon->create({QStringLiteral("--mount"), probeMount()}, &error);
        QVERIFY2(!m_sb.isEmpty(), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void deniedCalls_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<QString>("hostAnswer"); // what the same call gives on the host, unfiltered ("" = skip)
        QTest::newRow("ptrace") << QStringList{QStringLiteral("ptrace")} << "EPERM"
                                << "";
        QTest::newRow("io_uring_setup") << QStringList{QStringLiteral("io_uring_setup")} << "EPERM"
                                        << "ok";
        QTest::newRow("bpf") << QStringList{QStringLiteral("bpf")} << "EPERM"
                             << "";
        QTest::newRow("perf_event_open") << QStringList{QStringLiteral("perf_event_open")} << "EPERM"
                                         << "";
        QTest::newRow("keyctl") << QStringList{QStringLiteral("keyctl")} << "EPERM"
                                << "";
        QTest::newRow("add_key") << QStringList{QStringLiteral("add_key")} << "EPERM"
                                 << "EINVAL";
        QTest::newRow("mount") << QStringList{QStringLiteral("mount")} << "EPERM"
                               << "";
        QTest::newRow("unshare of a user namespace") << QStringList{QStringLiteral("unshare")} << "EPERM"
                                                     << "ok";
        QTest::newRow("setns") << QStringList{QStringLiteral("setns")} << "EPERM"
                               << "";
        QTest::newRow("clone with CLONE_NEWNS") << QStringList{QStringLiteral("clone-newns")} << "EPERM"
                                                << "ok";
        QTest::newRow("clone3 answers ENOSYS so libc falls back") << QStringList{QStringLiteral("clone3")} << "ENOSYS"
                                                                  << "ok";
        QTest::newRow("process_vm_readv") << QStringList{QStringLiteral("process_vm_readv")} << "EPERM"
                                          << "ok";
        QTest::newRow("kexec_load") << QStringList{QStringLiteral("kexec_load")} << "EPERM"
                                    << "";
        QTest::newRow("init_module") << QStringList{QStringLiteral("init_module")} << "EPERM"
                                     << "";
        QTest::newRow("personality with ADDR_NO_RANDOMIZE") << QStringList{QStringLiteral("personality")} << "EPERM"
                                                            << "ok";
        QTest::newRow("TIOCSTI terminal injection") << QStringList{QStringLiteral("tiocsti")} << "EPERM"
                                                    << "ENOTTY";
        QTest::newRow("AF_VSOCK sockets")
            << QStringList{QStringLiteral("socket"), QStringLiteral("40"), QStringLiteral("1")} << "EPERM"
            << "ok";
        QTest::newRow("AF_PACKET sockets")
            << QStringList{QStringLiteral("socket"), QStringLiteral("17"), QStringLiteral("2")} << "EPERM"
            << "";
        QTest::newRow("AF_BLUETOOTH sockets")
            << QStringList{QStringLiteral("socket"), QStringLiteral("31"), QStringLiteral("1")} << "EPERM"
            << "";
        QTest::newRow("chmod to setuid") << QStringList{QStringLiteral("chmod-suid"), QStringLiteral("/workspace/su")}
                                         << "EPERM"
                                         << "";
        QTest::newRow("chmod to setgid") << QStringList{QStringLiteral("chmod-sgid"), QStringLiteral("/workspace/sg")}
                                         << "EPERM"
                                         << "";
        QTest::newRow("creating a file setuid")
            << QStringList{QStringLiteral("create-suid"), QStringLiteral("/workspace/cs")} << "EPERM"
            << "";
        QTest::newRow("pidfd_getfd of the guest's daemon socket")
            << QStringList{QStringLiteral("pidfd_getfd"), QStringLiteral("1"), QStringLiteral("3")} << "EPERM"
            << "";
        QTest::newRow("openat2 (flags unreadable to a filter) answers ENOSYS")
            << QStringList{QStringLiteral("openat2")} << "ENOSYS"
            << "ok";
        QTest::newRow("kcmp") << QStringList{QStringLiteral("kcmp")} << "EPERM"
                              << "ok";
        QTest::newRow("a family number beyond every known one")
            << QStringList{QStringLiteral("socket"), QStringLiteral("200"), QStringLiteral("1")} << "EPERM"
            << "EAFNOSUPPORT";
    }
    void deniedCalls()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        QFETCH(QString, hostAnswer);
        const CliResult r = probe(args);
        QCOMPARE(firstLine(r.out), expected);
        if (!hostAnswer.isEmpty()) {
            QProcess host;
            host.start(probePath(), args);
            QVERIFY(host.waitForFinished(10000));
            QCOMPARE(firstLine(host.readAllStandardOutput()), hostAnswer);
        }
    }

    void allowedCalls_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("plain fork through clone") << QStringList{QStringLiteral("fork")};
        QTest::newRow("personality query") << QStringList{QStringLiteral("personality-query")};
        QTest::newRow("unix sockets") << QStringList{
            QStringLiteral("socket"), QStringLiteral("1"), QStringLiteral("1")};
        QTest::newRow("inet sockets") << QStringList{
            QStringLiteral("socket"), QStringLiteral("2"), QStringLiteral("1")};
        QTest::newRow("inet6 sockets") << QStringList{
            QStringLiteral("socket"), QStringLiteral("10"), QStringLiteral("1")};
        QTest::newRow("an ordinary chmod")
            << QStringList{QStringLiteral("chmod-plain"), QStringLiteral("/workspace/plain")};
        QTest::newRow("netlink sockets") << QStringList{
            QStringLiteral("socket"), QStringLiteral("16"), QStringLiteral("2")};
    }
    void allowedCalls()
    {
        QFETCH(QStringList, args);
        QCOMPARE(firstLine(probe(args).out), QStringLiteral("ok"));
    }

    void setuidBaselineOnTheHost_data()
    {
        QTest::addColumn<QString>("probe");
        QTest::newRow("chmod to setuid") << "chmod-suid";
        QTest::newRow("creating a file setuid") << "create-suid";
    }
    void setuidBaselineOnTheHost()
    {
        // The same calls succeed on the host: the filter, not the filesystem, refuses them above.
        QFETCH(QString, probe);
        QTemporaryDir dir;
        QProcess host;
        host.start(probePath(), {probe, dir.filePath(QStringLiteral("f"))});
        QVERIFY(host.waitForFinished(10000));
        QCOMPARE(firstLine(host.readAllStandardOutput()), QStringLiteral("ok"));
        QVERIFY(QFileInfo(dir.filePath(QStringLiteral("f"))).permissions() & QFileDevice::ExeOwner);
    }

    void guestIsNotDumpable()
    {
        // The guest shares the commands' uid; its descriptors (the daemon socket) stay out of reach.
        const CliResult r = m_daemon->ctl({QStringLiteral("exec"), m_sb, QStringLiteral("-n"), QStringLiteral("--"),
            QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("ls /proc/1/fd 2>&1; ls /proc/self/fd >/dev/null && echo own-ok")});
        QVERIFY2(r.out.contains("Permission denied") && r.out.contains("own-ok"), r.out.constData());
    }

    void foreignAbisKillTheProcess_data()
    {
        QTest::addColumn<QString>("abi");
        QTest::newRow("x32 system calls") << "x32";
        QTest::newRow("32-bit int 0x80 system calls") << "i386";
    }
    void foreignAbisKillTheProcess()
    {
        QFETCH(QString, abi);
        QProcess host;
        host.start(probePath(), {abi});
        QVERIFY(host.waitForFinished(10000));
        if (!host.readAllStandardOutput().startsWith("alive"))
            QSKIP("this kernel has no such ABI at all (e.g. built without IA32 emulation)");
        const CliResult r = probe({abi});
        // SIGSYS from the filter's bad-architecture action: 128 + 31, and nothing printed.
        QCOMPARE(r.exitCode, 128 + SIGSYS);
        QVERIFY2(!r.out.contains("alive"), r.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestSeccomp)
#include "tst_seccomp.moc"
