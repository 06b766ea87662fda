// SPDX-License-Identifier: Apache-2.0
#include "sandbox/GuestChannel.h"
#include "util/UntrustedFd.h"

#include <QPointer>
#include <QSocketNotifier>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr qsizetype kReadSize = 1024 * 1024;
}

Status sendResume(int fd, const QByteArray &token, const QList<ResumeAsk> &executions, const QList<int> &fds)
{
    wire::Writer w(wire::Type::Resume);
    w.bytes(std::string_view(token.constData(), size_t(token.size())))
        .u32(wire::kProtocolVersion)
        .u8(uint8_t(fds.size()))
        .u32(uint32_t(executions.size()));
    for (const ResumeAsk &e : executions)
        w.u32(e.execId).u64(e.stored[0]).u64(e.stored[1]);
    const std::string frame = w.take();
    // The descriptors ride on the frame's first byte; the rest follows on the (blocking) socket.
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)] = {};
    iovec iov{const_cast<char *>(frame.data()), 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.isEmpty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * size_t(fds.size()));
        cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * size_t(fds.size()));
        std::memcpy(CMSG_DATA(c), fds.constData(), sizeof(int) * size_t(fds.size()));
    }
    if (fds.size() > 2 || executions.size() > qsizetype(wire::kMaxResumeExecs)
        || ::sendmsg(fd, &msg, MSG_NOSIGNAL) != 1)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot resume the sandbox's agent: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    for (size_t done = 1; done < frame.size();) {
        const ssize_t n = ::send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return makeError(ErrorCode::IoError,
                QStringLiteral("cannot resume the sandbox's agent: %1").arg(QString::fromLocal8Bit(strerror(errno))));
        done += size_t(n);
    }
    return Ok{};
}

GuestChannel::GuestChannel(int fd, QObject *parent, bool resumed)
    : QObject(parent)
    , m_fd(fd)
    , m_resumed(resumed)
{
    ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) | O_NONBLOCK);
    m_readNotifier = new QSocketNotifier(m_fd, QSocketNotifier::Read, this);
    m_writeNotifier = new QSocketNotifier(m_fd, QSocketNotifier::Write, this);
    m_writeNotifier->setEnabled(false);
    connect(m_readNotifier, &QSocketNotifier::activated, this, &GuestChannel::onReadable);
    connect(m_writeNotifier, &QSocketNotifier::activated, this, &GuestChannel::onWritable);
}

GuestChannel::~GuestChannel()
{
    close();
}

void GuestChannel::close()
{
    if (m_fd < 0)
        return;
    m_readNotifier->setEnabled(false);
    m_writeNotifier->setEnabled(false);
    closeUntrusted(m_fd); // what the guest queued on it is closed with it, here
    m_fd = -1;
    m_dead = true;
}

void GuestChannel::setKnownExec(uint32_t execId, bool known)
{
    if (known && !m_known.contains(execId)) {
        m_known.append(execId);
    } else if (!known) {
        m_known.removeAll(execId);
        if (m_stdin.remove(execId))
            Q_EMIT stdinProgressed(stdinBacklog());
    }
}

void GuestChannel::setReadingPaused(bool paused)
{
    m_paused = paused;
    if (m_fd >= 0 && !m_dead)
        m_readNotifier->setEnabled(!paused);
}

void GuestChannel::sendSpawn(const SpawnRequest &r)
{
    wire::Writer w(wire::Type::Spawn);
    w.u32(r.execId)
        .u8(static_cast<uint8_t>(
            (r.tty ? wire::SpawnTty : 0) | (r.stdinOpen ? wire::SpawnStdin : 0) | (r.judged ? wire::SpawnJudged : 0)))
        .u16(r.rows)
        .u16(r.cols)
        .u64(r.cpuSeconds)
        .u64(r.fileSizeBytes)
        .u64(r.openFiles)
        .u64(r.timeoutMs)
        .str(r.cwd.toStdString())
        .u32(static_cast<uint32_t>(r.argv.size()));
    for (const QString &a : r.argv)
        w.str(a.toStdString());
    w.u32(static_cast<uint32_t>(r.env.size()));
    for (const QString &e : r.env)
        w.str(e.toStdString());
    send(w.take());
}

void GuestChannel::sendStdin(uint32_t execId, QByteArrayView data)
{
    StdinQueue &q = m_stdin[execId];
    if (q.eof)
        return;
    if (data.isEmpty())
        q.eof = true;
    else
        q.data.append(data);
    pumpStdin(execId);
}

