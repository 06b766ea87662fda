// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock::paths {

// XDG locations, each with an "airlock" component appended. Created on demand with mode 0700.
QString runtimeDir(); // $XDG_RUNTIME_DIR/airlock, else /tmp/airlock-<uid>
QString stateDir();   // $XDG_STATE_HOME/airlock, else ~/.local/state/airlock (logs)
QString dataDir();    // $XDG_DATA_HOME/airlock, else ~/.local/share/airlock (workspaces)
QString configDir();  // $XDG_CONFIG_HOME/airlock, else ~/.config/airlock (user policy defaults); not created
QString defaultSocketPath(); // $AIRLOCK_SOCKET, else runtimeDir()/airlockd.sock

// Creates a directory (and parents) and forces mode 0700 on the last component.
bool ensurePrivateDir(const QString &path);

} // namespace airlock::paths
