// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/LaunchRequest.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

namespace airlock {

// What a sandbox sees of the host, whatever runtime holds it (decision 6): one list, in mount
// order, that bubblewrap's arguments and gVisor's OCI mounts are both made from, so the two views
// cannot drift apart.
struct ViewEntry {
    enum class Kind {
        Bind, // the host path `source` at `target`, read-only unless `writable`
        Symlink, // `target` links to `source`
        Dir, // an empty directory in the sandbox's own root
        Tmpfs, // a writable tmpfs, sized by the request's tmpBytes
        Empty, // an empty read-only directory (mode 0555): a mask, a startup directory, a hidden path
        File, // a read-only file holding `data`, with mode `perms`
        Proc,
        Dev,
    };
    Kind kind = Kind::Bind;
    QString target;
    QString source;
    bool writable = false;
    bool opened = false; // Bind: the daemon opens the source itself (bubblewrap gets a descriptor)
    // Bind: the source was checked as it is, with no symbolic link in it (a person's mount, made
    // canonical when it was checked): one that is there when it is opened was put there since.
    bool noSymlinks = false;
    bool mask = false; // Bind: /dev/null over a host file that stays hidden
    // Bind: the source is the lower folder of an overlay the runtime's top process mounts (the
    // changes kept in the runtime's folder, decision 9); bubblewrap gets the overlay's descriptor.
    bool copyOnWrite = false;
    int perms = 0;
    QByteArray data;
    bool secret = false; // File: a granted secret, which must never be written to a disk
};

inline constexpr int kSandboxUid = 1000;

QList<ViewEntry> sandboxView(const LaunchRequest &request);

// The folders the guest lets commands write in (its --rw arguments).
QStringList writablePaths(const LaunchRequest &request);

// The sandbox's own account databases: its user, root and the overflow ids, nobody else.
QByteArray identityFile(const QString &path);

} // namespace airlock
