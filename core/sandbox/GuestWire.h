// SPDX-License-Identifier: Apache-2.0
// The daemon <-> airlock-guest wire format. Plain C++ (no Qt): the guest includes it too.
//
// Every frame is: u32 payload length (little endian) | u8 type | payload.
// Integers are little endian; a "str" is u32 length + bytes; "bytes" is the rest of the payload.
// The guest is untrusted: the daemon decodes every guest frame with GuestReader, which bounds-checks
// every field and reports a typed failure instead of reading past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::wire {

inline constexpr uint32_t kProtocolVersion = 4;
inline constexpr uint32_t kHeaderSize = 5;
inline constexpr uint32_t kMaxPayload = 1024 * 1024; // hard limit in both directions
inline constexpr uint32_t kMaxOutputChunk = 256 * 1024; // guest never sends more output per frame
inline constexpr uint32_t kMaxArgs = 4096;
inline constexpr uint32_t kMaxEnv = 4096;
inline constexpr uint32_t kStdinWindow = 1024 * 1024;
inline constexpr uint32_t kMaxToolRequest = 256 * 1024; // one airlock-tool call, as JSON
inline constexpr uint32_t kMaxToolCalls = 16; // in flight per sandbox
// Resume: the secret a daemon proves itself with, the executions it asks about, how long the
// guest waits for a Resume frame on a connection it accepted.
inline constexpr uint32_t kResumeTokenSize = 32;
inline constexpr uint32_t kMaxResumeExecs = 4096;
inline constexpr int kResumeFrameTimeoutMs = 2000;
// gVisor: a guest whose daemon went tries the resume socket (--resume-socket) again after this
// long, twice as long after each try that finds no daemon, up to the most (the longest a daemon
// that is back waits for it). The token comes first on its channel, raw, before any frame.
inline constexpr int kReconnectFirstMs = 50;
inline constexpr int kReconnectMostMs = 500;
// Output the guest keeps until the daemon says it is stored (Ack): while connected, past this many
// unacknowledged bytes the guest stops reading its executions' output (backpressure); while no
// daemon is connected it keeps reading and counts what does not fit as a gap.
inline constexpr uint64_t kRetainedOutputLimit = 16 * 1024 * 1024;
// Executions that ended with no daemon to hear it (or before it stored their exit): kept for the
// next daemon, at most this many (the oldest is forgotten first: that daemon calls it interrupted).
inline constexpr uint32_t kMaxFinishedKept = 1024;
// How long after an execution's deadline (Spawn's timeoutMs, from the guest's spawn) the guest kills
// it itself. The daemon's timer runs from before the Spawn and kills at the deadline; the guest's
// comes later, so a daemon that is there and answering is the one that kills (its timing, its
// reason), and the guest's is what holds while no daemon is, or while one is connected but stalled.
inline constexpr uint32_t kDeadlineGraceMs = 1000;

enum class Type : uint8_t {
    // daemon -> guest
    Spawn = 0x01, // u32 execId, u8 flags, u16 rows, u16 cols, u64 cpuSeconds, u64 fileSizeBytes,
    // u64 openFiles (0 = unset), u64 timeoutMs (0 = none; see kDeadlineGraceMs), str cwd, u32 argc,
    // str argv[argc], u32 envc, str env[envc]
    Stdin = 0x02, // u32 execId, bytes data (empty = close stdin)
    Signal = 0x03, // u32 execId, i32 signo (SIGKILL: to every process of the execution, the
    // background it started included; others: to its process group)
    Resize = 0x04, // u32 execId, u16 rows, u16 cols
    ToolResult = 0x05, // u32 callId, u8 ok, bytes (the result as JSON, or "CODE message" when not ok)
    // The first frame on a connection the guest accepted on its resume socket (--resume-fd), or
    // under gVisor the answer to its Reconnect, and only there: a daemon that started after the one
    // that launched the sandbox takes it over.
    // bytes[kResumeTokenSize] token (from --resume-token-fd), u32 protocolVersion, u8 fdCount,
    // u32 count, count x {u32 execId, u64 stdoutOffset, u64 stderrOffset}.
    // The frame's first byte carries fdCount descriptors (SCM_RIGHTS): the new exec-check socket
    // (replaces --exec-fd) and, for an allowlist sandbox, the new proxy socket (replaces --proxy-fd).
    // The executions are those the daemon believes running, with how much of each stream it has
    // stored: the guest sends their output again from there on.
    Resume = 0x06,
    // u32 execId, u8 stream (1, 2: output up to offset is stored; 0: the exit is stored), u64 offset.
    // The guest forgets what is acknowledged.
    Ack = 0x07,

