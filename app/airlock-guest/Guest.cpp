// SPDX-License-Identifier: Apache-2.0
#include "Guest.h"

#include "FdPassing.h"

#include "Clock.h"
#include "Log.h"
#include "ProcessTree.h"
#include "Resume.h"
#include "Spawn.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace airlock::guest {
namespace {

// u32 execId, u8 stream, u64 unixTimeNs in front of the output bytes.
constexpr size_t kOutputFixed = 4 + 1 + 8;
constexpr size_t kOutputPrefix = wire::kHeaderSize + kOutputFixed;
// Above this many queued bytes the output fds are no longer read: a slow daemon then slows the
// producers (via full pipes) instead of growing our memory.
constexpr size_t kHighWater = 2 * 1024 * 1024;
// Stdin has no flow control in the protocol; past this much unwritten stdin we stop reading the
// socket rather than buffer without bound.
constexpr size_t kMaxPendingStdin = 64 * 1024 * 1024;
// A background process that keeps writing must not keep the exit drain spinning forever.
constexpr size_t kMaxDrainPerFd = 4 * 1024 * 1024;
constexpr size_t kSocketReadSize = 256 * 1024;
// A bigger send buffer means fewer wakeups when streaming output; the kernel caps it.
constexpr int kSocketSendBuffer = 4 * 1024 * 1024;
// Fixed places in the poll set; the executions' descriptors follow.
constexpr size_t kSockSlot = 0;
constexpr size_t kSigchldSlot = 1;
constexpr size_t kResumeSlot = 2;
constexpr size_t kFirstExecSlot = 3;
// While a killed execution's processes are swept, how often the sweep looks again (a process that
// moved from its dying parent to us does not always come with a SIGCHLD of its own).
constexpr int kSweepIntervalMs = 10;

bool hasNul(std::string_view s)
{
    return s.find('\0') != std::string_view::npos;
}

const char *typeName(wire::Type t)
{
    switch (t) {
    case wire::Type::Spawn:
        return "Spawn";
    case wire::Type::Stdin:
        return "Stdin";
    case wire::Type::Signal:
        return "Signal";
    case wire::Type::Resize:
        return "Resize";
    case wire::Type::Ack:
        return "Ack";
    default:
        return "?";
    }
}

} // namespace

void fatalExit(int sock, const std::string &message, int code)
{
    logv("fatal: %s", message.c_str());
    OutQueue q(message.size() + 64);
    q.pushCopy(wire::Writer(wire::Type::Fatal).str(message).take());
    q.flushBlocking(sock, 2000);
    std::exit(code);
}

Guest::Guest(const GuestSetup &setup)
    : m_sock(setup.sock)
    , m_sigchldFd(setup.sigchldFd)
    , m_landlockAbi(setup.landlockAbi)
    , m_proxyListenFd(setup.proxyListenFd)
    , m_proxyFd(setup.proxyFd)
    , m_execCheckFd(setup.execCheckFd)
    , m_preload(setup.preload)
    , m_vforkMain(setup.vforkMain)
    , m_resumeFd(setup.resumeFd)
    , m_resumeToken(setup.resumeToken)
    , m_resumeSocket(setup.resumeSocket)
    , m_out(kOutputPrefix + wire::kMaxOutputChunk)
{
    if (resumable())
        m_retention = std::make_unique<Retention>();
    if (setup.toolListenFd >= 0) {
        const auto sendFrame = [this](std::string frame) { send(std::move(frame)); };
        m_tools = std::make_unique<ToolBridge>(setup.toolListenFd, sendFrame);
    }
    if (!setup.egressSocket.empty())
        m_relay = std::make_unique<EgressRelay>(setup.egressSocket);
    m_in.resize(kSocketReadSize);
    setsockopt(m_sock, SOL_SOCKET, SO_SNDBUF, &kSocketSendBuffer, sizeof kSocketSendBuffer);
    send(wire::Writer(wire::Type::Hello)
             .u32(wire::kProtocolVersion)
             .i32(m_landlockAbi)
             .u32(static_cast<uint32_t>(getpid()))
             .take());
}

