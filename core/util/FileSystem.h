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

// openat2 beneath `dir`: `relative` is resolved inside it without following any symbolic link
// (nor /proc's magic links, nor crossing a mount). The descriptor, or -errno (ELOOP: a link on
// the way; EXDEV: out of `dir`).
int openBeneath(int dir, const QByteArray &relative, int flags, unsigned mode = 0);

} // namespace airlock::fs
