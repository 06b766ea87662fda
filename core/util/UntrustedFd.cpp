// SPDX-License-Identifier: Apache-2.0
#include "util/UntrustedFd.h"
#include "util/ThreadDeadline.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr int kMaxAttached = 253; // SCM_MAX_FD: what one message may carry
} // namespace

void closeUntrusted(int fd)
{
    if (fd < 0)
        return;
    const linger off{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off); // ENOTSOCK: not a socket, nothing lingers
    const ThreadDeadline::Armed deadline;
    ::close(fd);
}

ssize_t receiveWithDescriptors(int sock, void *buf, size_t size, int flags, std::vector<int> &fds, int *msgFlags)
{
    iovec iov{buf, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxAttached)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            fds.push_back(fd);
        }
    }
    if (msgFlags)
        *msgFlags = msg.msg_flags;
    return n;
}

ssize_t receiveUntrusted(int sock, void *buf, size_t size, int flags)
{
    std::vector<int> fds;
    const ssize_t n = receiveWithDescriptors(sock, buf, size, flags, fds);
    const int err = errno;
    for (int fd : fds)
        closeUntrusted(fd);
    errno = err;
    return n;
}

} // namespace airlock
