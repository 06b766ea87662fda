// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "EgressRelay.h"
#include "OutQueue.h"
#include "Retention.h"
#include "ToolBridge.h"
#include "sandbox/GuestWire.h"

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/types.h>
#include <vector>

namespace airlock::guest {

struct SpawnRequest;
struct ResumeRequest;

// What the guest runs with; every descriptor is owned by the Guest, -1 when absent.
struct GuestSetup {
    int sock = -1; // the daemon that started the sandbox
    int sigchldFd = -1;
    int landlockAbi = 0;
    // Allowlist sandboxes: connections accepted on proxyListenFd, a TCP listener on 127.0.0.1
    // inside, are handed to the daemon's egress proxy through proxyFd.
    int proxyListenFd = -1;
    int proxyFd = -1;
    // gVisor, instead of proxyFd: each connection is relayed to the daemon's egress socket here.
    std::string egressSocket;
    int toolListenFd = -1; // where airlock-tool connects (see ToolBridge)
    int execCheckFd = -1; // where each judged execution's exec-check listener goes (wire::SpawnJudged)
    // Where a later daemon connects to take the sandbox over (wire::Type::Resume), and the token
    // it proves itself with. Without it (or resumeSocket) the guest ends with its daemon.
    int resumeFd = -1;
    std::string resumeToken;
    // gVisor, instead of resumeFd: where a later daemon listens; the guest connects there once its
    // daemon is gone, again and again until one answers, and proves itself with the token.
    std::string resumeSocket;
    // gVisor: a library every command preloads (LD_PRELOAD, before the request's own), see
    // GvisorPreload.c.
    std::string preload;
    bool vforkMain = false; // gVisor: see spawnProcess()
};

// Sends a Fatal frame on a socket that has no Guest yet (startup failures) and exits.
[[noreturn]] void fatalExit(int sock, const std::string &message, int code);

// The single-threaded event loop: daemon socket, SIGCHLD and every execution's stdio.
class Guest {
public:
    explicit Guest(const GuestSetup &setup);
    [[noreturn]] void run();

private:
    struct Execution {
        uint32_t id = 0;
        pid_t pid = -1; // the main process
        pid_t shepherd = -1; // see SpawnedProcess; -1 once it is gone (the main process is ours then)
        int exitFd = -1; // the shepherd's report of the main process's end
        bool killed = false; // killExecution(): all of it, not only its process group
        bool ended = false; // the main process ended; the Exited frame waits for the sweep
        int endStatus = 0;
        rusage endUsage{};
        bool tty = false;
        int ptyFd = -1; // owned; outFd/inFd alias it in tty mode
        int outFd = -1;
        int errFd = -1;
        int inFd = -1;
        std::string stdinBuf; // not yet written to the child
        size_t stdinOff = 0;
        bool stdinEof = false; // close the pipe once stdinBuf is written
        timespec start{};
        // monotonicMs() past which the guest kills it (wire::kDeadlineGraceMs after its timeout);
        // 0: none. timedOut: it did (the Exited frame says so).
        int64_t deadlineMs = 0;
        bool timedOut = false;
        // A judged execution's exec-check listener (owned, closed in finish()), kept so that the
        // filter outlives a daemon: while none is connected, an execve of the execution waits in
        // the kernel (it neither runs unjudged nor fails), and handExecChecks() gives the listener
        // to the next daemon, which judges what waited. The guest only holds it and passes it on:
        // nothing here reads or answers a notification.
        int execCheck = -1;
    };

