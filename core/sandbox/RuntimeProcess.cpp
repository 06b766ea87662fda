// SPDX-License-Identifier: Apache-2.0
#include "sandbox/RuntimeProcess.h"

#include <QFile>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <mutex>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

// A user namespace (and the `more` namespaces) of the caller's own, its uid and gid mapped to
// themselves: what it runs stays that user's, with the capabilities it has there until exec.
bool unshareOwnUser(int more, const char *uidMap, const char *gidMap)
{
    return ::unshare(CLONE_NEWUSER | more) == 0 && writeAll("/proc/self/setgroups", "deny")
        && writeAll("/proc/self/uid_map", uidMap) && writeAll("/proc/self/gid_map", gidMap);
}

[[noreturn]] void childFail(int errFd, const char *what)
{
    const int err = errno;
    (void)!::write(errFd, "airlockd: ", 10);
    (void)!::write(errFd, what, strlen(what));
    (void)!::write(errFd, ": ", 2);
    const char *msg = ::strerrordesc_np(err); // a table: no locale, no lock, no allocation
    if (!msg)
        msg = "unknown error";
    (void)!::write(errFd, msg, strlen(msg));
    (void)!::write(errFd, "\n", 1);
    ::_exit(127);
}
// Everything the child uses, made before it starts: it allocates nothing, and when it shares the
// daemon's memory (clone with CLONE_VM) it writes only its own stack and `fds`.
struct ChildPlan {
    const LaunchRequest *request;
    char **argv;
    char **envp;
    const std::vector<std::string> *procsFiles;
    int *fds; // become descriptors 0..fdCount-1
    int fdCount;
    int errFd;
    pid_t daemonPid;
    const RuntimeIsolation *isolation;
    const char *uidMap;
    const char *gidMap;
    int placedRead, placedWrite; // -1 unless the daemon places the child from outside
    int nsReady, nsReadyWrite, nsMappedRead, nsMapped; // -1 unless it maps the child's uid
};

// Raw system calls for the uid change: glibc's wrappers tell every thread of the process to change
// too, and a child that shares the daemon's memory would signal the daemon's threads.
int rawSetgroupsNone()
{
    return int(::syscall(SYS_setgroups, 0, nullptr));
}
int rawSetresid(long call, unsigned id)
{
    return int(::syscall(call, id, id, id));
}

