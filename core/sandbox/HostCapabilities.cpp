// SPDX-License-Identifier: Apache-2.0
#include "sandbox/HostCapabilities.h"

#include "sandbox/SeccompFilter.h"
#include "sandbox/SystemdScope.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock {

namespace {
QString readTrimmed(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromLatin1(f.readAll()).trimmed();
}

bool writableDir(const QString &path)
{
    return ::access(QFile::encodeName(path).constData(), W_OK | X_OK) == 0;
}

void probeCgroups(HostCapabilities &caps)
{
    // cgroup v1 controllers mounted separately (memory, pids): usable when we may create children.
    const QString v1Memory = QStringLiteral("/sys/fs/cgroup/memory");
    const QString v1Pids = QStringLiteral("/sys/fs/cgroup/pids");
    if (QFileInfo::exists(v1Memory + QStringLiteral("/memory.limit_in_bytes")) && writableDir(v1Memory))
        caps.cgroupMemory = true;
    if (QFileInfo::exists(v1Pids + QStringLiteral("/pids.max"))
        || QFileInfo::exists(v1Pids + QStringLiteral("/cgroup.procs")))
        caps.cgroupPids = writableDir(v1Pids);
    const QString v1Cpu = QStringLiteral("/sys/fs/cgroup/cpu");
    caps.cgroupCpu = QFileInfo::exists(v1Cpu + QStringLiteral("/cpu.cfs_quota_us")) && writableDir(v1Cpu);
    if (caps.cgroupMemory || caps.cgroupPids) {
        caps.cgroupVersion = QStringLiteral("v1");
        caps.cgroupRoot = QStringLiteral("/sys/fs/cgroup");
        return;
    }
    // cgroup v2: a systemd scope per sandbox, from the manager that owns this user's cgroups (its
    // own process cannot leave a unit's cgroup for good: systemd would fail the unit's next start).
    if (QFileInfo::exists(QStringLiteral("/sys/fs/cgroup/cgroup.controllers"))) {
        if (Status manager = systemd::reachable(); !manager) {
            caps.cgroupError = manager.error().message;
            return;
        }
        const QStringList controllers = systemd::controllers();
        caps.cgroupVersion = QStringLiteral("v2");
        caps.cgroupMemory = controllers.contains(QStringLiteral("memory"));
        caps.cgroupPids = controllers.contains(QStringLiteral("pids"));
        caps.cgroupCpu = controllers.contains(QStringLiteral("cpu"));
        if (!caps.cgroupMemory || !caps.cgroupPids || !caps.cgroupCpu)
            caps.cgroupError
                = QStringLiteral("systemd delegates only '%1' to this user; a line 'Delegate=pids memory cpu' in "
                                 "'systemctl edit user@.service' adds the rest")
                      .arg(controllers.join(QLatin1Char(' ')));
        return;
    }
    caps.cgroupError
        = QStringLiteral("no usable cgroup: run airlockd as root (cgroup v1) or on a systemd host with cgroup v2");
}
} // namespace

HostCapabilities HostCapabilities::probe(const QString &bwrapOverride, const QString &runscOverride)
{
    HostCapabilities caps;
    caps.runningAsRoot = ::geteuid() == 0;

    const QString bwrap
        = bwrapOverride.isEmpty() ? QStandardPaths::findExecutable(QStringLiteral("bwrap")) : bwrapOverride;
    if (bwrap.isEmpty() || !QFileInfo(bwrap).isExecutable())
        caps.bwrapError = QStringLiteral("bubblewrap (bwrap) is not installed%1: install it with "
                                         "'sudo apt install bubblewrap'")
                              .arg(bwrapOverride.isEmpty() ? QString() : QStringLiteral(" at ") + bwrapOverride);
    else
        caps.bwrapPath = bwrap;
    // Found, not run: whether it starts is known at the first sandbox that asks for it.
    const QString runsc
        = runscOverride.isEmpty() ? QStandardPaths::findExecutable(QStringLiteral("runsc")) : runscOverride;
    if (runsc.isEmpty() || !QFileInfo(runsc).isExecutable())
        caps.runscError = QStringLiteral("--isolation gvisor needs gVisor's runsc, which is not installed%1: install "
                                         "it with 'sudo apt install runsc' (or give airlockd --runsc PATH)")
                              .arg(runscOverride.isEmpty() ? QString() : QStringLiteral(" at ") + runscOverride);
    else
        caps.runscPath = runsc;

    const QString maxUserNs = readTrimmed(QStringLiteral("/proc/sys/user/max_user_namespaces"));
    const QString unprivClone = readTrimmed(QStringLiteral("/proc/sys/kernel/unprivileged_userns_clone"));
    if (maxUserNs == QLatin1String("0"))
        caps.userNamespaceError = QStringLiteral("user namespaces are disabled: run "
                                                 "'sudo sysctl -w user.max_user_namespaces=15000'");
    else if (unprivClone == QLatin1String("0"))
        caps.userNamespaceError = QStringLiteral("unprivileged user namespaces are disabled: run "
                                                 "'sudo sysctl -w kernel.unprivileged_userns_clone=1'");
    else
        caps.userNamespaces = true;

    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    caps.landlockAbi = abi > 0 ? static_cast<int>(abi) : 0;

    if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
        caps.seccompError = QStringLiteral("the kernel has no seccomp support (CONFIG_SECCOMP_FILTER)");
    } else if (auto program = buildSeccompProgram(); !program) {
        caps.seccompError = program.error().message;
    } else {
        caps.seccomp = true;
    }
    probeCgroups(caps);
    caps.diskDriver = volume::probe(caps.runningAsRoot, &caps.diskError);
    return caps;
}

Status HostCapabilities::checkBoundary() const
{
    auto missing = [](const QString &why) { return makeError(ErrorCode::BoundaryUnavailable, why); };
    if (bwrapPath.isEmpty())
        return missing(bwrapError);
    if (!userNamespaces)
        return missing(userNamespaceError);
    if (!seccomp)
        return missing(seccompError);
    if (landlockAbi < 1)
        return missing(QStringLiteral("Landlock is not available in this kernel: boot with 'lsm=landlock,...' "
                                      "(Linux 5.13 or newer) so the sandbox filesystem rules can be enforced"));
    return Ok{};
}

QJsonObject HostCapabilities::toJson() const
{
    return QJsonObject{
        {QStringLiteral("bwrap"), bwrapPath.isEmpty() ? bwrapError : bwrapPath},
        {QStringLiteral("runsc"), runscPath.isEmpty() ? runscError : runscPath},
        {QStringLiteral("userNamespaces"), userNamespaces},
        {QStringLiteral("seccomp"), seccomp},
        {QStringLiteral("landlockAbi"), landlockAbi},
        {QStringLiteral("cgroup"), cgroupVersion.isEmpty() ? QStringLiteral("none") : cgroupVersion},
        {QStringLiteral("cgroupMemory"), cgroupMemory},
        {QStringLiteral("cgroupPids"), cgroupPids},
        {QStringLiteral("cgroupCpu"), cgroupCpu},
        {QStringLiteral("cgroupError"), cgroupError},
        {QStringLiteral("root"), runningAsRoot},
        {QStringLiteral("workspaceImages"),
            diskDriver == volume::Driver::None ? diskError : volume::driverName(diskDriver)},
    };
}

} // namespace airlock
