// SPDX-License-Identifier: Apache-2.0
#include "sandbox/RuntimeProcess.h"

#include <QFile>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace airlock {

namespace {
// Async-signal-safe helpers for the forked child.
void writeDecimal(int fd, long value)
{
    char buf[24];
    int i = sizeof buf;
    do {
        buf[--i] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value > 0 && i > 0);
    (void)!::write(fd, buf + i, sizeof buf - static_cast<size_t>(i));
}

bool writeAll(const char *path, const char *text)
{
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const size_t n = strlen(text);
    const bool ok = ::write(fd, text, n) == ssize_t(n);
    ::close(fd);
    return ok;
}

[[noreturn]] void childFail(int errFd, const char *what)
{
    const int err = errno;
    (void)!::write(errFd, "airlockd: ", 10);
    (void)!::write(errFd, what, strlen(what));
    (void)!::write(errFd, ": ", 2);
    const char *msg = strerror(err); // not strictly async-signal-safe, but only reads a table here
    (void)!::write(errFd, msg, strlen(msg));
    (void)!::write(errFd, "\n", 1);
    ::_exit(127);
}
} // namespace

Error sysError(const QString &what)
{
    return makeError(ErrorCode::IoError, QStringLiteral("%1: %2").arg(what, QString::fromLocal8Bit(strerror(errno))));
}