// The child: async-signal-safe calls only, whether forked or cloned.
[[noreturn]] void runChild(const ChildPlan &plan)
{
    const LaunchRequest &r = *plan.request;
    int err = plan.errFd;
    if (plan.placedRead >= 0) {
        ::close(plan.placedWrite);
        char placed = 0;
        if (::read(plan.placedRead, &placed, 1) != 1) // nothing: the daemon gave up or died
            ::_exit(127);
    }
    // Into the cgroups first, as root.
    for (const std::string &procs : *plan.procsFiles) {
        const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            childFail(err, "joining the sandbox cgroup");
        writeDecimal(fd, ::getpid());
        ::close(fd);
    }
    // A mount namespace of its own without the other sandboxes' workspaces. A slave first: a
    // detach here never propagates to the host's mounts, while what the host unmounts later (a
    // removed disk) goes from here too, and is not held by it. (The workspaces' folder and its own
    // workspace are private clones here: nothing of the host's workspaces comes in later.)
    const RuntimeIsolation &isolation = *plan.isolation;
    if (isolation.privateMounts) {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
            childFail(err, "a mount namespace for the runtime");
        if (!isolation.detachTree.empty()) {
            // Every workspace there is, mounted before this launch or during it, in one unmount;
            // the folder back without them (a private clone: nothing mounted on it here reaches
            // the host, nothing mounted there later comes here); its own workspace on it.
            const auto put = [](int tree, const char *at) {
                return ::syscall(SYS_move_mount, tree, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) == 0;
            };
            if (::umount2(isolation.detachTree.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
                childFail(err, "detaching the sandboxes' workspaces");
            if (!put(isolation.detachTreeClone, isolation.detachTree.c_str()))
                childFail(err, "putting the workspaces' folder back");
            if (isolation.ownWorkspaceTree >= 0 && !put(isolation.ownWorkspaceTree, isolation.ownWorkspace.c_str()))
                childFail(err, "putting the sandbox's workspace back");
        }
        for (const std::string &point : isolation.detachMounts)
            if (::umount2(point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL && errno != ENOENT)
                childFail(err, "detaching another sandbox's workspace"); // (gone meanwhile: EINVAL, ENOENT)
    }
    // Copy-on-write mounts (decision 9): overlays mounted here, each opened onto its place among
    // the runtime's descriptors. A root daemon's child has a mount namespace of its own already; a
    // user's makes a user and mount namespace (its ids mapped to themselves: the runtime is that
    // user's as before) and mounts them there with the capabilities it has in it until exec.
    if (!isolation.overlays.empty()) {
        if (!isolation.privateMounts && !unshareOwnUser(CLONE_NEWNS, plan.uidMap, plan.gidMap))
            childFail(err, "a mount namespace for the copy-on-write mounts");
        for (const RuntimeIsolation::Overlay &o : isolation.overlays) {
            const int lower = reopenCheckedFolder(o.lower.c_str(), o.checkedFd);
            if (lower < 0)
                childFail(err, "the folder of a copy-on-write mount changed since it was checked (not mounted)");
            if (::dup2(lower, o.lowerFd) < 0)
                childFail(err, "dup2");
            ::close(lower);
            if (::mount("overlay", o.merged.c_str(), "overlay", MS_NOSUID | MS_NODEV, o.options.c_str()) != 0)
                childFail(err, "mounting a copy-on-write mount (overlay)");
            const int root = ::open(o.merged.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (root < 0)
                childFail(err, "opening a copy-on-write mount");
            plan.fds[o.slot] = root;
        }
    }
    // A user and network namespace of its own: what the runtime binds in the abstract socket
    // namespace (runsc's control socket) is out of every host user's reach. A root daemon's
    // child makes it as root, so it is root's (the sandbox's uid cannot enter it), and the
    // daemon maps the sandbox's uid into it; the uid change inside then leaves the child
    // non-dumpable, so no copy of the daemon's memory is ever readable by that uid.
    if (plan.nsReady >= 0) {
        ::close(plan.nsReady);
        ::close(plan.nsMapped); // so that a daemon that gives up is an end of file
        char mapped = 0;
        if (rawSetgroupsNone() != 0 || ::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            childFail(err, "a network namespace for the runtime");
        if (::write(plan.nsReadyWrite, "u", 1) != 1 || ::read(plan.nsMappedRead, &mapped, 1) != 1)
            ::_exit(127); // the daemon gave up
    }
    // Move every source above the target range first so dup2 cannot clobber a later source.
    const int topFd = plan.fdCount - 1;
    for (int i = 0; i < plan.fdCount; ++i) {
        const int high = ::fcntl(plan.fds[i], F_DUPFD_CLOEXEC, 100);
        if (high < 0)
            childFail(err, "dup");
        if (plan.fds[i] == err)
            err = high;
        plan.fds[i] = high;
    }
    for (int target = 0; target <= topFd; ++target)
        if (::dup2(plan.fds[target], target) < 0)
            childFail(err, "dup2");
    err = 2;
    // Nothing else of the daemon's (other sandboxes' sockets, client connections) may leak in.
    if (::syscall(SYS_close_range, static_cast<unsigned>(topFd + 1), ~0U, 0) != 0)
        childFail(err, "close_range");
    if (r.dropToUid) {
        const uid_t u = *r.dropToUid;
        if ((!isolation.privateNetwork && rawSetgroupsNone() != 0) || rawSetresid(SYS_setresgid, u) != 0
            || rawSetresid(SYS_setresuid, u) != 0)
            childFail(err, "dropping root privileges");
    } else if (isolation.privateNetwork) {
        // A user's daemon: the runtime is that user's anyway; the namespace maps it to itself.
        if (!unshareOwnUser(CLONE_NEWNET, plan.uidMap, plan.gidMap))
            childFail(err, "a network namespace for the runtime");
    }
    // After the uid change (which clears it): the runtime dies with the daemon, and so its
    // sandbox, unless it is to outlive it. Either way not with the daemon's session or terminal.
    if (!r.outlivesDaemon() && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != plan.daemonPid))
        ::_exit(127);
    if (r.outlivesDaemon() && ::setsid() < 0)
        childFail(err, "setsid");
    // The daemon's signal handlers are not the runtime's: back to the default before signals are
    // let in (an ignored signal stays ignored, as across fork and exec).
    for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction old { };
        if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &old) != 0)
            continue;
        if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) {
            struct sigaction dfl { };
            dfl.sa_handler = SIG_DFL;
            ::sigaction(sig, &dfl, nullptr);
        }
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(plan.argv[0], plan.argv, plan.envp);
    childFail(err, "exec");
}

// The children in the daemon's memory now, and the daemon's dumpable setting from before the first.
struct SharingChildren {
    std::mutex mutex;
    int children = 0;
    int dumpable = -1;
};
SharingChildren g_sharing;

int clonedChild(void *plan)
{
    runChild(*static_cast<const ChildPlan *>(plan));
}

// Starts the child in the daemon's memory, the daemon paused until it execs (what posix_spawn
// does): no copy of the daemon's page tables, whose cost grows with the daemon. Only for a child
// that needs nothing from the daemon before exec.
pid_t cloneSharingMemory(const ChildPlan &plan)
{
    constexpr size_t kStack = 256 * 1024;
    void *stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    // No handler of the daemon's may run on the child's stack: every signal waits until exec.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    // The child's uid change marks the memory it shares with the daemon not dumpable: the daemon's
    // setting is put back once the last child of the launches under way (Launcher: several
    // threads) has exec'd into memory of its own, never while one still runs in the daemon's.
    {
        std::lock_guard lock(g_sharing.mutex);
        if (g_sharing.children++ == 0)
            g_sharing.dumpable = ::prctl(PR_GET_DUMPABLE);
    }
    const pid_t pid = ::clone(clonedChild, static_cast<char *>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD,
        const_cast<ChildPlan *>(&plan));
    const int cloneErrno = errno;
    {
        std::lock_guard lock(g_sharing.mutex);
        if (--g_sharing.children == 0 && g_sharing.dumpable >= 0)
            ::prctl(PR_SET_DUMPABLE, g_sharing.dumpable);
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::munmap(stack, kStack);
    errno = cloneErrno;
    return pid;
}
} // namespace

Error sysError(const QString &what)
{
    return makeError(ErrorCode::IoError, QStringLiteral("%1: %2").arg(what, QString::fromLocal8Bit(strerror(errno))));
}

int reopenCheckedFolder(const char *path, int checked)
{
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const int fd = int(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
    if (fd < 0)
        return -1;
    struct stat now { };
    struct stat then { };
    if (::fstat(fd, &now) == 0 && ::fstat(checked, &then) == 0 && now.st_dev == then.st_dev
        && now.st_ino == then.st_ino)
        return fd;
    ::close(fd);
    errno = EXDEV;
    return -1;
}

Result<LaunchedSandbox> spawnRuntimeProcess(const LaunchRequest &r, const std::vector<std::string> &args,
    std::vector<int> childFds, int errFd, const RuntimeIsolation &isolation)
{
    const bool privateNetwork = isolation.privateNetwork;
    // Prepare everything the child uses: it allocates nothing.
    std::vector<char *> argv;
    for (const std::string &arg : args)
        argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    char *envp[] = {nullptr};
    std::vector<std::string> procsFiles;
    for (const QString &f : r.cgroupProcsFiles)
        procsFiles.push_back(QFile::encodeName(f).toStdString());
    const pid_t daemonPid = ::getpid();
    char uidMap[64], gidMap[64];
    const unsigned long ownUid = r.dropToUid ? *r.dropToUid : ::getuid();
    const unsigned long ownGid = r.dropToUid ? *r.dropToUid : ::getgid();
    std::snprintf(uidMap, sizeof uidMap, "%lu %lu 1", ownUid, ownUid);
    std::snprintf(gidMap, sizeof gidMap, "%lu %lu 1", ownGid, ownGid);
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

    const ChildPlan plan{&r, argv.data(), envp, &procsFiles, childFds.data(), int(childFds.size()), errFd, daemonPid,
        &isolation, uidMap, gidMap, placedRead.fd, placedWrite.fd, nsReady.fd, nsReadyWrite.fd, nsMappedRead.fd,
        nsMapped.fd};
    // A child that waits for the daemon before exec (to be placed, or to have its uid mapped) is
    // forked; every other one shares the daemon's memory until exec.
    const bool waitsForDaemon = placedRead.fd >= 0 || nsReady.fd >= 0;
    pid_t pid = -1;
    if (waitsForDaemon) {
        pid = ::fork();
        if (pid == 0)
            runChild(plan);
    } else {
        pid = cloneSharingMemory(plan);
    }
    if (pid < 0)
        return sysError(waitsForDaemon ? QStringLiteral("fork") : QStringLiteral("clone"));

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
