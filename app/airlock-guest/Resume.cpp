// SPDX-License-Identifier: Apache-2.0
#include "Resume.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace airlock::guest {
namespace {

constexpr size_t kMaxFds = 2; // the exec-check socket and the proxy socket
constexpr size_t kExecSize = 4 + 8 + 8;

long long monotonicMs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool equalInConstantTime(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    volatile unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
        diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

// Reads exactly `size` bytes before `deadlineMs`, adding the descriptors that come with them to
// `fds`. Returns an error message, or an empty string.
std::string receive(int conn, char *dst, size_t size, long long deadlineMs, std::vector<int> &fds)
{
    size_t got = 0;
    while (got < size) {
        iovec iov{dst + got, size - got};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            const long long left = deadlineMs - monotonicMs();
            if (left <= 0)
                return "no whole Resume frame within " + std::to_string(wire::kResumeFrameTimeoutMs) + " ms";
            pollfd p{conn, POLLIN, 0};
            poll(&p, 1, static_cast<int>(left));
            continue;
        }
        if (n < 0)
            return std::string("cannot read: ") + std::strerror(errno);
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
        // The kernel discards descriptors that do not fit; either way there were too many.
        if ((msg.msg_flags & MSG_CTRUNC) || fds.size() > kMaxFds)
            return "more than " + std::to_string(kMaxFds) + " descriptors";
        if (n == 0)
            return "closed before a whole Resume frame";
        got += static_cast<size_t>(n);
    }
    return {};
}

std::string parse(std::string_view payload, std::string_view token, size_t expectedFds, ResumeRequest &req)
{
    if (!equalInConstantTime(payload.substr(0, wire::kResumeTokenSize), token))
        return "wrong token";
    wire::Reader r(payload.data() + wire::kResumeTokenSize, payload.size() - wire::kResumeTokenSize);
    req.protocolVersion = r.u32();
    if (req.protocolVersion != wire::kProtocolVersion)
        return {}; // the rest is laid out as that version says; the caller answers with ours
    const uint8_t fdCount = r.u8();
    const uint32_t count = r.u32();
    if (r.failed())
        return "truncated Resume frame";
    if (count > wire::kMaxResumeExecs)
        return "Resume asks about " + std::to_string(count) + " executions";
    if (r.remaining() != size_t(count) * kExecSize)
        return "Resume frame of " + std::to_string(payload.size()) + " bytes for " + std::to_string(count)
            + " executions";
    if (fdCount != req.fds.size() || fdCount != expectedFds)
        return "Resume says " + std::to_string(fdCount) + " descriptors, " + std::to_string(req.fds.size())
            + " came and " + std::to_string(expectedFds) + " are wanted";
    req.execs.resize(count);
    for (ResumeRequest::Exec &e : req.execs) {
        e.id = r.u32();
        e.offsets[0] = r.u64();
        e.offsets[1] = r.u64();
    }
    std::vector<uint32_t> ids(count);
    std::transform(req.execs.begin(), req.execs.end(), ids.begin(), [](const ResumeRequest::Exec &e) { return e.id; });
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end())
        return "Resume names an execution twice";
    for (int fd : req.fds) {
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
            return "a descriptor of Resume is not a SOCK_SEQPACKET socket";
    }
    return {};
}

} // namespace

void ResumeRequest::closeFds()
{
    for (int fd : fds)
        close(fd);
    fds.clear();
}

bool peerOutsideSandbox(int conn)
{
    ucred cred{};
    socklen_t len = sizeof cred;
    return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred && cred.pid == 0;
}

ResumeRequest readResume(int conn, std::string_view token, size_t expectedFds)
{
    ResumeRequest req;
    const long long deadline = monotonicMs() + wire::kResumeFrameTimeoutMs;
    char header[wire::kHeaderSize];
    req.error = receive(conn, header, sizeof header, deadline, req.fds);
    std::string payload;
    if (req.error.empty()) {
        const auto h = wire::peekHeader(header, sizeof header);
        if (h->type != wire::Type::Resume)
            req.error = "first frame of type " + std::to_string(static_cast<unsigned>(h->type)) + ", not Resume";
        else if (h->payloadLen > wire::kMaxPayload || h->payloadLen < wire::kResumeTokenSize + 4)
            req.error = "Resume frame of " + std::to_string(h->payloadLen) + " bytes";
        else
            payload.resize(h->payloadLen);
    }
    if (req.error.empty())
        req.error = receive(conn, payload.data(), payload.size(), deadline, req.fds);
    if (req.error.empty())
        req.error = parse(payload, token, expectedFds, req);
    if (!req.error.empty() || req.protocolVersion != wire::kProtocolVersion)
        req.closeFds();
    return req;
}

} // namespace airlock::guest