void Guest::run()
{
    enum Kind { Out, Err, In, Exit };
    struct Slot {
        uint32_t execId;
        Kind kind;
    };
    std::vector<pollfd> fds;
    std::vector<Slot> slots;

    for (;;) {
        if (m_lost)
            dropConnection();
        const int untilOverdue = killOverdue(); // first: a try at the daemon may take a while
        const int untilReconnect = reconnectIfDue();
        const int untilDeadline = untilReconnect < 0 || (untilOverdue >= 0 && untilOverdue < untilReconnect)
            ? untilOverdue
            : untilReconnect;
        fds.clear();
        slots.clear();
        short sockEvents = m_out.empty() ? 0 : POLLOUT;
        if (pendingStdinBytes() < kMaxPendingStdin)
            sockEvents |= POLLIN;
        fds.push_back({m_sock, sockEvents, 0}); // -1 (skipped by poll) while no daemon is connected
        fds.push_back({m_sigchldFd, POLLIN, 0});
        fds.push_back({m_resumeFd, POLLIN, 0});
        // A daemon that does not keep up (or does not acknowledge) slows the producers down; with no
        // daemon there is nobody to wait for, and what does not fit is counted as a gap.
        const bool readOutputs = !connected()
            || (m_out.bytes() < kHighWater && (!m_retention || m_retention->bytes() < wire::kRetainedOutputLimit));
        for (const auto &[id, e] : m_execs) {
            if (readOutputs && e.outFd >= 0) {
                fds.push_back({e.outFd, POLLIN, 0});
                slots.push_back({id, Out});
            }
            if (readOutputs && e.errFd >= 0) {
                fds.push_back({e.errFd, POLLIN, 0});
                slots.push_back({id, Err});
            }
            if (e.inFd >= 0 && e.stdinOff < e.stdinBuf.size()) {
                fds.push_back({e.inFd, POLLOUT, 0});
                slots.push_back({id, In});
            }
            if (e.exitFd >= 0) {
                fds.push_back({e.exitFd, POLLIN, 0});
                slots.push_back({id, Exit});
            }
        }

        const size_t listenSlot = fds.size();
        if (m_proxyListenFd >= 0)
            fds.push_back({m_proxyListenFd, POLLIN, 0});
        const size_t toolSlot = fds.size();
        if (m_tools)
            m_tools->addPollFds(fds);
        const size_t relaySlot = fds.size();
        if (m_relay)
            m_relay->addPollFds(fds);

        const bool sweeping
            = m_sweeping || std::any_of(m_execs.begin(), m_execs.end(), [](const auto &e) { return e.second.ended; });
        const int waitMs
            = sweeping && (untilDeadline < 0 || untilDeadline > kSweepIntervalMs) ? kSweepIntervalMs : untilDeadline;
        if (poll(fds.data(), fds.size(), waitMs) < 0) {
            if (errno == EINTR)
                continue;
            fatalExit(m_sock, std::string("poll failed: ") + std::strerror(errno), 1);
        }

        if (fds[kSockSlot].revents & (POLLOUT | POLLERR | POLLHUP))
            flushSocket();

        // Executions are looked up by id each time: handling one event may finish another.
        for (size_t i = 0; i < slots.size(); ++i) {
            if (!fds[i + kFirstExecSlot].revents)
                continue;
            auto it = m_execs.find(slots[i].execId);
            if (it == m_execs.end())
                continue;
            Execution &e = it->second;
            switch (slots[i].kind) {
            case Out:
                readOutput(e, e.outFd, wire::StreamStdout);
                break;
            case Err:
                readOutput(e, e.errFd, wire::StreamStderr);
                break;
            case In:
                flushStdin(e);
                break;
            case Exit:
                readMainExit(e.id);
                break;
            }
        }
        flushSocket();

        if (m_proxyListenFd >= 0 && (fds[listenSlot].revents & POLLIN))
            acceptEgress();
        if (m_tools)
            m_tools->handle(fds.data() + toolSlot, relaySlot - toolSlot);
        if (m_relay)
            m_relay->handle(fds.data() + relaySlot, fds.size() - relaySlot);

        if ((fds[kSigchldSlot].revents & POLLIN) || sweeping)
            reapChildren();

        // Read last: a Spawn or Stdin frame changes m_execs, which the slots above refer to.
        // POLLHUP/POLLERR are handled even when POLLIN was not requested, so EOF is never missed.
        if (fds[kSockSlot].revents & (POLLIN | POLLHUP | POLLERR))
            readSocket();
        // After everything that refers to the current connection: a resume replaces it.
        if (fds[kResumeSlot].revents & POLLIN)
            acceptResume();
    }
}

