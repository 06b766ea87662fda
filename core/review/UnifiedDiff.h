// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>

namespace airlock::review {

// The hunks of a unified diff of two texts, as diff -u and git print them ("@@ -a,b +c,d @@",
// then ' ', '-' and '+' lines with `context` unchanged lines around each change; a last line
// without a newline is followed by "\ No newline at end of file"). Empty when they are the same.
// The fewest changed lines (Myers), up to a bound on the work: past it, what differs between the
// common start and end is shown as removed and added whole.
QByteArray unifiedHunks(const QByteArray &before, const QByteArray &after, int context = 3);

// A NUL in the first 8 KiB: shown as "Binary files ... differ", as diff and git do.
bool looksBinary(const QByteArray &bytes);

} // namespace airlock::review
