// SPDX-License-Identifier: Apache-2.0
// A sandbox outlives its daemon, and a later daemon takes it over (wire::Type::Resume): the real
// airlock-guest, run directly on this host (no bubblewrap), spoken to through the wire format as
// a daemon would. On a host the guest is not PID 1, so it skips the one check it makes of a
// resuming peer inside a sandbox (SO_PEERCRED pid 0: the peer is outside its PID namespace);
// everything else is as in a sandbox, Landlock included. gVisor's guest, which comes back to the
// daemon by itself: tst_guest_resume_gvisor.
#include "GuestResumeFixture.h"
#include "TestDaemon.h"
#include "sandbox/GuestWire.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <memory>
#include <optional>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace airlock;

class TestGuestResume final : public QObject, private GuestResumeFixture {
    Q_OBJECT
private:
    QString nextExit(uint32_t execId) { return describeExit(m_link.next(), execId); }

    // The next exec-check listener the guest hands over, and its execution's id; -1 if none came.
    int nextListener(uint32_t &execId, int timeoutMs = 5000)
    {
        pollfd p{m_execCheck, POLLIN, 0};
        if (::poll(&p, 1, timeoutMs) != 1)
            return -1;
        iovec iov{&execId, sizeof execId};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        if (::recvmsg(m_execCheck, &msg, MSG_CMSG_CLOEXEC) != ssize_t(sizeof execId) || !CMSG_FIRSTHDR(&msg))
            return -1;
        int listener = -1;
        std::memcpy(&listener, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof listener);
        return listener;
    }
    // Waits for the next exec under `listener` and lets it run, as the daemon does for an allowed one.
    static bool letNextExecRun(int listener)
    {
        pollfd p{listener, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1 || !(p.revents & POLLIN))
            return false;
        seccomp_notif req{};
        if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
            return false;
        seccomp_notif_resp resp{};
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
    }
    // How many exec-check listeners the guest holds (a test run as root may look).
    int listenersHeld() const
    {
        int n = 0;
        const QString dir = QStringLiteral("/proc/%1/fd/").arg(m_guest);
        for (const QString &fd : QDir(dir).entryList(QDir::System | QDir::NoDotAndDotDot)) {
            char target[64] = {};
            if (::readlink(QFile::encodeName(dir + fd).constData(), target, sizeof target - 1) > 0)
                n += std::string_view(target) == "anon_inode:seccomp notify";
        }
        return n;
    }

