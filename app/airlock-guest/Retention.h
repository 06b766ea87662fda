// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "Resume.h"

#include "sandbox/GuestWire.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace airlock::guest {

// What a daemon has not stored yet, kept so that the next daemon can take the sandbox over
// (wire::Type::Resume): every execution's output from the last acknowledged offset on, and the
// exit of every execution that ended before a daemon acknowledged it.
//
// An offset is the number of bytes read so far from that stream of that execution; the daemon
// counts its Output frames the same way. Each stream is a run of pieces in offset order: bytes
// read, or a gap where bytes were read with no daemon connected and did not fit.
//
// What holds while no daemon is connected: an execution's timeout, because the guest kills at its
// deadline itself (Guest::killOverdue; the replayed Exited says so). Its output limit does not: the
// guest is not told it, and what it keeps is bounded here anyway (kRetainedOutputLimit over all
// executions, the rest a gap), so a command that writes on while the daemon is away runs on. The
// next daemon applies the limit to the replay as if live: a command still running past it is
// killed then (reason output_limit); one that ended meanwhile is recorded truncated, with its own
// exit.
class Retention {
public:
    using Send = std::function<void(std::string frame)>;

    // An execution that was started: its output is kept from now on (replaces a finished one
    // of the same id, which the daemon gave up on by reusing the id).
    void started(uint32_t execId, pid_t pid);
    // Bytes read from `stream` of an execution. With `detached` (no daemon connected), bytes past
    // kRetainedOutputLimit are dropped and counted as a gap, and once a stream is in a gap all its
    // bytes are, until the next resume(): what is kept stays contiguous. Connected, everything is kept
    // (the caller stops reading at the limit instead).
    void add(uint32_t execId, uint8_t stream, std::string_view data, uint64_t unixTimeNs, bool detached);
    // The execution ended; `exitedFrame` (wire::Type::Exited) is kept until acknowledged. Beyond
    // kMaxFinishedKept finished executions the oldest is forgotten.
    void finished(uint32_t execId, std::string exitedFrame);
    // wire::Type::Ack: stream 1 or 2 forgets that stream's bytes before `offset` (clamped to what
    // was read); stream 0 forgets a finished execution entirely.
    void ack(uint32_t execId, uint8_t stream, uint64_t offset);

    // The answer to a Resume: the Resumed frame (every execution asked about, then every one kept
    // that was not), then per execution its Output and Gap frames from the offsets asked for (never
    // before the first byte kept, nor past the bytes read; from the first byte kept when not asked
    // about) and its Exited frame if it finished. Streams in a gap keep their bytes again.
    void resume(const std::vector<ResumeRequest::Exec> &asked, int32_t landlockAbi, const Send &send);

    // Bytes kept and not acknowledged, over all executions.
    uint64_t bytes() const { return m_bytes; }

private:
    struct Piece {
        uint64_t offset = 0;
        uint64_t unixTimeNs = 0; // when its first byte was read
        std::string data; // empty for a gap
        uint64_t gap = 0; // bytes lost at offset
        uint64_t size() const { return data.empty() ? gap : data.size(); }
    };
    struct Stream {
        std::deque<Piece> pieces; // the first may begin before `start`
        uint64_t start = 0; // acknowledged before this
        uint64_t end = 0; // bytes read so far
        bool inGap = false;
        // Forgets what lies before `offset`; returns how many kept bytes that was.
        uint64_t trim(uint64_t offset);
    };
    struct Record {
        pid_t pid = -1;
        std::array<Stream, 2> streams; // stdout (or the pty), stderr
        std::string exited; // set once finished
        uint64_t finishedSeq = 0;
    };
    void forget(std::map<uint32_t, Record>::iterator it);
    // Running (with its pid), finished (with the pid it had) or unknown (pid 0).
    std::pair<wire::ResumeState, pid_t> state(uint32_t execId) const;
    void replay(uint32_t execId, const std::array<uint64_t, 2> &from, const Send &send) const;

    std::map<uint32_t, Record> m_records;
    std::map<uint64_t, uint32_t> m_finishedOrder; // finishedSeq -> execId, oldest first
    uint64_t m_nextFinishedSeq = 1;
    uint64_t m_bytes = 0;
};

} // namespace airlock::guest
