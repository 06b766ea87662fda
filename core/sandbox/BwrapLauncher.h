// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/LaunchRequest.h"
#include "sandbox/SandboxView.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace airlock {

// The bwrap command line for a request and its view (sandboxView()), with the fd numbers the child
// will see. Pure, so tests can read exactly which namespaces and mounts a sandbox gets.
std::vector<std::string> bwrapArguments(
    const LaunchRequest &request, const QList<ViewEntry> &view, const QString &bwrapPath);

// Forks and execs bubblewrap. The child closes every other descriptor, joins the cgroups, drops to
// dropToUid, arranges to die with the daemon (unless it outlives it) and execs bwrap with an
// empty environment.
Result<LaunchedSandbox> launchSandbox(const LaunchRequest &request, const QString &bwrapPath);

} // namespace airlock