    // A daemon that talks nonsense on the resume socket, in the way `kind` names: the guest
    // closes that connection and every descriptor that came with it.
    // `connected`: a daemon is connected now (then nothing is read of the attempt at all).
    void refusedAttempt(const QString &kind, bool connected)
    {
        int xv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv), 0);
        int yv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, yv), 0);
        std::string bytes;
        std::vector<int> fds{xv[1]};
        if (kind == QLatin1String("token")) {
            bytes = resumeFrame(std::string(m_token.rbegin(), m_token.rend()), {});
        } else if (kind == QLatin1String("fdCount")) {
            bytes = resumeFrame(m_token, {}, 2);
        } else if (kind == QLatin1String("fds")) {
            bytes = resumeFrame(m_token, {}, 2);
            fds.push_back(yv[1]);
        } else if (kind == QLatin1String("garbage")) {
            bytes = "GET / HTTP/1.1\r\nHost: guest\r\n\r\n";
        } else if (kind == QLatin1String("truncated")) {
            bytes = resumeFrame(m_token, {{1, 0, 0}}).substr(0, 50);
        } else if (kind == QLatin1String("version")) {
            bytes = resumeFrame(m_token, {{1, 0, 0}}, 1, wire::kProtocolVersion + 1);
        } else {
            fds.clear(); // "silent": connects and says nothing
        }

        QElapsedTimer clock;
        clock.start();
        Link attempt;
        attempt.reset(connectResume(bytes, fds));
        ::close(xv[1]);
        ::close(yv[1]);
        // (With a daemon connected the guest may close it before all was sent: refused all the same.)
        QVERIFY(attempt.isOpen() || connected);
        if (!bytes.empty() && attempt.isOpen())
            ::shutdown(attempt.fd(), SHUT_WR); // all there is: a short frame is not waited for
        if (kind == QLatin1String("version") && !connected) {
            const auto f = attempt.next();
            QVERIFY(f);
            QCOMPARE(int(f->type), int(wire::Type::Resumed));
            wire::Reader r = f->reader();
            QCOMPARE(r.u32(), wire::kProtocolVersion);
            r.i32();
            QCOMPARE(pid_t(r.u32()), m_guest);
            QCOMPARE(r.u32(), 0u);
            QVERIFY(r.atEnd() && !r.failed());
        }
        QVERIFY2(!attempt.isOpen() || attempt.closedWithin(wire::kResumeFrameTimeoutMs + 2000),
            "the guest kept the connection");
        if (kind == QLatin1String("silent") && !connected)
            QVERIFY2(clock.elapsed() >= wire::kResumeFrameTimeoutMs - 100, "closed before the timeout");
        else
            QVERIFY2(clock.elapsed() < 1000, "not closed at once");
        if (!fds.empty())
            QVERIFY2(peerClosedWithin(xv[0], 1000), "the guest kept a descriptor it refused");
        if (fds.size() > 1)
            QVERIFY2(peerClosedWithin(yv[0], 1000), "the guest kept a descriptor it refused");
        ::close(xv[0]);
        ::close(yv[0]);
        QVERIFY2(::kill(m_guest, 0) == 0, "the guest is gone");
    }

    // The tool gateway's answer to a call startToolCall() made.
    std::string toolAnswer(int &fd)
    {
        std::string answer;
        char buf[4096];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
            answer.append(buf, size_t(n));
        ::close(fd);
        fd = -1;
        return answer;
    }
    int startToolCall()
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path("tools.sock").c_str(), sizeof sa.sun_path - 1);
        const std::string request = R"({"tool":"echo","arguments":{}})";
        const timeval timeout{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0
            || ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size())
            || ::shutdown(fd, SHUT_WR) != 0) {
            ::close(fd);
            return -1;
        }
        return fd;
    }

