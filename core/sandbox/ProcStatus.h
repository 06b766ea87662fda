// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

namespace airlock {

// From /proc/PID/status, read with plain system calls (this runs for every exec a sandbox
// makes): the process's pid in its own namespace (the last number of NSpid) and its parent's pid
// in ours (PPid). The file is read line by line to its end whatever its size (a Groups line of
// thousands of groups is skipped, not cut); a field that is missing or on a cut line is 0.
struct StatusPids {
    pid_t nsPid = 0;
    pid_t parentHostPid = 0;
};
StatusPids statusPids(pid_t pid);

} // namespace airlock
