// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock::app {

// airlockd --stdio: the far end of an ssh:// connection. Reaches this user's daemon on this host
// (starting it when none answers), then relays the protocol as bytes between stdin/stdout and its
// socket until either side ends. Nothing is parsed here: the daemon checks every frame, and the
// session is whoever ssh let in (this user). Returns the exit code (4: no daemon).
int runStdioBridge(const QString &socketPath);

} // namespace airlock::app
