// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/LaunchRequest.h"
#include "sandbox/SandboxView.h"

#include <QJsonObject>

namespace airlock {

// The OCI runtime configuration of a gVisor sandbox (decision 6): the sandbox's view
// (sandboxView()) as mounts under the bundle's empty read-only root, airlock-guest as its process
// in gVisor mode. Files the view makes are the bundle's files/N, in the view's order, but secrets,
// which are stagedDir/N (in memory). Pure, for tests.
QJsonObject gvisorConfig(const LaunchRequest &request, const QList<ViewEntry> &view, const QString &bundleDir,
    const QString &stagedDir = {});

// Writes the bundle into request.runtimeDir and runs `runsc run` with the guest's channel on its
// stdin, rootless, as the sandbox's host uid (a root daemon's) or the daemon's own. The sandbox's
// processes are gVisor's, not the host's: no init pid.
Result<LaunchedSandbox> launchGvisor(const LaunchRequest &request, const QString &runscPath);

// For a daemon that takes over a sandbox launchGvisor started for an earlier one: the socket its
// guest comes back to (the bundle's resume/sock, which the sandbox sees as /.airlock/resume/sock)
// and, for an allowlist, the egress socket, each listening anew in place of the earlier daemon's.
Result<Reattached> reattachGvisor(const LaunchRequest &request);

// The next connection on one of those sockets (non-blocking, -1: none waits) from the runtime's
// uid, which alone can be the sandbox's: what another uid connects is closed unread, and logged
// as a connection to sandbox `id`'s `socketName` socket.
int acceptFromRuntime(int listenFd, uid_t runtimeUid, const QString &id, const char *socketName);

// Removes a folder launchGvisor staged in memory (LaunchedSandbox::stagedDir), or every one a
// daemon left with this prefix (LaunchRequest::memoryDirPrefix). Only real folders of the
// daemon's own uid and the plain files in them: /dev/shm is every local user's, and a link or
// folder planted there under the prefix is left alone, never followed.
void removeStaged(const QString &dir);
void removeStagedLeftovers(const QString &prefix);

} // namespace airlock
