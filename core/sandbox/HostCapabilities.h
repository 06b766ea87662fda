// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/WorkspaceVolume.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QString>

namespace airlock {

// What this host can enforce, probed once when the daemon starts. Every missing piece carries a
// message that names it and the fix (apt package, sysctl), so `create` can fail closed with it.
struct HostCapabilities {
    QString bwrapPath; // empty when not found
    QString bwrapError;
    QString runscPath; // gVisor's runsc, for --isolation gvisor; empty when not found
    QString runscError;
    bool userNamespaces = false;
    QString userNamespaceError;
    int landlockAbi = 0; // 0 = unavailable
    bool seccomp = false;
    QString seccompError;
    QString cgroupVersion; // "v1", "v2" or empty
    QString cgroupRoot; // per-controller parent directories are derived from it
    bool cgroupMemory = false;
    bool cgroupPids = false;
    bool cgroupCpu = false; // CPU bandwidth (v1 cpu.cfs_quota_us, v2 cpu.max)
    QString cgroupError; // why no cgroup is available, if none is
    bool runningAsRoot = false;
    volume::Driver diskDriver = volume::Driver::None; // how workspace images are mounted
    QString diskError; // why they cannot be, if not

    static HostCapabilities probe(const QString &bwrapOverride = {}, const QString &runscOverride = {});

    // Ok when everything a sandbox needs is present; otherwise the first missing piece and its fix.
    Status checkBoundary() const;
    QJsonObject toJson() const;
};

} // namespace airlock
