// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

namespace airlock::guest {

struct LandlockResult {
    int abi = 0; // ABI version that was enforced
    std::string error; // empty on success; otherwise names the failing step and errno
};

// Restricts the calling process (and therefore everything it later forks) to: read/execute
// everywhere, full access beneath rwPaths, and use of the standard character devices and /dev/pts.
// Network access is deliberately not handled. Requires PR_SET_NO_NEW_PRIVS to be set already.
LandlockResult applyLandlock(const std::vector<std::string> &rwPaths);

} // namespace airlock::guest
