// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/SandboxSpec.h"
#include "util/Result.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace airlock {

struct LaunchRequest {
    QString bwrapPath;
    QString guestPath;
    QString hostname;
    NetworkMode network = NetworkMode::None;
    QString workspaceDir;
    QList<Mount> mounts;
    QStringList hiddenPaths; // inside mounts: covered by an empty read-only tmpfs (airlockd's own directories)
    QList<std::pair<QString, QByteArray>> dataFiles; // read-only files made from memory (granted secrets)
    QByteArray seccompProgram;
    QStringList cgroupProcsFiles;
    // When set, the child waits before exec until this has placed it (a systemd scope); failing, it
    // is killed and the launch fails with this error.
    std::function<Status(pid_t)> placeChild;
    std::optional<uid_t> dropToUid; // set when the daemon runs as root: bwrap runs as this host uid
    std::optional<uint64_t> nproc; // RLIMIT_NPROC for the guest and everything below it
    std::optional<uint64_t> tmpBytes; // size of each writable tmpfs (/tmp, /var/tmp, the home)
    bool verboseGuest = false;
    // A sandbox that outlives the daemon: the guest listens here (a bound, listening socket the
    // launcher does not own) for a later daemon, which proves itself with the token. Without it,
    // bwrap and everything in the sandbox die with the daemon.
    int resumeListenFd = -1;
    QByteArray resumeToken;
    bool outlivesDaemon() const { return resumeListenFd >= 0; }
};

struct LaunchedSandbox {
    pid_t pid = -1; // the bwrap process
    int pidfd = -1; // readable when it exits
    int channelFd = -1; // daemon end of the guest socket
    int stderrFd = -1; // bwrap's and the guest's stderr
    int infoFd = -1; // bwrap's --info-fd: JSON with the host pid of the sandbox's init
    int proxyFd = -1; // allowlist: the guest sends each egress connection's socket here
    int execCheckFd = -1; // the guest sends each judged execution's exec-check listener here
};

// The bwrap command line for a request, with the fd numbers the child will see. Pure, so tests can
// read exactly which namespaces and mounts a sandbox gets.
std::vector<std::string> bwrapArguments(const LaunchRequest &request);

// Forks and execs bubblewrap. The child closes every other descriptor, joins the cgroups, drops to
// dropToUid, arranges to die with the daemon (unless it outlives it) and execs bwrap with an
// empty environment.
Result<LaunchedSandbox> launchSandbox(const LaunchRequest &request);

} // namespace airlock
