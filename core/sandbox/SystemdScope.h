// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QStringList>

#include <sys/types.h>

namespace airlock {

struct Limits;

// A sandbox's cgroup on a cgroup v2 host, made as systemd intends for processes it did not start:
// a transient scope (StartTransientUnit over D-Bus, to the user's manager, or the system's for
// root) that holds the sandbox's first process, with the limits as the scope's own properties
// (MemoryMax, MemorySwapMax=0, TasksMax, CPUQuota) and Delegate=yes. A scope is a unit of its
// own beside airlockd.service, so restarting the daemon leaves it (and its limits) alone; and a
// person sees it: 'systemctl --user status airlock-KEY-ID.scope'.
namespace systemd {

// Whether this process can make scopes: the manager answers on its bus. Otherwise why, and the fix.
Status reachable();
// The controllers the manager can give a scope (those delegated to the user's manager).
QStringList controllers();
QString scopeName(const QString &instanceKey, const QString &sandboxId);
// Moves `pid` into a new scope with these limits; returns once the kernel shows it there.
Status startScope(const QString &unit, pid_t pid, const Limits &limits, bool memory, bool pids, bool cpu);
// Kills everything in the scope (SIGKILL) and lets systemd remove it.
void stopScope(const QString &unit);
// The scopes whose names start with airlock-KEY-, loaded in the manager now.
QStringList scopes(const QString &instanceKey);

} // namespace systemd
} // namespace airlock
