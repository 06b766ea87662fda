// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/FileChange.h"
#include "util/Result.h"

#include <QHash>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>

#include <functional>

namespace airlock::review {

inline constexpr qint64 kMaxShownBytes = 16 * 1024 * 1024; // a diff names a larger side, without showing it

// What the sandbox's view holds at a changed path, a part at a time from `offset` (the daemon's
// sandbox.readChange).
using ReadView = std::function<Result<cow::ViewChunk>(const QString &path, qint64 offset)>;

// The changes `paths` name (relative to the folder's top): a folder names everything below it,
// and a path in a new folder brings the new folders above it. Every path must name a change.
Result<QList<cow::Change>> selectChanges(const QList<cow::Change> &all, const QStringList &paths);

// A change the host's folder also saw after the sandbox was made: applying it would lose what
// was done here.
struct Conflict {
    QString path;
    QString why;
};
// A host file as an apply left it (its inode, size and modification time): while it stays so, it
// changed here only by being applied.
struct Stamp {
    quint64 inode = 0;
    qint64 size = 0;
    qint64 mtimeNs = 0;
    friend bool operator==(const Stamp &, const Stamp &) = default;
};
using Stamps = QHash<QString, Stamp>; // by path relative to the folder's top
// Those of `changes` that meet a change made to `hostDir` after `sinceMs` (a file modified or
// deleted by the sandbox that changed here since, a file it added where one has been made here),
// but for files still as an earlier apply left them (`applied`). A modification time set back
// (tar x, rsync -t) hides a change from this check.
Result<QList<Conflict>> findConflicts(
    const QString &hostDir, const QList<cow::Change> &changes, qint64 sinceMs, const Stamps &applied = {});

// What a sandbox's view holds at a path as a person saw it: sha256 of a file's bytes or a link's
// target. An apply writes a path only as it was reviewed (when it was).
using Digests = QHash<QString, QByteArray>;
QByteArray digestOf(const QByteArray &bytes);
// A change as a list shows it: its status, kind and (a file) whether it is executable.
QString shapeOf(const cow::Change &change);

// What this person's review of one sandbox's folder keeps between commands (agent diff, agent
// apply), in their state folder (paths::stateDir()/review/SANDBOX-ID-MOUNT.json) until the
// sandbox is discarded: the files its applies wrote, and what its diffs showed.
struct ReviewState {
    Stamps applied;
    Digests reviewed;
    // What the person's last look listed: every change's shape (shapeOf) by path. Once there is
    // one, an apply writes only changes still of the shape listed.
    QHash<QString, QString> listed;
    static ReviewState load(const QString &sandboxId, int mount);
    Status save(const QString &sandboxId, int mount) const;
    static void drop(const QString &sandboxId);
};

// A symbolic link at `path` (relative to a folder's top) whose target leads out of that folder, or
// may: absolute, climbing above the top, or climbing after a name (which may be a link itself).
bool leavesFolder(const QString &path, const QByteArray &target);

struct Applied {
    QStringList done; // the paths applied, in the order they were
    QStringList skipped; // "PATH: why", left as they are on the host
    Stamps stamps; // the files and links written, as they were left
};
// Makes `hostDir` hold what the view holds at each of `changes`, with this process's rights:
// deletions first (deepest first), then folders, files (written beside and renamed over: a reader
// sees the old file or the new), links and permissions, in path order. Nothing on the host side is
// followed through a symbolic link. Permissions are as the diff shows them: a new file or folder
// gets this process's umask's, a file gains or loses only being executable, a folder whose
// permissions the view changed gets the view's (never set-id or sticky bits). What a diff could
// not show is applied only if `named` holds its path (else skipped and said): a link that leads out
// of the folder, a file too large to show. A file or link whose view is no longer what `reviewed`
// says a diff showed is refused (conflict). Stops at the first error, which names the path; what
// was applied before it stays applied (and is in `applied`).
Result<Applied> applyChanges(const QString &hostDir, const QList<cow::Change> &changes, const ReadView &read,
    const QSet<QString> &named = {}, const Digests &reviewed = {}, Applied *applied = nullptr);

} // namespace airlock::review
