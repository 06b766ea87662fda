// SPDX-License-Identifier: Apache-2.0
#include "net/Relay.h"
#include "util/ThreadDeadline.h"
#include "util/UntrustedFd.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::net {

namespace {
// What one direction holds between a read and the write that passes it on: large enough for a
// loopback socket's bursts (it is allocated when the pair starts).
constexpr size_t kBufferSize = 256 * 1024;
// What one pair may do one way in one turn: move this many bytes, or go this many rounds of
// reads and writes (a guest that drips its tunnel a few bytes at a time makes progress every
// round while moving almost nothing). A busy pair cannot hold up another's first byte for
// longer than that takes: a fraction of a millisecond.
constexpr uint64_t kTurnBudget = 1024 * 1024;
constexpr int kTurnRounds = 64;
constexpr uint64_t kWakeKey = 0;

std::string errnoText(const char *what)
{
    return std::string(what) + ": " + std::strerror(errno);
}
} // namespace

struct Relay::Direction {
    int from = -1, to = -1;
    std::unique_ptr<char[]> buffer; // read from `from`, not yet written to `to`: [head, tail)
    size_t head = 0, tail = 0;
    std::string pending; // ours, written before anything read (a request's head, the proxy's reply)
    size_t pendingOff = 0;
    bool eof = false; // `from` has nothing more to send
    bool done = false; // and everything reached `to`, which was told so (SHUT_WR)
    uint64_t bytes = 0;
    int64_t limit = -1; // bytes `from` may still send (-1: any); at 0 it is no longer read

    bool exhausted() const { return limit == 0 && !wantsWrite(); }

    bool wantsWrite() const { return head < tail || pendingOff < pending.size(); }
};

struct Relay::Pair {
    uint64_t id = 0, tag = 0;
    int fds[2] = {-1, -1}; // client, destination
    Direction dir[2]; // 0: client -> destination, 1: destination -> client
    // Shut both ways (EPOLLHUP): nothing more can come from that socket or reach it. The pair ends
    // once what it sent has been passed on (dir[side].done), not before: a small receive buffer on
    // the other side (a unix socket's, under gVisor) may still hold back much of it.
    bool hungUp[2] = {false, false};
    bool ready = false; // on m_ready
    Done done;
};

Relay::Relay()
{
    m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
    m_wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeKey;
    ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wakeFd, &ev);
    m_thread = std::thread([this] { run(); });
}

Relay::~Relay()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    wake();
    m_thread.join();
    for (auto &[id, pair] : m_pairs)
        for (int fd : pair->fds)
            closeUntrusted(fd);
    ::close(m_wakeFd);
    ::close(m_epoll);
}

void Relay::wake()
{
    const uint64_t one = 1;
    (void)!::write(m_wakeFd, &one, sizeof one);
}

void Relay::add(int client, int destination, std::string upstreamFirst, std::string clientFirst, uint64_t tag,
    Done done, int64_t upstreamLimit)
{
    auto pair = std::make_shared<Pair>();
    pair->tag = tag;
    pair->fds[0] = client;
    pair->fds[1] = destination;
    pair->done = std::move(done);
    pair->dir[0].pending = std::move(upstreamFirst);
    pair->dir[1].pending = std::move(clientFirst);
    pair->dir[0].limit = upstreamLimit;
    {
        std::lock_guard lock(m_mutex);
        m_commands.push_back({false, tag, std::move(pair)});
    }
    wake();
}

void Relay::cancel(uint64_t tag)
{
    {
        std::lock_guard lock(m_mutex);
        m_commands.push_back({true, tag, nullptr});
    }
    wake();
}

int Relay::activePairs() const
{
    std::lock_guard lock(m_mutex);
    return m_active;
}

void Relay::run()
{
    ThreadDeadline::prepare(); // before any sandbox could use up what timers are counted against
    epoll_event events[64];
    std::vector<uint64_t> turn;
    for (;;) {
        const int n = ::epoll_wait(m_epoll, events, 64, m_ready.empty() ? -1 : 0);
        if (n < 0 && errno != EINTR)
            return;
        // This round's turns: the pairs that spent their budget before it (those that spend it
        // on an event now wait for the next round). Their events are not pumped twice.
        turn.clear();
        turn.swap(m_ready);
        for (int i = 0; i < n; ++i) {
            const uint64_t key = events[i].data.u64;
            if (key == kWakeKey) {
                uint64_t count = 0;
                (void)!::read(m_wakeFd, &count, sizeof count);
                {
                    std::lock_guard lock(m_mutex);
                    if (m_stopping)
                        return;
                }
                drainCommands();
                continue;
            }
            const auto it = m_pairs.find(key >> 1);
            if (it == m_pairs.end())
                continue; // finished earlier in this batch
            const std::shared_ptr<Pair> pair = it->second;
            const int side = int(key & 1);
            if (events[i].events & EPOLLERR) {
                int err = 0;
                socklen_t len = sizeof err;
                ::getsockopt(pair->fds[side], SOL_SOCKET, SO_ERROR, &err, &len);
                errno = err;
                finish(pair->id, errnoText(side == 0 ? "client" : "destination"));
                continue;
            }
            if (events[i].events & EPOLLHUP)
                pair->hungUp[side] = true;
            if (!pair->ready)
                pump(*pair);
        }
        for (uint64_t id : turn)
            if (const auto it = m_pairs.find(id); it != m_pairs.end()) {
                const std::shared_ptr<Pair> pair = it->second;
                pair->ready = false;
                pump(*pair);
            }
    }
}

