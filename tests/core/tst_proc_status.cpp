// SPDX-License-Identifier: Apache-2.0
// statusPids: the pids the exec check records, read from /proc/PID/status whatever its size.
#include "sandbox/ProcStatus.h"

#include <QFile>
#include <QTest>

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace airlock;

class TestProcStatus final : public QObject {
    Q_OBJECT

    // A child that waits to be killed, with `groups` supplementary groups (0: as it is).
    static pid_t child(int groups)
    {
        int ready[2];
        if (::pipe(ready) != 0)
            return -1;
        const pid_t pid = ::fork();
        if (pid == 0) {
            std::vector<gid_t> list(static_cast<size_t>(groups));
            for (int i = 0; i < groups; ++i)
                list[size_t(i)] = gid_t(100000 + i);
            const char ok = groups == 0 || ::setgroups(list.size(), list.data()) == 0 ? 'y' : 'n';
            (void)!::write(ready[1], &ok, 1);
            ::pause();
            ::_exit(0);
        }
        ::close(ready[1]);
        char ok = 'n';
        (void)!::read(ready[0], &ok, 1);
        ::close(ready[0]);
        if (ok != 'y') {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return 0;
        }
        return pid;
    }

private Q_SLOTS:
    void aProcessAsItIs()
    {
        const pid_t pid = child(0);
        QVERIFY(pid > 0);
        const StatusPids s = statusPids(pid);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        QCOMPARE(s.nsPid, pid);
        QCOMPARE(s.parentHostPid, ::getpid());
    }

    // Thousands of groups put NSpid far past the first 4 KiB of the file (after a Groups line
    // longer than the reader's buffer): it is still found, not read from a cut line.
    void pastAGroupsLineLongerThanTheBuffer()
    {
        if (::geteuid() != 0)
            QSKIP("setgroups needs root");
        const pid_t pid = child(3000);
        QVERIFY(pid > 0);
        QFile f(QStringLiteral("/proc/%1/status").arg(pid));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        const StatusPids s = statusPids(pid);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        QVERIFY2(text.indexOf("\nNSpid:") > 3 * 4096, qPrintable(QString::number(text.indexOf("\nNSpid:"))));
        QCOMPARE(s.nsPid, pid);
        QCOMPARE(s.parentHostPid, ::getpid());
    }

    void aProcessThatIsGoneIsZero()
    {
        const pid_t pid = child(0);
        QVERIFY(pid > 0);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        const StatusPids s = statusPids(pid);
        QCOMPARE(s.nsPid, 0);
        QCOMPARE(s.parentHostPid, 0);
    }
};

QTEST_GUILESS_MAIN(TestProcStatus)
#include "tst_proc_status.moc"
