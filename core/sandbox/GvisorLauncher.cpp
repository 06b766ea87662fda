// SPDX-License-Identifier: Apache-2.0
#include "sandbox/GvisorLauncher.h"
#include "util/UntrustedFd.h"

#include "log/Log.h"
#include "sandbox/RuntimeProcess.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QScopeGuard>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <optional>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <utility>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}

constexpr const char *kSeccompTarget = "/.airlock/seccomp.bpf";
constexpr const char *kPreloadTarget = "/.airlock/gvisor-preload.so";
// Allowlist: the daemon's egress socket (see EgressRelay), bound in the bundle's folder `egress`.
constexpr const char *kEgressTarget = "/.airlock/egress";
// A sandbox that outlives its daemon: where a later daemon listens for its guest (GuestReconnect),
// bound in the bundle's folder `resume`.
constexpr const char *kResumeTarget = "/.airlock/resume";
// Each folder's one socket.
constexpr const char *kSocketName = "sock";

QJsonObject mount(const QString &type, const QString &source, const QString &target, const QStringList &options)
{
    return {{QStringLiteral("destination"), target}, {QStringLiteral("type"), type}, {QStringLiteral("source"), source},
        {QStringLiteral("options"), QJsonArray::fromStringList(options)}};
}

QJsonObject bind(const QString &source, const QString &target, bool writable)
{
    return mount(QStringLiteral("bind"), source, target,
        {QStringLiteral("rbind"), writable ? QStringLiteral("rw") : QStringLiteral("ro")});
}

// Where the view's index-th file is on the host: the bundle's files, or for a secret the staged
// folder in memory.
QString fileOf(const ViewEntry &e, const QString &bundleDir, const QString &stagedDir, int index)
{
    return (e.secret ? stagedDir : bundleDir + QStringLiteral("/files")) + QLatin1Char('/') + QString::number(index);
}

// runsc opens each mount's source as its own (unprivileged) uid: a host file that uid cannot read
// is hidden from the sandbox already, and cannot be a mount's source.
bool readableByOthers(const QString &path)
{
    return QFileInfo(path).permission(QFileDevice::ReadOther);
}
} // namespace