void Relay::drainCommands()
{
    std::vector<Command> commands;
    {
        std::lock_guard lock(m_mutex);
        commands.swap(m_commands);
    }
    for (Command &c : commands) {
        if (c.cancel) {
            std::vector<uint64_t> ids;
            for (const auto &[id, pair] : m_pairs)
                if (pair->tag == c.tag)
                    ids.push_back(id);
            for (uint64_t id : ids)
                finish(id, "cancelled");
            continue;
        }
        Pair &p = *c.pair;
        p.id = m_nextId++;
        bool ok = true;
        for (int fd : p.fds)
            ok = ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 && ok;
        for (int d = 0; d < 2; ++d) {
            p.dir[d].from = p.fds[d];
            p.dir[d].to = p.fds[1 - d];
            p.dir[d].buffer = std::make_unique_for_overwrite<char[]>(kBufferSize);
        }
        m_pairs.emplace(p.id, c.pair);
        {
            std::lock_guard lock(m_mutex);
            ++m_active;
        }
        if (!ok) {
            finish(p.id, errnoText("relay set-up"));
            continue;
        }
        // Edge-triggered, both ways, once: any readiness on either socket pumps both directions
        // until they block, so no edge is ever lost and interest never has to change.
        for (int side = 0; side < 2; ++side) {
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            ev.data.u64 = p.id << 1 | uint64_t(side);
            ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, p.fds[side], &ev);
        }
        pump(p);
    }
}

void Relay::pump(Pair &pair)
{
    bool spent = false;
    for (int d = 0; d < 2; ++d) {
        Direction &dir = pair.dir[d];
        uint64_t moved = 0; // each way its own budget: a flood one way never starves the other
        int rounds = 0;
        for (bool progress = true; progress && !dir.done;) {
            if (moved >= kTurnBudget || ++rounds > kTurnRounds) {
                spent = true;
                break;
            }
            progress = false;
            if (dir.pendingOff < dir.pending.size()) {
                const ssize_t n = ::send(dir.to, dir.pending.data() + dir.pendingOff,
                    dir.pending.size() - dir.pendingOff, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0) {
                    dir.pendingOff += size_t(n);
                    if (d == 0) // the client's request (head and early data); not our own reply
                        dir.bytes += uint64_t(n);
                    progress = true;
                } else if (errno != EAGAIN && errno != EINTR) {
                    return finish(pair.id, errnoText(d == 0 ? "write to destination" : "write to client"));
                }
                if (dir.pendingOff < dir.pending.size())
                    break;
                dir.pending.clear();
                dir.pendingOff = 0;
            }
            if (dir.head < dir.tail) {
                const ssize_t n
                    = ::send(dir.to, dir.buffer.get() + dir.head, dir.tail - dir.head, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0) {
                    dir.head += size_t(n);
                    dir.bytes += uint64_t(n);
                    moved += uint64_t(n);
                    progress = true;
                    if (dir.head == dir.tail)
                        dir.head = dir.tail = 0;
                } else if (errno != EAGAIN && errno != EINTR) {
                    return finish(pair.id, errnoText(d == 0 ? "write to destination" : "write to client"));
                }
            }
            if (!dir.eof && dir.limit != 0 && dir.tail < kBufferSize) {
                size_t want = kBufferSize - dir.tail;
                if (dir.limit > 0)
                    want = std::min(want, size_t(dir.limit));
                const ssize_t n = ::recv(dir.from, dir.buffer.get() + dir.tail, want, MSG_DONTWAIT);
                if (n > 0) {
                    dir.tail += size_t(n);
                    if (dir.limit > 0)
                        dir.limit -= n;
                    progress = true;
                } else if (n == 0) {
                    dir.eof = true;
                    progress = true;
                } else if (errno != EAGAIN && errno != EINTR) {
                    return finish(pair.id, errnoText(d == 0 ? "read from client" : "read from destination"));
                }
            }
            if (dir.eof && !dir.wantsWrite()) {
                ::shutdown(dir.to, SHUT_WR);
                dir.done = true;
            }
        }
    }
    if (spent) {
        pair.ready = true;
        m_ready.push_back(pair.id);
        return;
    }
    // Done both ways; or the destination has answered in full and the client may send no more; or
    // a socket hung up and all it sent has been passed on.
    if ((pair.dir[1].done && (pair.dir[0].done || pair.dir[0].exhausted())) || (pair.hungUp[0] && pair.dir[0].done)
        || (pair.hungUp[1] && pair.dir[1].done))
        finish(pair.id, {});
}

void Relay::finish(uint64_t id, const std::string &error)
{
    const auto it = m_pairs.find(id);
    if (it == m_pairs.end())
        return;
    const std::shared_ptr<Pair> pair = it->second;
    m_pairs.erase(it);
    for (int fd : pair->fds) {
        ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
        closeUntrusted(fd); // the client's is the guest's too: it may linger
    }
    {
        std::lock_guard lock(m_mutex);
        --m_active;
    }
    if (pair->done)
        pair->done({pair->dir[0].bytes, pair->dir[1].bytes, error});
}

} // namespace airlock::net
