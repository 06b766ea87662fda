// SPDX-License-Identifier: Apache-2.0
#include "sandbox/CowChanges.h"

#include <QDir>
#include <QFile>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace airlock::cow {

namespace {
using Kind = Change::Kind;
using Status = Change::Status;

Kind kindOf(mode_t mode)
{
    return S_ISREG(mode) ? Kind::File : S_ISDIR(mode) ? Kind::Directory : S_ISLNK(mode) ? Kind::Symlink : Kind::Other;
}

bool isWhiteout(const struct stat &st)
{
    return S_ISCHR(st.st_mode) && st.st_rdev == 0;
}

// The names in a folder, sorted, or why it cannot be read.
Result<QList<QByteArray>> entries(const QByteArray &dir)
{
    DIR *d = ::opendir(dir.constData());
    if (!d)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1: %2").arg(QFile::decodeName(dir), QString::fromLocal8Bit(strerror(errno))));
    QList<QByteArray> names;
    while (const dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.append(QByteArray(e->d_name));
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

// Two regular files with the same bytes.
bool sameBytes(const QByteArray &a, const QByteArray &b)
{
    QFile fa(QFile::decodeName(a)), fb(QFile::decodeName(b));
    if (!fa.open(QIODevice::ReadOnly) || !fb.open(QIODevice::ReadOnly) || fa.size() != fb.size())
        return false;
    while (!fa.atEnd()) {
        if (fa.read(1 << 16) != fb.read(1 << 16))
            return false;
    }
    return true;
}

class Walker {
public:
    Walker(QByteArray upper, QByteArray lower)
        : m_upper(std::move(upper))
        , m_lower(std::move(lower))
    {
    }
    // `hidden`: the folder is opaque, or below one: what the host has there shows only where the
    // upper layer has the same name.
    void walk(const QByteArray &rel, bool hidden);
    QList<Change> changes;
    std::optional<Error> error; // the first folder of the upper layer that could not be read

    // What the host has below `rel` and the view does not show (deleted, or hidden by an opaque
    // folder), but for the names in `shown`.
    void deletedBelow(const QByteArray &rel, const QList<QByteArray> &shown = {})
    {
        auto names = entries(lowerOf(rel));
        if (!names)
            return;
        for (const QByteArray &name : *names) {
            if (shown.contains(name))
                continue;
            const QByteArray child = rel + '/' + name;
            struct stat st { };
            if (::lstat(lowerOf(child).constData(), &st) != 0)
                continue;
            if (S_ISDIR(st.st_mode))
                deletedBelow(child);
            add(child, Status::Deleted, st);
        }
    }

    void add(const QByteArray &rel, Status status, const struct stat &st, bool modeOnly = false)
    {
        changes.append({QFile::decodeName(rel.startsWith('/') ? rel.mid(1) : rel), status, kindOf(st.st_mode),
            S_ISREG(st.st_mode) ? qint64(st.st_size) : 0, uint32_t(st.st_mode & 07777), modeOnly});
    }

    QByteArray upperOf(const QByteArray &rel) const { return m_upper + rel; }
    QByteArray lowerOf(const QByteArray &rel) const { return m_lower + rel; }

    const QByteArray m_upper, m_lower;
};

// One folder of the upper layer: `rel` is "" for the top, else "/a/b".
void Walker::walk(const QByteArray &rel, bool hidden)
{
    auto names = entries(upperOf(rel));
    if (!names) {
        error = names.error();
        return;
    }
    if (hidden)
        deletedBelow(rel, *names);
    for (const QByteArray &name : *names) {
        const QByteArray child = rel + '/' + name;
        struct stat up {
        }, low{};
        if (::lstat(upperOf(child).constData(), &up) != 0)
            continue; // gone meanwhile
        const bool inLower = ::lstat(lowerOf(child).constData(), &low) == 0;
        if (isWhiteout(up)) {
            if (inLower) {
                if (S_ISDIR(low.st_mode))
                    deletedBelow(child);
                add(child, Status::Deleted, low);
            }
            continue;
        }
        if (S_ISDIR(up.st_mode)) {
            char opaque[2] = {};
            const bool marked
                = ::lgetxattr(upperOf(child).constData(), "user.overlay.opaque", opaque, 1) == 1 && opaque[0] == 'y';
            if (!inLower || !S_ISDIR(low.st_mode)) {
                if (inLower)
                    add(child, Status::Deleted, low);
                add(child, Status::Added, up);
                walk(child, false);
                continue;
            }
            if ((up.st_mode & 07777) != (low.st_mode & 07777))
                add(child, Status::Modified, up, true);
            walk(child, hidden || marked);
            continue;
        }
        if (!inLower) {
            add(child, Status::Added, up);
        } else if (kindOf(up.st_mode) != kindOf(low.st_mode)) {
            if (S_ISDIR(low.st_mode))
                deletedBelow(child);
            add(child, Status::Deleted, low);
            add(child, Status::Added, up);
        } else {
            bool same = false;
            if (S_ISREG(up.st_mode))
                same = up.st_size == low.st_size && sameBytes(upperOf(child), lowerOf(child));
            else if (S_ISLNK(up.st_mode)) {
                char a[PATH_MAX], b[PATH_MAX];
                const ssize_t na = ::readlink(upperOf(child).constData(), a, sizeof a);
                const ssize_t nb = ::readlink(lowerOf(child).constData(), b, sizeof b);
                same = na >= 0 && na == nb && std::memcmp(a, b, size_t(na)) == 0;
            }
            const bool sameMode = (up.st_mode & 07777) == (low.st_mode & 07777);
            if (!same || !sameMode)
                add(child, Status::Modified, up, same);
        }
    }
}
} // namespace

QString statusName(Change::Status status)
{
    switch (status) {
    case Change::Status::Added:
        return QStringLiteral("added");
    case Change::Status::Modified:
        return QStringLiteral("modified");
    case Change::Status::Deleted:
        return QStringLiteral("deleted");
    }
    return {};
}

Result<QList<Change>> listChanges(const QString &upper, const QString &lower)
{
    Walker w(QFile::encodeName(QDir::cleanPath(upper)), QFile::encodeName(QDir::cleanPath(lower)));
    w.walk(QByteArray(), false);
    if (w.error)
        return *w.error;
    std::stable_sort(
        w.changes.begin(), w.changes.end(), [](const Change &a, const Change &b) { return a.path < b.path; });
    return w.changes;
}

} // namespace airlock::cow