QJsonObject gvisorConfig(
    const LaunchRequest &r, const QList<ViewEntry> &view, const QString &bundleDir, const QString &stagedDir)
{
    QStringList tmpfsOptions{QStringLiteral("nosuid"), QStringLiteral("nodev"), QStringLiteral("mode=1777")};
    if (r.tmpBytes)
        tmpfsOptions.append(QStringLiteral("size=%1").arg(*r.tmpBytes));
    QJsonArray mounts;
    int files = 0;
    for (const ViewEntry &e : view) {
        switch (e.kind) {
        case ViewEntry::Kind::Bind:
            if (!e.mask || readableByOthers(e.target))
                mounts.append(bind(e.source, e.target, e.writable));
            break;
        case ViewEntry::Kind::Symlink:
        case ViewEntry::Kind::Dir:
            break; // made in the bundle's root
        case ViewEntry::Kind::Tmpfs:
            mounts.append(mount(QStringLiteral("tmpfs"), QStringLiteral("tmpfs"), e.target, tmpfsOptions));
            break;
        case ViewEntry::Kind::Empty:
            mounts.append(mount(QStringLiteral("tmpfs"), QStringLiteral("tmpfs"), e.target,
                {QStringLiteral("ro"), QStringLiteral("mode=555")}));
            break;
        case ViewEntry::Kind::File:
            mounts.append(bind(fileOf(e, bundleDir, stagedDir, files++), e.target, false));
            break;
        case ViewEntry::Kind::Proc:
            mounts.append(mount(QStringLiteral("proc"), QStringLiteral("proc"), e.target, {}));
            break;
        case ViewEntry::Kind::Dev:
            mounts.append(mount(QStringLiteral("tmpfs"), QStringLiteral("tmpfs"), e.target,
                {QStringLiteral("nosuid"), QStringLiteral("mode=755")}));
            break;
        }
    }
    mounts.append(bind(bundleDir + QStringLiteral("/seccomp.bpf"), QString::fromLatin1(kSeccompTarget), false));
    QStringList args{QStringLiteral("/.airlock/guest"), QStringLiteral("--gvisor"), QStringLiteral("--seccomp-file"),
        QString::fromLatin1(kSeccompTarget)};
    if (QFileInfo(r.gvisorPreload).isFile()) {
        mounts.append(bind(r.gvisorPreload, QString::fromLatin1(kPreloadTarget), false));
        args += {QStringLiteral("--preload"), QString::fromLatin1(kPreloadTarget)};
    }
    if (r.network == NetworkMode::Allowlist) {
        mounts.append(bind(bundleDir + QStringLiteral("/egress"), QString::fromLatin1(kEgressTarget), false));
        args += {QStringLiteral("--egress-socket"),
            QStringLiteral("%1/%2").arg(QString::fromLatin1(kEgressTarget), QString::fromLatin1(kSocketName)),
            QStringLiteral("--proxy-port"), QString::number(kEgressProxyPort)};
    }
    if (r.outlivesDaemon()) {
        mounts.append(bind(bundleDir + QStringLiteral("/resume"), QString::fromLatin1(kResumeTarget), false));
        args += {QStringLiteral("--resume-socket"),
            QStringLiteral("%1/%2").arg(QString::fromLatin1(kResumeTarget), QString::fromLatin1(kSocketName))};
    }
    for (const QString &path : writablePaths(r))
        args += {QStringLiteral("--rw"), path};
    if (r.nproc)
        args += {QStringLiteral("--nproc"), QString::number(*r.nproc)};
    args += {QStringLiteral("--tool-socket"), QStringLiteral("/run/airlock/tools.sock")};
    if (r.verboseGuest)
        args.append(QStringLiteral("--verbose"));
    // gVisor's root: the container's processes are the runtime's unprivileged host uid to the host.
    const QJsonObject process{{QStringLiteral("terminal"), false},
        {QStringLiteral("user"), QJsonObject{{QStringLiteral("uid"), 0}, {QStringLiteral("gid"), 0}}},
        {QStringLiteral("args"), QJsonArray::fromStringList(args)},
        {QStringLiteral("env"), QJsonArray{QStringLiteral("PATH=/usr/local/bin:/usr/bin:/bin")}},
        {QStringLiteral("cwd"), QStringLiteral("/workspace")}, {QStringLiteral("noNewPrivileges"), true},
        {QStringLiteral("capabilities"),
            QJsonObject{{QStringLiteral("bounding"), QJsonArray()}, {QStringLiteral("effective"), QJsonArray()},
                {QStringLiteral("permitted"), QJsonArray()}}}};
    QJsonArray namespaces;
    for (const char *kind : {"pid", "network", "ipc", "uts", "mount"})
        namespaces.append(QJsonObject{{QStringLiteral("type"), QString::fromLatin1(kind)}});
    return {{QStringLiteral("ociVersion"), QStringLiteral("1.0.0")}, {QStringLiteral("process"), process},
        {QStringLiteral("root"),
            QJsonObject{{QStringLiteral("path"), QString(bundleDir + QStringLiteral("/rootfs"))},
                {QStringLiteral("readonly"), true}}},
        {QStringLiteral("hostname"), r.hostname}, {QStringLiteral("mounts"), mounts},
        {QStringLiteral("linux"), QJsonObject{{QStringLiteral("namespaces"), namespaces}}}};
}

