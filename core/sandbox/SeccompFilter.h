// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>

namespace airlock {

// The syscall filter every sandbox runs under, compiled to a classic BPF program that bubblewrap
// loads (--seccomp FD). Denied syscalls answer EPERM; clone3 answers ENOSYS so libc falls back to
// clone, whose namespace flags can be checked. Only the native x86_64 ABI is accepted; 32-bit and
// x32 system calls kill the process.
Result<QByteArray> buildSeccompProgram();

} // namespace airlock