private Q_SLOTS:
    void init() { setUp(); }
    void cleanup() { tearDown(); }

    void outputContinuesAcrossAResumeByteForByte()
    {
        startGuest(true);
        const pid_t pid = spawn(shell(1, "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo $i; sleep 0.005; done"));
        QVERIFY(pid > 0);
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return std::count(out.begin(), out.end(), '\n') >= 20; }));
        // Half of it stored: the guest may forget that half.
        QVERIFY(m_link.send(ackFrame(1, wire::StreamStdout, out.size() / 2)));
        const size_t received = out.size();

        m_link.reset(); // the daemon is gone; the lines go on
        QTest::qWait(300);
        QCOMPARE(resume({{1, received, 0}}), running(1, pid, received));
        QVERIFY(readStdout(1, out, [&] { return out.size() >= received + 1000; }));
        const std::string expected = numberedLines(2000);
        QVERIFY2(out == expected.substr(0, out.size()), out.c_str());

        // A daemon that acknowledged more than it kept asks from further back: the replay starts
        // at what was acknowledged, says so, and sends nothing before it again.
        const size_t acked = out.size();
        QVERIFY(m_link.send(ackFrame(1, wire::StreamStdout, acked)));
        QTest::qWait(50);
        m_link.reset();
        QCOMPARE(resume({{1, received, 0}}), running(1, pid, acked));
        QVERIFY(readStdout(1, out, [&] { return out.size() >= acked + 500; }));
        QVERIFY2(out == expected.substr(0, out.size()), out.c_str());

        QVERIFY(m_link.send(wire::Writer(wire::Type::Signal).u32(1).i32(SIGKILL).take()));
        std::optional<Frame> f;
        while ((f = m_link.next()) && asOutput(*f))
            out += asOutput(*f)->data; // lines written before the signal
        QCOMPARE(describeExit(f, 1), QStringLiteral("signal 9"));
        QVERIFY(out == expected.substr(0, out.size()));
    }

    void anExitWhileNoDaemonIsConnectedIsReported()
    {
        startGuest(true);
        const pid_t pid = spawn(shell(1, "echo before; sleep 0.3; echo after >&2; echo after; exit 7"));
        QVERIFY(pid > 0);
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out.size() >= 7; }));
        QCOMPARE(out, std::string("before\n"));

        m_link.reset();
        QVERIFY(test::waitFor([&] { return ::kill(pid, 0) != 0; }, 5000)); // exited and reaped
        QCOMPARE(resume({{1, 7, 0}}), QStringLiteral("1 finished %1 from 7,0").arg(pid));
        auto f = m_link.next();
        QVERIFY(f && asOutput(*f));
        QCOMPARE(asOutput(*f)->data, std::string("after\n"));
        QCOMPARE(asOutput(*f)->stream, uint8_t(wire::StreamStdout));
        f = m_link.next();
        QVERIFY(f && asOutput(*f));
        QCOMPARE(asOutput(*f)->data, std::string("after\n"));
        QCOMPARE(asOutput(*f)->stream, uint8_t(wire::StreamStderr));
        QCOMPARE(nextExit(1), QStringLiteral("exited 7"));
        QVERIFY2(!m_link.next(200), "a frame after the exit");
    }

    // With no daemon to kill it, the guest kills an execution at its deadline (its timeout plus
    // wire::kDeadlineGraceMs), all of it, and the next daemon hears that it was its timeout. One
    // without a timeout goes on.
    void aDeadlineHoldsWhileNoDaemonIsConnected()
    {
        startGuest(true);
        QElapsedTimer clock;
        clock.start();
        const pid_t pid = spawn(shell(1, "sleep 60 & echo $!; exec sleep 60", 0, 300));
        QVERIFY(pid > 0);
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out.find('\n') != std::string::npos; }));
        const pid_t background = pid_t(std::stoi(out));
        QVERIFY(background > 0 && !processGone(background));
        const pid_t untimed = spawn(shell(2, "exec sleep 60"));
        QVERIFY(untimed > 0);

        m_link.reset();
        QVERIFY2(test::waitFor([&] { return processGone(pid) && processGone(background); }, 5000),
            "the execution outlived its deadline");
        QVERIFY2(clock.elapsed() >= 300 + wire::kDeadlineGraceMs - 50, "killed before its deadline");
        QVERIFY(!processGone(untimed));

        QCOMPARE(resume({{1, out.size(), 0}, {2, 0, 0}}),
            QStringLiteral("1 finished %1 from %2,0, 2 running %3").arg(pid).arg(out.size()).arg(untimed));
        QCOMPARE(nextExit(1), QStringLiteral("signal 9, timed out"));
        QVERIFY2(!m_link.next(200), "a frame after the exit");
        QVERIFY(!processGone(untimed));
    }

    // A daemon that is there kills at the deadline itself (the guest waits kDeadlineGraceMs
    // longer, so its kill reason stands); one that does not, stalled or slow, is not waited for.
    void aConnectedDaemonKillsFirstAndAStalledOneIsNotWaitedFor()
    {
        startGuest(true);
        const pid_t first = spawn(shell(1, "exec sleep 60", 0, 200));
        QVERIFY(first > 0);
        QTest::qWait(200);
        QVERIFY(m_link.send(wire::Writer(wire::Type::Signal).u32(1).i32(SIGKILL).take()));
        QCOMPARE(nextExit(1), QStringLiteral("signal 9"));

        QElapsedTimer clock;
        clock.start();
        const pid_t second = spawn(shell(2, "exec sleep 60", 0, 200));
        QVERIFY(second > 0);
        QCOMPARE(nextExit(2), QStringLiteral("signal 9, timed out"));
        QVERIFY2(clock.elapsed() >= 200 + wire::kDeadlineGraceMs - 50, "killed before the daemon's grace");
        QVERIFY(processGone(second));
        // One that ends before its deadline is not said to have timed out.
        QVERIFY(spawn(shell(3, "exit 4", 0, 60000)) > 0);
        QCOMPARE(nextExit(3), QStringLiteral("exited 4"));
    }

    // Red team: what a command does to get out of its deadline's reach (a new session and a
    // double fork; a subreaper of its own whose child double-forks) does not save any of it, and
    // the deadline's kill reaches nothing of another execution (one running without a timeout, the
    // background an ended one left).
    void aDeadlineIsNotEscapedAndHitsNoOtherExecution()
    {
        startGuest(true);
        std::string out;
        QVERIFY(spawn(shell(1, "sleep 60 & echo $!")) > 0);
        QVERIFY(readStdout(1, out, [&] { return out.find('\n') != std::string::npos; }));
        const pid_t leftBehind = pid_t(std::stoi(out));
        QCOMPARE(nextExit(1), QStringLiteral("exited 0"));
        const pid_t untimed = spawn(shell(2, "exec sleep 60"));
        QVERIFY(untimed > 0);

        const pid_t timed = spawn(shell(3,
            "setsid sh -c 'sleep 61 & echo $!'; "
            "perl -e 'syscall(157, 36, 1, 0, 0, 0); $|=1; my $p = fork(); if (!$p) { my $g = fork(); "
            "if (!$g) { exec \"sleep\", \"62\" } print \"$g\\n\"; exit 0 } waitpid($p, 0); sleep 60' & "
            "echo $!; exec sleep 63",
            0, 300));
        QVERIFY(timed > 0);
        out.clear();
        QVERIFY(readStdout(3, out, [&] { return std::count(out.begin(), out.end(), '\n') == 3; }));
        std::vector<pid_t> escapees;
        for (const QByteArray &line : QByteArray::fromStdString(out).trimmed().split('\n'))
            escapees.push_back(pid_t(line.toInt()));
        QCOMPARE(escapees.size(), size_t(3));
        for (const pid_t p : escapees)
            QVERIFY2(p > 0 && !processGone(p), qPrintable(QString::fromStdString(out)));

        QCOMPARE(nextExit(3), QStringLiteral("signal 9, timed out"));
        QVERIFY2(test::waitFor(
                     [&] {
                         return processGone(timed)
                             && std::all_of(escapees.begin(), escapees.end(), [](pid_t p) { return processGone(p); });
                     },
                     5000),
            "a process of the timed-out execution outlived its deadline");
        QVERIFY2(!processGone(untimed), "the deadline's kill took another execution");
        QVERIFY2(!processGone(leftBehind), "the deadline's kill took another execution's background");
    }

    void outputPastTheLimitWithNoDaemonIsAGapOfExactlyWhatWasLost()
    {
        startGuest(true);
        constexpr uint64_t produced = 20 * 1024 * 1024;
        const std::string pattern = "0123456789abcde\n";
        const std::string marker = path("written");
        const pid_t pid = spawn(shell(1,
            "yes 0123456789abcde | head -c " + std::to_string(produced) + "; : > " + marker
                + "; read a; echo after; read b",
            wire::SpawnStdin));
        QVERIFY(pid > 0);
        m_link.reset();
        QVERIFY(test::waitFor([&] { return QFileInfo::exists(QString::fromStdString(marker)); }, 10000));
        QTest::qWait(200); // the last of it out of the pipe

        QCOMPARE(resume({{1, 0, 0}}), running(1, pid));
        uint64_t kept = 0;
        bool exact = true;
        std::optional<Frame> f;
        while ((f = m_link.next()) && f->type == wire::Type::Output) {
            const Output o = *asOutput(*f);
            QCOMPARE(o.stream, uint8_t(wire::StreamStdout));
            for (size_t i = 0; i < o.data.size() && exact; ++i)
                exact = o.data[i] == pattern[(kept + i) % pattern.size()];
            kept += o.data.size();
        }
        QVERIFY2(exact, "the bytes kept are not the bytes written");
        QCOMPARE(kept, uint64_t(kLimit));
        QVERIFY(f);
        QCOMPARE(int(f->type), int(wire::Type::Gap));
        wire::Reader r = f->reader();
        QCOMPARE(r.u32(), 1u);
        QCOMPARE(r.u8(), uint8_t(wire::StreamStdout));
        QCOMPARE(r.u64(), uint64_t(kLimit));
        QCOMPARE(r.u64(), produced - kLimit);

        // Connected again with the limit reached: nothing is read until the daemon stores some.
        QVERIFY(m_link.send(stdinFrame(1, "go\n")));
        QVERIFY2(!m_link.next(300), "output read past the limit while connected");
        QVERIFY(m_link.send(ackFrame(1, wire::StreamStdout, produced)));
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out.size() >= 6; }));
        QCOMPARE(out, std::string("after\n"));
        QVERIFY(m_link.send(stdinFrame(1, "end\n")));
        QCOMPARE(nextExit(1), QStringLiteral("exited 0"));
    }

    void refusedConnectionsLeaveTheGuestAsItWas_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::newRow("a wrong token") << QStringLiteral("token");
        QTest::newRow("an fdCount other than the descriptors that came") << QStringLiteral("fdCount");
        QTest::newRow("two descriptors where the guest has no proxy") << QStringLiteral("fds");
        QTest::newRow("garbage") << QStringLiteral("garbage");
        QTest::newRow("a frame cut short") << QStringLiteral("truncated");
        QTest::newRow("a connection that sends nothing") << QStringLiteral("silent");
        QTest::newRow("another protocol version is answered with ours") << QStringLiteral("version");
    }
    void refusedConnectionsLeaveTheGuestAsItWas()
    {
        QFETCH(QString, kind);
        startGuest(true);
        const pid_t pid = spawn(spawnFrame(1, {"/bin/cat"}, wire::SpawnStdin));
        QVERIFY(pid > 0);

        refusedAttempt(kind, true);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(m_link.send(stdinFrame(1, "ping\n")));
        std::string out;
        QVERIFY2(readStdout(1, out, [&] { return out.size() >= 5; }), "the daemon's connection does not work any more");
        QCOMPARE(out, std::string("ping\n"));

        m_link.reset();
        refusedAttempt(kind, false);
        if (QTest::currentTestFailed())
            return;

        QCOMPARE(resume({{1, 5, 0}}), running(1, pid, 5));
        QVERIFY(m_link.send(stdinFrame(1, "pong\n")));
        QVERIFY(readStdout(1, out, [&] { return out.size() >= 10; }));
        QCOMPARE(out, std::string("ping\npong\n"));
    }

    // Only a daemon that comes after the connected one is gone takes over (a daemon holds the
    // instance lock; what else reaches the socket, token and all, must not unseat it).
    void aResumeWaitsUntilTheConnectedDaemonIsGone()
    {
        startGuest(true);
        const pid_t pid = spawn(shell(1, "exec sleep 30"));
        QVERIFY(pid > 0);
        int xv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv), 0);
        Link rival;
        rival.reset(connectResume(resumeFrame(m_token, {{1, 0, 0}}), {xv[1]}));
        ::close(xv[1]);
        QVERIFY2(!rival.isOpen() || rival.closedWithin(2000),
            "a resume was taken while the daemon is connected"); // (closed even before all was sent)
        QVERIFY2(peerClosedWithin(xv[0], 2000), "the rival's exec-check socket was kept");
        ::close(xv[0]);
        QVERIFY(m_link.send(spawnFrame(2, {"/bin/echo", "still mine"})));
        const auto started = m_link.next();
        QVERIFY(started && started->type == wire::Type::Started);
        QCOMPARE(started->reader().u32(), 2u);
        std::string mine;
        QVERIFY(readStdout(2, mine, [&] { return mine.size() >= 11; }));
        QCOMPARE(mine, std::string("still mine\n"));
        QCOMPARE(nextExit(2), QStringLiteral("exited 0"));
    }

    void aResumeAfterTheDaemonIsGoneReplacesItsExecCheck()
    {
        startGuest(true);
        const pid_t pid = spawn(shell(1, "exec sleep 30"));
        QVERIFY(pid > 0);
        const int oldExecCheck = ::dup(m_execCheck);
        m_link.reset(); // the daemon is gone
        QCOMPARE(resume({{1, 0, 0}}), running(1, pid));
        QVERIFY2(peerClosedWithin(oldExecCheck, 2000), "the previous exec-check socket is still open");
        ::close(oldExecCheck);

        // A judged execution's exec check goes to the new daemon.
        QVERIFY(m_link.send(spawnFrame(2, {"/bin/echo", "judged"}, wire::SpawnJudged)));
        uint32_t execId = 0;
        const int listener = nextListener(execId);
        QVERIFY(listener >= 0);
        QCOMPARE(execId, 2u);
        QVERIFY(letNextExecRun(listener)); // the execution waits in its execve
        ::close(listener);
        const auto started = m_link.next();
        QVERIFY(started);
        QCOMPARE(int(started->type), int(wire::Type::Started));
        wire::Reader r = started->reader();
        QCOMPARE(r.u32(), 2u);
        m_started.push_back(r.i32());
        std::string out;
        QVERIFY(readStdout(2, out, [&] { return out.size() >= 7; }));
        QCOMPARE(out, std::string("judged\n"));
        QCOMPARE(nextExit(2), QStringLiteral("exited 0"));
    }

    // A judged execution's exec check outlives its daemon: the guest keeps the listener, an exec
    // made while no daemon is connected waits in the kernel (it neither runs nor fails), and the
    // listener goes to the daemon that resumes, which lets it run. The guest's copy goes with the
    // execution.
    void aJudgedExecutionsExecCheckGoesToTheDaemonThatResumes()
    {
        startGuest(true);
        const std::string fifo = path("go");
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QVERIFY(m_link.send(shell(1, "read x < " + fifo + "; /bin/echo later", wire::SpawnJudged)));
        uint32_t execId = 0;
        const int first = nextListener(execId);
        QVERIFY(first >= 0);
        QCOMPARE(execId, 1u);
        QVERIFY(letNextExecRun(first)); // /bin/sh
        const auto started = m_link.next();
        QVERIFY(started);
        QCOMPARE(int(started->type), int(wire::Type::Started));
        wire::Reader r = started->reader();
        QCOMPARE(r.u32(), 1u);
        const pid_t pid = r.i32();
        m_started.push_back(pid);

        ::close(first);
        m_link.reset(); // the daemon is gone, and its listener with it
        const int go = ::open(fifo.c_str(), O_WRONLY); // once the shell reads it
        QVERIFY(go >= 0);
        QCOMPARE(::write(go, "\n", 1), ssize_t(1));
        ::close(go);
        // /bin/echo waits: had the filter lost its listener, it would have failed (ENOSYS) and the
        // shell would have ended.
        QTest::qWait(500);
        QVERIFY(!processGone(pid));
        if (::geteuid() == 0)
            QCOMPARE(listenersHeld(), 1);

        QCOMPARE(resume({{1, 0, 0}}), running(1, pid));
        const int second = nextListener(execId);
        QVERIFY(second >= 0);
        QCOMPARE(execId, 1u);
        QVERIFY(letNextExecRun(second)); // what waited: /bin/echo
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out.size() >= 6; }));
        QCOMPARE(out, std::string("later\n"));
        QCOMPARE(nextExit(1), QStringLiteral("exited 0"));
        ::close(second);
        if (::geteuid() == 0)
            QCOMPARE(listenersHeld(), 0);
    }

    // A daemon that goes while a judged execution's first execve waits for it (the listener was
    // handed over, the exec read and never answered: a person was asked, or the daemon was killed
    // before it judged) must not leave the guest stuck in that spawn: the guest waits for the
    // child's first execve with its own copy of the listener, so nothing fails it (ENOSYS) and
    // nothing answers it, and the guest, PID 1, never comes back to its loop: no later daemon can
    // resume, no deadline is kept, no output is read.
    void aDaemonThatGoesDuringAJudgedSpawnLeavesTheGuestResumable()
    {
        startGuest(true);
        QVERIFY(m_link.send(spawnFrame(1, {"/bin/echo", "judged"}, wire::SpawnJudged)));
        uint32_t execId = 0;
        const int first = nextListener(execId);
        QVERIFY(first >= 0);
        QCOMPARE(execId, 1u);
        pollfd p{first, POLLIN, 0};
        QCOMPARE(::poll(&p, 1, 5000), 1); // the child waits in its first execve
        seccomp_notif req{};
        QCOMPARE(::ioctl(first, SECCOMP_IOCTL_NOTIF_RECV, &req), 0); // read, never answered
        // The daemon is killed: its listener, its connection and its exec-check socket go.
        ::close(first);
        m_link.reset();
        ::close(m_execCheck);
        m_execCheck = -1;
        QElapsedTimer clock;
        clock.start();
        const QString resumed = resume({{1, 0, 0}});
        QVERIFY2(resumed != QStringLiteral("no Resumed frame"),
            qPrintable(QStringLiteral("the guest did not answer a resume after %1 ms: stuck in the spawn")
                           .arg(clock.elapsed())));
        QVERIFY2(::kill(m_guest, 0) == 0, "the guest is gone");
    }

    void anAcknowledgedExitIsForgottenAndAnUnaskedOneReported()
    {
        startGuest(true);
        QVERIFY(spawn(shell(1, "echo one")) > 0);
        std::string one;
        QVERIFY(readStdout(1, one, [&] { return one.size() >= 4; }));
        QCOMPARE(nextExit(1), QStringLiteral("exited 0"));
        QVERIFY(m_link.send(ackFrame(1, wire::StreamStdout, 4)));
        QVERIFY(m_link.send(ackFrame(1, 0, 0)));

        const pid_t two = spawn(shell(2, "echo two"));
        QVERIFY(two > 0);
        std::string out;
        QVERIFY(readStdout(2, out, [&] { return out.size() >= 4; }));
        QCOMPARE(nextExit(2), QStringLiteral("exited 0"));
        const pid_t three = spawn(shell(3, "exec sleep 30"));
        QVERIFY(three > 0);

        m_link.reset();
        // 1 was stored and forgotten; 2 ended unacknowledged, and this daemon does not know of it.
        QCOMPARE(resume({{1, 4, 0}, {3, 0, 0}}),
            QStringLiteral("1 unknown 0, 3 running %1, 2 finished %2").arg(three).arg(two));
        out.clear();
        QVERIFY(readStdout(2, out, [&] { return out.size() >= 4; }));
        QCOMPARE(out, std::string("two\n"));
        QCOMPARE(nextExit(2), QStringLiteral("exited 0"));
        QVERIFY(m_link.send(ackFrame(2, 0, 0)));
        QVERIFY2(!m_link.next(200), "a frame after the replay");

        m_link.reset();
        QCOMPARE(resume({}), running(3, three));
    }

    void toolCallsWithNoDaemonAreAnsweredAtOnce()
    {
        startGuest(true);
        int inFlight = startToolCall();
        QVERIFY(inFlight >= 0);
        auto call = m_link.next();
        QVERIFY(call);
        QCOMPARE(int(call->type), int(wire::Type::ToolCall));

        m_link.reset();
        const std::string away = "error\nunavailable airlockd is away; try again";
        QCOMPARE(toolAnswer(inFlight), away);
        int detached = startToolCall();
        QCOMPARE(toolAnswer(detached), away);

        QCOMPARE(resume({}), QString());
        int resumed = startToolCall();
        call = m_link.next();
        QVERIFY(call);
        QCOMPARE(int(call->type), int(wire::Type::ToolCall));
        const uint32_t callId = call->reader().u32();
        QVERIFY(m_link.send(wire::Writer(wire::Type::ToolResult).u32(callId).u8(1).bytes("{}").take()));
        QCOMPARE(toolAnswer(resumed), std::string("ok\n{}"));
    }

    void withoutAResumeSocketTheGuestEndsWithItsDaemon()
    {
        startGuest(false);
        const pid_t pid = spawn(shell(1, "exec sleep 30"));
        QVERIFY(pid > 0);
        m_link.reset();
        int status = -1;
        QVERIFY(test::waitFor([&] { return ::waitpid(m_guest, &status, WNOHANG) == m_guest; }, 5000));
        m_guest = -1;
        QVERIFY(WIFEXITED(status));
        QCOMPARE(WEXITSTATUS(status), 0);
        QVERIFY2(test::waitFor([&] { return processGone(pid); }, 5000), "the execution outlived its guest");
    }
};

QTEST_GUILESS_MAIN(TestGuestResume)
#include "tst_guest_resume.moc"
