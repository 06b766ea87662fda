// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QSet>

#include <sys/types.h>

namespace airlock {

// What the processes of one PID namespace (one sandbox) use right now.
struct ResourceUsage {
    qint64 cpuNs = 0; // CPU time so far, of the live processes and of every one they reaped
    qint64 memoryBytes = 0; // resident set, summed over the live processes
    int processes = 0;
};

// The PID namespace a process is in (the inode of /proc/PID/ns/pid); 0 when it cannot be read.
quint64 pidNamespaceOf(pid_t pid);

// One pass over /proc for every namespace asked about. A process's CPU time counts its own and
// what it collected from the children it waited for (cutime/cstime), so a program that ended
// stays counted exactly once: in the parent that reaped it, and through that parent in its own.
// Processes appear and vanish during the pass; one that vanished is simply not counted.
QHash<quint64, ResourceUsage> usageByPidNamespace(const QSet<quint64> &namespaces);

} // namespace airlock
