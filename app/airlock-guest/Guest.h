// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "OutQueue.h"
#include "ToolBridge.h"
#include "sandbox/GuestWire.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/types.h>
#include <ctime>
#include <vector>

namespace airlock::guest {

struct SpawnRequest;

// Sends a Fatal frame on a socket that has no Guest yet (startup failures) and exits.
[[noreturn]] void fatalExit(int sock, const std::string &message, int code);

// The single-threaded event loop: daemon socket, SIGCHLD and every execution's stdio.
class Guest {
public:
    // proxyListenFd/proxyFd (allowlist sandboxes): connections accepted on the first, a TCP
    // listener on 127.0.0.1 inside, are handed to the daemon's egress proxy through the second.
    // toolListenFd: where airlock-tool connects (see ToolBridge); -1 for none.
    // execCheckFd: where each judged execution's exec-check listener goes (see wire::SpawnJudged).
    Guest(int sock, int sigchldFd, int landlockAbi, int proxyListenFd = -1, int proxyFd = -1, int toolListenFd = -1, int execCheckFd = -1);
    [[noreturn]] void run();

private:
    struct Execution {
        uint32_t id = 0;
        pid_t pid = -1;
        bool tty = false;
        int ptyFd = -1; // owned; outFd/inFd alias it in tty mode
        int outFd = -1;
        int errFd = -1;
        int inFd = -1;
        std::string stdinBuf; // not yet written to the child
        size_t stdinOff = 0;
        bool stdinEof = false; // close the pipe once stdinBuf is written
        timespec start{};
    };

    // ---- daemon socket ----
    void send(std::string frame);
    void flushSocket();
    void readSocket();
    void handleFrame(wire::Type type, const char *payload, uint32_t len);
    void handleSpawn(const SpawnRequest &req);
    void handleStdin(uint32_t execId, std::string_view data);
    void handleSignal(uint32_t execId, int32_t signo);
    void handleResize(uint32_t execId, uint16_t rows, uint16_t cols);
    [[noreturn]] void protocolViolation(const std::string &what);
    [[noreturn]] void daemonGone();

    // ---- executions ----
    // Returns false once the fd is finished (EOF/error) and has been closed.
    bool readOutput(Execution &e, int &fd, uint8_t stream);
    void drainOutput(Execution &e, int &fd, uint8_t stream);
    void flushStdin(Execution &e);
    void closeExecFd(Execution &e, int &fd);
    void reapChildren();
    void finish(Execution &e, int status, const rusage &ru);
    void killAll();
    void acceptEgress();
    size_t pendingStdinBytes() const;

    int m_sock;
    int m_sigchldFd;
    int m_proxyListenFd;
    int m_proxyFd;
    int m_execCheckFd;
    std::unique_ptr<ToolBridge> m_tools;
    OutQueue m_out;
    std::vector<char> m_in; // partial incoming frames; [m_inOff, m_inLen) is unparsed
    size_t m_inLen = 0;
    size_t m_inOff = 0;
    std::map<uint32_t, Execution> m_execs;
};

} // namespace airlock::guest
