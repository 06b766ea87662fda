// SPDX-License-Identifier: Apache-2.0
#include "util/InstanceLock.h"

#include "util/Paths.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace airlock {

namespace {
// An flock on path, with our pid written into it; the message names the holder if refused.
Result<int> lockFile(const QString &path, const QString &what)
{
    const QByteArray native = QFile::encodeName(path);
    const int fd = ::open(native.constData(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot open %1").arg(path));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {};
        (void)!::pread(fd, pid, sizeof pid - 1, 0);
        ::close(fd);
        return makeError(ErrorCode::DaemonRunning,
            QStringLiteral("another airlockd (pid %1) already %2").arg(QString::fromLatin1(pid).trimmed(), what));
    }
    const QByteArray pid = QByteArray::number(::getpid()) + '\n';
    (void)!::ftruncate(fd, 0);
    (void)!::pwrite(fd, pid.constData(), size_t(pid.size()), 0);
    return fd;
}
} // namespace

Result<InstanceLock> InstanceLock::acquire(const QString &socketPath, const QString &dataDir)
{
    const QString dir = QFileInfo(socketPath).absolutePath();
    if (Status s = paths::ensurePrivateDir(dir); !s)
        return s.error();
    if (Status s = paths::ensurePrivateDir(dataDir); !s)
        return s.error();
    // sun_path holds 107 bytes and a NUL: a longer path would be cut, or refused by bind().
    if (QFile::encodeName(socketPath).size() > 107)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the socket path %1 is %2 bytes, more than a unix socket's 107; set "
                           "XDG_RUNTIME_DIR (or AIRLOCK_SOCKET) to a shorter path")
                .arg(socketPath)
                .arg(QFile::encodeName(socketPath).size()));
    auto socketLock = lockFile(socketPath + QStringLiteral(".lock"), QStringLiteral("serves ") + socketPath);
    if (!socketLock)
        return socketLock.error();
    // Two daemons must never share a data directory: each would take the other's live workspaces
    // for orphans of a crashed predecessor.
    auto dataLock = lockFile(dataDir + QStringLiteral("/daemon.lock"),
        QStringLiteral("uses the data directory %1 (give this daemon its own XDG_DATA_HOME)").arg(dataDir));
    if (!dataLock) {
        ::close(*socketLock);
        return dataLock.error();
    }
    const QString key = QString::fromLatin1(
        QCryptographicHash::hash(QFile::encodeName(QFileInfo(dataDir).absoluteFilePath()), QCryptographicHash::Sha256)
            .toHex()
            .left(12));
    return InstanceLock(*socketLock, *dataLock, key);
}

InstanceLock::InstanceLock(InstanceLock &&other) noexcept
    : m_socketFd(std::exchange(other.m_socketFd, -1))
    , m_dataFd(std::exchange(other.m_dataFd, -1))
    , m_key(std::move(other.m_key))
{
}

InstanceLock::~InstanceLock()
{
    for (int fd : {m_socketFd, m_dataFd})
        if (fd >= 0)
            ::close(fd);
}

} // namespace airlock
