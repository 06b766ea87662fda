// SPDX-License-Identifier: Apache-2.0
#include "Retention.h"

#include <algorithm>
#include <unistd.h>

namespace airlock::guest {
namespace {

// Reads made close together share a piece (and its time), so that a process writing a byte at a
// time does not cost a piece per byte. A piece is replayed as one Output frame.
constexpr size_t kMaxPieceBytes = wire::kMaxOutputChunk;
constexpr uint64_t kCoalesceNs = 1000000000;

} // namespace

uint64_t Retention::Stream::trim(uint64_t offset)
{
    offset = std::min(offset, end);
    if (offset <= start)
        return 0;
    uint64_t released = 0;
    while (!pieces.empty()) {
        const Piece &p = pieces.front();
        const uint64_t from = std::max(p.offset, start);
        const uint64_t pieceEnd = p.offset + p.size();
        const uint64_t to = std::min(pieceEnd, offset);
        if (!p.data.empty() && to > from)
            released += to - from;
        if (pieceEnd > offset)
            break;
        pieces.pop_front();
    }
    start = offset;
    return released;
}

void Retention::started(uint32_t execId, pid_t pid)
{
    if (auto it = m_records.find(execId); it != m_records.end())
        forget(it);
    m_records[execId].pid = pid;
}

void Retention::add(uint32_t execId, uint8_t stream, std::string_view data, uint64_t unixTimeNs, bool detached)
{
    auto it = m_records.find(execId);
    if (it == m_records.end() || data.empty() || stream < wire::StreamStdout || stream > wire::StreamStderr)
        return;
    Stream &s = it->second.streams[stream - 1];
    const uint64_t offset = s.end;
    s.end += data.size();

    uint64_t keep = data.size();
    if (detached)
        keep = s.inGap ? 0 : std::min(keep, wire::kRetainedOutputLimit - std::min(m_bytes, wire::kRetainedOutputLimit));
    if (keep > 0) {
        Piece *back = s.pieces.empty() ? nullptr : &s.pieces.back();
        if (back && !back->data.empty() && back->data.size() + keep <= kMaxPieceBytes
            && unixTimeNs - back->unixTimeNs < kCoalesceNs)
            back->data.append(data.data(), keep);
        else
            s.pieces.push_back({offset, unixTimeNs, std::string(data.substr(0, keep)), 0});
        m_bytes += keep;
    }
    if (keep < data.size()) {
        const uint64_t lost = data.size() - keep;
        if (s.inGap) {
            s.pieces.back().gap += lost;
        } else {
            s.pieces.push_back({offset + keep, unixTimeNs, {}, lost});
            s.inGap = true;
        }
    }
}

void Retention::finished(uint32_t execId, std::string exitedFrame)
{
    auto it = m_records.find(execId);
    if (it == m_records.end())
        return;
    it->second.exited = std::move(exitedFrame);
    it->second.finishedSeq = m_nextFinishedSeq++;
    m_finishedOrder.emplace(it->second.finishedSeq, execId);
    while (m_finishedOrder.size() > wire::kMaxFinishedKept)
        forget(m_records.find(m_finishedOrder.begin()->second));
}

void Retention::ack(uint32_t execId, uint8_t stream, uint64_t offset)
{
    auto it = m_records.find(execId);
    if (it == m_records.end())
        return;
    if (stream == 0) {
        if (!it->second.exited.empty()) // a running execution's exit cannot be stored yet
            forget(it);
        return;
    }
    if (stream <= it->second.streams.size())
        m_bytes -= it->second.streams[stream - 1].trim(offset);
}

void Retention::forget(std::map<uint32_t, Record>::iterator it)
{
    for (Stream &s : it->second.streams)
        m_bytes -= s.trim(s.end);
    if (!it->second.exited.empty())
        m_finishedOrder.erase(it->second.finishedSeq);
    m_records.erase(it);
}

std::pair<wire::ResumeState, pid_t> Retention::state(uint32_t execId) const
{
    const auto it = m_records.find(execId);
    if (it == m_records.end())
        return {wire::ResumeUnknown, 0};
    return {it->second.exited.empty() ? wire::ResumeRunning : wire::ResumeFinished, it->second.pid};
}

void Retention::replay(uint32_t execId, const std::array<uint64_t, 2> &from, const Send &send) const
{
    const auto it = m_records.find(execId);
    if (it == m_records.end())
        return;
    for (uint8_t stream = wire::StreamStdout; stream <= wire::StreamStderr; ++stream) {
        const Stream &s = it->second.streams[stream - 1];
        const uint64_t begin = std::clamp(from[stream - 1], s.start, s.end);
        for (const Piece &p : s.pieces) {
            if (p.offset + p.size() <= begin)
                continue;
            const uint64_t skip = begin > p.offset ? begin - p.offset : 0;
            if (p.data.empty())
                send(
                    wire::Writer(wire::Type::Gap).u32(execId).u8(stream).u64(p.offset + skip).u64(p.gap - skip).take());
            else
                send(wire::Writer(wire::Type::Output)
                         .u32(execId)
                         .u8(stream)
                         .u64(p.unixTimeNs)
                         .bytes(std::string_view(p.data).substr(skip))
                         .take());
        }
    }
    if (!it->second.exited.empty())
        send(it->second.exited);
}

void Retention::resume(const std::vector<ResumeRequest::Exec> &asked, int32_t landlockAbi, const Send &send)
{
    std::vector<uint32_t> askedIds;
    for (const ResumeRequest::Exec &e : asked)
        askedIds.push_back(e.id);
    std::sort(askedIds.begin(), askedIds.end());
    std::vector<uint32_t> unasked;
    for (const auto &[id, record] : m_records)
        if (!std::binary_search(askedIds.begin(), askedIds.end(), id))
            unasked.push_back(id);

    wire::Writer resumed(wire::Type::Resumed);
    resumed.u32(wire::kProtocolVersion)
        .i32(landlockAbi)
        .u32(static_cast<uint32_t>(getpid()))
        .u32(static_cast<uint32_t>(asked.size() + unasked.size()));
    // Each entry says where its replay starts: what was acknowledged is not sent again, even when
    // the daemon asks from further back (it stores less than it acknowledged).
    const auto entry = [&](uint32_t id, const std::array<uint64_t, 2> &from) {
        const auto [state, pid] = this->state(id);
        resumed.u32(id).u8(state).i32(pid);
        const auto it = m_records.find(id);
        for (size_t k = 0; k < 2; ++k)
            resumed.u64(it == m_records.end()
                    ? 0
                    : std::clamp(from[k], it->second.streams[k].start, it->second.streams[k].end));
    };
    for (const ResumeRequest::Exec &e : asked)
        entry(e.id, e.offsets);
    for (uint32_t id : unasked)
        entry(id, {0, 0});
    send(resumed.take());

    for (const ResumeRequest::Exec &e : asked)
        replay(e.id, e.offsets, send);
    for (uint32_t id : unasked)
        replay(id, {0, 0}, send);
    for (auto &[id, record] : m_records)
        for (Stream &s : record.streams)
            s.inGap = false;
}

} // namespace airlock::guest