    // ---- daemon socket ----
    // False once the daemon is gone (with a resume socket the guest goes on without one).
    bool connected() const { return m_sock >= 0 && !m_lost; }
    void send(std::string frame); // dropped while no daemon is connected
    void flushSocket();
    void readSocket();
    void handleFrame(wire::Type type, const char *payload, uint32_t len);
    void handleSpawn(const SpawnRequest &req);
    void handleStdin(uint32_t execId, std::string_view data);
    void handleSignal(uint32_t execId, int32_t signo);
    void handleResize(uint32_t execId, uint16_t rows, uint16_t cols);
    [[noreturn]] void protocolViolation(const std::string &what);
    void daemonGone();
    // Forgets the connection: nothing queued for it is sent (a resume regenerates it).
    void dropConnection();
    // Whether a later daemon can take the sandbox over (else the guest ends with its daemon).
    bool resumable() const { return m_resumeFd >= 0 || !m_resumeSocket.empty(); }
    void acceptResume();
    // gVisor: one try at the daemon's resume socket, once it is time (see kReconnectFirstMs);
    // returns how long poll() may wait until the next (-1: no try is due).
    int reconnectIfDue();
    // A connection to a daemon that may take the sandbox over, proven or not: its Resume is read
    // and checked, then the sandbox is its (adopt) or the connection is closed.
    void takeResume(int conn);
    void adopt(int conn, ResumeRequest &req);
    // After a takeover: each running judged execution's listener, again, to the daemon that now
    // holds the sandbox (over its new exec-check socket, as handleSpawn's spawn sent it first).
    void handExecChecks();

    // ---- executions ----
    // Returns the bytes read (0: nothing now, or the fd is finished and closed, then fd is -1).
    size_t readOutput(Execution &e, int &fd, uint8_t stream);
    void drainOutput(Execution &e, int &fd, uint8_t stream);
    void flushStdin(Execution &e);
    void closeExecFd(Execution &e, int &fd);
    void reapChildren();
    void shepherdGone(pid_t shepherd, int status);
    void readMainExit(uint32_t execId);
    // The main process of an execution ended. Exited goes out at once, or for a killed execution
    // once the sweep found nothing of it left (or gave up, kSweepGraceMs after it began).
    void mainEnded(std::map<uint32_t, Execution>::iterator it, int status, const rusage &ru);
    void finishEnded();
    void finish(Execution &e, int status, const rusage &ru);
    // SIGKILLs every process of the execution: its shepherd, everything below it, then every
    // stray (sweepStrays).
    void killExecution(Execution &e);
    // Every child of ours that is not a live shepherd belongs to an execution whose shepherd was
    // killed: it is killed with everything below it. Sweeping goes on (each round of the loop) until
    // a round finds none.
    void sweepStrays();
    void startSweep();
    // Kills every execution past its deadline that nothing killed before (killExecution), connected
    // or not; returns how long poll() may wait until the next deadline (-1: none).
    int killOverdue();
    void killAll();
    void acceptEgress();
    size_t pendingStdinBytes() const;

    int m_sock;
    bool m_lost = false; // the daemon went; dropConnection() follows at the top of the loop
    int m_sigchldFd;
    int m_landlockAbi;
    int m_proxyListenFd;
    int m_proxyFd;
    int m_execCheckFd;
    std::string m_preload;
    bool m_vforkMain;
    int m_resumeFd;
    std::string m_resumeToken;
    std::string m_resumeSocket;
    int64_t m_reconnectAtMs = 0; // monotonicMs() of the next try (gVisor, while no daemon is connected)
    int m_reconnectDelayMs = 0;
    std::unique_ptr<Retention> m_retention; // resumable() only
    std::unique_ptr<ToolBridge> m_tools;
    std::unique_ptr<EgressRelay> m_relay; // gVisor's egress (see GuestSetup::egressSocket)
    OutQueue m_out;
    std::vector<char> m_in; // partial incoming frames; [m_inOff, m_inLen) is unparsed
    size_t m_inLen = 0;
    size_t m_inOff = 0;
    std::map<uint32_t, Execution> m_execs;
    // Of running executions, and of finished ones whose background processes go on.
    std::set<pid_t> m_shepherds;
    bool m_sweeping = false;
    int64_t m_sweepStartMs = 0;
};

} // namespace airlock::guest
