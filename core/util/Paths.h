// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QString>

namespace airlock::paths {

// XDG locations, each with an "airlock" component appended. Created on demand with mode 0700.
// $XDG_RUNTIME_DIR/airlock, else /run/user/<uid>/airlock when that is this user's, else
// stateDir()/run: never a shared folder another user could make the name in first.
QString runtimeDir();
QString stateDir(); // $XDG_STATE_HOME/airlock, else ~/.local/state/airlock (logs)
QString dataDir(); // $XDG_DATA_HOME/airlock, else ~/.local/share/airlock (workspaces)
QString configDir(); // $XDG_CONFIG_HOME/airlock, else ~/.config/airlock (user policy defaults); not created
QString defaultSocketPath(); // $AIRLOCK_SOCKET, else runtimeDir()/airlockd.sock

// Creates a directory (and parents) and forces mode 0700 on the last component. Refused, with
// what is wrong and how to fix it, when it is not a directory or not this user's.
Status ensurePrivateDir(const QString &path);

} // namespace airlock::paths
