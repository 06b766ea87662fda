// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/GuestWire.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::guest {

// A Resume frame (wire::Type::Resume) as read from a connection on the resume socket.
struct ResumeRequest {
    struct Exec {
        uint32_t id = 0;
        std::array<uint64_t, 2> offsets{}; // stdout, stderr: what the daemon has stored
    };
    std::string error; // why the connection is refused; empty when it is a valid request
    uint32_t protocolVersion = 0; // another than ours: answer with ours and nothing else
    std::vector<int> fds; // owned: the exec-check socket, then the proxy socket if any
    std::vector<Exec> execs; // distinct ids

    void closeFds();
};

// True when the peer of an accepted connection is outside our PID namespace (SO_PEERCRED gives
// pid 0): the daemon, and never a process of the sandbox.
bool peerOutsideSandbox(int conn);

// Reads exactly one Resume frame from `conn` (non-blocking) within kResumeFrameTimeoutMs and
// checks it: the token (in constant time), and for our protocol version the layout, the
// executions (at most kMaxResumeExecs, no id twice) and fdCount, which must equal the descriptors
// that came and `expectedFds`. On an error every descriptor received is closed already.
ResumeRequest readResume(int conn, std::string_view token, size_t expectedFds);

} // namespace airlock::guest
