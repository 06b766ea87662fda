// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace airlock::guest {

// Installs the exec check on the calling process and everything it starts: every execve and
// execveat stops (SECCOMP_RET_USER_NOTIF) until the daemon, holding the returned listener, answers.
// And no process below may install a filter with a listener of its own: the kernel sends a
// notification to the newest filter's listener only, so a second listener answering "continue"
// would walk around this one. Other architectures and x32 numbers kill the process. Returns the listener (O_CLOEXEC),
// or -1 with errno set.
int installExecCheck();

} // namespace airlock::guest
