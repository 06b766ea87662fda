// SPDX-License-Identifier: Apache-2.0
#include "sandbox/CowChanges.h"

#include "util/Fd.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>

#include <algorithm>
#include <cerrno>
#include <climits>
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
    // `added`: the folder is new in the view (the host has none there, or something else, perhaps a
    // link): everything below is added, and the host's side is not looked at.
    void walk(const QByteArray &rel, bool hidden, bool added = false);
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
void Walker::walk(const QByteArray &rel, bool hidden, bool added)
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
        const bool inLower = !added && ::lstat(lowerOf(child).constData(), &low) == 0;
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
                walk(child, false, true);
                continue;
            }
            walk(child, hidden || marked); // a folder's permissions are not a change (as for git)
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
            // Permissions as git sees them: a file executable or not (a sandbox's umask is not a change).
            const bool sameMode = !S_ISREG(up.st_mode) || bool(up.st_mode & 0111) == bool(low.st_mode & 0111);
            if (!same || !sameMode)
                add(child, Status::Modified, up, same);
        }
    }
}
} // namespace

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

Result<ViewChunk> readView(const QString &upper, const QString &path, qint64 offset, qint64 max)
{
    if (!isChangePath(path) || offset < 0 || max <= 0)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("expected a relative path without '.' or '..' and a place in it, not '%1'").arg(path));
    const auto failed = [&](int err) {
        return makeError(err == ENOENT ? ErrorCode::NotFound : ErrorCode::IoError,
            QStringLiteral("%1 in the sandbox's view: %2").arg(path, QString::fromLocal8Bit(strerror(err))));
    };
    Fd top(::open(QFile::encodeName(upper).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (top.fd < 0)
        return failed(errno);
    // Every name resolved beneath the top, none a link; a last name that is one is read as a link.
    // O_NONBLOCK: a FIFO the sandbox made opens without waiting for a writer (and is refused).
    const QByteArray rel = QFile::encodeName(path);
    Fd file(fs::openBeneath(top.fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    if (file.fd == -ELOOP) {
        const int slash = int(rel.lastIndexOf('/'));
        Fd folder(fs::openBeneath(top.fd, slash < 0 ? QByteArray(".") : rel.left(slash), O_PATH | O_DIRECTORY));
        if (folder.fd < 0)
            return failed(-folder.fd);
        char target[PATH_MAX];
        const ssize_t n = ::readlinkat(folder.fd, rel.mid(slash + 1).constData(), target, sizeof target);
        if (n < 0)
            return failed(errno == EINVAL ? ELOOP : errno);
        return ViewChunk{QByteArray(target, int(n)), true, true};
    }
    if (file.fd < 0)
        return failed(-file.fd);
    struct stat st { };
    if (::fstat(file.fd, &st) != 0)
        return failed(errno);
    if (!S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1 in the sandbox's view is not a file or a symbolic link").arg(path));
    ViewChunk chunk;
    chunk.data.resize(qsizetype(std::min<qint64>(max, std::max<qint64>(st.st_size - offset, 0))));
    const ssize_t n = chunk.data.isEmpty() ? 0 : ::pread(file.fd, chunk.data.data(), size_t(chunk.data.size()), offset);
    if (n < 0)
        return failed(errno);
    chunk.data.truncate(qsizetype(n));
    chunk.end = offset + n >= st.st_size;
    return chunk;
}

} // namespace airlock::cow