// ---------------------------------------------------------------------------------------------
// Daemon socket

void Guest::send(std::string frame)
{
    if (!connected())
        return;
    m_out.pushCopy(frame);
    flushSocket();
}

void Guest::flushSocket()
{
    if (connected() && !m_out.flush(m_sock))
        daemonGone();
}

void Guest::daemonGone()
{
    if (!resumable()) {
        logv("daemon connection closed; killing all processes");
        killAll();
        std::exit(0);
    }
    if (!m_lost)
        logv("daemon connection closed; everything keeps running until a daemon resumes");
    // Not dropped here: the caller may be in the middle of the connection's buffers.
    m_lost = true;
}

void Guest::dropConnection()
{
    if (m_sock >= 0)
        close(m_sock);
    m_sock = -1;
    m_lost = false;
    m_out.clear();
    m_inLen = m_inOff = 0;
    if (m_tools)
        m_tools->setDaemonAway(true);
    m_reconnectDelayMs = wire::kReconnectFirstMs;
    m_reconnectAtMs = monotonicMs() + m_reconnectDelayMs;
}

void Guest::acceptResume()
{
    const int conn = accept4(m_resumeFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0)
        return;
    // As PID 1 we are in the sandbox's PID namespace, where the daemon has no pid: a peer with one
    // is a process of the sandbox. (A guest run on a host, in tests, cannot tell them apart.)
    if (getpid() == 1 && !peerOutsideSandbox(conn)) {
        logv("resume connection from inside the sandbox refused");
        close(conn);
        return;
    }
    // A daemon resumes only once the one before it is gone (it holds the instance lock when it
    // starts): while the connected one is there, nothing takes its place.
    // (Gone is its end closed: what it sent before it died may still wait unread.)
    if (m_sock >= 0 && !m_lost) {
        pollfd p{m_sock, POLLRDHUP, 0};
        if (poll(&p, 1, 0) == 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            logv("resume connection refused: a daemon is connected");
            close(conn);
            return;
        }
    }
    takeResume(conn);
}

int Guest::reconnectIfDue()
{
    if (m_resumeSocket.empty() || m_sock >= 0)
        return -1;
    const int64_t now = monotonicMs();
    if (now < m_reconnectAtMs)
        return static_cast<int>(m_reconnectAtMs - now);
    m_reconnectDelayMs = std::min(m_reconnectDelayMs * 2, wire::kReconnectMostMs);
    m_reconnectAtMs = now + m_reconnectDelayMs;
    // Only a daemon can be listening there (its folder is the daemon's, mounted read-only): no
    // answer, or none yet, is the usual case while it is away.
    const int conn = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, m_resumeSocket.c_str(), m_resumeSocket.size());
    if (conn < 0 || connect(conn, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) != 0) {
        if (conn >= 0)
            close(conn);
        return m_reconnectDelayMs;
    }
    logv("a daemon listens on %s: proving ourselves", m_resumeSocket.c_str());
    OutQueue proof(64);
    proof.pushCopy(wire::Writer(wire::Type::Reconnect).bytes(m_resumeToken).u32(wire::kProtocolVersion).take());
    proof.flushBlocking(conn, wire::kResumeFrameTimeoutMs);
    if (!proof.empty()) {
        close(conn);
        return m_reconnectDelayMs;
    }
    takeResume(conn);
    return m_sock >= 0 ? -1 : m_reconnectDelayMs;
}

