// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <poll.h>
#include <string>
#include <vector>

namespace airlock::guest {

// Egress under gVisor. There no descriptor crosses from the sandbox to the host (its sockets are
// the sentry's own), so a connection made to the proxy port inside cannot be handed to the daemon
// as under bubblewrap. Instead each one is relayed: its bytes go both ways between the connection
// accepted inside and a new connection to the daemon's egress socket (bound in the sandbox's
// bundle, mounted read-only, reached through runsc --host-uds=open). The daemon's proxy reads the
// request on its end as it does for any sandbox; the relay reads nothing of it and decides nothing.
class EgressRelay {
public:
    explicit EgressRelay(std::string socketPath);
    ~EgressRelay();
    EgressRelay(const EgressRelay &) = delete;
    EgressRelay &operator=(const EgressRelay &) = delete;

    // Takes a connection accepted inside (non-blocking) and connects it to the egress socket; when
    // that fails, or too many are relayed already, the connection is closed (the client sees it
    // reset) and the reason is returned.
    std::string add(int insideFd);
    // Appends this relay's descriptors; handle() then reads their revents from `first` on.
    void addPollFds(std::vector<pollfd> &fds);
    void handle(const pollfd *fds, size_t count);
    size_t size() const { return m_pairs.size(); }

private:
    // One way of a relayed connection: what was read from `from` and is not yet written to `to`.
    struct Direction {
        int from = -1;
        int to = -1;
        std::unique_ptr<char[]> buf; // allocated on first read
        size_t off = 0;
        size_t len = 0;
        bool eof = false; // `from` said end of stream; `to` is shut for writing once buf is out
        bool shut = false;
        bool pending() const { return off < len; }
    };
    struct Pair {
        Direction up; // inside to the daemon
        Direction down; // the daemon to inside
        // A socket that hung up (POLLHUP) is polled only while it is to be read: poll reports a
        // hang-up whatever it is asked, and one asked for nothing would wake the loop forever.
        bool insideHungUp = false;
        bool outsideHungUp = false;
    };
    // Moves what it can without blocking; false when the pair broke (an error either way).
    static bool pump(Direction &d);
    static short eventsFor(int fd, const Pair &p);
    void close(std::map<int, Pair>::iterator it);

    std::string m_socketPath;
    std::map<int, Pair> m_pairs; // by the inside descriptor
    std::vector<int> m_polled; // the pair (its inside descriptor) per pollfd appended, in order
};

} // namespace airlock::guest
