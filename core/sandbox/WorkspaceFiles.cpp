// SPDX-License-Identifier: Apache-2.0
#include "sandbox/WorkspaceFiles.h"

#include <QFile>
#include <QFileInfo>

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
    : m_root(std::move(workspaceDir)), m_owner(owner)
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

Result<int> WorkspaceFiles::open(const QString &relative, int flags, int mode) const
{
    FdGuard root{::open(QFile::encodeName(m_root).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
    if (root.fd < 0)
        return osError(errno, m_root);
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    how.mode = (flags & O_CREAT) ? static_cast<uint64_t>(mode) : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    const int fd = static_cast<int>(::syscall(SYS_openat2, root.fd, QFile::encodeName(relative).constData(), &how, sizeof how));
    if (fd < 0)
        return osError(errno, relative);
    return fd;
}

Result<QString> WorkspaceFiles::write(const QString &sandboxPath, const QString &fallbackName, QByteArrayView data,
                                      qint64 offset, bool truncate, int mode)
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
    auto opened = open(target, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0) | (truncate ? 0 : 0), mode & 0777);
    if (!opened)
        return opened.error();
    FdGuard fd{*opened};
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(target));
    if (m_owner && st.st_uid != *m_owner)
        (void)::fchown(fd.fd, *m_owner, *m_owner);
    qint64 done = 0;
    while (done < data.size()) {
        const ssize_t n = ::pwrite(fd.fd, data.data() + done, size_t(data.size() - done), offset + done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return osError(errno, target);
        done += n;
    }
    return QString(QStringLiteral("/workspace/") + target);
}

Result<WorkspaceFiles::Chunk> WorkspaceFiles::read(const QString &sandboxPath, qint64 offset, qint64 maxBytes) const
{
    auto rel = relativePath(sandboxPath);
    if (!rel)
        return rel.error();
    auto opened = open(*rel, O_RDONLY, 0);
    if (!opened)
        return opened.error();
    FdGuard fd{*opened};
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("'%1' is not a regular file").arg(sandboxPath));
    Chunk c;
    c.size = st.st_size;
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
