// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QList>
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
    Result<QString> write(const QString &sandboxPath, const QString &fallbackName, QByteArrayView data, qint64 offset,
        bool truncate, int mode);

    struct Chunk {
        QByteArray data;
        qint64 size = 0; // whole file
        bool eof = false;
    };
    Result<Chunk> read(const QString &sandboxPath, qint64 offset, qint64 maxBytes) const;

    // A file opened for a streamed copy (the caller closes fd).
    struct OpenFile {
        int fd = -1;
        QString path; // the sandbox path, /workspace/...
        qint64 size = 0;
        int mode = 0; // permission bits
    };
    // Created with `mode` (permission bits only), or emptied (keeping its own mode).
    Result<OpenFile> openForWrite(const QString &sandboxPath, const QString &fallbackName, int mode);
    Result<OpenFile> openForRead(const QString &sandboxPath) const;
    // A directory (its parent must exist) with `mode`; one that exists already is fine, and keeps
    // its own (*existed says which). Its sandbox path.
    Result<QString> makeDirectory(const QString &sandboxPath, int mode, bool *existed);

    // What a directory holds, all the way down (never through a symbolic link), parents before
    // what they hold; at most maxEntries whose paths take maxPathBytes together, else an error that
    // says so (before more is held). A regular file: itself, as
    // one entry with an empty path.
    struct Entry {
        QString path; // relative to the directory listed
        enum class Type { File, Directory, Link, Other } type = Type::Other;
        qint64 size = 0;
        int mode = 0;
    };
    Result<QList<Entry>> list(const QString &sandboxPath, int maxEntries, qint64 maxPathBytes) const;

private:
    Result<int> open(const QString &relative, int flags, int mode) const;
    int openAt(const QString &relative, int flags, int mode) const; // a descriptor, or -errno
    Result<OpenFile> openWritable(
        const QString &sandboxPath, const QString &fallbackName, int mode, bool truncate, bool setMode);

    QString m_root;
    std::optional<uid_t> m_owner;
};

} // namespace airlock
