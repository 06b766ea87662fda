// SPDX-License-Identifier: Apache-2.0
#include "util/UntrustedFd.h"
#include "util/ThreadDeadline.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace airlock {

void closeUntrusted(int fd)
{
    if (fd < 0)
        return;
    const linger off{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off); // ENOTSOCK: not a socket, nothing lingers
    const ThreadDeadline::Armed deadline;
    ::close(fd);
}

ssize_t receiveUntrusted(int sock, void *buf, size_t size, int flags, int *fd, int *msgFlags)
{
    iovec iov{buf, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd) {
        *fd = -1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    ssize_t n = 0;
    int err = 0;
    {
        const ThreadDeadline::Armed deadline;
        n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
        err = errno;
    }
    if (n < 0) {
        errno = err;
        return n;
    }
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); fd && c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int)))
            std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    if (msgFlags)
        *msgFlags = msg.msg_flags;
    return n;
}

} // namespace airlock
