// SPDX-License-Identifier: Apache-2.0
#include "sandbox/BwrapLauncher.h"

#include "model/SandboxHome.h"
#include "sandbox/RuntimeProcess.h"
#include "sandbox/SandboxView.h"
#include "sandbox/WorkspaceVolume.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace airlock {

namespace {
// Descriptor numbers inside the bwrap process.
constexpr int kChannelFd = 3;
constexpr int kSeccompFd = 4;
constexpr int kInfoFd = 7;
constexpr int kProxyFd = 8; // allowlist: where the guest hands over connections to the egress proxy
constexpr int kExecCheckFd = 9; // where the guest hands over each judged execution's exec-check listener
constexpr int kResumeFd = 10; // where a later daemon reaches the guest (a sandbox that outlives this one)
constexpr int kResumeTokenFd = 11;
constexpr int kFirstMountFd = 12; // what sandboxView() opens or makes, in its order (5 and 6 are unused)

std::string s(const QString &q)
{
    return QFile::encodeName(q).toStdString();
}

// O_PATH, refusing (ELOOP) a symbolic link anywhere in the path.
int openNoSymlinks(const QString &path)
{
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    return int(::syscall(SYS_openat2, AT_FDCWD, s(path).c_str(), &how, sizeof how));
}

} // namespace

std::vector<std::string> bwrapArguments(const LaunchRequest &r, const QList<ViewEntry> &view, const QString &bwrapPath)
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
            std::to_string(kSeccompFd)});
    // Every writable tmpfs is sized (unsized, each could take half of the host's memory). /dev's is
    // not (bwrap cannot size it), and Landlock lets nothing be made there.
    std::vector<std::string> sized;
    if (r.tmpBytes)
        sized = {"--size", std::to_string(*r.tmpBytes)};
    int fd = kFirstMountFd; // what the daemon opened or made, in the view's order
    for (const ViewEntry &e : view) {
        const std::string target = s(e.target);
        switch (e.kind) {
        case ViewEntry::Kind::Bind:
            if (e.opened)
                a.insert(a.end(), {e.writable ? "--bind-fd" : "--ro-bind-fd", std::to_string(fd++), target});
            else
                a.insert(a.end(), {e.writable ? "--bind" : "--ro-bind", s(e.source), target});
            break;
        case ViewEntry::Kind::Symlink:
            a.insert(a.end(), {"--symlink", s(e.source), target});
            break;
        case ViewEntry::Kind::Dir:
            a.insert(a.end(), {"--dir", target});
            break;
        case ViewEntry::Kind::Tmpfs:
            a.insert(a.end(), sized.begin(), sized.end());
            a.insert(a.end(), {"--tmpfs", target});
            break;
        case ViewEntry::Kind::Empty:
            a.insert(a.end(), {"--perms", "0555", "--tmpfs", target, "--remount-ro", target});
            break;
        case ViewEntry::Kind::File: {
            char perms[8];
            std::snprintf(perms, sizeof perms, "%04o", e.perms);
            a.insert(a.end(), {"--perms", perms, "--ro-bind-data", std::to_string(fd++), target});
            break;
        }
        case ViewEntry::Kind::Proc:
            a.insert(a.end(), {"--proc", target});
            break;
        case ViewEntry::Kind::Dev:
            a.insert(a.end(), {"--dev", target});
            break;
        }
    }
    a.insert(a.end(), {"--chdir", "/workspace", "--", "/.airlock/guest", "--fd", std::to_string(kChannelFd)});
    for (const QString &path : writablePaths(r))
        a.insert(a.end(), {"--rw", s(path)});
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

namespace {
// Why a mount's source (a person's, checked with no symbolic link in it) did not open.
Error sourceUnopened(const ViewEntry &e)
{
    if (e.noSymlinks && errno == ELOOP)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("mount %1: a symbolic link is in its path now, which was not when it was checked; it is "
                           "not mounted (create the sandbox again)")
                .arg(e.source));
    return sysError(QStringLiteral("cannot open %1 for the sandbox's %2").arg(e.source, e.target));
}