    // guest -> daemon
    Hello = 0x81, // u32 protocolVersion, i32 landlockAbi, u32 guestPid
    Started = 0x82, // u32 execId, i32 pid (inside the sandbox)
    Output = 0x83, // u32 execId, u8 stream (1 stdout, 2 stderr), u64 unixTimeNs, bytes data
    Exited = 0x84, // u32 execId, u8 how (0 exited, 1 signaled), i32 code, u64 durationUs,
    // u64 userUs, u64 systemUs, u64 maxRssKb, u8 flags (ExitFlags)
    SpawnFailed = 0x85, // u32 execId, i32 errnum, str message
    Fatal = 0x86, // str message: the guest could not set up the boundary and is exiting
    StdinConsumed = 0x87, // u32 execId, u32 bytes: stdin written to the process (or discarded);
    // the daemon keeps at most kStdinWindow bytes unconsumed per execution,
    // so stdin never clogs the socket that also carries Signal frames
    ToolCall = 0x88, // u32 callId, bytes request: {"tool": NAME, "arguments": {...}} from airlock-tool,
    // passed on unread (the daemon parses and validates it)
    // The answer to Resume, first on the new connection: u32 protocolVersion, i32 landlockAbi,
    // u32 guestPid, u32 count, count x {u32 execId, u8 state (ResumeState), i32 pid,
    // u64 stdoutFrom, u64 stderrFrom}: every execution the daemon asked about and every one the
    // guest runs or ran that it did not ask about, with the offsets its replay starts at (the
    // offsets asked for, or further on where the daemon acknowledged more than it asks for; the
    // guest never reports acknowledged bytes as a gap). Then, per execution, Gap and Output frames
    // from those offsets, and Exited for a finished one, as if live.
    Resumed = 0x89,
    // u32 execId, u8 stream, u64 offset, u64 bytes: output at offset, this many bytes, was read
    // while no daemon was connected and did not fit (kRetainedOutputLimit); it is lost.
    Gap = 0x8A,
    // gVisor (--resume-socket): the first frame on a connection the guest made to a later daemon's
    // resume socket, and only there: bytes[kResumeTokenSize] token, u32 protocolVersion. The daemon
    // answers a guest that proved itself so with Resume (fdCount 0), and the rest goes as above.
    Reconnect = 0x8B,
};

enum ResumeState : uint8_t { ResumeRunning = 0, ResumeFinished = 1, ResumeUnknown = 2 };

// SpawnJudged: the process gets a seccomp filter that stops every execve/execveat for the daemon
// to judge; the guest hands its listener over the exec-check socket (--exec-fd), one
// SOCK_SEQPACKET message per execution: u32 execId, the listener as SCM_RIGHTS.
enum SpawnFlags : uint8_t { SpawnTty = 0x01, SpawnStdin = 0x02, SpawnJudged = 0x04 };
enum Stream : uint8_t { StreamStdout = 1, StreamStderr = 2 };
enum ExitHow : uint8_t { ExitedNormally = 0, ExitedBySignal = 1 };
// ExitTimedOut: the guest killed the execution itself, at its deadline (Spawn's timeoutMs) plus
// kDeadlineGraceMs, no daemon having killed it before (it was away, or did not act in time).
enum ExitFlags : uint8_t { ExitTimedOut = 0x01 };

// ---- encoding ----
class Writer {
public:
    explicit Writer(Type type)
    {
        m_buf.resize(kHeaderSize);
        m_buf[4] = static_cast<char>(type);
    }
    Writer &u8(uint8_t v)
    {
        m_buf.push_back(static_cast<char>(v));
        return *this;
    }
    Writer &u16(uint16_t v) { return raw(&v, 2); }
    Writer &u32(uint32_t v) { return raw(&v, 4); }
    Writer &i32(int32_t v) { return raw(&v, 4); }
    Writer &u64(uint64_t v) { return raw(&v, 8); }
    Writer &str(std::string_view s)
    {
        u32(static_cast<uint32_t>(s.size()));
        m_buf.append(s.data(), s.size());
        return *this;
    }
    Writer &bytes(std::string_view s)
    {
        m_buf.append(s.data(), s.size());
        return *this;
    }
    // Finishes the header; returns the complete frame.
    std::string take()
    {
        const auto len = static_cast<uint32_t>(m_buf.size() - kHeaderSize);
        std::memcpy(m_buf.data(), &len, 4); // x86_64/aarch64: little endian
        return std::move(m_buf);
    }

private:
    Writer &raw(const void *p, size_t n)
    {
        m_buf.append(static_cast<const char *>(p), n);
        return *this;
    }
    std::string m_buf;
};

// Writes a frame header in place (used for zero-copy output frames).
inline void writeHeader(char *dst, Type type, uint32_t payloadLen)
{
    std::memcpy(dst, &payloadLen, 4);
    dst[4] = static_cast<char>(type);
}

// ---- decoding (bounds-checked; any overrun sets failed()) ----
class Reader {
public:
    Reader(const char *data, size_t size)
        : m_p(data)
        , m_end(data + size)
    {
    }
    bool failed() const { return m_failed; }
    bool atEnd() const { return m_p == m_end; }
    size_t remaining() const { return static_cast<size_t>(m_end - m_p); }

    uint8_t u8()
    {
        uint8_t v = 0;
        raw(&v, 1);
        return v;
    }
    uint16_t u16()
    {
        uint16_t v = 0;
        raw(&v, 2);
        return v;
    }
    uint32_t u32()
    {
        uint32_t v = 0;
        raw(&v, 4);
        return v;
    }
    int32_t i32()
    {
        int32_t v = 0;
        raw(&v, 4);
        return v;
    }
    uint64_t u64()
    {
        uint64_t v = 0;
        raw(&v, 8);
        return v;
    }
    std::string_view str()
    {
        const uint32_t n = u32();
        if (m_failed || n > remaining()) {
            m_failed = true;
            return {};
        }
        std::string_view s(m_p, n);
        m_p += n;
        return s;
    }
    std::string_view rest()
    {
        std::string_view s(m_p, remaining());
        m_p = m_end;
        return s;
    }

private:
    void raw(void *dst, size_t n)
    {
        if (m_failed || n > remaining()) {
            m_failed = true;
            return;
        }
        std::memcpy(dst, m_p, n);
        m_p += n;
    }
    const char *m_p;
    const char *m_end;
    bool m_failed = false;
};

// Parsed header of a frame at the start of a buffer, if complete enough to know its length.
struct Header {
    uint32_t payloadLen;
    Type type;
};
inline std::optional<Header> peekHeader(const char *data, size_t size)
{
    if (size < kHeaderSize)
        return std::nullopt;
    Header h{};
    std::memcpy(&h.payloadLen, data, 4);
    h.type = static_cast<Type>(static_cast<uint8_t>(data[4]));
    return h;
}

} // namespace airlock::wire
