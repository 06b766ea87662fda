// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock::fs {

// Removes a directory tree without following symlinks, first making directories that a sandbox
// chmod-ed to 000 traversable again. Returns false if anything is left.
bool removeTree(const QString &path);

} // namespace airlock::fs
