// SPDX-License-Identifier: Apache-2.0
// What tst_guest_resume and tst_guest_resume_gvisor share: the real airlock-guest run directly on
// this host as a sandbox's guest (as under bubblewrap, or as under gVisor), and a daemon's side of
// it: spawning, going away, taking it over again (Resume), and under gVisor listening for the
// guest that comes back.
#pragma once

#include "GuestLink.h"
#include "TestDaemon.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

class GuestResumeFixture {
protected:
    std::unique_ptr<QTemporaryDir> m_dir;
    pid_t m_guest = -1;
    Link m_link; // the current daemon's connection
    int m_execCheck = -1; // the current daemon's end of the exec-check socket
    const std::string m_token = "0123456789abcdef0123456789ABCDEF";
    std::vector<pid_t> m_started; // executions' process groups, killed at cleanup

    std::string path(const char *name) const { return m_dir->filePath(QString::fromUtf8(name)).toStdString(); }

    // The guest with a socketpair for --fd and --exec-fd and, if resumable, a listening socket for
    // --resume-fd and a memfd with the token for --resume-token-fd. Reads its Hello.
    // `comesBack`: as under gVisor instead (--gvisor, with a seccomp program that allows all): its
    // channel is stdin, with the token first on it, and it comes back to path("resume.sock").
    void startGuest(bool resumable, bool comesBack = false)
    {
        int sv[2], xv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        QCOMPARE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv), 0);
        std::vector<int> childFds{sv[1], xv[1]};
        std::vector<std::string> args{QString(test::binDir() + QStringLiteral("/airlock-guest")).toStdString(), "--fd",
            "3", "--exec-fd", "4", "--rw", m_dir->path().toStdString(), "--tool-socket", path("tools.sock")};
        int firstFd = 3;
        if (comesBack) {
            const sock_filter allowAll = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
            QFile program(QString::fromStdString(path("allow.bpf")));
            QVERIFY(program.open(QIODevice::WriteOnly));
            program.write(reinterpret_cast<const char *>(&allowAll), sizeof allowAll);
            program.close();
            childFds = {sv[1]};
            firstFd = 0; // the channel is stdin
            ::close(xv[1]);
            args = {args[0], "--gvisor", "--seccomp-file", path("allow.bpf"), "--resume-socket", path("resume.sock"),
                "--rw", m_dir->path().toStdString(), "--tool-socket", path("tools.sock")};
            QCOMPARE(::send(sv[0], m_token.data(), m_token.size(), 0), ssize_t(m_token.size()));
        } else if (resumable) {
            const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_un sa{};
            sa.sun_family = AF_UNIX;
            std::strncpy(sa.sun_path, path("guest.sock").c_str(), sizeof sa.sun_path - 1);
            QCOMPARE(::bind(listener, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
            QCOMPARE(::listen(listener, 8), 0);
            const int token = ::memfd_create("airlock-resume-token", MFD_CLOEXEC);
            QCOMPARE(::write(token, m_token.data(), m_token.size()), ssize_t(m_token.size()));
            childFds.insert(childFds.end(), {listener, token});
            args.insert(args.end(), {"--resume-fd", "5", "--resume-token-fd", "6"});
        }
        if (qEnvironmentVariableIsSet("AIRLOCK_TEST_GUEST_VERBOSE"))
            args.push_back("--verbose");
        std::vector<char *> argv;
        for (std::string &a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);

        m_guest = ::fork();
        QVERIFY(m_guest >= 0);
        if (m_guest == 0) {
            // Nothing but system calls here. Out of the way first, then to 3, 4, ... (dup2's copies
            // stay open across exec).
            int high[4];
            for (size_t i = 0; i < childFds.size(); ++i)
                high[i] = ::fcntl(childFds[i], F_DUPFD, 100);
            for (size_t i = 0; i < childFds.size(); ++i) {
                ::dup2(high[i], int(firstFd + i));
                ::close(high[i]);
            }
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        for (int fd : childFds)
            ::close(fd);
        m_link.reset(sv[0]);
        m_execCheck = xv[0];
        if (comesBack) {
            ::close(xv[0]);
            m_execCheck = -1;
        }
        const auto hello = m_link.next();
        QVERIFY2(hello, "no Hello from the guest");
        QCOMPARE(int(hello->type), int(wire::Type::Hello));
        wire::Reader r = hello->reader();
        QCOMPARE(r.u32(), wire::kProtocolVersion);
        r.i32();
        QCOMPARE(pid_t(r.u32()), m_guest);
    }

    // Spawns and returns the pid from Started (0 on failure, reported by the caller's QVERIFY).
    pid_t spawn(const std::string &frame)
    {
        if (!m_link.send(frame))
            return 0;
        const auto started = m_link.next();
        if (!started || started->type != wire::Type::Started)
            return 0;
        wire::Reader r = started->reader();
        r.u32();
        const pid_t pid = r.i32();
        m_started.push_back(pid);
        return pid;
    }

    // Connects to the resume socket and sends `bytes`, the first byte carrying `fds`.
    int connectResume(const std::string &bytes, const std::vector<int> &fds)
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path("guest.sock").c_str(), sizeof sa.sun_path - 1);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0
            || (!bytes.empty() && !sendWithFds(fd, bytes, fds))) {
            ::close(fd);
            return -1;
        }
        return fd;
    }

    // A daemon taking over: a new exec-check socket and a Resume asking about `asked`. The link and
    // the exec-check socket are the new ones after this; returns the Resumed frame (describeResumed).
    QString resume(const std::vector<Asked> &asked)
    {
        int xv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv) != 0)
            return QStringLiteral("no socketpair");
        const int conn = connectResume(resumeFrame(m_token, asked), {xv[1]});
        ::close(xv[1]);
        ::close(m_execCheck);
        m_execCheck = xv[0];
        m_link.reset(conn);
        if (conn < 0)
            return QStringLiteral("cannot connect to the resume socket");
        return describeResumed(m_link.next(), m_guest);
    }
    // As describeResumed() has it; `from`: where the replayed stdout starts.
    QString running(uint32_t id, pid_t pid, uint64_t from = 0) const
    {
        return QStringLiteral("%1 running %2").arg(id).arg(pid)
            + (from ? QStringLiteral(" from %1,0").arg(from) : QString());
    }

    // Appends the data of `execId`'s stdout Output frames to `out` until `done`; false on a timeout
    // or any other frame.
    bool readStdout(uint32_t execId, std::string &out, const std::function<bool()> &done, int timeoutMs = 5000)
    {
        while (!done()) {
            const auto f = m_link.next(timeoutMs);
            const auto o = f ? asOutput(*f) : std::nullopt;
            if (!o || o->execId != execId || o->stream != wire::StreamStdout)
                return false;
            out += o->data;
        }
        return true;
    }

    // A later daemon, under gVisor: listens on the socket the guest comes back to.
    int listenForGuest()
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, path("resume.sock").c_str(), sizeof sa.sun_path - 1);
        ::unlink(sa.sun_path);
        if (::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || ::listen(fd, 8) != 0) {
            ::close(fd);
            return -1;
        }
        return fd;
    }
    // The guest's next connection to `listener` within timeoutMs, and its first frame, which must be
    // its proof: Reconnect with the token and our protocol version, exactly. -1 if not.
    int nextComeBack(int listener, int timeoutMs, Link &link)
    {
        pollfd p{listener, POLLIN, 0};
        if (::poll(&p, 1, timeoutMs) != 1)
            return -1;
        link.reset(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
        const auto proof = link.next();
        const std::string expected = m_token + std::string("\x04\0\0\0", 4);
        static_assert(wire::kProtocolVersion == 4, "the proof's last four bytes are the version, little endian");
        if (!proof || proof->type != wire::Type::Reconnect || proof->payload != expected)
            return -1;
        return link.fd();
    }

    // init(): a fresh directory for the guest's sockets and files.
    void setUp()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
    }
    // cleanup(): the guest and every execution it started are ended, the daemon's ends closed.
    void tearDown()
    {
        if (m_guest > 0) {
            ::kill(m_guest, SIGKILL);
            ::waitpid(m_guest, nullptr, 0);
        }
        m_guest = -1;
        for (pid_t pid : m_started)
            ::kill(-pid, SIGKILL);
        m_started.clear();
        m_link.reset();
        if (m_execCheck >= 0)
            ::close(m_execCheck);
        m_execCheck = -1;
        m_dir.reset();
    }
};
