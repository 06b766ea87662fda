// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/FileChange.h"
#include "review/ApplyChanges.h"
#include "util/Result.h"

#include <QByteArray>
#include <QString>

namespace airlock {
class DaemonApi;
}

namespace airlock::review {

// What a sandbox's copy-on-write mounts changed, as the daemon lists them (sandbox.changes).
Result<cow::SandboxChanges> fetchChanges(const DaemonApi &api, const QString &sandbox);

// Reads what a mount's view holds through the daemon (sandbox.changes.read), waiting for each part.
ReadView viewReader(const DaemonApi &api, const QString &sandbox, int mount);

// A whole file or link target of the view, up to `max` bytes (past it: an error that says so).
Result<cow::ViewChunk> readWhole(const ReadView &read, const QString &path, qint64 max);

// One change as git shows it (diff --git a/PATH b/PATH, its mode lines, then the hunks of the host's
// file against the view's; "Binary files ... differ" for bytes that are not text; a folder or a file
// too large to show is named), so that `git apply` takes it; a name with a control character, a
// quote or a backslash is quoted as git quotes it. The host's side is read from `hostDir` as it is
// now, with this process's rights, following no link. `shown`, if given, gets the digest of the
// view's side that the diff shows (none for what it does not show).
Result<QByteArray> diffOf(
    const QString &hostDir, const cow::Change &change, const ReadView &read, QByteArray *shown = nullptr);

// A diff made safe for a terminal, line by line as display::escaped shows untrusted text: control
// characters (C0, C1: an escape sequence, a carriage return that draws one line over another) and
// bidi and other format characters (Trojan Source) by code point; tabs and newlines stay.
QByteArray forTerminal(const QByteArray &diff);

} // namespace airlock::review
