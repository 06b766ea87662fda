// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/LaunchRequest.h"
#include "util/Fd.h"

#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace airlock {

// What the runtime's top process gets of its own before exec, beside what every one gets.
struct RuntimeIsolation {
    // A user and network namespace (runsc): see spawnRuntimeProcess.
    bool privateNetwork = false;
    // A mount namespace of its own (root only), private (nothing propagates in or out), with these
    // mounts (other sandboxes' workspaces) detached: bubblewrap reads its mount table for every
    // read-only bind, so it then costs the same whatever the number of sandboxes.
    bool privateMounts = false;
    std::vector<std::string> detachMounts;
    // Or, when the workspaces' folder is a mount of its own (volume::bindOnItself, or a disk of
    // its own), that folder detached with everything below it (one unmount), then put back
    // without them (detachTreeClone, a clone of its mount alone made by open_tree), private, with
    // the sandbox's own workspace on it (ownWorkspaceTree: its clone; -1 for one with no image).
    std::string detachTree;
    int detachTreeClone = -1;
    int ownWorkspaceTree = -1;
    std::string ownWorkspace;
    // Copy-on-write mounts (decision 9): each an overlay mounted on `merged` with `options`, whose
    // root becomes descriptor `slot` in the runtime. A user's daemon's child makes a user and
    // mount namespace of its own for them (its ids mapped to themselves); a root daemon's mounts
    // them in its private one. The host folder below is opened there again by `lower` (no
    // symbolic link in it), must be the folder the daemon checked (`checkedFd`: same device and
    // inode), and is given to the mount as /proc/self/fd/`lowerFd` (a descriptor number the
    // daemon holds free for it; one of the daemon's own namespace is no layer there).
    struct Overlay {
        std::string lower;
        int checkedFd = -1;
        int lowerFd = -1;
        std::string merged;
        std::string options;
        int slot = -1;
    };
    std::vector<Overlay> overlays;
};

// The folder at `path` opened again (O_PATH, no symbolic link in its path) if it is still the one
// `checked` is open on (same device and inode); -1 otherwise (errno ELOOP for a link, EXDEV for
// another folder). Async-signal-safe: a copy-on-write mount's lower folder, reopened by the
// runtime's top process in its own mount namespace.
int reopenCheckedFolder(const char *path, int checked);

// errno's text after what failed.
Error sysError(const QString &what);

// Starts a runtime's top process (bwrap, runsc) for a request: `childFds[i]` becomes descriptor i in
// the child and nothing else of the daemon's reaches it; it gets an empty signal mask, joins the
// request's cgroups (or waits until placeChild has placed it), drops to dropToUid, dies with the
// daemon unless the sandbox outlives it, and execs args with an empty environment. errFd is where
// the child reports what failed before exec. With privateNetwork it runs in a user and network
// namespace of its own (its uid mapped to itself), so that nothing it binds in the host's
// abstract unix socket namespace is reachable. Returns the launch with its pid and pidfd, for the
// caller to add its ends of the channels.
Result<LaunchedSandbox> spawnRuntimeProcess(const LaunchRequest &request, const std::vector<std::string> &args,
    std::vector<int> childFds, int errFd, const RuntimeIsolation &isolation = {});

} // namespace airlock
