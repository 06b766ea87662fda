// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
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
    std::string cwd; // empty = inherit the guest's working directory
    std::vector<std::string> argv; // non-empty
    std::vector<std::string> env;
};

// The parent's side of a started process. All fds are O_CLOEXEC and O_NONBLOCK and owned by
// the caller; unused ones are -1. In tty mode ptyFd is the master for output, input and resize.
struct SpawnedProcess {
    pid_t pid = -1;
    int stdinFd = -1;
    int stdoutFd = -1;
    int stderrFd = -1;
    int ptyFd = -1;
    timespec start{}; // CLOCK_MONOTONIC just before fork()
};

struct SpawnResult {
    SpawnedProcess process; // valid when err == 0
    int err = 0;
    std::string message; // e.g. "cannot execute 'foo': No such file or directory"
};

// Forks and execs the request; returns only after the child has exec'd or failed.
// A child that failed exits with 127 and is reaped by the normal SIGCHLD path.
// With SpawnJudged, the child installs the exec check (every execve/execveat it and its
// descendants make waits for the daemon) and its listener goes to the daemon over execCheckFd
// before the child's own exec, which the daemon judges first.
SpawnResult spawnProcess(const SpawnRequest &req, int execCheckFd = -1);

} // namespace airlock::guest
