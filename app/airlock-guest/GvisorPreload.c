// SPDX-License-Identifier: Apache-2.0
// airlock-gvisor-preload.so: preloaded into every command of a gVisor sandbox (decision 6).
// gVisor 20221219 refuses statx()'s AT_NO_AUTOMOUNT with EINVAL, and Debian 12's ls and stat pass
// it on every path ("ls: cannot access '/usr': Invalid argument"). gVisor has no automount points,
// so without the flag the call means exactly the same. Nothing else is changed, and a program
// that makes the system call itself (or is linked statically) is not helped.
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) int statx(
    int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
    return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}
