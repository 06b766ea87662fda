// SPDX-License-Identifier: Apache-2.0
#include "review/ApplyChanges.h"

#include "util/Fd.h"
#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::review {

namespace {
using cow::Change;

Error failed(const QString &path, int err, const QString &doing)
{
    const QString why = err == ELOOP ? QStringLiteral("a symbolic link on the way (not followed)")
        : err == EXDEV               ? QStringLiteral("out of the folder or across a mount")
                                     : QString::fromLocal8Bit(strerror(err));
    return makeError(err == ENOENT ? ErrorCode::NotFound : ErrorCode::IoError,
        QStringLiteral("%1: cannot %2: %3").arg(path, doing, why));
}

bool under(const QString &path, const QString &folder)
{
    return path == folder || path.startsWith(folder + QLatin1Char('/'));
}

QString parentOf(const QString &path)
{
    const qsizetype slash = path.lastIndexOf(QLatin1Char('/'));
    return slash < 0 ? QString() : path.left(slash);
}

QByteArray nameOf(const QString &path)
{
    return QFile::encodeName(path.mid(path.lastIndexOf(QLatin1Char('/')) + 1));
}

// The host folder's top and the folder holding `path` in it, opened without following a link.
class HostFolder {
public:
    static Result<HostFolder> open(const QString &dir)
    {
        HostFolder h;
        h.m_top = Fd(::open(QFile::encodeName(dir).constData(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (h.m_top.fd < 0)
            return failed(dir, errno, QStringLiteral("open the folder"));
        return h;
    }
    int top() const { return m_top.fd; }
    // -errno on failure.
    int parent(const QString &path) const
    {
        const QString up = parentOf(path);
        return fs::openBeneath(m_top.fd, up.isEmpty() ? QByteArray(".") : QFile::encodeName(up), O_PATH | O_DIRECTORY);
    }

private:
    Fd m_top;
};

QString kindHere(mode_t mode)
{
    return S_ISREG(mode) ? QStringLiteral("file")
        : S_ISDIR(mode)  ? QStringLiteral("folder")
        : S_ISLNK(mode)  ? QStringLiteral("symbolic link")
                         : QStringLiteral("special file");
}

bool sameKind(Change::Kind kind, mode_t mode)
{
    switch (kind) {
    case Change::Kind::File:
        return S_ISREG(mode);
    case Change::Kind::Directory:
        return S_ISDIR(mode);
    case Change::Kind::Symlink:
        return S_ISLNK(mode);
    case Change::Kind::Other:
        return !S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode);
    }
    return false;
}

qint64 mtimeMs(const struct stat &st)
{
    return qint64(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

Stamp stampOf(const struct stat &st)
{
    return Stamp{
        quint64(st.st_ino), qint64(st.st_size), qint64(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

QString stateFile(const QString &sandboxId, int mount)
{
    return QStringLiteral("%1/review/%2-%3.json").arg(paths::stateDir(), sandboxId).arg(mount);
}

// A name beside `name` for a file written before it is renamed over it.
QByteArray scratchName(const QByteArray &name)
{
    return ".airlock-" + QByteArray::number(QRandomGenerator::system()->generate64(), 36) + '-' + name.left(100);
}

// A link's target (inside the folder by its text) that passes through a link the folder already
// holds, which may lead anywhere (out -> /etc makes out/passwd a way out).
bool throughHostLink(int top, const QString &linkPath, const QByteArray &target)
{
    if (target.startsWith('/'))
        return false; // leavesFolder says so
    const QString joined = QDir::cleanPath(parentOf(linkPath) + QLatin1Char('/') + QFile::decodeName(target));
    const QString folder = parentOf(joined.startsWith(QLatin1Char('/')) ? joined.mid(1) : joined);
    if (folder.isEmpty() || folder == QLatin1String("."))
        return false;
    Fd opened(fs::openBeneath(top, QFile::encodeName(folder), O_PATH | O_DIRECTORY));
    return opened.fd == -ELOOP || opened.fd == -EXDEV;
}

// This process's umask, read without setting it (umask(2) would change it for every thread).
mode_t currentUmask()
{
    QFile status(QStringLiteral("/proc/self/status"));
    if (status.open(QIODevice::ReadOnly))
        for (const QByteArray &line : status.readAll().split('\n'))
            if (line.startsWith("Umask:"))
                return mode_t(line.mid(6).trimmed().toUInt(nullptr, 8));
    return 022;
}

// The permissions a file gets here, as the diff shows them (git's: executable or not): a new one
// this process's umask's, a changed one its own; either executable if the view's is.
mode_t modeHere(int parent, const Change &c)
{
    struct stat st { };
    mode_t mode = 0666 & ~currentUmask();
    if (c.status == Change::Status::Modified
        && ::fstatat(parent, nameOf(c.path).constData(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & 0777;
    const bool executable = c.mode & 0111;
    if (executable && !(mode & 0111))
        mode |= (mode & 0444) >> 2;
    if (!executable)
        mode &= ~mode_t(0111);
    return mode;
}

Error changedSinceReviewed(const QString &path)
{
    return makeError(ErrorCode::Conflict,
        QStringLiteral("%1: changed in the sandbox after you reviewed it (nothing of it applied): review it again "
                       "(agent diff)")
            .arg(path));
}

// Writes what the view holds at `c.path` beside it and renames it over it: only bytes that are
// what a diff showed, when one did.
Status writeFile(int parent, const Change &c, const ReadView &read, const Digests &reviewed)
{
    const mode_t mode = modeHere(parent, c);
    QCryptographicHash digest(QCryptographicHash::Sha256);
    const QByteArray name = nameOf(c.path), scratch = scratchName(name);
    Fd out(fs::openBeneath(parent, scratch, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
    if (out.fd < 0)
        return failed(c.path, -out.fd, QStringLiteral("write it"));
    const auto drop = [&] { ::unlinkat(parent, scratch.constData(), 0); };
    for (qint64 offset = 0;;) {
        auto chunk = read(c.path, offset);
        if (!chunk) {
            drop();
            return chunk.error();
        }
        if (chunk->link) {
            drop();
            return makeError(ErrorCode::Conflict,
                QStringLiteral("%1: the sandbox made it a symbolic link since it was listed: list it again")
                    .arg(c.path));
        }
        digest.addData(chunk->data);
        for (qsizetype done = 0; done < chunk->data.size();) {
            const ssize_t n = ::write(out.fd, chunk->data.constData() + done, size_t(chunk->data.size() - done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                const int err = errno;
                drop();
                return failed(c.path, err, QStringLiteral("write it"));
            }
            done += n;
        }
        offset += chunk->data.size();
        if (chunk->end || chunk->data.isEmpty())
            break;
    }
    if (reviewed.contains(c.path) && reviewed.value(c.path) != digest.result().toHex()) {
        drop();
        return changedSinceReviewed(c.path);
    }
    if (::fchmod(out.fd, mode) != 0 || ::fsync(out.fd) != 0
        || ::renameat(parent, scratch.constData(), parent, name.constData()) != 0) {
        const int err = errno;
        drop();
        return failed(c.path, err, QStringLiteral("put it in place"));
    }
    return Ok{};
}

// A folder's permissions become the view's; a file's only gain or lose being executable.
Status setMode(int parent, const Change &c)
{
    const bool folder = c.kind == Change::Kind::Directory;
    const mode_t mode = folder ? c.mode & 0777 : modeHere(parent, c);
    Fd fd(fs::openBeneath(
        parent, nameOf(c.path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | (folder ? O_DIRECTORY : 0)));
    if (fd.fd < 0)
        return failed(c.path, -fd.fd, QStringLiteral("change its permissions"));
    if (::fchmod(fd.fd, mode) != 0)
        return failed(c.path, errno, QStringLiteral("change its permissions"));
    return Ok{};
}
} // namespace

Result<QList<Change>> selectChanges(const QList<Change> &all, const QStringList &paths)
{
    if (paths.isEmpty())
        return all;
    QSet<QString> wanted;
    for (QString p : paths) {
        while (p.endsWith(QLatin1Char('/')) && p.size() > 1)
            p.chop(1);
        if (p.startsWith(QLatin1String("./")))
            p = p.mid(2);
        bool any = false;
        for (const Change &c : all)
            if (under(c.path, p)) {
                wanted.insert(c.path);
                any = true;
            }
        if (!any)
            return makeError(ErrorCode::NotFound,
                QStringLiteral("%1: the sandbox changed nothing there (agent diff lists what it changed)").arg(p));
    }
    // A new folder a chosen path is in comes with it.
    for (const Change &c : all)
        if (c.kind == Change::Kind::Directory && c.status == Change::Status::Added)
            for (const QString &w : std::as_const(wanted))
                if (w != c.path && under(w, c.path))
                    wanted.insert(c.path);
    QList<Change> chosen;
    for (const Change &c : all)
        if (wanted.contains(c.path))
            chosen.append(c);
    return chosen;
}

QByteArray digestOf(const QByteArray &bytes)
{
    return QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex();
}

QString shapeOf(const Change &c)
{
    return statusName(c.status) + QLatin1Char(' ') + kindName(c.kind)
        + (c.kind == Change::Kind::File && (c.mode & 0111) ? QStringLiteral(" executable") : QString());
}

ReviewState ReviewState::load(const QString &sandboxId, int mount)
{
    ReviewState state;
    QFile file(stateFile(sandboxId, mount));
    if (!file.open(QIODevice::ReadOnly))
        return state;
    const QJsonObject all = QJsonDocument::fromJson(file.read(64 * 1024 * 1024)).object();
    const QJsonObject applied = all.value(QStringLiteral("applied")).toObject();
    for (auto it = applied.begin(); it != applied.end(); ++it) {
        const QJsonArray s = it.value().toArray();
        state.applied.insert(it.key(),
            Stamp{s.at(0).toString().toULongLong(), qint64(s.at(1).toDouble()), s.at(2).toString().toLongLong()});
    }
    const QJsonObject reviewed = all.value(QStringLiteral("reviewed")).toObject();
    for (auto it = reviewed.begin(); it != reviewed.end(); ++it)
        state.reviewed.insert(it.key(), it.value().toString().toLatin1());
    const QJsonObject listed = all.value(QStringLiteral("listed")).toObject();
    for (auto it = listed.begin(); it != listed.end(); ++it)
        state.listed.insert(it.key(), it.value().toString());
    return state;
}

Status ReviewState::save(const QString &sandboxId, int mount) const
{
    QJsonObject stamps, digests;
    for (auto it = applied.begin(); it != applied.end(); ++it)
        stamps.insert(it.key(), QJsonArray{QString::number(it->inode), double(it->size), QString::number(it->mtimeNs)});
    for (auto it = reviewed.begin(); it != reviewed.end(); ++it)
        digests.insert(it.key(), QString::fromLatin1(it.value()));
    QJsonObject shapes;
    for (auto it = listed.begin(); it != listed.end(); ++it)
        shapes.insert(it.key(), it.value());
    const QJsonObject all{
        {QStringLiteral("applied"), stamps}, {QStringLiteral("reviewed"), digests}, {QStringLiteral("listed"), shapes}};
    return fs::writePrivateFile(stateFile(sandboxId, mount), QJsonDocument(all).toJson(QJsonDocument::Compact));
}

void ReviewState::drop(const QString &sandboxId)
{
    const QDir dir(paths::stateDir() + QStringLiteral("/review"));
    for (const QString &name : dir.entryList({sandboxId + QStringLiteral("-*.json")}, QDir::Files))
        QFile::remove(dir.filePath(name));
}

Result<QList<Conflict>> findConflicts(
    const QString &hostDir, const QList<Change> &changes, qint64 sinceMs, const Stamps &applied)
{
    auto host = HostFolder::open(hostDir);
    if (!host)
        return host.error();
    QList<Conflict> conflicts;
    QSet<QString> deleted; // a path deleted and added again (its kind changed) is checked as deleted
    for (const Change &c : changes) {
        if (c.status == Change::Status::Added && deleted.contains(c.path))
            continue;
        Fd parent(host->parent(c.path));
        struct stat st { };
        const bool here
            = parent.fd >= 0 && ::fstatat(parent.fd, nameOf(c.path).constData(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (parent.fd == -ELOOP) {
            conflicts.append({c.path, QStringLiteral("a symbolic link is on the way to it here")});
            continue;
        }
        if (here && applied.value(c.path) == stampOf(st))
            continue; // as an earlier apply left it
        if (c.status == Change::Status::Added) {
            if (here && !(S_ISDIR(st.st_mode) && c.kind == Change::Kind::Directory))
                conflicts.append({c.path, QStringLiteral("a %1 has been made here since").arg(kindHere(st.st_mode))});
            continue;
        }
        if (c.status == Change::Status::Deleted)
            deleted.insert(c.path);
        if (!here) {
            conflicts.append({c.path, QStringLiteral("deleted here since")});
        } else if (!sameKind(c.kind, st.st_mode)) {
            conflicts.append({c.path, QStringLiteral("a %1 here now").arg(kindHere(st.st_mode))});
        } else if (!S_ISDIR(st.st_mode) && mtimeMs(st) > sinceMs) {
            conflicts.append({c.path,
                QStringLiteral("changed here at %1, after the sandbox was made")
                    .arg(QDateTime::fromMSecsSinceEpoch(mtimeMs(st)).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")))});
        }
    }
    return conflicts;
}

bool leavesFolder(const QString &path, const QByteArray &target)
{
    if (target.isEmpty() || target.startsWith('/'))
        return true;
    int depth = int(path.count(QLatin1Char('/'))); // the folders the link is in, below the top
    bool named = false; // a name seen: a ".." after it may climb out of a link
    for (const QByteArray &name : target.split('/')) {
        if (name == "..") {
            if (named || --depth < 0)
                return true;
        } else if (!name.isEmpty() && name != ".") {
            named = true;
        }
    }
    return false;
}

Result<Applied> applyChanges(const QString &hostDir, const QList<Change> &changes, const ReadView &read,
    const QSet<QString> &named, const Digests &reviewed, Applied *progress)
{
    auto host = HostFolder::open(hostDir);
    if (!host)
        return host.error();
    Applied own;
    Applied &applied = progress ? *progress : own;
    // Deletions, deepest first: what a folder holds goes before the folder.
    QList<Change> deletions;
    for (const Change &c : changes)
        if (c.status == Change::Status::Deleted)
            deletions.append(c);
    std::sort(deletions.begin(), deletions.end(), [](const Change &a, const Change &b) { return a.path > b.path; });
    for (const Change &c : std::as_const(deletions)) {
        Fd parent(host->parent(c.path));
        if (parent.fd < 0)
            return failed(c.path, -parent.fd, QStringLiteral("delete it"));
        if (::unlinkat(parent.fd, nameOf(c.path).constData(), c.kind == Change::Kind::Directory ? AT_REMOVEDIR : 0) != 0
            && errno != ENOENT)
            return failed(c.path, errno,
                errno == ENOTEMPTY ? QStringLiteral("delete it (it holds files made here since)")
                                   : QStringLiteral("delete it"));
        applied.done.append(c.path);
    }
    for (const Change &c : changes) {
        if (c.status == Change::Status::Deleted)
            continue;
        Fd parent(host->parent(c.path));
        if (parent.fd < 0)
            return failed(c.path, -parent.fd, QStringLiteral("reach its folder"));
        if (c.modeOnly || (c.kind == Change::Kind::Directory && c.status == Change::Status::Modified)) {
            if (Status s = setMode(parent.fd, c); !s)
                return s.error();
        } else if (c.kind == Change::Kind::Directory) {
            // A new folder is made as any of this person's (its umask's permissions).
            if (::mkdirat(parent.fd, nameOf(c.path).constData(), 0777) != 0 && errno != EEXIST)
                return failed(c.path, errno, QStringLiteral("make the folder"));
        } else if (c.kind == Change::Kind::File) {
            // Either side too large for a diff to show: the person has not seen the change.
            struct stat here { };
            const bool hostTooLarge = ::fstatat(parent.fd, nameOf(c.path).constData(), &here, AT_SYMLINK_NOFOLLOW) == 0
                && S_ISREG(here.st_mode) && here.st_size > kMaxShownBytes;
            if ((c.size > kMaxShownBytes || hostTooLarge) && !named.contains(c.path)) {
                applied.skipped.append(QStringLiteral("%1: %2 bytes, too large to show in a diff: name it to apply it")
                                           .arg(c.path)
                                           .arg(std::max<qint64>(c.size, hostTooLarge ? here.st_size : 0)));
                continue;
            }
            if (Status s = writeFile(parent.fd, c, read, reviewed); !s)
                return s.error();
        } else if (c.kind == Change::Kind::Symlink) {
            auto target = read(c.path, 0);
            if (!target)
                return target.error();
            if (!target->link)
                return makeError(ErrorCode::Conflict,
                    QStringLiteral("%1: no longer a symbolic link in the sandbox: list it again").arg(c.path));
            if (reviewed.contains(c.path) && reviewed.value(c.path) != digestOf(target->data))
                return changedSinceReviewed(c.path);
            if ((leavesFolder(c.path, target->data) || throughHostLink(host->top(), c.path, target->data))
                && !named.contains(c.path)) {
                applied.skipped.append(
                    QStringLiteral("%1: a symbolic link out of the folder (to %2): name it to apply it")
                        .arg(c.path, QFile::decodeName(target->data)));
                continue;
            }
            const QByteArray scratch = scratchName(nameOf(c.path));
            if (::symlinkat(target->data.constData(), parent.fd, scratch.constData()) != 0
                || ::renameat(parent.fd, scratch.constData(), parent.fd, nameOf(c.path).constData()) != 0) {
                const int err = errno;
                ::unlinkat(parent.fd, scratch.constData(), 0);
                return failed(c.path, err, QStringLiteral("make the link"));
            }
        } else {
            applied.skipped.append(QStringLiteral("%1: not a file, folder or link (left as it is)").arg(c.path));
            continue;
        }
        applied.done.append(c.path);
        struct stat st { };
        if (c.kind != Change::Kind::Directory
            && ::fstatat(parent.fd, nameOf(c.path).constData(), &st, AT_SYMLINK_NOFOLLOW) == 0)
            applied.stamps.insert(c.path, stampOf(st));
    }
    return applied;
}

} // namespace airlock::review
