// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/SandboxSpec.h"
#include "util/Result.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>
#include <sys/types.h>
#include <utility>

namespace airlock {

// Where a sandbox with a brokered credential finds its own authority's certificate, and the
// host's trust bundle with it added.
inline constexpr char kTrustAuthorityPath[] = "/.airlock/trust/authority.pem";
inline constexpr char kTrustBundlePath[] = "/.airlock/trust/bundle.pem";

// Everything a runtime needs to start a sandbox, decided by the engine before it starts: the
// view it gives (workspace, mounts, masks, files), its limits and its hand-overs.
struct LaunchRequest {
    QString id; // the sandbox's id, unique on this host
    QString runtimeDir; // the runtime's own folder for this sandbox (gVisor: its OCI bundle)
    // gVisor: where files that must never reach a disk (granted secrets) wait, in memory, until
    // the sandbox has started: a folder PREFIX<id>-XXXXXX is made (see LaunchedSandbox::stagedDir).
    QString memoryDirPrefix;
    QString guestPath;
    QString gvisorPreload; // gVisor: what every command preloads (airlock-gvisor-preload.so, beside the guest)
    QString hostname;
    NetworkMode network = NetworkMode::None;
    QString workspaceDir;
    QList<Mount> mounts;
    QStringList hiddenPaths; // inside mounts: covered by an empty read-only tmpfs (airlockd's own directories)
    QList<std::pair<QString, QByteArray>> dataFiles; // read-only files made from memory (granted secrets)
    // Read-only files anyone in the sandbox may read, made from memory: what it trusts when the
    // egress proxy brokers a credential (kTrustAuthorityPath, kTrustBundlePath, the system bundle).
    QList<std::pair<QString, QByteArray>> trustFiles;
    QByteArray seccompProgram;
    QStringList cgroupProcsFiles;
    // When set, the child waits before exec until this has placed it (a systemd scope); failing, it
    // is killed and the launch fails with this error.
    std::function<Status(pid_t)> placeChild;
    std::optional<uid_t> dropToUid; // set when the daemon runs as root: bwrap runs as this host uid
    std::optional<uint64_t> nproc; // RLIMIT_NPROC for the guest and everything below it
    std::optional<uint64_t> tmpBytes; // size of each writable tmpfs (/tmp, /var/tmp, the home)
    bool verboseGuest = false;
    // A sandbox that outlives the daemon has a token, which a later daemon and the guest prove
    // themselves to each other with. Without one, the runtime and everything in the sandbox die
    // with the daemon. Bubblewrap's guest listens on resumeListenFd (a bound, listening socket the
    // launcher does not own; IsolationRuntime::guestListens()); gVisor's comes back by itself.
    int resumeListenFd = -1;
    QByteArray resumeToken;
    bool outlivesDaemon() const { return !resumeToken.isEmpty(); }
};

// What a runtime started: the daemon's ends of what it talks to the sandbox through.
struct LaunchedSandbox {
    pid_t pid = -1; // the runtime's own process (bwrap)
    int pidfd = -1; // readable when it exits
    int channelFd = -1; // daemon end of the guest socket
    int stderrFd = -1; // the runtime's and the guest's stderr
    int infoFd = -1; // bwrap's --info-fd: JSON with the host pid of the sandbox's init (-1: none)
    int proxyFd = -1; // allowlist: the guest sends each egress connection's socket here
    // allowlist under gVisor, instead: a listening unix socket, each connection one the guest relays
    int egressListenFd = -1;
    int execCheckFd = -1; // the guest sends each judged execution's exec-check listener here
    // What the runtime read when it started and the sandbox keeps no need of once it runs: removed
    // when the guest says hello (and when the sandbox ends before).
    QString stagedDir;
};

// How a daemon reaches the guest of a sandbox an earlier daemon left running (the descriptors
// are the caller's): connected to it now, or listening for the guest, which comes back and proves
// itself with the token (gVisor: GuestReconnect); and a runtime's egress socket, listened on anew.
struct Reattached {
    int channelFd = -1;
    int reconnectListenFd = -1;
    int egressListenFd = -1;
};

} // namespace airlock
