// SPDX-License-Identifier: Apache-2.0
#include "sandbox/CowChanges.h"

#include "util/Fd.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>

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

constexpr qsizetype kMaxEntries = kMaxReviewed * 10; // read in all, both sides

Error tooMany()
{
    return makeError(ErrorCode::Busy,
        QStringLiteral("more than %1 entries in the sandbox's changes: too many to review one by one (copy what you "
                       "want out with airlockctl cp, or discard them)")
            .arg(kMaxReviewed));
}

// The names in the folder open at `dir`, sorted, or why it cannot be read: no more than `max`
// (a folder of a million hard links is read no further than that).
Result<QList<QByteArray>> entries(int dir, const QByteArray &rel, qsizetype max)
{
    const int own = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
    DIR *d = own < 0 ? nullptr : ::fdopendir(own);
    if (!d) {
        const int err = errno;
        if (own >= 0)
            ::close(own);
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1: %2").arg(QFile::decodeName(rel), QString::fromLocal8Bit(strerror(err))));
    }
    ::rewinddir(d);
    QList<QByteArray> names;
    while (const dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
            if (names.size() >= max) {
                ::closedir(d);
                return tooMany();
            }
            names.append(QByteArray(e->d_name));
        }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

// Two regular files with the same bytes, each opened beneath its folder without following a link
// or waiting (a FIFO swapped in meanwhile is not a regular file, and is not read).
bool sameBytes(int upperDir, int lowerDir, const QByteArray &name)
{
    Fd a(fs::openBeneath(upperDir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    Fd b(fs::openBeneath(lowerDir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
    struct stat sa {
    }, sb{};
    if (a.fd < 0 || b.fd < 0 || ::fstat(a.fd, &sa) != 0 || ::fstat(b.fd, &sb) != 0 || !S_ISREG(sa.st_mode)
        || !S_ISREG(sb.st_mode) || sa.st_size != sb.st_size)
        return false;
    QByteArray x(1 << 16, Qt::Uninitialized), y(1 << 16, Qt::Uninitialized);
    for (off_t at = 0;;) {
        const ssize_t n = ::pread(a.fd, x.data(), size_t(x.size()), at);
        const ssize_t m = ::pread(b.fd, y.data(), size_t(y.size()), at);
        if (n != m || n < 0)
            return false;
        if (n == 0)
            return true;
        if (std::memcmp(x.constData(), y.constData(), size_t(n)) != 0)
            return false;
        at += n;
    }
}

bool sameLink(int upperDir, int lowerDir, const QByteArray &name)
{
    QByteArray a(PATH_MAX, Qt::Uninitialized), b(PATH_MAX, Qt::Uninitialized);
    const ssize_t na = ::readlinkat(upperDir, name.constData(), a.data(), size_t(a.size()));
    const ssize_t nb = ::readlinkat(lowerDir, name.constData(), b.data(), size_t(b.size()));
    return na >= 0 && na == nb && std::memcmp(a.constData(), b.constData(), size_t(na)) == 0;
}

// The walk over the upper layer, one folder at a time from a list (no recursion: a sandbox makes
// the tree as deep as it likes). Every folder is opened again beneath the top by its path, with
// no link on the way, so a folder swapped for a link while it is walked is not followed.
class Walker {
public:
    Walker(int upper, int lower)
        : m_upper(upper)
        , m_lower(lower)
    {
    }
    airlock::Status run();
    QList<Change> changes;

private:
    struct Pending {
        QByteArray rel; // "" for the top, else "a/b"
        bool hidden = false; // opaque, or below one: the host shows only where the upper has a name
        bool added = false; // new in the view: the host's side is not looked at below it
    };
    airlock::Status folder(const Pending &p);
    // What the host has below `rel` (a folder) and the view does not show, but for `shown`.
    void deletedBelow(const QByteArray &rel, const QList<QByteArray> &shown = {});
    void add(const QByteArray &rel, Status status, const struct stat &st, bool modeOnly = false);

    int m_upper, m_lower;
    std::vector<Pending> m_pending;
    qsizetype m_seen = 0;
    bool m_over = false; // a deleted folder held more than the budget
};

QByteArray childOf(const QByteArray &rel, const QByteArray &name)
{
    return rel.isEmpty() ? name : rel + '/' + name;
}

int openFolder(int top, const QByteArray &rel)
{
    return fs::openBeneath(top, rel.isEmpty() ? QByteArray(".") : rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

void Walker::add(const QByteArray &rel, Status status, const struct stat &st, bool modeOnly)
{
    // A name that is not UTF-8 cannot be named back: shown escaped, as something left as it is.
    QString path = QFile::decodeName(rel);
    Kind kind = kindOf(st.st_mode);
    if (QFile::encodeName(path) != rel) {
        path = QString::fromLatin1(rel.toPercentEncoding("/"));
        kind = Kind::Other;
    }
    changes.append(
        {path, status, kind, S_ISREG(st.st_mode) ? qint64(st.st_size) : 0, uint32_t(st.st_mode & 07777), modeOnly});
}

void Walker::deletedBelow(const QByteArray &top, const QList<QByteArray> &shown)
{
    std::vector<QByteArray> folders{top};
    while (!folders.empty()) {
        const QByteArray rel = folders.back();
        folders.pop_back();
        Fd dir(openFolder(m_lower, rel));
        auto names = dir.fd < 0 ? Result<QList<QByteArray>>(QList<QByteArray>{})
                                : entries(dir.fd, rel, std::max<qsizetype>(kMaxEntries - m_seen, 0));
        if (!names) {
            m_over = true; // counted: what is below a deleted folder is read too
            return;
        }
        m_seen += names->size();
        for (const QByteArray &name : *names) {
            if (rel == top && shown.contains(name))
                continue;
            struct stat st { };
            if (::fstatat(dir.fd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (S_ISDIR(st.st_mode))
                folders.push_back(childOf(rel, name));
            add(childOf(rel, name), Status::Deleted, st);
        }
    }
}

airlock::Status Walker::run()
{
    m_pending.push_back({});
    while (!m_pending.empty()) {
        const Pending p = m_pending.back();
        m_pending.pop_back();
        if (airlock::Status s = folder(p); !s)
            return s;
        if (changes.size() > kMaxReviewed || m_seen > kMaxEntries || m_over)
            return tooMany();
    }
    return Ok{};
}

airlock::Status Walker::folder(const Pending &p)
{
    Fd up(openFolder(m_upper, p.rel));
    if (up.fd < 0) {
        if (up.fd == -ENOENT && !p.rel.isEmpty())
            return Ok{}; // gone meanwhile
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1 in the sandbox's changes: %2")
                .arg(p.rel.isEmpty() ? QStringLiteral("the top") : QFile::decodeName(p.rel),
                    QString::fromLocal8Bit(strerror(-up.fd))));
    }
    Fd low(p.added ? -1 : openFolder(m_lower, p.rel)); // none: the host has no folder there (or a link)
    auto names = entries(up.fd, p.rel, kMaxEntries - m_seen);
    if (!names)
        return names.error();
    m_seen += names->size();
    if (p.hidden && low.fd >= 0)
        deletedBelow(p.rel, *names);
    for (const QByteArray &name : std::as_const(*names)) {
        const QByteArray child = childOf(p.rel, name);
        struct stat st {
        }, host{};
        if (::fstatat(up.fd, name.constData(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; // gone meanwhile
        const bool inLower = low.fd >= 0 && ::fstatat(low.fd, name.constData(), &host, AT_SYMLINK_NOFOLLOW) == 0;
        if (isWhiteout(st)) {
            if (inLower) {
                if (S_ISDIR(host.st_mode))
                    deletedBelow(child);
                add(child, Status::Deleted, host);
            }
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (!inLower || !S_ISDIR(host.st_mode)) {
                if (inLower)
                    add(child, Status::Deleted, host);
                add(child, Status::Added, st);
                m_pending.push_back({child, false, true});
                continue;
            }
            Fd opened(fs::openBeneath(up.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
            char opaque[2] = {};
            const bool marked
                = opened.fd >= 0 && ::fgetxattr(opened.fd, "user.overlay.opaque", opaque, 1) == 1 && opaque[0] == 'y';
            // A folder's permissions are not a change (as for git).
            m_pending.push_back({child, p.hidden || marked, false});
            continue;
        }
        if (!inLower) {
            add(child, Status::Added, st);
        } else if (kindOf(st.st_mode) != kindOf(host.st_mode)) {
            if (S_ISDIR(host.st_mode))
                deletedBelow(child);
            add(child, Status::Deleted, host);
            add(child, Status::Added, st);
        } else {
            bool same = false;
            if (S_ISREG(st.st_mode))
                same = st.st_size == host.st_size && sameBytes(up.fd, low.fd, name);
            else if (S_ISLNK(st.st_mode))
                same = sameLink(up.fd, low.fd, name);
            // Permissions as git sees them: a file executable or not (a sandbox's umask is not a change).
            const bool sameMode = !S_ISREG(st.st_mode) || bool(st.st_mode & 0111) == bool(host.st_mode & 0111);
            if (!same || !sameMode)
                add(child, Status::Modified, st, same);
        }
    }
    return Ok{};
}
} // namespace

Result<QList<Change>> listChanges(const QString &upper, const QString &lower)
{
    Fd up(::open(QFile::encodeName(QDir::cleanPath(upper)).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (up.fd < 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1: %2").arg(upper, QString::fromLocal8Bit(strerror(errno))));
    // The host folder as it is now, opened without following a link at its end.
    Fd low(
        ::open(QFile::encodeName(QDir::cleanPath(lower)).constData(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (low.fd < 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot read %1: %2").arg(lower, QString::fromLocal8Bit(strerror(errno))));
    Walker w(up.fd, low.fd);
    if (airlock::Status s = w.run(); !s)
        return s.error();
    std::stable_sort(
        w.changes.begin(), w.changes.end(), [](const Change &a, const Change &b) { return a.path < b.path; });
    return w.changes;
}

QJsonObject changeSummary(const QList<Change> &changes, int maxPaths)
{
    int added = 0, modified = 0, deleted = 0;
    QJsonArray paths;
    for (const Change &c : changes) {
        const char *letter = c.status == Status::Added ? "A" : c.status == Status::Deleted ? "D" : "M";
        (c.status == Status::Added ? added : c.status == Status::Deleted ? deleted : modified) += 1;
        if (paths.size() < maxPaths)
            paths.append(QString(QLatin1String(letter) + QLatin1Char(' ') + c.path));
    }
    return QJsonObject{{QStringLiteral("changes"), int(changes.size())}, {QStringLiteral("added"), added},
        {QStringLiteral("modified"), modified}, {QStringLiteral("deleted"), deleted}, {QStringLiteral("paths"), paths}};
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
