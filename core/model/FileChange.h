// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonObject>
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

    QJsonObject toJson() const;
    // Errors name the field; a path that is absolute, empty or climbs ("..") is refused.
    static Result<Change> fromJson(const QJsonObject &json);
};

QString statusName(Change::Status status);
QString kindName(Change::Kind kind);

// A copy-on-write mount of a sandbox and what its view changed (sandbox.changes).
struct MountChanges {
    int index = 0; // the sandbox's copy-on-write mounts in their order: sandbox.readChange's "mount"
    QString hostPath; // the folder on the daemon's machine
    QString sandboxPath; // where the sandbox sees it
    QList<Change> changes; // in path order

    QJsonObject toJson() const;
    static Result<MountChanges> fromJson(const QJsonObject &json);
};

// What a sandbox's copy-on-write mounts hold that their host folders do not.
struct SandboxChanges {
    QString sandbox; // id
    qint64 createdMs = 0; // when the sandbox was made: a host file changed after it changed under the view
    QList<MountChanges> mounts;

    QJsonObject toJson() const;
    static Result<SandboxChanges> fromJson(const QJsonObject &json);
};

// A part of what a view holds at a changed path (sandbox.readChange).
struct ViewChunk {
    QByteArray data;
    bool end = true; // the file's last bytes
    bool link = false; // `data` is a symbolic link's target
};

// A relative path of a change: '/'-separated names, none empty, "." or "..".
bool isChangePath(const QString &path);

} // namespace airlock::cow
