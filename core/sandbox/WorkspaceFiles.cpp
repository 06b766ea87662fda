// SPDX-License-Identifier: Apache-2.0
#include "sandbox/WorkspaceFiles.h"

#include <QFile>
#include <QFileInfo>
#include <QScopeGuard>

#include <dirent.h>
#include <functional>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock {

namespace {
struct FdGuard {
    int fd;
    ~FdGuard()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

Error osError(int err, const QString &path)
{
    if (err == EXDEV || err == ELOOP)
        return makeError(ErrorCode::PathEscape,
            QStringLiteral("'%1' resolves outside the workspace (a symlink leads out); refused").arg(path));
    if (err == ENXIO) // a FIFO without a reader or a socket: opened non-blocking, so it fails here
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(path));
    if (err == ENOENT)
        return makeError(ErrorCode::NotFound, QStringLiteral("'%1' does not exist in the workspace").arg(path));
    return makeError(ErrorCode::IoError, QStringLiteral("'%1': %2").arg(path, QString::fromLocal8Bit(strerror(err))));
}
} // namespace

WorkspaceFiles::WorkspaceFiles(QString workspaceDir, std::optional<uid_t> owner)
    : m_root(std::move(workspaceDir))
    , m_owner(owner)
{
}

Result<QString> WorkspaceFiles::relativePath(const QString &sandboxPath)
{
    QString p = sandboxPath;
    if (p.contains(QChar(0)) || p.isEmpty() || p.size() > 4096)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("invalid path '%1'").arg(sandboxPath));
    if (p.startsWith(QLatin1Char('/'))) {
        if (p == QLatin1String("/workspace"))
            p = QStringLiteral(".");
        else if (p.startsWith(QLatin1String("/workspace/")))
            p = p.mid(11);
        else
            return makeError(ErrorCode::PathEscape,
                QStringLiteral("'%1' is outside the workspace: cp reaches only /workspace").arg(sandboxPath));
    }
    const QStringList parts = p.split(QLatin1Char('/'), Qt::SkipEmptyParts);
    if (parts.contains(QStringLiteral("..")))
        return makeError(ErrorCode::PathEscape, QStringLiteral("'%1' contains '..'; refused").arg(sandboxPath));
    QStringList clean;
    for (const QString &part : parts)
        if (part != QLatin1String("."))
            clean.append(part);
    return clean.isEmpty() ? QStringLiteral(".") : clean.join(QLatin1Char('/'));
}