namespace {
// The group runsc runs with, where it is not the daemon's own uid: a root daemon's sandbox uid
// (whose group has the same number). A user's daemon runs runsc as itself: no group is needed.
std::optional<gid_t> runtimeGroup(const LaunchRequest &r)
{
    return r.dropToUid ? std::optional<gid_t>(gid_t(*r.dropToUid)) : std::nullopt;
}

// Gives what the daemon made to the runtime: `mode` with the runtime's group, or without a group,
// the daemon's alone (a user's daemon: not its primary group's other members').
bool shareWithRuntime(int dirFd, const char *path, mode_t mode, std::optional<gid_t> group)
{
    if (group && ::fchownat(dirFd, path, uid_t(-1), *group, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    return ::fchmodat(dirFd, path, group ? mode : mode & 0700, 0) == 0;
}

// Writes the bundle's folders and files: the daemon's, readable by the runtime's group alone
// (folders 0750, files 0440), so no other local user reads the mounts' sources or the view.
class BundleWriter {
public:
    BundleWriter(QString bundle, std::optional<gid_t> group)
        : m_bundle(std::move(bundle))
        , m_group(group)
    {
    }
    // A folder and those above it up to the bundle.
    bool dir(const QString &path) const
    {
        if (!QDir().mkpath(path))
            return false;
        for (QString d = path; d.size() >= m_bundle.size(); d = QFileInfo(d).path())
            if (!own(d, 0750))
                return false;
        return true;
    }
    Status file(const QString &name, const QByteArray &data) const
    {
        QFile f(name);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(data) != data.size())
            return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(name, f.errorString()));
        f.close();
        if (!own(name, 0440))
            return sysError(QStringLiteral("cannot hand %1 to the runtime's group").arg(name));
        return Ok{};
    }
    // A secret, in the staged folder (memory): the runtime uid's alone, mode 0400 as under bubblewrap.
    Status secret(const QString &name, const QByteArray &data, uid_t runtimeUid) const
    {
        const QByteArray native = QFile::encodeName(name);
        const int fd = ::open(native.constData(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        bool written = fd >= 0 && (!m_group || ::fchown(fd, runtimeUid, *m_group) == 0);
        for (qsizetype off = 0; written && off < data.size();) {
            const ssize_t n = ::write(fd, data.constData() + off, size_t(data.size() - off));
            written = n > 0;
            off += n;
        }
        if (fd >= 0)
            ::close(fd);
        return written ? Status(Ok{}) : sysError(QStringLiteral("cannot stage %1").arg(name));
    }

private:
    bool own(const QString &path, mode_t mode) const
    {
        const QByteArray native = QFile::encodeName(path);
        return shareWithRuntime(AT_FDCWD, native.constData(), mode, m_group);
    }
    QString m_bundle;
    std::optional<gid_t> m_group;
};

// The bundle: config.json, the empty root with the view's links and folders, the view's files,
// the seccomp program, all the daemon's and read-only to the runtime's group; runsc's state, the
// runtime uid's alone.
Status writeBundle(const LaunchRequest &r, const QList<ViewEntry> &view, const QString &stagedDir)
{
    const QString bundle = r.runtimeDir;
    const QString root = bundle + QStringLiteral("/rootfs");
    const uid_t runtimeUid = r.dropToUid ? *r.dropToUid : ::getuid();
    const BundleWriter write(bundle, runtimeGroup(r));
    QStringList dirs{root, bundle + QStringLiteral("/files"), bundle + QStringLiteral("/state")};
    if (r.network == NetworkMode::Allowlist)
        dirs += {bundle + QStringLiteral("/egress"), root + QString::fromLatin1(kEgressTarget)};
    if (r.outlivesDaemon())
        dirs += {bundle + QStringLiteral("/resume"), root + QString::fromLatin1(kResumeTarget)};
    for (const QString &dir : std::as_const(dirs))
        if (!write.dir(dir))
            return makeError(ErrorCode::IoError, QStringLiteral("cannot make %1").arg(dir));
    int files = 0;
    // Mount points are made in the root unless a host folder bound earlier holds them: runsc, as
    // the runtime's uid, cannot make them in a root that is not its own, and this runsc looks for a
    // bind's mount point in the root even below a tmpfs.
    QList<std::pair<QString, bool>> mounted; // target, whether it is a host folder
    const auto inHostFolder = [&mounted](const QString &target) {
        for (auto it = mounted.crbegin(); it != mounted.crend(); ++it)
            if (target.startsWith(it->first + QLatin1Char('/')))
                return it->second;
        return false;
    };
    for (const ViewEntry &e : view) {
        const bool isMount = e.kind != ViewEntry::Kind::Dir && e.kind != ViewEntry::Kind::Symlink;
        if (isMount && !inHostFolder(e.target)) {
            const bool isFile
                = e.kind == ViewEntry::Kind::File || (e.kind == ViewEntry::Kind::Bind && !QFileInfo(e.source).isDir());
            if (!write.dir(isFile ? QFileInfo(root + e.target).path() : root + e.target))
                return makeError(ErrorCode::IoError, QStringLiteral("cannot make %1 in %2").arg(e.target, root));
            if (isFile && !QFileInfo::exists(root + e.target))
                if (Status s = write.file(root + e.target, {}); !s)
                    return s;
        }
        if (isMount)
            mounted.append({e.target, e.kind == ViewEntry::Kind::Bind});
        if (e.kind == ViewEntry::Kind::Dir)
            write.dir(root + e.target);
        if (e.kind == ViewEntry::Kind::Symlink) {
            write.dir(QFileInfo(root + e.target).path());
            if (!QFile::link(e.source, root + e.target))
                return makeError(
                    ErrorCode::IoError, QStringLiteral("cannot make the link %1 in %2").arg(e.target, root));
        }
        if (e.kind == ViewEntry::Kind::File) {
            const QString source = fileOf(e, bundle, stagedDir, files++);
            if (Status s = e.secret ? write.secret(source, e.data, runtimeUid) : write.file(source, e.data); !s)
                return s;
        }
    }
    if (Status s = write.file(bundle + QStringLiteral("/seccomp.bpf"), r.seccompProgram); !s)
        return s;
    for (const char *target : {kSeccompTarget, kPreloadTarget})
        if (Status s = write.file(root + QString::fromLatin1(target), {}); !s)
            return s;
    if (Status s = write.file(bundle + QStringLiteral("/config.json"),
            QJsonDocument(gvisorConfig(r, view, bundle, stagedDir)).toJson(QJsonDocument::Compact));
        !s)
        return s;
    const QByteArray state = QFile::encodeName(bundle + QStringLiteral("/state"));
    if (r.dropToUid && ::chown(state.constData(), *r.dropToUid, *r.dropToUid) != 0)
        return sysError(QStringLiteral("cannot hand %1 to the sandbox's uid").arg(bundle));
    if (::chmod(state.constData(), 0700) != 0)
        return sysError(QStringLiteral("chmod %1").arg(bundle));
    return Ok{};
}
// Secrets granted as files wait for runsc in a folder of their own on a memory filesystem (never
// a disk), which the sandbox removes once it runs (gVisor has read them by then): made with an
// unguessable name, so that no other local user can take it first.
Result<QString> stageInMemory(const LaunchRequest &r)
{
    const QString parent = QFileInfo(r.memoryDirPrefix).path();
    struct statfs fs { };
    if (r.memoryDirPrefix.isEmpty() || ::statfs(QFile::encodeName(parent).constData(), &fs) != 0
        || (fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC))
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral("a secret granted as a file needs a memory filesystem (tmpfs) at %1 under gVisor, which "
                           "it is not; grant it as env (nothing was created)")
                .arg(parent.isEmpty() ? QStringLiteral("/dev/shm") : parent));
    QByteArray path = QFile::encodeName(r.memoryDirPrefix + r.id) + "-XXXXXX";
    if (!::mkdtemp(path.data()))
        return sysError(QStringLiteral("cannot make a folder in %1").arg(parent));
    if (!shareWithRuntime(AT_FDCWD, path.constData(), 0750, runtimeGroup(r))) {
        ::rmdir(path.constData());
        return sysError(QStringLiteral("cannot hand %1 to the runtime's group").arg(QFile::decodeName(path)));
    }
    return QFile::decodeName(path);
}

// A socket listening in the bundle's `folder` (0750: the daemon's and the runtime's group; the
// sandbox sees it as /.airlock/FOLDER): for each egress connection the guest relays (allowlist),
// or for the guest coming back to a later daemon. One the daemon before left there is replaced.
// Bound through /proc/self/fd, since the bundle's path may be longer than a unix socket's address.
Result<Fd> listenInBundle(const QString &bundle, const char *folder, std::optional<gid_t> group, int backlog)
{
    const QByteArray dirPath = QFile::encodeName(bundle + QLatin1Char('/') + QLatin1String(folder));
    const Fd dir(::open(dirPath.constData(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (dir.fd < 0 || sock.fd < 0)
        return sysError(QStringLiteral("cannot make a socket in %1").arg(QFile::decodeName(dirPath)));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", dir.fd, kSocketName);
    ::unlinkat(dir.fd, kSocketName, 0);
    // Connecting takes write permission on the socket: the runtime's group has it (runsc's gofer
    // connects as the runtime's uid), nobody else.
    if (::bind(sock.fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0
        || !shareWithRuntime(dir.fd, kSocketName, 0660, group) || ::listen(sock.fd, backlog) != 0)
        return sysError(QStringLiteral("cannot listen in %1").arg(QFile::decodeName(dirPath)));
    return sock;
}
// Removes `name` in the folder `parent` if it is a real folder of ours, with the plain files in it
// (a staged folder holds nothing else); nothing is followed.
void removeOwnFolder(int parent, const char *name)
{
    struct stat st { };
    if (::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return;
    const int dir = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return;
    if (DIR *entries = ::fdopendir(::dup(dir))) {
        while (const dirent *e = ::readdir(entries))
            if (e->d_type != DT_DIR) // no "." or "..", nor a folder someone made there
                ::unlinkat(dir, e->d_name, 0);
        ::closedir(entries);
    }
    ::close(dir);
    ::unlinkat(parent, name, AT_REMOVEDIR);
}
} // namespace

void removeStaged(const QString &dir)
{
    const QFileInfo path(dir);
    const int parent = ::open(QFile::encodeName(path.path()).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0)
        return;
    removeOwnFolder(parent, QFile::encodeName(path.fileName()).constData());
    ::close(parent);
}

void removeStagedLeftovers(const QString &prefix)
{
    const QFileInfo path(prefix);
    const QByteArray start = QFile::encodeName(path.fileName());
    const int parent = ::open(QFile::encodeName(path.path()).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0)
        return;
    QList<QByteArray> names;
    if (DIR *entries = ::fdopendir(::dup(parent))) {
        while (const dirent *e = ::readdir(entries))
            if (QByteArray(e->d_name).startsWith(start))
                names.append(QByteArray(e->d_name));
        ::closedir(entries);
    }
    for (const QByteArray &name : std::as_const(names))
        removeOwnFolder(parent, name.constData());
    ::close(parent);
}

Result<LaunchedSandbox> launchGvisor(const LaunchRequest &r, const QString &runscPath)
{
    const QList<ViewEntry> view = sandboxView(r);
    QString staged;
    if (std::any_of(view.cbegin(), view.cend(), [](const ViewEntry &e) { return e.secret; })) {
        auto made = stageInMemory(r);
        if (!made)
            return made.error();
        staged = *made;
    }
    // Until the sandbox has it: whatever fails on the way removes it.
    auto unstage = qScopeGuard([&staged] {
        if (!staged.isEmpty())
            removeStaged(staged);
    });
    if (Status written = writeBundle(r, view, staged); !written)
        return written.error();
    Fd egress;
    if (r.network == NetworkMode::Allowlist) {
        auto listening = listenInBundle(r.runtimeDir, "egress", runtimeGroup(r), SOMAXCONN);
        if (!listening)
            return listening.error();
        egress = std::move(*listening);
    }
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return sysError(QStringLiteral("socketpair"));
    Fd daemonEnd(sv[0]), guestEnd(sv[1]);
    int ep[2];
    if (::pipe2(ep, O_CLOEXEC) != 0)
        return sysError(QStringLiteral("pipe2"));
    Fd errRead(ep[0]), errWrite(ep[1]);
    const std::string bundle = QFile::encodeName(r.runtimeDir).toStdString();
    // Always rootless: gVisor's root is an unprivileged uid on the host (the sandbox's own, for a
    // root daemon), and what it writes in the workspace is that uid's. No network stack at all:
    // egress, where a policy allows it, is relayed by the guest to the egress socket, and a guest
    // whose daemon went comes back through the resume socket; gVisor may connect to those
    // (--host-uds=open: connect to the host's unix sockets its mounts show, create none).
    std::vector<std::string> args = {QFile::encodeName(runscPath).toStdString(), "--root", bundle + "/state",
        "--network=none", "--ignore-cgroups", "--rootless"};
    if (egress.fd >= 0 || r.outlivesDaemon())
        args.emplace_back("--host-uds=open");
    // runsc names its control socket after the container (abstract, host-wide): the sandbox's id
    args.insert(args.end(), {"run", "--bundle", bundle, "airlock-" + r.id.toStdString()});
    // runsc binds its control server (which runs anything in the sandbox, as root with every
    // capability, for whoever connects) as an abstract unix socket: in a network namespace of its
    // own, no host user can reach it.
    // The token goes first on the channel (the guest reads it before anything else): never in a
    // file gVisor would show, nor on a command line. It fits in the socket's buffer.
    if (r.outlivesDaemon()
        && ::send(daemonEnd.fd, r.resumeToken.constData(), size_t(r.resumeToken.size()), MSG_NOSIGNAL)
            != r.resumeToken.size())
        return sysError(QStringLiteral("cannot pass the resume token"));
    RuntimeIsolation runscIsolation;
    runscIsolation.privateNetwork = true;
    auto launched = spawnRuntimeProcess(r, args, {guestEnd.fd, errWrite.fd, errWrite.fd}, errWrite.fd, runscIsolation);
    if (!launched)
        return launched.error();
    launched->channelFd = daemonEnd.release();
    launched->stderrFd = errRead.release();
    launched->egressListenFd = egress.release();
    launched->stagedDir = std::exchange(staged, QString());
    return launched;
}

int acceptFromRuntime(int listenFd, uid_t runtimeUid, const QString &id, const char *socketName)
{
    for (int i = 0; i < 64; ++i) {
        const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return -1;
        ucred peer{};
        socklen_t len = sizeof peer;
        const bool known = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0;
        if (known && peer.uid == runtimeUid)
            return fd;
        logger()->warn("sandbox {}: {} connected to the {} socket, which is the runtime's; refused", id.toStdString(),
            known ? "uid " + std::to_string(peer.uid) : std::string("a peer of unknown uid"), socketName);
        closeUntrusted(fd);
    }
    return -1;
}

Result<Reattached> reattachGvisor(const LaunchRequest &r)
{
    Reattached back;
    auto resume = listenInBundle(r.runtimeDir, "resume", runtimeGroup(r), 8);
    if (!resume)
        return resume.error();
    if (r.network == NetworkMode::Allowlist) {
        auto egress = listenInBundle(r.runtimeDir, "egress", runtimeGroup(r), SOMAXCONN);
        if (!egress)
            return egress.error();
        back.egressListenFd = egress->release();
    }
    back.reconnectListenFd = resume->release();
    return back;
}

} // namespace airlock
