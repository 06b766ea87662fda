// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QString>

#include <optional>
#include <sys/types.h>

namespace airlock {

// Host-side access to a sandbox's workspace for `cp`. Every path is resolved beneath the workspace
// with openat2(RESOLVE_BENEATH): `..`, absolute paths elsewhere and symlinks that leave the
// workspace are refused with PathEscape; only regular files are read or written.
class WorkspaceFiles {
public:
    WorkspaceFiles(QString workspaceDir, std::optional<uid_t> owner);

    // "/workspace/a/b", "a/b" -> "a/b". Refuses anything else with a message that says why.
    static Result<QString> relativePath(const QString &sandboxPath);

    // Writes data at offset; truncate=true creates or empties the file first. When the path names
    // an existing directory, `fallbackName` is appended (cp's "into this directory").
    // Returns the sandbox path written.
    Result<QString> write(const QString &sandboxPath, const QString &fallbackName, QByteArrayView data,
                          qint64 offset, bool truncate, int mode);

    struct Chunk {
        QByteArray data;
        qint64 size = 0; // whole file
        bool eof = false;
    };
    Result<Chunk> read(const QString &sandboxPath, qint64 offset, qint64 maxBytes) const;

private:
    Result<int> open(const QString &relative, int flags, int mode) const;

    QString m_root;
    std::optional<uid_t> m_owner;
};

} // namespace airlock
