// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>

namespace airlock::guest {

// One message of `size` bytes carrying `fd` (SCM_RIGHTS); `flags` go to sendmsg (MSG_NOSIGNAL is
// always added). True when the whole message went.
bool sendFd(int sock, const void *data, size_t size, int fd, int flags);
// The one descriptor of the next message on a SOCK_SEQPACKET socket (O_CLOEXEC), or -1: EOF, an
// error, or a message without exactly one.
int receiveFd(int sock);

} // namespace airlock::guest
