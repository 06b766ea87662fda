// SPDX-License-Identifier: Apache-2.0
// The daemon's side of the exec check against the guest that handed it the listener: the guest
// keeps a copy of it (it must, so the execution's execs wait while no daemon is there), so it can
// take a notification itself, between the daemon's poll() and its receive. The kernel's receive
// then waits for the next one whatever the file's flags say; on the daemon's main loop that was
// every sandbox waiting, for as long as the guest liked. Each receive has a deadline now.
//
// The race itself (the guest's thread, already waiting in its receive, is handed the notification
// and marks it received a moment later; the daemon's poll() falls in between) could not be made
// to happen on demand here, not even with the guest's thread at SCHED_IDLE beside a busy one on
// the daemon thread's CPU: what is tested is the receive the daemon makes, in the state that race
// leaves it in (nothing to receive).
#include "ExecCheck.h" // the guest's filter, installed here as the guest installs it
#include "FdPassing.h"
#include "sandbox/ExecListener.h"
#include "util/ThreadDeadline.h"

#include <QElapsedTimer>
#include <QTest>

#include <cerrno>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace airlock;

namespace {
// A child under the guest's exec-check filter, waiting for a byte on `go` before it execs
// /bin/true; its listener comes back over a socket pair.
struct Judged {
    pid_t pid = -1;
    int listener = -1;
    int go = -1;
};

Judged startJudged()
{
    int pair[2];
    int go[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0 || ::pipe2(go, O_CLOEXEC) != 0)
        return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(go[1]);
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        const int listener = guest::installExecCheck();
        if (listener < 0 || !guest::sendFd(pair[1], "l", 1, listener, 0))
            ::_exit(2);
        ::close(listener);
        char wait = 0;
        if (::read(go[0], &wait, 1) != 1)
            ::_exit(3);
        ::execl("/bin/true", "true", nullptr);
        ::_exit(errno == EPERM ? 4 : 5);
    }
    ::close(pair[1]);
    ::close(go[0]);
    Judged j;
    j.pid = pid;
    j.go = go[1];
    j.listener = guest::receiveFd(pair[0]);
    ::close(pair[0]);
    return j;
}

// Waits for `pid` at most `ms`; -1 if it is still running (then it is killed).
int exitWithin(pid_t pid, int ms)
{
    QElapsedTimer t;
    t.start();
    for (;;) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (t.elapsed() > ms) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return -1;
        }
        ::usleep(5000);
    }
}
} // namespace

class TestExecListener final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Nothing to receive (the guest took it): the receive comes back at its deadline with EINTR,
    // where the kernel's own receive waits for good. Run in a child, which a wait for good would
    // leave running past the test's patience.
    void aReceiveWithNothingWaitingEndsAtItsDeadline()
    {
        const Judged j = startJudged();
        QVERIFY2(j.listener >= 0, "no listener from the child under the exec check");
        QVERIFY(ExecListener::isListener(j.listener));
        const pid_t receiver = ::fork();
        if (receiver == 0) {
            std::vector<char> notification;
            QElapsedTimer t;
            t.start();
            const bool received = ExecListener::receive(j.listener, notification);
            const int err = errno;
            ::_exit(received ? 10 : err != EINTR ? 11 : t.elapsed() < 10 * ThreadDeadline::kMs ? 0 : 12);
        }
        QCOMPARE(exitWithin(receiver, 3000), 0);
        ::kill(j.pid, SIGKILL);
        ::waitpid(j.pid, nullptr, 0);
        ::close(j.listener);
        ::close(j.go);
    }
};

QTEST_MAIN(TestExecListener)
#include "tst_exec_listener.moc"
