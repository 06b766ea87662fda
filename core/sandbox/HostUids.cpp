// SPDX-License-Identifier: Apache-2.0
#include "sandbox/HostUids.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <optional>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr uid_t kHighestUid = 0x7FFFFFFE; // above 2^31 many tools take ids for negative numbers

QString fix(const HostUidRange &range)
{
    return QStringLiteral(
        "or start airlockd with --sandbox-uids FIRST-LAST (now %1) outside every account and subordinate id range")
        .arg(range.describe());
}

Error taken(const HostUidRange &range, const QString &what, const QString &howToFree)
{
    return makeError(ErrorCode::HostIdsTaken,
        QStringLiteral(
            "the host uids for sandboxes (%1) overlap %2, who could become a sandbox's uid and read or plant files "
            "in its workspace; %3, %4")
            .arg(range.describe(), what, howToFree, fix(range)));
}

// Every line "NAME:FIRST:COUNT" of a subordinate id file that reaches into the range.
Status checkSubordinateFile(const HostUidRange &range, const QString &file, const char *option)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        return Ok{}; // no file, no ranges (shadow's own tools create it with the first one)
    int number = 0;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine(4096).trimmed();
        ++number;
        if (line.isEmpty() || line.startsWith('#'))
            continue;
        const QList<QByteArray> fields = line.split(':');
        bool firstOk = false, countOk = false;
        const qulonglong first = fields.value(1).toULongLong(&firstOk);
        const qulonglong count = fields.value(2).toULongLong(&countOk);
        if (fields.size() != 3 || !firstOk || !countOk || count == 0)
            continue; // what newuidmap would not accept grants nothing
        if (first <= range.last() && first + count - 1 >= range.first) {
            const QString name = QString::fromUtf8(fields.at(0));
            return taken(range,
                QStringLiteral("%1 line %2 (%3), the subordinate range of %4")
                    .arg(file)
                    .arg(number)
                    .arg(QString::fromUtf8(line), name),
                QStringLiteral("give %1 a range outside them (usermod --%2 %3-%4 %1, then --%5 a free one)")
                    .arg(name, QLatin1String(option))
                    .arg(first)
                    .arg(first + count - 1)
                    .arg(QString::fromLatin1(option).replace(QLatin1String("del-"), QLatin1String("add-"))));
        }
    }
    return Ok{};
}
} // namespace

QString HostUidRange::describe() const
{
    return QStringLiteral("%1-%2").arg(first).arg(last());
}

Result<HostUidRange> parseHostUidRange(const QString &text)
{
    const QStringList parts = text.split(QLatin1Char('-'));
    bool firstOk = false, lastOk = false;
    const qulonglong first = parts.value(0).toULongLong(&firstOk);
    const qulonglong last = parts.value(1).toULongLong(&lastOk);
    if (parts.size() != 2 || !firstOk || !lastOk || first > last)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("expected FIRST-LAST, like %1").arg(kDefaultHostUids.describe()));
    if (last - first + 1 < 16)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1 holds fewer than 16 uids").arg(text));
    if (first <= 65534 && last >= 65534)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("%1 holds 65534, the overflow uid (nobody)").arg(text));
    if (first == 0 || last > kHighestUid)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("%1 must lie within 1-%2").arg(text).arg(kHighestUid));
    return HostUidRange{uid_t(first), uid_t(last - first + 1)};
}

Status checkSubordinateIds(const HostUidRange &range, const QString &subuidFile, const QString &subgidFile)
{
    if (Status s = checkSubordinateFile(range, subuidFile, "del-subuids"); !s)
        return s;
    return checkSubordinateFile(range, subgidFile, "del-subgids");
}