// A path in an overlay's options: its separators (',' between options, ':' between lower
// folders) and the escape itself escaped.
std::string overlayPath(const QString &path)
{
    std::string out;
    for (const char c : s(path)) {
        if (c == ',' || c == ':' || c == '\\')
            out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

// A copy-on-write mount's overlay: its changes in the runtime's folder (cow-N/upper, and the
// overlay's work folder beside it) over the host folder, opened here as checked (no symbolic link
// in its path) and kept open in `fds` with a free descriptor number for the child to put the
// folder it opens again at (see RuntimeIsolation::Overlay).
Result<RuntimeIsolation::Overlay> prepareOverlay(
    const LaunchRequest &r, const ViewEntry &e, int index, std::vector<Fd> &fds)
{
    const QString dir = QStringLiteral("%1/cow-%2").arg(r.runtimeDir).arg(index);
    const QString merged
        = QStringLiteral("%1/%2").arg(volume::cowMountPointsOf(r.workspaceDir, r.dropToUid.has_value())).arg(index);
    for (const QString &sub : QStringList{dir + QStringLiteral("/upper"), dir + QStringLiteral("/work"), merged})
        if (!QDir().mkpath(sub))
            return sysError(QStringLiteral("cannot make %1 for the copy-on-write mount of %2").arg(sub, e.source));
    if (r.dropToUid) // bubblewrap, as the sandbox's uid, passes through to its mount point
        for (const QString &up : {QFileInfo(merged).path(), QFileInfo(QFileInfo(merged).path()).path()})
            ::chmod(QFile::encodeName(up).constData(), 0711);
    fds.emplace_back(openNoSymlinks(e.source));
    const int checked = fds.back().fd;
    if (checked < 0)
        return sourceUnopened(e);
    fds.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC)); // a number held free for the child
    const int lowerFd = fds.back().fd;
    // The view's top is the host folder's: its owner and mode (a user's daemon can set the mode).
    struct stat top { };
    if (::fstat(checked, &top) == 0) {
        const QByteArray upper = QFile::encodeName(dir + QStringLiteral("/upper"));
        if (r.dropToUid)
            (void)::chown(upper.constData(), top.st_uid, top.st_gid);
        ::chmod(upper.constData(), top.st_mode & 07777);
    }
    RuntimeIsolation::Overlay o;
    o.lower = s(e.source);
    o.checkedFd = checked;
    o.lowerFd = lowerFd;
    o.merged = s(merged);
    // user.overlay.* attributes whether the mount is a user namespace's or root's: one reader of
    // the changes (an opaque folder's mark) for both.
    o.options = "lowerdir=/proc/self/fd/" + std::to_string(lowerFd)
        + ",upperdir=" + overlayPath(dir + QStringLiteral("/upper"))
        + ",workdir=" + overlayPath(dir + QStringLiteral("/work")) + ",userxattr";
    return o;
}
} // namespace

