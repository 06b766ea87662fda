// SPDX-License-Identifier: Apache-2.0
#include "sandbox/BwrapLauncher.h"

#include "model/SandboxHome.h"

#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace airlock {

namespace {
// Descriptor numbers inside the bwrap process.
constexpr int kChannelFd = 3;
constexpr int kSeccompFd = 4;
constexpr int kWorkspaceFd = 5;
constexpr int kGuestFd = 6;
constexpr int kInfoFd = 7;
constexpr int kProxyFd = 8; // allowlist: where the guest hands over connections to the egress proxy
constexpr int kExecCheckFd = 9; // where the guest hands over each judged execution's exec-check listener
constexpr int kResumeFd = 10; // where a later daemon reaches the guest (a sandbox that outlives this one)
constexpr int kResumeTokenFd = 11;
constexpr int kFirstMountFd = 12; // the identity files, then the home's startup files, the mounts, the data files
constexpr int kSandboxUid = 1000;

// Host files that stay hidden even though /etc is visible (the subordinate id files and the
// account databases' backups name the host's accounts).
constexpr const char *kMaskedEtcFiles[]
    = {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd",
        "/etc/machine-id", "/etc/passwd-", "/etc/group-", "/etc/subuid", "/etc/subuid-", "/etc/subgid", "/etc/subgid-"};
// The sandbox's own account databases in place of the host's: its user, root and the overflow
// ids (what host-owned files show as), nobody else.
constexpr const char *kIdentityFiles[] = {"/etc/passwd", "/etc/group"};
constexpr const char *kMaskedEtcDirs[] = {"/etc/ssl/private", "/etc/sudoers.d", "/etc/ssh"};

std::string s(const QString &q)
{
    return QFile::encodeName(q).toStdString();
}

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f)
        : fd(f)
    {
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    Fd(Fd &&o) noexcept
        : fd(std::exchange(o.fd, -1))
    {
    }
    Fd &operator=(Fd &&o) noexcept
    {
        if (this != &o) {
            if (fd >= 0)
                ::close(fd);
            fd = std::exchange(o.fd, -1);
        }
        return *this;
    }
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

QByteArray identityFile(const char *path)
{
    const QByteArray home(kSandboxHome);
    const QByteArray uid = QByteArray::number(kSandboxUid);
    if (std::strcmp(path, "/etc/passwd") == 0)
        return "root:x:0:0:root:/root:/usr/sbin/nologin\n"
               "sandbox:x:"
            + uid + ':' + uid + ":Airlock sandbox:" + home
            + ":/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
    return "root:x:0:\nsandbox:x:" + uid + ":\nnogroup:x:65534:\n";
}

Error sysError(const QString &what)
{
    return makeError(ErrorCode::IoError, QStringLiteral("%1: %2").arg(what, QString::fromLocal8Bit(strerror(errno))));
}

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

std::vector<std::string> bwrapArguments(const LaunchRequest &r, const QString &bwrapPath)
{
    std::vector<std::string> a
        = {s(bwrapPath), "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup"};
    // Only `full` shares the host's network; `allowlist` reaches out through the proxy alone.
    if (r.network != NetworkMode::Full)
        a.emplace_back("--unshare-net");
    const std::string uid = std::to_string(kSandboxUid);
    a.insert(a.end(), {"--uid", uid, "--gid", uid, "--hostname", s(r.hostname)});
    if (!r.outlivesDaemon())
        a.emplace_back("--die-with-parent");
    a.insert(a.end(),
        {"--new-session", "--as-pid-1", "--cap-drop", "ALL", "--info-fd", std::to_string(kInfoFd), "--seccomp",
            std::to_string(kSeccompFd), "--ro-bind", "/usr", "/usr"});
    // Merged-/usr systems have symlinks here; older layouts have directories.
    for (const char *top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
        const QFileInfo fi(QString::fromLatin1(top));
        if (fi.isSymLink())
            a.insert(a.end(),
                {"--symlink", s(fi.symLinkTarget().replace(QStringLiteral("/usr/"), QStringLiteral("usr/"))), top});
        else if (fi.isDir())
            a.insert(a.end(), {"--ro-bind", top, top});
    }
    a.insert(a.end(), {"--ro-bind", "/etc", "/etc"});
    for (const char *file : kMaskedEtcFiles)
        if (QFileInfo::exists(QString::fromLatin1(file)))
            a.insert(a.end(), {"--ro-bind", "/dev/null", file});
    for (const char *dir : kMaskedEtcDirs)
        if (QFileInfo(QString::fromLatin1(dir)).isDir())
            a.insert(a.end(), {"--tmpfs", dir, "--remount-ro", dir});
    int fd = kFirstMountFd;
    for (const char *file : kIdentityFiles)
        a.insert(a.end(), {"--perms", "0444", "--ro-bind-data", std::to_string(fd++), file});
    // Every writable tmpfs is sized (unsized, each could take half of the host's memory). /dev's is
    // not (bwrap cannot size it), and Landlock lets nothing be made there.
    std::vector<std::string> sized;
    if (r.tmpBytes)
        sized = {"--size", std::to_string(*r.tmpBytes)};
    auto tmpfs = [&](const std::string &dir) {
        a.insert(a.end(), sized.begin(), sized.end());
        a.insert(a.end(), {"--tmpfs", dir});
    };
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
    tmpfs("/tmp");
    a.insert(a.end(), {"--dir", "/var"});
    tmpfs("/var/tmp");
    a.insert(a.end(),
        {"--dir", "/run", "--bind-fd", std::to_string(kWorkspaceFd), "/workspace", "--ro-bind-fd",
            std::to_string(kGuestFd), "/.airlock/guest", "--dir", "/.airlock/bin", "--symlink", "../guest",
            "/.airlock/bin/airlock-tool"});
    tmpfs(kSandboxHome);
    const std::string home = std::string(kSandboxHome) + '/';
    // A directory holding a mount can still be renamed away and made anew, so each one between the
    // home and a read-only file or directory is a mount point too (which cannot be renamed: EBUSY).
    std::vector<std::string> parents;
    const auto addParents = [&](const std::string &path) {
        for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
            if (std::find(parents.begin(), parents.end(), path.substr(0, slash)) == parents.end())
                parents.push_back(path.substr(0, slash));
    };
    for (const char *file : kHomeStartupFiles)
        addParents(file);
    for (const char *dir : kHomeStartupDirs)
        addParents(dir);
    for (const std::string &parent : parents)
        tmpfs(home + parent);
    for (const char *file : kHomeStartupFiles)
        a.insert(a.end(), {"--perms", "0444", "--ro-bind-data", std::to_string(fd++), home + file});
    for (const char *dir : kHomeStartupDirs)
        a.insert(a.end(), {"--perms", "0555", "--tmpfs", home + dir, "--remount-ro", home + dir});
    for (const Mount &m : r.mounts)
        a.insert(a.end(), {m.writable ? "--bind-fd" : "--ro-bind-fd", std::to_string(fd++), s(m.sandboxPath)});
    for (const QString &hidden : r.hiddenPaths)
        a.insert(a.end(), {"--perms", "0555", "--tmpfs", s(hidden), "--remount-ro", s(hidden)});
    // Secrets granted as files: copied by bwrap from a memfd into the sandbox's own tmpfs, read-only;
    // they never touch the host's disk.
    for (const auto &file : r.dataFiles)
        a.insert(a.end(), {"--perms", "0400", "--ro-bind-data", std::to_string(fd++), s(file.first)});
    a.insert(a.end(),
        {"--chdir", "/workspace", "--", "/.airlock/guest", "--fd", std::to_string(kChannelFd), "--rw", "/workspace",
            "--rw", "/tmp", "--rw", "/var/tmp", "--rw", kSandboxHome});
    for (const Mount &m : r.mounts)
        if (m.writable)
            a.insert(a.end(), {"--rw", s(m.sandboxPath)});
    if (r.nproc)
        a.insert(a.end(), {"--nproc", std::to_string(*r.nproc)});
    a.insert(a.end(), {"--tool-socket", "/run/airlock/tools.sock", "--exec-fd", std::to_string(kExecCheckFd)});
    if (r.network == NetworkMode::Allowlist)
        a.insert(a.end(), {"--proxy-fd", std::to_string(kProxyFd), "--proxy-port", std::to_string(kEgressProxyPort)});
    if (r.outlivesDaemon())
        a.insert(
            a.end(), {"--resume-fd", std::to_string(kResumeFd), "--resume-token-fd", std::to_string(kResumeTokenFd)});
    if (r.verboseGuest)
        a.emplace_back("--verbose");
    return a;
}

Result<LaunchedSandbox> launchSandbox(const LaunchRequest &r, const QString &bwrapPath)
{
    // Everything the child needs is opened here, by the daemon, so bwrap never has to resolve host
    // paths itself (it may run as an unprivileged uid that cannot traverse them).
    Fd workspace(::open(QFile::encodeName(r.workspaceDir).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (workspace.fd < 0)
        return sysError(QStringLiteral("cannot open workspace %1").arg(r.workspaceDir));
    Fd guest(::open(QFile::encodeName(r.guestPath).constData(), O_PATH | O_CLOEXEC));
    if (guest.fd < 0)
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral("cannot open the sandbox agent %1: %2 (reinstall Airlock or pass "
                           "airlockd --guest PATH)")
                .arg(r.guestPath, QString::fromLocal8Bit(strerror(errno))));
    std::vector<Fd> identityFiles;
    for (const char *file : kIdentityFiles) {
        const QByteArray data = identityFile(file);
        identityFiles.emplace_back(::memfd_create("airlock-identity", MFD_CLOEXEC));
        if (identityFiles.back().fd < 0
            || ::write(identityFiles.back().fd, data.constData(), size_t(data.size())) != data.size()
            || ::lseek(identityFiles.back().fd, 0, SEEK_SET) != 0)
            return sysError(QStringLiteral("cannot prepare the sandbox's %1").arg(QLatin1String(file)));
    }
    // One empty memfd per startup file: bwrap closes each after copying it.
    std::vector<Fd> startupFiles;
    for (size_t i = 0; i < std::size(kHomeStartupFiles); ++i) {
        startupFiles.emplace_back(::memfd_create("airlock-startup", MFD_CLOEXEC));
        if (startupFiles.back().fd < 0)
            return sysError(QStringLiteral("cannot prepare the sandbox's home"));
    }
    std::vector<Fd> mounts;
    for (const Mount &m : r.mounts) {
        mounts.emplace_back(::open(QFile::encodeName(m.hostPath).constData(), O_PATH | O_CLOEXEC));
        if (mounts.back().fd < 0)
            return sysError(QStringLiteral("cannot open mount source %1").arg(m.hostPath));
    }
    std::vector<Fd> dataFiles;
    for (const auto &file : r.dataFiles) {
        dataFiles.emplace_back(::memfd_create("airlock-secret", MFD_CLOEXEC));
        const QByteArray &data = file.second;
        if (dataFiles.back().fd < 0
            || ::write(dataFiles.back().fd, data.constData(), size_t(data.size())) != data.size()
            || ::lseek(dataFiles.back().fd, 0, SEEK_SET) != 0)
            return sysError(QStringLiteral("cannot prepare a secret file"));
    }
    Fd seccomp(::memfd_create("airlock-seccomp", MFD_CLOEXEC));
    if (seccomp.fd < 0
        || ::write(seccomp.fd, r.seccompProgram.constData(), size_t(r.seccompProgram.size())) != r.seccompProgram.size()
        || ::lseek(seccomp.fd, 0, SEEK_SET) != 0)
        return sysError(QStringLiteral("cannot prepare the seccomp program"));
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return sysError(QStringLiteral("socketpair"));
    Fd daemonEnd(sv[0]), guestEnd(sv[1]);
    for (int end : sv) {
        const int size = 4 * 1024 * 1024;
        ::setsockopt(end, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        ::setsockopt(end, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    }
    int ep[2];
    if (::pipe2(ep, O_CLOEXEC) != 0)
        return sysError(QStringLiteral("pipe2"));
    Fd errRead(ep[0]), errWrite(ep[1]);
    int ip[2];
    if (::pipe2(ip, O_CLOEXEC) != 0)
        return sysError(QStringLiteral("pipe2"));
    Fd infoRead(ip[0]), infoWrite(ip[1]);
    Fd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    // One message per connection, each carrying its socket (SCM_RIGHTS).
    Fd proxyDaemonEnd, proxyGuestEnd;
    if (r.network == NetworkMode::Allowlist) {
        int pv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pv) != 0)
            return sysError(QStringLiteral("socketpair"));
        proxyDaemonEnd = Fd(pv[0]);
        proxyGuestEnd = Fd(pv[1]);
    }

    // The token goes in by a descriptor the guest reads and closes: never on a command line that
    // /proc/1/cmdline would show inside.
    Fd resumeToken;
    if (r.outlivesDaemon()) {
        resumeToken = Fd(::memfd_create("airlock-resume", MFD_CLOEXEC));
        if (resumeToken.fd < 0
            || ::write(resumeToken.fd, r.resumeToken.constData(), size_t(r.resumeToken.size())) != r.resumeToken.size()
            || ::lseek(resumeToken.fd, 0, SEEK_SET) != 0)
            return sysError(QStringLiteral("cannot prepare the resume token"));
    }

    int xv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv) != 0)
        return sysError(QStringLiteral("socketpair"));
    Fd execCheckDaemonEnd(xv[0]), execCheckGuestEnd(xv[1]);

    // Prepare everything the child uses: no allocation after fork.
    const std::vector<std::string> args = bwrapArguments(r, bwrapPath);
    std::vector<char *> argv;
    for (const std::string &arg : args)
        argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    char *envp[] = {nullptr};
    std::vector<std::string> procsFiles;
    for (const QString &f : r.cgroupProcsFiles)
        procsFiles.push_back(s(f));
    std::vector<int> sources = {devNull.fd, errWrite.fd, errWrite.fd, guestEnd.fd, seccomp.fd, workspace.fd, guest.fd,
        infoWrite.fd, proxyGuestEnd.fd >= 0 ? proxyGuestEnd.fd : devNull.fd, execCheckGuestEnd.fd,
        r.outlivesDaemon() ? r.resumeListenFd : devNull.fd, resumeToken.fd >= 0 ? resumeToken.fd : devNull.fd};
    for (const Fd &f : identityFiles)
        sources.push_back(f.fd);
    for (const Fd &f : startupFiles)
        sources.push_back(f.fd);
    for (const Fd &m : mounts)
        sources.push_back(m.fd);
    for (const Fd &d : dataFiles)
        sources.push_back(d.fd);
    const pid_t daemonPid = ::getpid();
    const int topFd = static_cast<int>(sources.size()) - 1;
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
        int err = errWrite.fd;
        if (placedRead.fd >= 0) {
            ::close(placedWrite.fd);
            char placed = 0;
            if (::read(placedRead.fd, &placed, 1) != 1) // nothing: the daemon gave up or died
                ::_exit(127);
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
        for (const std::string &procs : procsFiles) {
            const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0)
                childFail(err, "joining the sandbox cgroup");
            writeDecimal(fd, ::getpid());
            ::close(fd);
        }
        if (r.dropToUid) {
            const uid_t u = *r.dropToUid;
            if (::setgroups(0, nullptr) != 0 || ::setresgid(u, u, u) != 0 || ::setresuid(u, u, u) != 0)
                childFail(err, "dropping root privileges");
        }
        // After the uid change (which clears it): bwrap dies with the daemon, and so its sandbox,
        // unless it is to outlive it. Either way not with the daemon's session or terminal.
        if (!r.outlivesDaemon() && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != daemonPid))
            ::_exit(127);
        if (r.outlivesDaemon() && ::setsid() < 0)
            childFail(err, "setsid");
        ::execve(argv[0], argv.data(), envp);
        childFail(err, "exec bwrap");
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
    LaunchedSandbox launched;
    launched.pid = pid;
    launched.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (launched.pidfd < 0) {
        ::kill(pid, SIGKILL);
        return sysError(QStringLiteral("pidfd_open"));
    }
    ::fcntl(launched.pidfd, F_SETFD, FD_CLOEXEC);
    launched.channelFd = daemonEnd.release();
    launched.stderrFd = errRead.release();
    launched.infoFd = infoRead.release();
    launched.proxyFd = proxyDaemonEnd.release();
    launched.execCheckFd = execCheckDaemonEnd.release();
    return launched;
}

} // namespace airlock