void Guest::takeResume(int conn)
{
    // Descriptors come with Resume only where the daemon hands sockets over (not under gVisor).
    const size_t expectedFds = !m_resumeSocket.empty() ? 0 : m_proxyListenFd >= 0 ? 2 : 1;
    ResumeRequest req = readResume(conn, m_resumeToken, expectedFds);
    if (!req.error.empty()) {
        logv("resume connection refused: %s", req.error.c_str());
        close(conn);
        return;
    }
    if (req.protocolVersion != wire::kProtocolVersion) {
        logv("resume with protocol %u refused: ours is %u", req.protocolVersion, wire::kProtocolVersion);
        OutQueue answer(64);
        answer.pushCopy(wire::Writer(wire::Type::Resumed)
                            .u32(wire::kProtocolVersion)
                            .i32(m_landlockAbi)
                            .u32(static_cast<uint32_t>(getpid()))
                            .u32(0)
                            .take());
        answer.flushBlocking(conn, wire::kResumeFrameTimeoutMs);
        close(conn);
        return;
    }
    adopt(conn, req);
}

void Guest::adopt(int conn, ResumeRequest &req)
{
    // The daemon that resumes holds the instance lock: whoever was connected is gone.
    logv("resumed by a daemon asking about %zu executions", req.execs.size());
    dropConnection();
    if (!req.fds.empty()) {
        if (m_execCheckFd >= 0)
            close(m_execCheckFd);
        m_execCheckFd = req.fds[0];
    }
    if (req.fds.size() > 1) {
        if (m_proxyFd >= 0)
            close(m_proxyFd);
        m_proxyFd = req.fds[1];
    }
    req.fds.clear();
    m_sock = conn;
    setsockopt(m_sock, SOL_SOCKET, SO_SNDBUF, &kSocketSendBuffer, sizeof kSocketSendBuffer);
    if (m_tools)
        m_tools->setDaemonAway(false);

    m_retention->resume(req.execs, m_landlockAbi, [this](std::string frame) { m_out.pushCopy(frame); });
    flushSocket();
    handExecChecks();
}

void Guest::protocolViolation(const std::string &what)
{
    const std::string message = "protocol violation: " + what;
    logv("%s", message.c_str());
    m_out.pushCopy(wire::Writer(wire::Type::Fatal).str(message).take());
    m_out.flushBlocking(m_sock, 2000);
    killAll();
    std::exit(2);
}

void Guest::readSocket()
{
    // Keep room for one whole maximal frame plus a large read.
    if (m_inOff > 0) {
        std::memmove(m_in.data(), m_in.data() + m_inOff, m_inLen - m_inOff);
        m_inLen -= m_inOff;
        m_inOff = 0;
    }
    if (m_in.size() - m_inLen < kSocketReadSize)
        m_in.resize(m_inLen + kSocketReadSize);

    const ssize_t n = read(m_sock, m_in.data() + m_inLen, m_in.size() - m_inLen);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        daemonGone();
        return;
    }
    m_inLen += static_cast<size_t>(n);

    // A frame's answer can find the daemon gone: the frames after it are not for anyone.
    while (connected() && m_inLen - m_inOff >= wire::kHeaderSize) {
        const auto h = wire::peekHeader(m_in.data() + m_inOff, m_inLen - m_inOff);
        if (h->payloadLen > wire::kMaxPayload)
            protocolViolation("frame payload of " + std::to_string(h->payloadLen) + " bytes exceeds the limit");
        switch (h->type) {
        case wire::Type::Spawn:
        case wire::Type::Stdin:
        case wire::Type::Signal:
        case wire::Type::Resize:
        case wire::Type::ToolResult:
        case wire::Type::Ack:
            break;
        default:
            protocolViolation("unknown frame type " + std::to_string(static_cast<unsigned>(h->type)));
        }
        const size_t frameSize = wire::kHeaderSize + h->payloadLen;
        if (m_inLen - m_inOff < frameSize)
            break;
        handleFrame(h->type, m_in.data() + m_inOff + wire::kHeaderSize, h->payloadLen);
        m_inOff += frameSize;
    }
    if (m_inOff == m_inLen)
        m_inOff = m_inLen = 0;
    // Don't hold on to a buffer grown for one huge frame.
    if (m_inLen == 0 && m_in.size() > 2 * kSocketReadSize) {
        m_in.resize(kSocketReadSize);
        m_in.shrink_to_fit();
    }
}

