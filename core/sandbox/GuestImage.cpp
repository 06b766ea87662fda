// SPDX-License-Identifier: Apache-2.0
#include "sandbox/GuestImage.h"

#include <QFile>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace airlock {

namespace {
// The copy's path, or empty with `why` set.
QString stage(const QString &guestPath, const QString &instanceKey, QString *why, const QString &dir)
{
    const auto fail = [&](const QString &reason) {
        if (why)
            *why = reason;
        return QString();
    };
    struct statvfs fs { };
    if (::statvfs(QFile::encodeName(dir).constData(), &fs) != 0 || (fs.f_flag & ST_NOEXEC))
        return fail(QStringLiteral("%1 is missing or mounted noexec").arg(dir));
    const QString path = dir + QStringLiteral("/.airlock-guest-") + instanceKey;
    const QByteArray native = QFile::encodeName(path);
    // One per daemon instance: what a killed one left goes (only ours: the folder is sticky).
    ::unlink(native.constData());
    const int source = ::open(QFile::encodeName(guestPath).constData(), O_RDONLY | O_CLOEXEC);
    if (source < 0)
        return fail(QStringLiteral("cannot read %1: %2").arg(guestPath, QString::fromLocal8Bit(strerror(errno))));
    struct stat st { };
    const int copy = ::open(native.constData(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
    if (copy < 0 || ::fstat(source, &st) != 0) {
        const QString reason
            = QStringLiteral("cannot create %1: %2").arg(path, QString::fromLocal8Bit(strerror(errno)));
        ::close(source);
        if (copy >= 0)
            ::close(copy);
        return fail(reason);
    }
    off_t offset = 0;
    while (offset<st.st_size && ::sendfile(copy, source, &offset, size_t(st.st_size - offset))> 0) { }
    const bool whole = offset == st.st_size && ::fchmod(copy, 0555) == 0;
    ::close(source);
    ::close(copy);
    if (!whole) {
        ::unlink(native.constData());
        return fail(QStringLiteral("cannot copy the guest to %1 (is it full?)").arg(path));
    }
    return path;
}
} // namespace

GuestImage::GuestImage(const QString &guestPath, const QString &instanceKey, QString *why, const QString &dir)
    : m_path(stage(guestPath, instanceKey, why, dir))
{
}

GuestImage::~GuestImage()
{
    if (!m_path.isEmpty())
        ::unlink(QFile::encodeName(m_path).constData());
}

} // namespace airlock
