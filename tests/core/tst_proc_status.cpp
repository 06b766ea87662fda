// SPDX-License-Identifier: Apache-2.0
// statusPids: the pids the exec check records, read from /proc/PID/status whatever its size;
// usageByPidNamespace: what a sandbox's processes use, for the fleet view.
#include "sandbox/ProcStatus.h"
#include "sandbox/ResourceUsage.h"

#include <QFile>
#include <QTest>

#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
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

    static void burn(int ms)
    {
        timespec start{}, now{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
        do
            ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1'000'000 < ms);
    }

private Q_SLOTS:
    // A PID namespace like a sandbox's: its init burns 300 ms of CPU, and a child it reaped burned
    // 200 ms more. Both count, once; nothing outside the namespace does.
    void usageIsAddedUpByPidNamespaceWithReapedChildrenCountedOnce()
    {
        int ready[2];
        QVERIFY(::pipe(ready) == 0);
        const pid_t outer = ::fork();
        if (outer == 0) {
            // A user namespace first, so that this works for a user who is not root as well.
            if (::unshare(CLONE_NEWPID | (::geteuid() == 0 ? 0 : CLONE_NEWUSER)) != 0)
                ::_exit(2);
            const pid_t init = ::fork();
            if (init == 0) {
                burn(300);
                const pid_t child = ::fork();
                if (child == 0) {
                    burn(200);
                    ::_exit(0);
                }
                ::waitpid(child, nullptr, 0);
                (void)!::write(ready[1], "y", 1);
                ::pause();
                ::_exit(0);
            }
            ::waitpid(init, nullptr, 0);
            ::_exit(0);
        }
        ::close(ready[1]);
        char ok = 'n';
        const bool started = ::read(ready[0], &ok, 1) == 1 && ok == 'y';
        ::close(ready[0]);
        // The namespace's init is the outer child's only child.
        QFile children(QStringLiteral("/proc/%1/task/%1/children").arg(outer));
        const bool listed = children.open(QIODevice::ReadOnly);
        const pid_t init = pid_t(children.readAll().trimmed().toInt());
        const quint64 ns = init > 0 ? pidNamespaceOf(init) : 0;
        const QHash<quint64, ResourceUsage> usage = usageByPidNamespace({ns, pidNamespaceOf(::getpid())});
        ::kill(outer, SIGKILL);
        if (init > 0)
            ::kill(init, SIGKILL);
        ::waitpid(outer, nullptr, 0);
        QVERIFY(started);
        QVERIFY(listed);
        QVERIFY(init > 0);
        QVERIFY(ns != 0);
        QVERIFY(ns != pidNamespaceOf(::getpid()));
        const ResourceUsage u = usage.value(ns);
        QCOMPARE(u.processes, 1); // the init: its child was reaped
        QVERIFY2(u.cpuNs >= 480'000'000 && u.cpuNs < 900'000'000, qPrintable(QString::number(u.cpuNs)));
        QVERIFY(u.memoryBytes > 0);
        // This process's own namespace was asked about too: it is counted apart, with this test in it.
        QVERIFY(usage.value(pidNamespaceOf(::getpid())).processes >= 1);
        QVERIFY(!usageByPidNamespace({ns}).contains(pidNamespaceOf(::getpid())));
    }

    void aNamespaceNobodyIsInHasNoUsage()
    {
        QVERIFY(usageByPidNamespace({}).isEmpty());
        QVERIFY(usageByPidNamespace({1}).isEmpty());
        QCOMPARE(pidNamespaceOf(0x7ffffff0), quint64(0));
    }

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
