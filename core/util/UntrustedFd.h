// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace airlock {

// Descriptors that come from a sandbox's guest, which may keep its own copy of each. A TCP socket
// it hands over with SO_LINGER set and a send queue that cannot drain makes the last close() wait
// (Linux lingers whatever O_NONBLOCK says), and that close may be the daemon's.

// Closes one: SO_LINGER turned off first, and the close under a ThreadDeadline (the guest may turn
// it on again meanwhile, through its own copy).
void closeUntrusted(int fd);

// recvmsg() on a socket the guest writes to, under a ThreadDeadline, with room for one
// descriptor when `fd` is given (it gets it, O_CLOEXEC, or -1) and for none otherwise. Whatever
// else is attached the kernel closes inside this call, in this thread, where a lingering socket
// would wait: the deadline bounds the whole call, and MSG_CTRUNC in `msgFlags` says it happened
// (which no well-behaved guest does: the caller treats it as a broken protocol).
ssize_t receiveUntrusted(int sock, void *buf, size_t size, int flags, int *fd = nullptr, int *msgFlags = nullptr);

} // namespace airlock
