// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/GuestWire.h"

#include <cstdint>
#include <functional>
#include <map>
#include <poll.h>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::guest {

// Host tools for the sandbox's processes: airlock-tool connects to a unix socket the guest
// listens on, writes one request and half-closes; the request goes to the daemon unread
// (ToolCall) and the daemon's answer (ToolResult) goes back on the same connection:
// "ok\n<result JSON>" or "error\n<CODE> <message>".
class ToolBridge {
public:
    ToolBridge(int listenFd, std::function<void(std::string)> sendFrame);
    // Appends this bridge's descriptors; handle() then reads their revents from `first` on.
    void addPollFds(std::vector<pollfd> &fds);
    void handle(const pollfd *fds, size_t count);
    void onResult(uint32_t callId, bool ok, std::string_view body);
    // No daemon connected: calls in flight, and every call until a daemon is back, are answered
    // here with an error (the next daemon knows nothing of them).
    void setDaemonAway(bool away);

private:
    struct Conn {
        std::string in, out;
        size_t outOff = 0;
        uint32_t callId = 0; // set once the request went to the daemon
        bool answered = false;
    };
    void accept();
    void readFrom(int fd, Conn &c);
    void answer(int fd, Conn &c, const std::string &text);
    void close(int fd);

    int m_listenFd;
    std::function<void(std::string)> m_send;
    std::map<int, Conn> m_conns;
    std::vector<int> m_polled; // fd per pollfd appended, in order
    uint32_t m_nextCall = 1;
    size_t m_inFlight = 0;
    bool m_daemonAway = false;
};

// airlock-tool NAME [JSON|-]: the client, when the guest binary runs under that name.
int toolClientMain(int argc, char **argv);

} // namespace airlock::guest
