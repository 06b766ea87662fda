// SPDX-License-Identifier: Apache-2.0
// tst_guest_resume's and tst_guest_resume_gvisor's side of the guest's wire: frames read and
// written on a socket, the Resume a daemon sends, and how a Resumed frame or an exit reads, for
// failure messages.
#pragma once

#include "sandbox/GuestWire.h"

#include <QElapsedTimer>
#include <QFile>
#include <QString>
#include <QStringList>
#include <QTest>

#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using namespace airlock;

namespace guestlink {

constexpr uint32_t kLimit = static_cast<uint32_t>(wire::kRetainedOutputLimit);

struct Frame {
    wire::Type type{};
    std::string payload;
    wire::Reader reader() const { return wire::Reader(payload.data(), payload.size()); }
};

// An Output frame's fields.
struct Output {
    uint32_t execId = 0;
    uint8_t stream = 0;
    std::string data;
};
inline std::optional<Output> asOutput(const Frame &f)
{
    if (f.type != wire::Type::Output)
        return std::nullopt;
    wire::Reader r = f.reader();
    Output o;
    o.execId = r.u32();
    o.stream = r.u8();
    r.u64();
    o.data = std::string(r.rest());
    return o;
}

// The daemon's end of a connection to the guest.
class Link {
public:
    Link() = default;
    Link(const Link &) = delete;
    Link &operator=(const Link &) = delete;
    ~Link() { reset(); }

    void reset(int fd = -1)
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = fd;
        m_buf.clear();
        m_off = 0;
        m_eof = false;
    }
    bool isOpen() const { return m_fd >= 0; }
    int fd() const { return m_fd; }