void Guest::handleFrame(wire::Type type, const char *payload, uint32_t len)
{
    wire::Reader r(payload, len);
    const auto finished = [&] {
        if (r.failed())
            protocolViolation(std::string("truncated ") + typeName(type) + " frame");
        if (!r.atEnd())
            protocolViolation(std::string("trailing bytes in ") + typeName(type) + " frame");
    };

    switch (type) {
    case wire::Type::Spawn: {
        SpawnRequest req;
        req.execId = r.u32();
        req.flags = r.u8();
        req.rows = r.u16();
        req.cols = r.u16();
        req.cpuSeconds = r.u64();
        req.fileSizeBytes = r.u64();
        req.openFiles = r.u64();
        req.timeoutMs = r.u64();
        const std::string_view cwd = r.str();
        if (hasNul(cwd))
            protocolViolation("NUL byte in Spawn cwd");
        req.cwd = cwd;
        const uint32_t argc = r.u32();
        if (argc > wire::kMaxArgs)
            protocolViolation("Spawn argc " + std::to_string(argc) + " exceeds the limit");
        for (uint32_t i = 0; i < argc && !r.failed(); ++i) {
            const std::string_view a = r.str();
            if (hasNul(a))
                protocolViolation("NUL byte in Spawn argv");
            req.argv.emplace_back(a);
        }
        const uint32_t envc = r.u32();
        if (!r.failed() && envc > wire::kMaxEnv)
            protocolViolation("Spawn envc " + std::to_string(envc) + " exceeds the limit");
        for (uint32_t i = 0; i < envc && !r.failed(); ++i) {
            const std::string_view e = r.str();
            if (r.failed())
                break;
            if (hasNul(e))
                protocolViolation("NUL byte in Spawn env");
            if (e.find('=') == std::string_view::npos)
                protocolViolation("Spawn env entry without '='");
            req.env.emplace_back(e);
        }
        finished();
        handleSpawn(req);
        break;
    }
    case wire::Type::Stdin: {
        const uint32_t id = r.u32();
        const std::string_view data = r.rest();
        finished();
        handleStdin(id, data);
        break;
    }
    case wire::Type::Signal: {
        const uint32_t id = r.u32();
        const int32_t signo = r.i32();
        finished();
        handleSignal(id, signo);
        break;
    }
    case wire::Type::Resize: {
        const uint32_t id = r.u32();
        const uint16_t rows = r.u16();
        const uint16_t cols = r.u16();
        finished();
        handleResize(id, rows, cols);
        break;
    }
    case wire::Type::ToolResult: {
        const uint32_t id = r.u32();
        const uint8_t ok = r.u8();
        const std::string_view body = r.rest();
        finished();
        if (m_tools)
            m_tools->onResult(id, ok != 0, body);
        break;
    }
    case wire::Type::Ack: {
        const uint32_t id = r.u32();
        const uint8_t stream = r.u8();
        const uint64_t offset = r.u64();
        finished();
        if (stream > wire::StreamStderr)
            protocolViolation("Ack of stream " + std::to_string(stream));
        if (m_retention)
            m_retention->ack(id, stream, offset);
        break;
    }
    default:
        protocolViolation("unknown frame type");
    }
}

