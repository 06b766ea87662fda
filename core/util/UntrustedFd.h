// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <sys/types.h>
#include <vector>

namespace airlock {

// Descriptors that come from a sandbox's guest, which may keep its own copy of each. A TCP socket
// it hands over with SO_LINGER set and a send queue that cannot drain makes the last close() wait
// (Linux lingers whatever O_NONBLOCK says), and that close may be the daemon's.

// Closes one: SO_LINGER turned off first, and the close under a ThreadDeadline (the guest may turn
// it on again meanwhile, through its own copy).
void closeUntrusted(int fd);

// recvmsg() on a socket the guest writes to, with room for every descriptor one message may
// carry (SCM_MAX_FD): what did not fit, or what a plain read() was sent, the kernel closes in this
// thread, and a lingering socket waits there. The descriptors are appended to `fds` (O_CLOEXEC);
// `msgFlags`, if given, gets the message's flags (MSG_TRUNC, MSG_CTRUNC).
ssize_t receiveWithDescriptors(
    int sock, void *buf, size_t size, int flags, std::vector<int> &fds, int *msgFlags = nullptr);

// recv() on a socket the guest writes to: as receiveWithDescriptors(), every descriptor closed
// with closeUntrusted.
ssize_t receiveUntrusted(int sock, void *buf, size_t size, int flags);

} // namespace airlock