    bool send(const std::string &frame)
    {
        for (size_t done = 0; done < frame.size();) {
            const ssize_t n = ::send(m_fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            done += size_t(n);
        }
        return true;
    }

    // The next frame within timeoutMs; none on a timeout or once the guest closed the connection.
    // StdinConsumed (the stdin window's bookkeeping) is skipped.
    std::optional<Frame> next(int timeoutMs = 5000)
    {
        QElapsedTimer clock;
        clock.start();
        for (;;) {
            if (const auto h = wire::peekHeader(m_buf.data() + m_off, m_buf.size() - m_off);
                h && m_buf.size() - m_off >= wire::kHeaderSize + h->payloadLen) {
                Frame f{h->type, m_buf.substr(m_off + wire::kHeaderSize, h->payloadLen)};
                m_off += wire::kHeaderSize + h->payloadLen;
                if (f.type == wire::Type::StdinConsumed)
                    continue;
                return f;
            }
            if (m_eof)
                return std::nullopt;
            const qint64 left = timeoutMs - clock.elapsed();
            pollfd p{m_fd, POLLIN, 0};
            if (left <= 0 || ::poll(&p, 1, int(left)) <= 0)
                return std::nullopt;
            if (m_off > 0) {
                m_buf.erase(0, m_off);
                m_off = 0;
            }
            char chunk[256 * 1024];
            const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
            if (n <= 0)
                m_eof = true;
            else
                m_buf.append(chunk, size_t(n));
        }
    }
    // True once the guest closed its end (frames before that are read and dropped).
    bool closedWithin(int timeoutMs)
    {
        while (next(timeoutMs)) { }
        return m_eof;
    }

private:
    int m_fd = -1;
    std::string m_buf;
    size_t m_off = 0;
    bool m_eof = false;
};

inline std::string spawnFrame(
    uint32_t id, const std::vector<std::string> &argv, uint8_t flags = 0, uint64_t timeoutMs = 0)
{
    wire::Writer w(wire::Type::Spawn);
    w.u32(id).u8(flags).u16(24).u16(80).u64(0).u64(0).u64(0).u64(timeoutMs).str("").u32(uint32_t(argv.size()));
    for (const std::string &a : argv)
        w.str(a);
    w.u32(1).str("PATH=/usr/bin:/bin");
    return w.take();
}
inline std::string shell(uint32_t id, const std::string &script, uint8_t flags = 0, uint64_t timeoutMs = 0)
{
    return spawnFrame(id, {"/bin/sh", "-c", script}, flags, timeoutMs);
}
inline std::string stdinFrame(uint32_t id, std::string_view data)
{
    return wire::Writer(wire::Type::Stdin).u32(id).bytes(data).take();
}
inline std::string ackFrame(uint32_t id, uint8_t stream, uint64_t offset)
{
    return wire::Writer(wire::Type::Ack).u32(id).u8(stream).u64(offset).take();
}

struct Asked {
    uint32_t id;
    uint64_t stdoutOffset;
    uint64_t stderrOffset;
};
std::string resumeFrame(const std::string &token, const std::vector<Asked> &asked, uint8_t fdCount = 1,
    uint32_t version = wire::kProtocolVersion)
{
    wire::Writer w(wire::Type::Resume);
    w.bytes(token).u32(version).u8(fdCount).u32(uint32_t(asked.size()));
    for (const Asked &a : asked)
        w.u32(a.id).u64(a.stdoutOffset).u64(a.stderrOffset);
    return w.take();
}

// "exited 7", "signal 9", "signal 9, timed out" (the guest killed it at its deadline), or what came
// instead of an Exited frame for `execId`.
inline QString describeExit(const std::optional<Frame> &f, uint32_t execId)
{
    if (!f)
        return QStringLiteral("no frame");
    if (f->type != wire::Type::Exited)
        return QStringLiteral("frame of type %1").arg(int(f->type));
    wire::Reader r = f->reader();
    const uint32_t id = r.u32();
    const uint8_t how = r.u8();
    const int32_t code = r.i32();
    r.u64(), r.u64(), r.u64(), r.u64();
    const uint8_t flags = r.u8();
    if (id != execId)
        return QStringLiteral("Exited of execution %1").arg(id);
    if (r.failed() || !r.atEnd())
        return QStringLiteral("a malformed Exited frame");
    return QStringLiteral("%1 %2%3")
        .arg(how == wire::ExitedBySignal ? QStringLiteral("signal") : QStringLiteral("exited"))
        .arg(code)
        .arg(flags & wire::ExitTimedOut ? QStringLiteral(", timed out") : QString());
}

// A Resumed frame as "1 running PID, 3 unknown 0" ("1 running PID from 12,0" when a replay
// starts past 0), or what is wrong with it.
inline QString describeResumed(const std::optional<Frame> &f, pid_t guest)
{
    if (!f)
        return QStringLiteral("no Resumed frame");
    if (f->type != wire::Type::Resumed)
        return QStringLiteral("frame of type %1 instead of Resumed").arg(int(f->type));
    wire::Reader r = f->reader();
    const uint32_t version = r.u32();
    r.i32();
    const auto pid = pid_t(r.u32());
    if (version != wire::kProtocolVersion || pid != guest)
        return QStringLiteral("Resumed of version %1 from pid %2").arg(version).arg(pid);
    QStringList entries;
    const uint32_t count = r.u32();
    for (uint32_t i = 0; i < count && !r.failed(); ++i) {
        const uint32_t id = r.u32();
        const uint8_t state = r.u8();
        const int32_t execPid = r.i32();
        const uint64_t from[2] = {r.u64(), r.u64()};
        static const char *const names[] = {"running", "finished", "unknown"}; // by wire::ResumeState
        const char *name = state <= wire::ResumeUnknown ? names[state] : "?";
        entries << QStringLiteral("%1 %2 %3").arg(id).arg(QLatin1String(name)).arg(execPid)
                + (from[0] || from[1] ? QStringLiteral(" from %1,%2").arg(from[0]).arg(from[1]) : QString());
    }
    if (r.failed() || !r.atEnd())
        return QStringLiteral("malformed Resumed frame");
    return entries.join(QStringLiteral(", "));
}

// One message with `fds` (SCM_RIGHTS) on its first byte, then the rest.
inline bool sendWithFds(int sock, const std::string &bytes, const std::vector<int> &fds)
{
    iovec iov{const_cast<char *>(bytes.data()), bytes.empty() ? 0 : size_t(1)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    if (::sendmsg(sock, &msg, MSG_NOSIGNAL) != ssize_t(iov.iov_len))
        return false;
    return bytes.size() <= 1
        || ::send(sock, bytes.data() + 1, bytes.size() - 1, MSG_NOSIGNAL) == ssize_t(bytes.size() - 1);
}

// True once the other end of `fd` is closed (what the guest does with a descriptor it refuses).
inline bool peerClosedWithin(int fd, int timeoutMs)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeoutMs) == 1 && (p.revents & POLLHUP);
}

inline bool processGone(pid_t pid)
{
    // Killed and not yet reaped by whoever adopted it counts as gone.
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return true;
    const QByteArray s = stat.readAll();
    return s.mid(s.lastIndexOf(')') + 2, 1) == "Z";
}

inline std::string numberedLines(int count)
{
    std::string s;
    for (int i = 1; i <= count; ++i)
        s += std::to_string(i) + '\n';
    return s;
}

} // namespace guestlink

using namespace guestlink;
