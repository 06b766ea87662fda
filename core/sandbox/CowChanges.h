// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QList>
#include <QString>

#include <cstdint>

namespace airlock::cow {

// One change a sandbox made to a copy-on-write mount's view (decision 9), as a person reviews it.
struct Change {
    enum class Status { Added, Modified, Deleted };
    enum class Kind { File, Directory, Symlink, Other };
    QString path; // relative to the mount's top, '/'-separated
    Status status = Status::Added;
    Kind kind = Kind::File;
    qint64 size = 0; // the view's (a deletion: the host's)
    uint32_t mode = 0; // permission bits, the view's (a deletion: the host's)
    bool modeOnly = false; // Modified: the same bytes, other permissions
    friend bool operator==(const Change &, const Change &) = default;
};

QString statusName(Change::Status status);

// What the overlay's upper folder holds over the host folder `lower`, in path order: new and
// changed files (a file copied up with the same bytes and mode is no change), what was deleted
// (a whiteout: a character device 0/0; a folder marked opaque hides all the host had below it),
// folders made. Reads only what changed and the host's entries of the same names; symbolic links
// are never followed. Errors name the path that could not be read.
Result<QList<Change>> listChanges(const QString &upper, const QString &lower);

} // namespace airlock::cow