Status checkHostUidRange(const HostUidRange &range, const QString &subuidFile, const QString &subgidFile)
{
    if (Status s = checkSubordinateIds(range, subuidFile, subgidFile); !s)
        return s;
    std::optional<Error> found;
    ::setpwent();
    while (const passwd *pw = ::getpwent()) {
        if (range.contains(pw->pw_uid) || range.contains(pw->pw_gid)) {
            found = taken(range,
                QStringLiteral("the account %1 (uid %2, gid %3)")
                    .arg(QString::fromLocal8Bit(pw->pw_name))
                    .arg(pw->pw_uid)
                    .arg(pw->pw_gid),
                QStringLiteral("give %1 ids outside them").arg(QString::fromLocal8Bit(pw->pw_name)));
            break;
        }
    }
    ::endpwent();
    if (found)
        return *found;
    ::setgrent();
    while (const group *gr = ::getgrent()) {
        if (range.contains(gr->gr_gid)) {
            found = taken(range,
                QStringLiteral("the group %1 (gid %2)").arg(QString::fromLocal8Bit(gr->gr_name)).arg(gr->gr_gid),
                QStringLiteral("give %1 a gid outside them").arg(QString::fromLocal8Bit(gr->gr_name)));
            break;
        }
    }
    ::endgrent();
    if (found)
        return *found;
    return Ok{};
}

HostUidClaims::HostUidClaims(HostUidRange range, QString instanceKey, QString dir)
    : m_range(range)
    , m_key(std::move(instanceKey))
    , m_dir(std::move(dir))
{
}

QString HostUidClaims::claimPath(uid_t uid) const
{
    return m_dir + QLatin1Char('/') + QString::number(uid);
}

QByteArray HostUidClaims::claimText(const QString &sandboxId) const
{
    return m_key.toLatin1() + ' ' + sandboxId.toLatin1() + '\n';
}

bool HostUidClaims::ensureDir() const
{
    const QString parent = QFileInfo(m_dir).path();
    for (const QString &dir : {parent, m_dir}) {
        const QByteArray native = QFile::encodeName(dir);
        ::mkdir(native.constData(), 0700);
        struct stat st { };
        // Root's alone: nobody else may make, remove or swap a claim.
        if (::lstat(native.constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()
            || ((st.st_mode & 077) && ::chmod(native.constData(), 0700) != 0))
            return false;
    }
    return true;
}

Result<uid_t> HostUidClaims::claim(const QString &sandboxId)
{
    if (!ensureDir())
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot keep host uid claims in %1 (a folder of root's alone)").arg(m_dir));
    for (uid_t tried = 0; tried < m_range.count; ++tried) {
        const uid_t offset = (m_next + tried) % m_range.count;
        const uid_t uid = m_range.first + offset;
        if (const int err = create(uid, sandboxId); err == 0) {
            m_next = (offset + 1) % m_range.count;
            return uid;
        } else if (err != EEXIST)
            return makeError(ErrorCode::IoError,
                QStringLiteral("cannot claim a host uid in %1: %2").arg(m_dir, QString::fromLocal8Bit(strerror(err))));
    }
    return makeError(ErrorCode::LimitUnsupported,
        QStringLiteral("every host uid of %1 is held by a sandbox (of this or another root daemon); "
                       "remove some, or give airlockd a larger --sandbox-uids range")
            .arg(m_range.describe()));
}

bool HostUidClaims::reclaim(uid_t uid, const QString &sandboxId)
{
    if (!m_range.contains(uid) || !ensureDir())
        return false;
    QFile f(claimPath(uid));
    if (f.open(QIODevice::ReadOnly))
        return f.read(256) == claimText(sandboxId);
    return create(uid, sandboxId) == 0;
}

int HostUidClaims::create(uid_t uid, const QString &sandboxId) const
{
    const QByteArray path = QFile::encodeName(claimPath(uid));
    const int fd = ::open(path.constData(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno;
    const QByteArray text = claimText(sandboxId);
    const bool written = ::write(fd, text.constData(), size_t(text.size())) == text.size();
    const int err = errno;
    ::close(fd);
    if (written)
        return 0;
    ::unlink(path.constData());
    return err ? err : EIO;
}

void HostUidClaims::release(uid_t uid, const QString &sandboxId)
{
    QFile f(claimPath(uid));
    if (f.open(QIODevice::ReadOnly) && f.read(256) == claimText(sandboxId))
        QFile::remove(f.fileName());
}

void HostUidClaims::releaseAllBut(const QSet<QString> &sandboxIds)
{
    const QByteArray mine = m_key.toLatin1() + ' ';
    for (const QString &name : QDir(m_dir).entryList(QDir::Files)) {
        QFile f(m_dir + QLatin1Char('/') + name);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = f.read(256);
        if (text.startsWith(mine) && !sandboxIds.contains(QString::fromLatin1(text.mid(mine.size()).trimmed())))
            QFile::remove(f.fileName());
    }
}

} // namespace airlock