Result<LaunchedSandbox> spawnRuntimeProcess(const LaunchRequest &r, const std::vector<std::string> &args,
    std::vector<int> childFds, int errFd, bool privateNetwork)
{
    // Prepare everything the child uses: no allocation after fork.
    std::vector<char *> argv;
    for (const std::string &arg : args)
        argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    char *envp[] = {nullptr};
    std::vector<std::string> procsFiles;
    for (const QString &f : r.cgroupProcsFiles)
        procsFiles.push_back(QFile::encodeName(f).toStdString());
    std::vector<int> &sources = childFds;
    const pid_t daemonPid = ::getpid();
    char uidMap[64], gidMap[64];
    const unsigned long ownUid = r.dropToUid ? *r.dropToUid : ::getuid();
    const unsigned long ownGid = r.dropToUid ? *r.dropToUid : ::getgid();
    std::snprintf(uidMap, sizeof uidMap, "%lu %lu 1", ownUid, ownUid);
    std::snprintf(gidMap, sizeof gidMap, "%lu %lu 1", ownGid, ownGid);
    const int topFd = static_cast<int>(sources.size()) - 1;
    Fd nsReady, nsReadyWrite, nsMappedRead, nsMapped;
    if (privateNetwork && r.dropToUid) {
        int a[2], b[2];
        if (::pipe2(a, O_CLOEXEC) != 0 || ::pipe2(b, O_CLOEXEC) != 0)
            return sysError(QStringLiteral("pipe2"));
        nsReadyWrite = Fd(a[1]); // the child's end: its namespace is made
        nsReady = Fd(a[0]);
        nsMappedRead = Fd(b[0]); // the child's end: its uid is mapped
        nsMapped = Fd(b[1]);
    }
    Fd placedRead, placedWrite;
    if (r.placeChild) {
        int pp[2];
        if (::pipe2(pp, O_CLOEXEC) != 0)
            return sysError(QStringLiteral("pipe2"));
        placedRead = Fd(pp[0]);
        placedWrite = Fd(pp[1]);
    }

    const pid_t pid = ::fork();
    if (pid < 0)
        return sysError(QStringLiteral("fork"));
    if (pid == 0) {
        // Child: async-signal-safe calls only.
        int err = errFd;
        if (placedRead.fd >= 0) {
            ::close(placedWrite.fd);
            char placed = 0;
            if (::read(placedRead.fd, &placed, 1) != 1) // nothing: the daemon gave up or died
                ::_exit(127);
        }
        // Into the cgroups first, as root.
        for (const std::string &procs : procsFiles) {
            const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0)
                childFail(err, "joining the sandbox cgroup");
            writeDecimal(fd, ::getpid());
            ::close(fd);
        }
        // A user and network namespace of its own: what the runtime binds in the abstract socket
        // namespace (runsc's control socket) is out of every host user's reach. A root daemon's
        // child makes it as root, so it is root's (the sandbox's uid cannot enter it), and the
        // daemon maps the sandbox's uid into it; the uid change inside then leaves the child
        // non-dumpable, so no copy of the daemon's memory is ever readable by that uid.
        if (privateNetwork && r.dropToUid) {
            ::close(nsReady.fd);
            ::close(nsMapped.fd); // so that a daemon that gives up is an end of file
            char mapped = 0;
            if (::setgroups(0, nullptr) != 0 || ::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
                childFail(err, "a network namespace for the runtime");
            if (::write(nsReadyWrite.fd, "u", 1) != 1 || ::read(nsMappedRead.fd, &mapped, 1) != 1)
                ::_exit(127); // the daemon gave up
        }
        // Move every source above the target range first so dup2 cannot clobber a later source.
        std::vector<int> &src = sources;
        for (int &fd : src) {
            const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
            if (high < 0)
                childFail(err, "dup");
            if (fd == err)
                err = high;
            fd = high;
        }
        for (int target = 0; target <= topFd; ++target)
            if (::dup2(src[static_cast<size_t>(target)], target) < 0)
                childFail(err, "dup2");
        err = 2;
        // Nothing else of the daemon's (other sandboxes' sockets, client connections) may leak in.
        if (::syscall(SYS_close_range, static_cast<unsigned>(topFd + 1), ~0U, 0) != 0)
            childFail(err, "close_range");
        sigset_t all;
        sigemptyset(&all);
        ::sigprocmask(SIG_SETMASK, &all, nullptr);
        if (r.dropToUid) {
            const uid_t u = *r.dropToUid;
            if ((!privateNetwork && ::setgroups(0, nullptr) != 0) || ::setresgid(u, u, u) != 0
                || ::setresuid(u, u, u) != 0)
                childFail(err, "dropping root privileges");
        } else if (privateNetwork) {
            // A user's daemon: the runtime is that user's anyway; the namespace maps it to itself.
            if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0 || !writeAll("/proc/self/setgroups", "deny")
                || !writeAll("/proc/self/uid_map", uidMap) || !writeAll("/proc/self/gid_map", gidMap))
                childFail(err, "a network namespace for the runtime");
        }
        // After the uid change (which clears it): the runtime dies with the daemon, and so its
        // sandbox, unless it is to outlive it. Either way not with the daemon's session or terminal.
        if (!r.outlivesDaemon() && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != daemonPid))
            ::_exit(127);
        if (r.outlivesDaemon() && ::setsid() < 0)
            childFail(err, "setsid");
        ::execve(argv[0], argv.data(), envp);
        childFail(err, "exec");
    }

    if (r.placeChild) {
        placedRead = Fd();
        if (Status placed = r.placeChild(pid); !placed) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return placed.error();
        }
        if (::write(placedWrite.fd, "p", 1) != 1) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return sysError(QStringLiteral("releasing the sandbox's first process"));
        }
        placedWrite = Fd();
    }
    if (privateNetwork && r.dropToUid) {
        nsReadyWrite = Fd();
        nsMappedRead = Fd();
        char ready = 0;
        const QByteArray proc = "/proc/" + QByteArray::number(pid);
        const bool mapped = ::read(nsReady.fd, &ready, 1) == 1
            && writeAll(QByteArray(proc + "/setgroups").constData(), "deny")
            && writeAll(QByteArray(proc + "/uid_map").constData(), uidMap)
            && writeAll(QByteArray(proc + "/gid_map").constData(), gidMap) && ::write(nsMapped.fd, "m", 1) == 1;
        if (!mapped) {
            const Error error = sysError(QStringLiteral("mapping the runtime's uid into its namespace"));
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            return error;
        }
    }
    LaunchedSandbox process;
    process.pid = pid;
    process.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (process.pidfd < 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return sysError(QStringLiteral("pidfd_open"));
    }
    ::fcntl(process.pidfd, F_SETFD, FD_CLOEXEC);
    return process;
}

} // namespace airlock
