// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QString>

namespace airlock::fs {

// Removes a directory tree without following symlinks, first making directories that a sandbox
// chmod-ed to 000 traversable again. Returns false if anything is left.
bool removeTree(const QString &path);

// Replaces a file of this user's alone (0600) all at once: readers see the old contents or the
// new, never a part. The directory is made if missing.
Status writePrivateFile(const QString &path, const QByteArray &data);

} // namespace airlock::fs