void Guest::handleSpawn(const SpawnRequest &req)
{
    const auto refuse = [&](int err, const std::string &message) {
        logv("spawn %u failed: %s", req.execId, message.c_str());
        send(wire::Writer(wire::Type::SpawnFailed).u32(req.execId).i32(err).str(message).take());
    };
    if (m_execs.count(req.execId)) {
        refuse(EINVAL, "execution id " + std::to_string(req.execId) + " is already in use");
        return;
    }
    if (req.argv.empty()) {
        refuse(EINVAL, "empty argument list");
        return;
    }

    SpawnRequest preloaded;
    if (!m_preload.empty()) {
        preloaded = req;
        std::string value = m_preload;
        for (auto it = preloaded.env.begin(); it != preloaded.env.end(); ++it)
            if (it->starts_with("LD_PRELOAD=")) {
                value += ' ' + it->substr(11);
                preloaded.env.erase(it);
                break;
            }
        preloaded.env.push_back("LD_PRELOAD=" + value);
    }
    SpawnResult res = spawnProcess(m_preload.empty() ? req : preloaded, m_execCheckFd, m_vforkMain);
    if (res.err != 0) {
        refuse(res.err, res.message);
        return;
    }
    Execution e;
    e.id = req.execId;
    e.pid = res.process.pid;
    e.shepherd = res.process.shepherd;
    e.exitFd = res.process.exitFd;
    e.start = res.process.start;
    if (req.timeoutMs > 0) // (bounded, so that no sum overflows)
        e.deadlineMs = toMs(e.start) + static_cast<int64_t>(std::min<uint64_t>(req.timeoutMs, uint64_t(1) << 50))
            + wire::kDeadlineGraceMs;
    e.execCheck = res.process.execCheck;
    m_shepherds.insert(e.shepherd);
    if (res.process.ptyFd >= 0) {
        e.tty = true;
        e.ptyFd = res.process.ptyFd;
        e.outFd = e.ptyFd;
        e.inFd = (req.flags & wire::SpawnStdin) ? e.ptyFd : -1;
    } else {
        e.outFd = res.process.stdoutFd;
        e.errFd = res.process.stderrFd;
        e.inFd = res.process.stdinFd;
    }
    if (m_retention)
        m_retention->started(e.id, e.pid);
    m_execs.emplace(e.id, std::move(e));
    logv("spawn %u: pid %d %s%s", req.execId, res.process.pid, req.argv.front().c_str(),
        res.process.ptyFd >= 0 ? " (tty)" : "");
    send(wire::Writer(wire::Type::Started).u32(req.execId).i32(res.process.pid).take());
}

void Guest::handleStdin(uint32_t execId, std::string_view data)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end() || it->second.inFd < 0 || (it->second.stdinEof && !it->second.tty)) {
        // Already exited, stdin closed, or spawned without stdin: nobody to deliver to. Still
        // consumed, so that the daemon's window moves on.
        // An EOF counts as one byte of the window (on a tty it is the ^D written below).
        send(wire::Writer(wire::Type::StdinConsumed)
                 .u32(execId)
                 .u32(static_cast<uint32_t>(std::max<size_t>(data.size(), 1)))
                 .take());
        return;
    }
    Execution &e = it->second;
    if (e.stdinOff > 0 && e.stdinOff == e.stdinBuf.size()) {
        e.stdinBuf.clear();
        e.stdinOff = 0;
    }
    if (data.empty()) {
        // A terminal has no half-close; ^D is what a user would type for end of input.
        if (e.tty) {
            e.stdinBuf.push_back('\x04');
        } else {
            e.stdinEof = true;
            send(wire::Writer(wire::Type::StdinConsumed).u32(execId).u32(1).take());
        }
    } else {
        e.stdinBuf.append(data);
    }
    flushStdin(e);
}

void Guest::handleSignal(uint32_t execId, int32_t signo)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end())
        return;
    if (signo < 1 || signo > 64) {
        logv("ignoring invalid signal %d for execution %u", signo, execId);
        return;
    }
    // A kill (timeout, cancel, lease, output limit) is for the whole execution; other signals go
    // to the process group, as a terminal would send them, and the command decides.
    if (signo == SIGKILL) {
        killExecution(it->second);
        return;
    }
    if (kill(-it->second.pid, signo) != 0)
        logv("kill(-%d, %d) failed: %s", it->second.pid, signo, std::strerror(errno));
}

void Guest::handleResize(uint32_t execId, uint16_t rows, uint16_t cols)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end() || it->second.ptyFd < 0)
        return;
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    ioctl(it->second.ptyFd, TIOCSWINSZ, &ws);
}

// ---------------------------------------------------------------------------------------------
// Executions

void Guest::closeExecFd(Execution &e, int &fd)
{
    if (fd >= 0 && fd != e.ptyFd)
        close(fd);
    fd = -1;
}

