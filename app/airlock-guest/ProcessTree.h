// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>
#include <vector>

namespace airlock::guest {

// The children of `pid`, over all its threads (/proc/PID/task/TID/children; on a kernel without
// CONFIG_PROC_CHILDREN, by the parent field of every /proc/PID/stat). Empty once it is gone.
std::vector<pid_t> childrenOf(pid_t pid);

// SIGKILLs `root` (unless `includeRoot` is false) and everything below it, each process before its
// children are listed: a process with SIGKILL pending cannot fork any more (copy_process checks
// under the same lock that links the child in), so the list read after the kill is its last. What
// this misses are processes that moved meanwhile, orphans going to their subreaper: whoever calls
// this goes on until the subreaper has none left. Returns how many processes were signalled.
size_t killTree(pid_t root, bool includeRoot = true);

} // namespace airlock::guest