int WorkspaceFiles::openAt(const QString &relative, int flags, int mode) const
{
    FdGuard root{::open(QFile::encodeName(m_root).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
    if (root.fd < 0)
        return -errno;
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    how.mode = (flags & O_CREAT) ? static_cast<uint64_t>(mode) : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    const int fd
        = static_cast<int>(::syscall(SYS_openat2, root.fd, QFile::encodeName(relative).constData(), &how, sizeof how));
    return fd < 0 ? -errno : fd;
}

Result<int> WorkspaceFiles::open(const QString &relative, int flags, int mode) const
{
    const int fd = openAt(relative, flags, mode);
    if (fd < 0)
        return osError(-fd, relative);
    return fd;
}

Result<WorkspaceFiles::OpenFile> WorkspaceFiles::openForWrite(
    const QString &sandboxPath, const QString &fallbackName, int mode)
{
    return openWritable(sandboxPath, fallbackName, mode, true, true);
}

Result<WorkspaceFiles::OpenFile> WorkspaceFiles::openWritable(
    const QString &sandboxPath, const QString &fallbackName, int mode, bool truncate, bool setMode)
{
    auto rel = relativePath(sandboxPath);
    if (!rel)
        return rel.error();
    QString target = *rel;
    // Into an existing directory?
    if (auto dir = open(target, O_RDONLY | O_DIRECTORY, 0)) {
        ::close(*dir);
        auto name = relativePath(fallbackName);
        if (fallbackName.isEmpty() || fallbackName.contains(QLatin1Char('/')) || !name)
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is a directory").arg(sandboxPath));
        target = target == QLatin1String(".") ? *name : target + QLatin1Char('/') + *name;
    }
    // A new file takes `mode` as it is (the daemon's own umask is not the sandbox's business); an
    // existing one keeps its own, as cp does.
    int handle = openAt(target, O_WRONLY | O_CREAT | O_EXCL, mode & 0777);
    const bool created = handle >= 0;
    if (handle == -EEXIST)
        handle = openAt(target, O_WRONLY | (truncate ? O_TRUNC : 0), 0);
    if (handle < 0)
        return osError(-handle, target);
    FdGuard fd{handle};
    struct stat st { };
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(target));
    if (m_owner && st.st_uid != *m_owner)
        (void)::fchown(fd.fd, *m_owner, *m_owner);
    if (created && setMode)
        (void)::fchmod(fd.fd, mode_t(mode & 0777));
    OpenFile f{fd.fd, QString(QStringLiteral("/workspace/") + target), 0, mode & 0777};
    fd.fd = -1;
    return f;
}

Result<QString> WorkspaceFiles::write(const QString &sandboxPath, const QString &fallbackName, QByteArrayView data,
    qint64 offset, bool truncate, int mode)
{
    auto opened = openWritable(sandboxPath, fallbackName, mode, truncate, false);
    if (!opened)
        return opened.error();
    FdGuard fd{opened->fd};
    qint64 done = 0;
    while (done < data.size()) {
        const ssize_t n = ::pwrite(fd.fd, data.data() + done, size_t(data.size() - done), offset + done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return osError(errno, opened->path);
        done += n;
    }
    return opened->path;
}

Result<WorkspaceFiles::OpenFile> WorkspaceFiles::openForRead(const QString &sandboxPath) const
{
    auto rel = relativePath(sandboxPath);
    if (!rel)
        return rel.error();
    auto opened = open(*rel, O_RDONLY, 0);
    if (!opened)
        return opened.error();
    FdGuard fd{*opened};
    struct stat st { };
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(sandboxPath));
    OpenFile f{fd.fd, QString(QStringLiteral("/workspace/") + *rel), st.st_size, int(st.st_mode & 0777)};
    fd.fd = -1;
    return f;
}

Result<QString> WorkspaceFiles::makeDirectory(const QString &sandboxPath, int mode, bool *existed)
{
    auto rel = relativePath(sandboxPath);
    if (!rel)
        return rel.error();
    *existed = true;
    if (*rel == QLatin1String("."))
        return QStringLiteral("/workspace");
    const qsizetype slash = rel->lastIndexOf(QLatin1Char('/'));
    auto parent = open(slash < 0 ? QStringLiteral(".") : rel->left(slash), O_RDONLY | O_DIRECTORY, 0);
    if (!parent)
        return parent.error();
    FdGuard dir{*parent};
    const QByteArray name = QFile::encodeName(rel->mid(slash + 1));
    if (::mkdirat(dir.fd, name.constData(), mode_t(mode & 0777)) != 0) {
        const int err = errno;
        struct stat st { };
        if (err != EEXIST || ::fstatat(dir.fd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            return err == EEXIST ? makeError(ErrorCode::InvalidArgument,
                       QStringLiteral("'%1' exists and is not a directory").arg(sandboxPath))
                                 : osError(err, *rel);
    } else {
        *existed = false;
        // As asked, whatever the daemon's umask; and the sandbox's own. Through a descriptor of the
        // folder just made, never by its name: the sandbox may have put a link there meanwhile.
        FdGuard made{::openat(dir.fd, name.constData(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)};
        struct stat st { };
        if (made.fd >= 0 && ::fstat(made.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            (void)::fchmod(made.fd, mode_t(mode & 0777));
            if (m_owner)
                (void)::fchown(made.fd, *m_owner, *m_owner);
        }
    }
    return QString(QStringLiteral("/workspace/") + *rel);
}

Result<QList<WorkspaceFiles::Entry>> WorkspaceFiles::list(
    const QString &sandboxPath, int maxEntries, qint64 maxPathBytes) const
{
    auto rel = relativePath(sandboxPath);
    if (!rel)
        return rel.error();
    auto opened = open(*rel, O_RDONLY, 0);
    if (!opened)
        return opened.error();
    QList<Entry> entries;
    struct stat top { };
    if (::fstat(*opened, &top) != 0 || !S_ISDIR(top.st_mode)) { // a file: itself, as one entry with an empty path
        ::close(*opened);
        if (!S_ISREG(top.st_mode))
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(sandboxPath));
        entries.append(Entry{QString(), Entry::Type::File, top.st_size, int(top.st_mode & 0777)});
        return entries;
    }
    // Depth first with a descriptor per level: each name is opened relative to its directory's
    // descriptor, never through a link, so nothing outside what was opened beneath the workspace
    // is reached however the sandbox changes the tree meanwhile.
    constexpr int kMaxDepth = 64;
    qint64 pathBytes = 0; // of every path listed so far: what the list holds is bounded before it is built
    const std::function<Status(int, const QString &, int)> walk
        = [&](int dirFd, const QString &prefix, int depth) -> Status {
        if (depth > kMaxDepth) {
            ::close(dirFd);
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("'%1' is more than %2 folders deep; copy a part of it").arg(sandboxPath).arg(kMaxDepth));
        }
        DIR *dir = ::fdopendir(dirFd);
        if (!dir) {
            ::close(dirFd);
            return osError(errno, prefix);
        }
        const auto closeDir = qScopeGuard([dir] { ::closedir(dir); });
        while (const dirent *d = ::readdir(dir)) {
            const QByteArray name(d->d_name);
            if (name == "." || name == "..")
                continue;
            pathBytes += prefix.size() + name.size() + 1;
            if (entries.size() >= maxEntries || pathBytes > maxPathBytes)
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("'%1' holds too much to list at once (at most %2 entries); copy a part of it, or "
                                   "pack it first (exec tar)")
                        .arg(sandboxPath)
                        .arg(maxEntries));
            struct stat st { };
            if (::fstatat(::dirfd(dir), name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue; // gone meanwhile
            Entry e;
            e.path = prefix.isEmpty() ? QFile::decodeName(name) : prefix + QLatin1Char('/') + QFile::decodeName(name);
            e.type = S_ISREG(st.st_mode) ? Entry::Type::File
                : S_ISDIR(st.st_mode)    ? Entry::Type::Directory
                : S_ISLNK(st.st_mode)    ? Entry::Type::Link
                                         : Entry::Type::Other;
            e.size = S_ISREG(st.st_mode) ? st.st_size : 0;
            e.mode = int(st.st_mode & 0777);
            entries.append(e);
            if (e.type != Entry::Type::Directory)
                continue;
            const int child = ::openat(
                ::dirfd(dir), name.constData(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (child < 0)
                return osError(errno, e.path);
            if (Status s = walk(child, e.path, depth + 1); !s)
                return s;
        }
        return Ok{};
    };
    if (Status s = walk(*opened, QString(), 0); !s)
        return s.error();
    return entries;
}

Result<WorkspaceFiles::Chunk> WorkspaceFiles::read(const QString &sandboxPath, qint64 offset, qint64 maxBytes) const
{
    auto opened = openForRead(sandboxPath);
    if (!opened)
        return opened.error();
    FdGuard fd{opened->fd};
    Chunk c;
    c.size = opened->size;
    c.data.resize(qsizetype(std::max<qint64>(0, std::min(maxBytes, c.size - offset))));
    qint64 done = 0;
    while (done < c.data.size()) {
        const ssize_t n = ::pread(fd.fd, c.data.data() + done, size_t(c.data.size() - done), offset + done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return osError(errno, sandboxPath);
        if (n == 0)
            break;
        done += n;
    }
    c.data.resize(done);
    c.eof = offset + done >= c.size;
    return c;
}

} // namespace airlock