Result<LaunchedSandbox> launchSandbox(const LaunchRequest &r, const QString &bwrapPath)
{
    // Everything the child needs is opened here, by the daemon, so bwrap never has to resolve host
    // paths itself (it may run as an unprivileged uid that cannot traverse them); the files the
    // view makes from memory are memfds, never on the host's disk.
    const QList<ViewEntry> view = sandboxView(r);
    std::vector<Fd> viewFds;
    RuntimeIsolation isolation;
    std::vector<Fd> overlayFds; // open until the child has mounted the overlays
    for (const ViewEntry &e : view) {
        if (e.kind == ViewEntry::Kind::Bind && e.copyOnWrite) {
            auto overlay = prepareOverlay(r, e, int(isolation.overlays.size()), overlayFds);
            if (!overlay)
                return overlay.error();
            overlay->slot = kFirstMountFd + int(viewFds.size());
            isolation.overlays.push_back(*overlay);
            viewFds.emplace_back(
                ::open("/dev/null", O_RDONLY | O_CLOEXEC)); // its place: the child puts the overlay there
            continue;
        }
        if (e.kind == ViewEntry::Kind::Bind && e.opened) {
            viewFds.emplace_back(e.noSymlinks ? openNoSymlinks(e.source)
                                              : ::open(QFile::encodeName(e.source).constData(), O_PATH | O_CLOEXEC));
            if (viewFds.back().fd >= 0)
                continue;
            if (e.target == QLatin1String("/.airlock/guest"))
                return makeError(ErrorCode::BoundaryUnavailable,
                    QStringLiteral("cannot open the sandbox agent %1: %2 (reinstall Airlock or pass "
                                   "airlockd --guest PATH)")
                        .arg(e.source, QString::fromLocal8Bit(strerror(errno))));
            return sourceUnopened(e);
        } else if (e.kind == ViewEntry::Kind::File) {
            viewFds.emplace_back(::memfd_create("airlock-file", MFD_CLOEXEC));
            if (viewFds.back().fd < 0
                || ::write(viewFds.back().fd, e.data.constData(), size_t(e.data.size())) != e.data.size()
                || ::lseek(viewFds.back().fd, 0, SEEK_SET) != 0)
                return sysError(QStringLiteral("cannot prepare the sandbox's %1").arg(e.target));
        }
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

    std::vector<int> sources = {devNull.fd, errWrite.fd, errWrite.fd, guestEnd.fd, seccomp.fd, devNull.fd, devNull.fd,
        infoWrite.fd, proxyGuestEnd.fd >= 0 ? proxyGuestEnd.fd : devNull.fd, execCheckGuestEnd.fd,
        r.outlivesDaemon() ? r.resumeListenFd : devNull.fd, resumeToken.fd >= 0 ? resumeToken.fd : devNull.fd};
    for (const Fd &f : viewFds)
        sources.push_back(f.fd);
    // A root daemon's sandboxes each have a workspace mounted on the host; bubblewrap starts from a
    // mount namespace without the others'.
    Fd workspacesClone, ownWorkspaceClone;
    if (r.dropToUid && !r.workspaceDir.isEmpty()) {
        isolation.privateMounts = true;
        const QString workspaces = QFileInfo(r.workspaceDir).path();
        // A clone of one mount (not what is mounted below it), to be put back in the runtime's
        // mount namespace: private before it is, or it would be a peer of the host's (a shared
        // one's clone is), and what the host mounts there would come in with it.
        const auto clone = [](const QString &path) {
            Fd tree(int(::syscall(
                SYS_open_tree, AT_FDCWD, s(path).c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)));
            mount_attr privately{};
            privately.propagation = MS_PRIVATE;
            if (tree.fd >= 0
                && ::syscall(SYS_mount_setattr, tree.fd, "", AT_EMPTY_PATH, &privately, sizeof privately) != 0)
                tree = Fd();
            return tree;
        };
        if (volume::isMountRoot(workspaces)) {
            isolation.detachTree = s(workspaces);
            workspacesClone = clone(workspaces);
            if (workspacesClone.fd < 0)
                return sysError(QStringLiteral("cannot clone the mount of %1").arg(workspaces));
            isolation.detachTreeClone = workspacesClone.fd;
            // A workspace with no image is a folder of the one put back.
            if (volume::isMountRoot(r.workspaceDir)) {
                ownWorkspaceClone = clone(r.workspaceDir);
                if (ownWorkspaceClone.fd < 0)
                    return sysError(QStringLiteral("cannot clone the mount of %1").arg(r.workspaceDir));
                isolation.ownWorkspaceTree = ownWorkspaceClone.fd;
                isolation.ownWorkspace = s(r.workspaceDir);
            }
        } else {
            for (const QString &point : volume::mountsUnder(workspaces))
                if (point != r.workspaceDir && !point.startsWith(r.workspaceDir + QLatin1Char('/')))
                    isolation.detachMounts.push_back(QFile::encodeName(point).toStdString());
        }
    }
    auto launched
        = spawnRuntimeProcess(r, bwrapArguments(r, view, bwrapPath), std::move(sources), errWrite.fd, isolation);
    if (!launched)
        return launched.error();
    launched->channelFd = daemonEnd.release();
    launched->stderrFd = errRead.release();
    launched->infoFd = infoRead.release();
    launched->proxyFd = proxyDaemonEnd.release();
    launched->execCheckFd = execCheckDaemonEnd.release();
    return launched;
}

} // namespace airlock
