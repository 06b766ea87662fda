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

Result<InstanceLock> InstanceLock::acquire(const QString &socketPath)
{
    const QString dir = QFileInfo(socketPath).absolutePath();
    if (!paths::ensurePrivateDir(dir))
        return makeError(ErrorCode::IoError,
                         QStringLiteral("cannot create the private directory %1 (must be owned by you, mode 0700)").arg(dir));
    const QByteArray lockPath = QFile::encodeName(socketPath + QStringLiteral(".lock"));
    const int fd = ::open(lockPath.constData(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot open %1").arg(QString::fromLocal8Bit(lockPath)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {};
        (void)!::pread(fd, pid, sizeof pid - 1, 0);
        ::close(fd);
        return makeError(ErrorCode::DaemonRunning,
                         QStringLiteral("another airlockd (pid %1) already serves %2").arg(QString::fromLatin1(pid).trimmed(), socketPath));
    }
    const QByteArray pid = QByteArray::number(::getpid()) + '\n';
    (void)!::ftruncate(fd, 0);
    (void)!::pwrite(fd, pid.constData(), size_t(pid.size()), 0);
    const QString key = QString::fromLatin1(
        QCryptographicHash::hash(QFile::encodeName(QFileInfo(socketPath).absoluteFilePath()), QCryptographicHash::Sha256)
            .toHex()
            .left(12));
    return InstanceLock(fd, key);
}

InstanceLock::InstanceLock(InstanceLock &&other) noexcept : m_fd(std::exchange(other.m_fd, -1)), m_key(std::move(other.m_key)) {}

InstanceLock::~InstanceLock()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

} // namespace airlock
