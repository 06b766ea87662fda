// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <sys/resource.h>
#include <sys/types.h>
#include <vector>

namespace airlock::guest {

// A decoded and validated Spawn frame (strings are NUL-free, env entries contain '=').
struct SpawnRequest {
    uint32_t execId = 0;
    uint8_t flags = 0;
    uint16_t rows = 0;
    uint16_t cols = 0;
    uint64_t cpuSeconds = 0;
    uint64_t fileSizeBytes = 0;
    uint64_t openFiles = 0;
    uint64_t timeoutMs = 0; // 0 = none; the Guest enforces it, not spawnProcess()
    std::string cwd; // empty = inherit the guest's working directory
    std::vector<std::string> argv; // non-empty
    std::vector<std::string> env;
};

// The parent's side of a started process. All fds are O_CLOEXEC and O_NONBLOCK and owned by
// the caller; unused ones are -1. In tty mode ptyFd is the master for output, input and resize.
//
// Every execution runs below a shepherd of its own: a child of the caller that is the subreaper
// (PR_SET_CHILD_SUBREAPER) of the execution's processes and does nothing but wait. So whatever
// the command starts stays below the shepherd, even once it left the process group and session
// (setsid) and its parent exited (a double fork): killTree(shepherd) reaches all of it. The
// shepherd reaps the main process, reports its end on exitFd (a MainExit, see readMainExit), then
// goes on reaping until nothing is left below it and exits 0. The command's processes can kill
// their shepherd (same uid): then what was below it is the caller's, and the caller must treat
// every child that is not a shepherd as a process of a killed execution.
struct SpawnedProcess {
    pid_t pid = -1; // the main process: its end is the execution's end
    pid_t shepherd = -1;
    int exitFd = -1; // readable once the main process ended (or the shepherd is gone)
    int stdinFd = -1;
    int stdoutFd = -1;
    int stderrFd = -1;
    int ptyFd = -1;
    // SpawnJudged: the guest's own copy of the exec check's listener (the daemon has the other).
    int execCheck = -1;
    timespec start{}; // CLOCK_MONOTONIC just before fork()
};

struct SpawnResult {
    SpawnedProcess process; // valid when err == 0
    int err = 0;
    std::string message; // e.g. "cannot execute 'foo': No such file or directory"
};

// How the main process of an execution ended, as its shepherd reaped it.
struct MainExit {
    int status = 0; // as from wait4()
    rusage usage{}; // the main process and the children it waited for
};

// Reads the shepherd's report from exitFd without blocking. False while there is none: not yet
// (then `gone` is false), or never, the shepherd having died before it could write it.
bool readMainExit(int exitFd, MainExit &exit, bool &gone);

// Forks the shepherd, which forks and execs the request; returns only after the child has exec'd or failed.
// A child that failed exits with 127; its shepherd then exits too and is reaped by the normal
// SIGCHLD path.
// With SpawnJudged, the child installs the exec check (every execve/execveat it and its
// descendants make waits for the daemon) and its listener goes to the daemon over execCheckFd
// before the child's own exec, which the daemon judges first. A copy of the listener comes back
// in SpawnedProcess::execCheck, for a later daemon (see Guest::Execution::execCheck).
// With vforkMain (under gVisor, where a new address space costs milliseconds), the shepherd
// vfork()s the main process rather than fork()ing it; never for a judged one.
SpawnResult spawnProcess(const SpawnRequest &req, int execCheckFd = -1, bool vforkMain = false);

} // namespace airlock::guest