void GuestChannel::pumpStdin(uint32_t execId)
{
    auto it = m_stdin.find(execId);
    if (it == m_stdin.end())
        return;
    StdinQueue &q = *it;
    constexpr qint64 kChunk = 256 * 1024;
    while (q.start < q.data.size() && q.unconsumed < wire::kStdinWindow) {
        const qint64 n = std::min({kChunk, q.data.size() - q.start, qint64(wire::kStdinWindow) - q.unconsumed});
        send(wire::Writer(wire::Type::Stdin).u32(execId).bytes({q.data.constData() + q.start, size_t(n)}).take());
        q.start += n;
        q.unconsumed += n;
    }
    if (q.start == q.data.size()) {
        q.data.clear();
        q.start = 0;
        if (q.eof && !q.eofSent && q.unconsumed < wire::kStdinWindow) {
            send(wire::Writer(wire::Type::Stdin).u32(execId).take());
            q.eofSent = true;
            q.unconsumed += 1;
        }
    } else if (q.start > 1024 * 1024) {
        q.data.remove(0, q.start);
        q.start = 0;
    }
}

qint64 GuestChannel::stdinBacklog() const
{
    qint64 total = 0;
    for (const StdinQueue &q : m_stdin)
        total += q.data.size() - q.start + q.unconsumed;
    return total;
}

void GuestChannel::sendSignal(uint32_t execId, int signo)
{
    send(wire::Writer(wire::Type::Signal).u32(execId).i32(signo).take());
}

void GuestChannel::sendResize(uint32_t execId, uint16_t rows, uint16_t cols)
{
    send(wire::Writer(wire::Type::Resize).u32(execId).u16(rows).u16(cols).take());
}

void GuestChannel::sendToolResult(uint32_t callId, bool ok, const QByteArray &body)
{
    if (!m_toolCalls.remove(callId))
        return;
    send(wire::Writer(wire::Type::ToolResult)
             .u32(callId)
             .u8(ok ? 1 : 0)
             .bytes(std::string_view(body.constData(), size_t(body.size())))
             .take());
}

void GuestChannel::sendAck(uint32_t execId, uint8_t stream, uint64_t offset)
{
    send(wire::Writer(wire::Type::Ack).u32(execId).u8(stream).u64(offset).take());
}

void GuestChannel::send(std::string frame)
{
    if (m_fd < 0 || m_peerGone)
        return;
    m_out.append(frame.data(), static_cast<qsizetype>(frame.size()));
    flush();
}

qint64 GuestChannel::pendingWriteBytes() const
{
    return m_out.size() - m_outStart;
}

void GuestChannel::flush()
{
    while (pendingWriteBytes() > 0 && m_fd >= 0) {
        const ssize_t n = ::write(m_fd, m_out.constData() + m_outStart, static_cast<size_t>(pendingWriteBytes()));
        if (n > 0) {
            m_outStart += n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN) {
            // The guest's end is gone (EPIPE): nothing written now would be read. Dropped, and no
            // waiting for POLLOUT, which such a socket always reports. The read side reports the
            // close, once it reads again if it is paused (a client holds the sandbox's output).
            m_peerGone = true;
            m_out.clear();
            m_outStart = 0;
        }
        break; // EAGAIN: wait for POLLOUT
    }
    // Drop what was written in one go rather than shifting the buffer per write.
    if (m_outStart == m_out.size() || m_outStart > 1024 * 1024) {
        m_out.remove(0, m_outStart);
        m_outStart = 0;
    }
    if (m_fd >= 0)
        m_writeNotifier->setEnabled(pendingWriteBytes() > 0);
}

void GuestChannel::onWritable()
{
    flush();
}

void GuestChannel::onReadable()
{
    if (m_fd < 0)
        return;
    // Compact so that the buffer does not grow without bound.
    if (m_inStart > 0) {
        m_in.remove(0, m_inStart);
        m_inStart = 0;
    }
    const qsizetype old = m_in.size();
    m_in.resize(old + kReadSize);
    int flags = 0;
    const ssize_t n = receiveUntrusted(m_fd, m_in.data() + old, kReadSize, 0, nullptr, &flags);
    if (n > 0 && (flags & MSG_CTRUNC)) { // the kernel closed them, within the call's deadline
        m_in.resize(old);
        violate(QStringLiteral("descriptors attached to the channel, which carries none"));
        return;
    }
    if (n <= 0) {
        m_in.resize(old);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        close();
        Q_EMIT closed();
        return;
    }
    m_in.resize(old + n);

    QPointer<GuestChannel> self(this);
    while (self && !m_dead) {
        const char *p = m_in.constData() + m_inStart;
        const size_t avail = static_cast<size_t>(m_in.size() - m_inStart);
        const auto header = wire::peekHeader(p, avail);
        if (!header)
            break;
        if (header->payloadLen > wire::kMaxPayload) {
            violate(QStringLiteral("frame of %1 bytes exceeds the %2-byte limit")
                        .arg(header->payloadLen)
                        .arg(wire::kMaxPayload));
            return;
        }
        if (avail < wire::kHeaderSize + header->payloadLen)
            break;
        m_inStart += wire::kHeaderSize + header->payloadLen;
        if (!dispatch(header->type, p + wire::kHeaderSize, header->payloadLen))
            return;
    }
}