size_t Guest::readOutput(Execution &e, int &fd, uint8_t stream)
{
    OutQueue::Buffer buf = m_out.acquire();
    ssize_t n;
    do {
        n = read(fd, buf.data.get() + kOutputPrefix, wire::kMaxOutputChunk);
    } while (n < 0 && errno == EINTR);

    if (n > 0) {
        const uint64_t ns = unixTimeNs();
        const auto size = static_cast<size_t>(n);
        if (m_retention)
            m_retention->add(e.id, stream, {buf.data.get() + kOutputPrefix, size}, ns, !connected());
        if (!connected()) {
            m_out.release(std::move(buf));
            return size;
        }
        char *p = buf.data.get();
        wire::writeHeader(p, wire::Type::Output, static_cast<uint32_t>(kOutputFixed + size));
        p += wire::kHeaderSize;
        std::memcpy(p, &e.id, 4);
        p[4] = static_cast<char>(stream);
        std::memcpy(p + 5, &ns, 8);
        buf.len = kOutputPrefix + size;
        m_out.push(std::move(buf));
        return size;
    }
    m_out.release(std::move(buf));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    // EOF, or EIO from a pty master once every slave fd is closed.
    closeExecFd(e, fd);
    return 0;
}

void Guest::drainOutput(Execution &e, int &fd, uint8_t stream)
{
    for (size_t drained = 0; fd >= 0 && drained < kMaxDrainPerFd;) {
        const size_t n = readOutput(e, fd, stream);
        if (n == 0)
            break; // finished, or nothing more readable right now
        drained += n;
    }
}

void Guest::flushStdin(Execution &e)
{
    size_t consumed = 0;
    // Tell the daemon how far it may send (wire::kStdinWindow); a tty's ^D is the one byte the
    // daemon counts for an EOF.
    auto report = [&] {
        if (consumed > 0)
            send(wire::Writer(wire::Type::StdinConsumed).u32(e.id).u32(static_cast<uint32_t>(consumed)).take());
    };
    while (e.inFd >= 0 && e.stdinOff < e.stdinBuf.size()) {
        const ssize_t n = write(e.inFd, e.stdinBuf.data() + e.stdinOff, e.stdinBuf.size() - e.stdinOff);
        if (n > 0) {
            e.stdinOff += static_cast<size_t>(n);
            consumed += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            // EPIPE: the reader is gone; nothing written later could be delivered either.
            consumed += e.stdinBuf.size() - e.stdinOff;
            e.stdinBuf.clear();
            e.stdinOff = 0;
            closeExecFd(e, e.inFd);
            report();
            return;
        }
    }
    report();
    if (e.stdinOff == e.stdinBuf.size()) {
        e.stdinBuf.clear();
        e.stdinOff = 0;
        if (e.stdinEof)
            closeExecFd(e, e.inFd);
    } else if (e.stdinOff > 1024 * 1024 && e.stdinOff > e.stdinBuf.size() / 2) {
        e.stdinBuf.erase(0, e.stdinOff);
        e.stdinOff = 0;
    }
}

size_t Guest::pendingStdinBytes() const
{
    size_t total = 0;
    for (const auto &[id, e] : m_execs)
        total += e.stdinBuf.size() - e.stdinOff;
    return total;
}

void Guest::acceptEgress()
{
    // Each connection goes to the daemon as it is: the proxy reads the request, decides and relays.
    // Nothing of it is read here (nor by the EgressRelay), so nothing here can be fooled by it.
    for (int i = 0; i < 64; ++i) {
        const int fd = accept4(m_proxyListenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (!connected()) { // no proxy to judge it until a daemon resumes: refused
            close(fd);
            continue;
        }
        if (m_relay) { // gVisor: relayed to the daemon's egress socket
            if (const std::string error = m_relay->add(fd); !error.empty())
                logv("egress connection dropped: %s", error.c_str());
            continue;
        }
        const char byte = 'c';
        if (!sendFd(m_proxyFd, &byte, 1, fd, MSG_DONTWAIT))
            logv("egress connection dropped: %s", std::strerror(errno));
        close(fd); // the daemon holds its own copy now (or the connection is reset)
    }
}

} // namespace airlock::guest
