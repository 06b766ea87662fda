// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/FileChange.h"
#include "util/Result.h"

#include <QList>
#include <QString>

#include <cstdint>

namespace airlock::cow {

// What the overlay's upper folder holds over the host folder `lower`, in path order: new and
// changed files (a file copied up with the same bytes is no change; permissions count as git counts
// them: a file that became executable or stopped being one, never a folder's), what was deleted
// (a whiteout: a character device 0/0; a folder marked opaque hides all the host had below it),
// folders made. Reads only what changed and the host's entries of the same names; symbolic links
// are never followed (nor is the host's side looked at below a folder the view made where the host
// has none, or has a link). Every folder is opened beneath its top by descriptor, with no link on
// the way, and walked from a list rather than by recursion (the sandbox decides how deep it is); a
// file is compared only if both sides are regular files (a FIFO is never opened to wait). A name
// that is not UTF-8 is listed percent-encoded, as Other (left as it is). Errors name the path that
// could not be read; more than kMaxReviewed changes (or ten times as many entries) is an error
// that says so (busy).
inline constexpr qsizetype kMaxReviewed = 20000; // about 2 MB of JSON: a reply stays under 4 MiB
Result<QList<Change>> listChanges(const QString &upper, const QString &lower);

// A listing as the history keeps it (files.changed): how many changes of each status, and the
// first `maxPaths` as "M path", "A path", "D path".
QJsonObject changeSummary(const QList<Change> &changes, int maxPaths = 50);

// A part of what the view holds at `path` (a changed file or link, relative to the upper folder):
// up to `max` bytes of a regular file from `offset`, or a symbolic link's target. Opened beneath
// `upper` without following any symbolic link on the way; anything else is refused by name.
Result<ViewChunk> readView(const QString &upper, const QString &path, qint64 offset, qint64 max);

} // namespace airlock::cow