void GuestChannel::violate(const QString &reason)
{
    m_dead = true;
    m_readNotifier->setEnabled(false);
    Q_EMIT protocolViolated(reason);
}

bool GuestChannel::dispatch(wire::Type type, const char *payload, uint32_t size)
{
    wire::Reader r(payload, size);
    auto complete = [&](const char *what) {
        if (r.failed() || !r.atEnd()) {
            violate(QStringLiteral("malformed %1 frame (%2 bytes)").arg(QLatin1String(what)).arg(size));
            return false;
        }
        return true;
    };
    auto known = [&](uint32_t execId, const char *what) {
        if (!m_known.contains(execId)) {
            violate(QStringLiteral("%1 frame for unknown execution %2").arg(QLatin1String(what)).arg(execId));
            return false;
        }
        return true;
    };
    const wire::Type first = m_resumed ? wire::Type::Resumed : wire::Type::Hello;
    if (!m_helloSeen && type != first && type != wire::Type::Fatal) {
        violate(QStringLiteral("frame type 0x%1 before hello").arg(int(type), 2, 16, QLatin1Char('0')));
        return false;
    }
    switch (type) {
    case wire::Type::Hello: {
        const uint32_t version = r.u32();
        const int32_t abi = r.i32();
        const uint32_t pid = r.u32();
        if (!complete("hello"))
            return false;
        if (m_helloSeen) {
            violate(QStringLiteral("second hello"));
            return false;
        }
        if (version != wire::kProtocolVersion) {
            violate(QStringLiteral("guest speaks protocol %1, daemon %2 (reinstall Airlock so both match)")
                        .arg(version)
                        .arg(wire::kProtocolVersion));
            return false;
        }
        m_helloSeen = true;
        Q_EMIT helloReceived(abi, pid);
        return true;
    }
    case wire::Type::Resumed: {
        const uint32_t version = r.u32();
        const int32_t abi = r.i32();
        const uint32_t pid = r.u32();
        const uint32_t count = r.u32();
        if (r.failed() || !m_resumed || m_helloSeen || count > 2 * wire::kMaxResumeExecs) {
            violate(QStringLiteral("unexpected or malformed resumed frame"));
            return false;
        }
        QList<ResumedExec> executions;
        for (uint32_t i = 0; i < count && !r.failed(); ++i) {
            ResumedExec e;
            e.execId = r.u32();
            const uint8_t state = r.u8();
            e.pid = r.i32();
            e.from[0] = r.u64();
            e.from[1] = r.u64();
            if (state > wire::ResumeUnknown || e.from[0] > (uint64_t(1) << 62) || e.from[1] > (uint64_t(1) << 62)) {
                violate(QStringLiteral("resumed frame with execution state %1").arg(state));
                return false;
            }
            e.state = wire::ResumeState(state);
            executions.append(e);
        }
        if (!complete("resumed"))
            return false;
        m_helloSeen = true;
        // What it runs or ran may speak now (what the daemon does not know of is stopped by it).
        for (const ResumedExec &e : std::as_const(executions))
            if (e.state != wire::ResumeUnknown && e.execId != 0)
                setKnownExec(e.execId, true);
        Q_EMIT resumed(version, abi, pid, executions);
        if (version != wire::kProtocolVersion) {
            m_dead = true;
            return false;
        }
        return true;
    }
    case wire::Type::Gap: {
        const uint32_t id = r.u32();
        const uint8_t stream = r.u8();
        const uint64_t offset = r.u64();
        const uint64_t bytes = r.u64();
        if (!complete("gap") || !known(id, "gap"))
            return false;
        if ((stream != wire::StreamStdout && stream != wire::StreamStderr) || bytes == 0 || offset > (uint64_t(1) << 62)
            || bytes > (uint64_t(1) << 62)) {
            violate(QStringLiteral("gap frame with invalid stream %1 or size %2").arg(stream).arg(bytes));
            return false;
        }
        Q_EMIT gapReported(id, stream, quint64(offset), quint64(bytes));
        return true;
    }
    case wire::Type::Started: {
        const uint32_t id = r.u32();
        const int32_t pid = r.i32();
        if (!complete("started") || !known(id, "started"))
            return false;
        Q_EMIT execStarted(id, pid);
        return true;
    }
    case wire::Type::Output: {
        const uint32_t id = r.u32();
        const uint8_t stream = r.u8();
        const uint64_t time = r.u64();
        if (r.failed() || !known(id, "output"))
            return complete("output") && false;
        if (stream != wire::StreamStdout && stream != wire::StreamStderr) {
            violate(QStringLiteral("output frame with invalid stream %1").arg(stream));
            return false;
        }
        const std::string_view data = r.rest();
        if (data.size() > wire::kMaxOutputChunk) {
            violate(QStringLiteral("output chunk of %1 bytes exceeds %2").arg(data.size()).arg(wire::kMaxOutputChunk));
            return false;
        }
        Q_EMIT outputReceived(
            id, stream, static_cast<qint64>(time), QByteArrayView(data.data(), static_cast<qsizetype>(data.size())));
        return true;
    }
    case wire::Type::Exited: {
        GuestExit e;
        e.execId = r.u32();
        const uint8_t how = r.u8();
        e.code = r.i32();
        e.durationUs = r.u64();
        e.userUs = r.u64();
        e.systemUs = r.u64();
        e.maxRssKb = r.u64();
        const uint8_t flags = r.u8();
        if (!complete("exited") || !known(e.execId, "exited"))
            return false;
        if (how > wire::ExitedBySignal || (how == wire::ExitedBySignal && (e.code < 1 || e.code > 64))
            || (how == wire::ExitedNormally && (e.code < 0 || e.code > 255))) {
            violate(QStringLiteral("exited frame with impossible status (%1, %2)").arg(how).arg(e.code));
            return false;
        }
        if (flags & ~wire::ExitTimedOut) {
            violate(QStringLiteral("exited frame with unknown flags 0x%1").arg(int(flags), 2, 16, QLatin1Char('0')));
            return false;
        }
        e.signaled = how == wire::ExitedBySignal;
        e.timedOut = flags & wire::ExitTimedOut;
        setKnownExec(e.execId, false);
        Q_EMIT execExited(e);
        return true;
    }
    case wire::Type::SpawnFailed: {
        const uint32_t id = r.u32();
        const int32_t err = r.i32();
        const std::string_view msg = r.str();
        if (!complete("spawn-failed") || !known(id, "spawn-failed"))
            return false;
        setKnownExec(id, false);
        Q_EMIT spawnFailed(id, err, QString::fromUtf8(msg.data(), qsizetype(std::min<size_t>(msg.size(), 4096))));
        return true;
    }
    case wire::Type::StdinConsumed: {
        const uint32_t id = r.u32();
        const uint32_t bytes = r.u32();
        if (!complete("stdin-consumed"))
            return false;
        auto q = m_stdin.find(id);
        if (q == m_stdin.end())
            return true; // the execution ended and its queue with it
        if (bytes == 0 || bytes > q->unconsumed) {
            violate(
                QStringLiteral("stdin-consumed frame reports %1 bytes, %2 were sent").arg(bytes).arg(q->unconsumed));
            return false;
        }
        q->unconsumed -= bytes;
        pumpStdin(id);
        Q_EMIT stdinProgressed(stdinBacklog());
        return true;
    }
    case wire::Type::ToolCall: {
        const uint32_t id = r.u32();
        const std::string_view request = r.rest();
        if (r.failed())
            return complete("tool-call") && false;
        if (request.size() > wire::kMaxToolRequest) {
            violate(QStringLiteral("tool call of %1 bytes exceeds %2").arg(request.size()).arg(wire::kMaxToolRequest));
            return false;
        }
        if (m_toolCalls.contains(id) || m_toolCalls.size() >= int(wire::kMaxToolCalls)) {
            violate(
                QStringLiteral("tool call %1 reused an id or exceeded %2 in flight").arg(id).arg(wire::kMaxToolCalls));
            return false;
        }
        m_toolCalls.insert(id);
        Q_EMIT toolCallReceived(id, QByteArray(request.data(), qsizetype(request.size())));
        return true;
    }
    case wire::Type::Fatal: {
        const std::string_view msg = r.str();
        if (!complete("fatal"))
            return false;
        m_dead = true;
        Q_EMIT fatalReported(QString::fromUtf8(msg.data(), qsizetype(std::min<size_t>(msg.size(), 4096))));
        return false;
    }
    default:
        violate(QStringLiteral("unknown frame type 0x%1").arg(int(type), 2, 16, QLatin1Char('0')));
        return false;
    }
}

} // namespace airlock
