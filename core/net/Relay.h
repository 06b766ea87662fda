// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace airlock::net {

// Copies bytes both ways between pairs of connected sockets on one thread of its own, so the
// daemon's event loop never sees the payload. Half-closes are passed on; a pair ends when both
// directions have ended or either side fails.
//
// Every read and write says MSG_DONTWAIT, and none is a splice(2): the client socket is one the
// sandbox's guest handed over and may keep, the same open file, so it can make it blocking again
// whenever it likes, and splice on a TCP socket waits or not by the file's flag alone. One such
// wait would stop every pair of every sandbox, and the daemon's shutdown with them.
class Relay {
public:
    struct Stats {
        uint64_t bytesUp = 0; // client -> destination
        uint64_t bytesDown = 0; // destination -> client
        std::string error; // empty: both sides closed cleanly
    };
    using Done = std::function<void(const Stats &)>; // called on the relay thread

    Relay();
    ~Relay(); // ends every pair (their Done is not called) and joins the thread
    Relay(const Relay &) = delete;
    Relay &operator=(const Relay &) = delete;

    // Takes ownership of both sockets (made non-blocking here). `upstreamFirst` is written to the
    // destination before anything the client sends, `clientFirst` to the client before anything
    // the destination sends. `tag` groups pairs for cancel().
    // `upstreamLimit` (>= 0) is how many more bytes the client may send the destination after
    // upstreamFirst; past it the client is no longer read.
    void add(int client, int destination, std::string upstreamFirst, std::string clientFirst, uint64_t tag, Done done,
        int64_t upstreamLimit = -1);
    // Ends every pair with this tag (their Done reports "cancelled").
    void cancel(uint64_t tag);
    int activePairs() const;

private:
    struct Direction;
    struct Pair;
    void run();
    void wake();
    void drainCommands();
    // Moves what it can both ways, up to a turn's budget; with the budget spent the pair is put
    // on m_ready (no edge will come for what is already there) and gets another turn after
    // every other ready pair has had one.
    void pump(Pair &pair);
    void finish(uint64_t id, const std::string &error);

    int m_epoll = -1;
    int m_wakeFd = -1;
    mutable std::mutex m_mutex;
    struct Command {
        bool cancel = false;
        uint64_t tag = 0;
        std::shared_ptr<Pair> pair;
    };
    std::vector<Command> m_commands;
    bool m_stopping = false;
    int m_active = 0;
    std::unordered_map<uint64_t, std::shared_ptr<Pair>> m_pairs;
    std::vector<uint64_t> m_ready; // pairs whose last turn ended on its budget, not on EAGAIN
    uint64_t m_nextId = 1;
    std::thread m_thread;
};

} // namespace airlock::net
