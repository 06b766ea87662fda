// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonArray>
#include <QString>
#include <QStringList>

namespace airlock {

class WorkspaceFiles;

// What an approval of a command binds: the workspace files it runs or reads as code
// (policy::codeFiles), each as {path, sha256, size, head: its first lines} or {path, problem}
// when it cannot be bound (outside the workspace, not a regular file, larger than 16 MiB).
// Read with WorkspaceFiles (openat2 beneath the workspace, non-blocking, no symlinks out).
QJsonArray bindCode(const WorkspaceFiles &files, const QStringList &argv, const QString &cwd);

// The first bound file whose content is not what was bound (changed, gone, or newly unbindable),
// or an empty string when all are as they were.
QString changedCode(const QJsonArray &bound, const QJsonArray &now);

} // namespace airlock
