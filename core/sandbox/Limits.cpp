// SPDX-License-Identifier: Apache-2.0
#include "sandbox/Limits.h"

#include "log/Log.h"
#include "sandbox/SystemdScope.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace airlock {

namespace {
constexpr uint64_t kDefaultPids = 1024;
constexpr uint64_t kDefaultOpenFiles = 1024;
constexpr uint64_t kDefaultOutputBytes = 1ull << 30;
constexpr uint64_t kCpuPeriodUs = 100'000;
constexpr uint64_t kDefaultTmpBytes = 1ull << 30;
constexpr uint64_t kMostDefaultMemory = 4ull << 30;

// Half of this machine's memory, and no more than 4 GiB: no single sandbox can take it all.
uint64_t defaultMemoryBytes()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? std::min(kMostDefaultMemory, uint64_t(pages) * uint64_t(pageSize) / 2)
                                     : kMostDefaultMemory;
}

bool writeFile(const QString &path, const QByteArray &value)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        return false;
    return f.write(value) == value.size();
}
} // namespace

Result<LimitPlan> LimitPlan::make(const Limits &requested, const HostCapabilities &caps)
{
    LimitPlan plan;
    plan.effective = requested;
    auto unsupported = [&](const char *limit, const char *controller, const char *option) {
        return makeError(ErrorCode::LimitUnsupported,
            QStringLiteral("a %1 limit needs the cgroup %2 controller, which this daemon cannot use (%3); "
                           "drop %4 or fix the host")
                .arg(QLatin1String(limit), QLatin1String(controller),
                    caps.cgroupError.isEmpty() ? QStringLiteral("controller not delegated") : caps.cgroupError,
                    QLatin1String(option)));
    };
    if (requested.memoryBytes) {
        if (!caps.cgroupMemory)
            return unsupported("memory", "memory", "--memory");
        plan.memoryByCgroup = true;
    } else if (caps.cgroupMemory) {
        plan.effective.memoryBytes = defaultMemoryBytes();
        plan.memoryByCgroup = plan.memoryDefaulted = true;
    }
    if (requested.cpuMillicores) {
        if (!caps.cgroupCpu)
            return unsupported("CPU", "cpu", "--cpus");
        plan.cpuByCgroup = true;
    }
    if (requested.diskBytes == 0u) {
        plan.effective.diskBytes.reset(); // asked for none: a plain folder
    } else if (requested.diskBytes) {
        if (caps.diskDriver == volume::Driver::None)
            return makeError(ErrorCode::LimitUnsupported,
                QStringLiteral("a disk limit needs a workspace image, which this daemon cannot mount (%1); drop --disk "
                               "or fix the host")
                    .arg(caps.diskError));
    } else if (caps.diskDriver != volume::Driver::None) {
        plan.effective.diskBytes = LimitPlan::kDefaultDiskBytes;
        plan.diskDefaulted = true;
    }
    plan.pidsByCgroup = caps.cgroupPids;
    if (!plan.effective.pids)
        plan.effective.pids = kDefaultPids;
    if (!plan.effective.openFiles)
        plan.effective.openFiles = kDefaultOpenFiles;
    if (!plan.effective.tmpBytes)
        plan.effective.tmpBytes = kDefaultTmpBytes;
    if (!plan.effective.outputBytes)
        plan.effective.outputBytes = kDefaultOutputBytes;
    return plan;
}

QJsonObject LimitPlan::toJson(const HostCapabilities &caps) const
{
    QJsonObject o;
    auto put = [&](const char *key, const std::optional<uint64_t> &v, const QString &by) {
        o.insert(QLatin1String(key),
            QJsonObject{{QStringLiteral("value"), v ? QJsonValue(double(*v)) : QJsonValue()},
                {QStringLiteral("enforcedBy"), v ? by : QStringLiteral("unlimited")}});
    };
    const QString cg = QStringLiteral("cgroup %1").arg(caps.cgroupVersion);
    put("memoryBytes", effective.memoryBytes,
        cg + QStringLiteral(" memory") + (memoryOf.isEmpty() ? QString() : QStringLiteral(" of ") + memoryOf)
            + (memoryDefaulted ? QStringLiteral(" (the default; --memory changes it)") : QString()));
    put("tmpBytes", effective.tmpBytes,
        memoryByCgroup ? QStringLiteral("tmpfs size of /tmp, /var/tmp and the home, each; charged to the memory limit")
                       : QStringLiteral("tmpfs size of /tmp, /var/tmp and the home, each"));
    put("diskBytes", effective.diskBytes,
        volume::driverName(caps.diskDriver)
            + (diskDefaulted ? QStringLiteral(" (the default; --disk changes it)") : QString()));
    put("pids", effective.pids, pidsByCgroup ? cg + QStringLiteral(" pids") : pidsInside);
    put("cpuMillicores", effective.cpuMillicores, cg + QStringLiteral(" cpu"));
    put("cpuSeconds", effective.cpuSeconds, QStringLiteral("RLIMIT_CPU per process"));
    put("openFiles", effective.openFiles, QStringLiteral("RLIMIT_NOFILE"));
    put("fileSizeBytes", effective.fileSizeBytes, QStringLiteral("RLIMIT_FSIZE"));
    put("wallMs", effective.wallMs,
        QStringLiteral("daemon timer per execution (SIGKILL); the guest's while airlockd is away"));
    put("outputBytes", effective.outputBytes, QStringLiteral("daemon byte count per execution (SIGKILL)"));
    return o;
}

namespace {
QStringList instanceDirs(const HostCapabilities &caps, const QString &instanceKey)
{
    const QString suffix = QStringLiteral("/airlock/") + instanceKey;
    if (caps.cgroupVersion == QLatin1String("v1"))
        return {caps.cgroupRoot + QStringLiteral("/memory") + suffix,
            caps.cgroupRoot + QStringLiteral("/pids") + suffix, caps.cgroupRoot + QStringLiteral("/cpu") + suffix};
    return {};
}
} // namespace

void SandboxCgroup::reapInstance(
    const HostCapabilities &caps, const QString &instanceKey, bool removeRoot, const QSet<QString> &keep)
{
    if (caps.cgroupVersion == QLatin1String("v2")) {
        for (const QString &unit : systemd::scopes(instanceKey))
            if (!keep.contains(unit.section(QLatin1Char('-'), 2).chopped(6))) // airlock-KEY-ID.scope
                systemd::stopScope(unit);
        return;
    }
    for (const QString &root : instanceDirs(caps, instanceKey)) {
        SandboxCgroup leftovers;
        for (const QString &child : QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
            if (!keep.contains(child))
                leftovers.m_dirs.append(root + QLatin1Char('/') + child);
        leftovers.destroy();
        if (removeRoot) {
            ::rmdir(QFile::encodeName(root).constData());
            ::rmdir(QFile::encodeName(QFileInfo(root).path()).constData()); // "airlock", if no other daemon uses it
        }
    }
}

SandboxCgroup SandboxCgroup::existing(
    const HostCapabilities &caps, const QString &instanceKey, const QString &sandboxId)
{
    SandboxCgroup cg;
    if (caps.cgroupVersion == QLatin1String("v2"))
        cg.m_scope = systemd::scopeName(instanceKey, sandboxId);
    for (const QString &root : instanceDirs(caps, instanceKey))
        if (const QString dir = root + QLatin1Char('/') + sandboxId; QFileInfo(dir).isDir())
            cg.m_dirs.append(dir);
    return cg;
}

Result<SandboxCgroup> SandboxCgroup::create(
    const HostCapabilities &caps, const QString &instanceKey, const QString &sandboxId, const LimitPlan &plan)
{
    SandboxCgroup cg;
    if (!plan.memoryByCgroup && !plan.pidsByCgroup && !plan.cpuByCgroup)
        return cg;
    if (caps.cgroupVersion == QLatin1String("v2")) {
        cg.m_scope = systemd::scopeName(instanceKey, sandboxId);
        cg.m_plan = plan;
        return cg;
    }
    // v1: a hierarchy per controller, a directory in each with the limit's files.
    struct Setting {
        bool wanted;
        const char *controller;
        QList<std::pair<const char *, QByteArray>> files;
    };
    const Limits &l = plan.effective;
    const Setting settings[] = {
        {plan.memoryByCgroup, "memory", {{"memory.limit_in_bytes", QByteArray::number(l.memoryBytes.value_or(0))}}},
        {plan.pidsByCgroup, "pids", {{"pids.max", QByteArray::number(l.pids.value_or(0))}}},
        {plan.cpuByCgroup, "cpu",
            {{"cpu.cfs_period_us", QByteArray::number(kCpuPeriodUs)},
                {"cpu.cfs_quota_us", QByteArray::number(l.cpuMillicores.value_or(0) * kCpuPeriodUs / 1000)}}},
    };
    auto failed = [&](const QString &what) {
        cg.destroy();
        return makeError(ErrorCode::LimitUnsupported, QStringLiteral("cgroup: %1").arg(what));
    };
    for (const Setting &setting : settings) {
        if (!setting.wanted)
            continue;
        const QString dir = caps.cgroupRoot + QLatin1Char('/') + QLatin1String(setting.controller)
            + QStringLiteral("/airlock/") + instanceKey + QLatin1Char('/') + sandboxId;
        if (!QDir().mkpath(dir))
            return failed(QStringLiteral("cannot create %1").arg(dir));
        cg.m_dirs.append(dir);
        for (const auto &[file, value] : setting.files) {
            const QString path = dir + QLatin1Char('/') + QLatin1String(file);
            if (!writeFile(path, value))
                return failed(QStringLiteral("cannot set %1 to %2: %3")
                                  .arg(path, QString::fromLatin1(value), QString::fromLocal8Bit(std::strerror(errno))));
        }
    }
    return cg;
}

QStringList SandboxCgroup::procsFiles() const
{
    QStringList files;
    for (const QString &dir : m_dirs)
        files.append(dir + QStringLiteral("/cgroup.procs"));
    return files;
}

Status SandboxCgroup::place(pid_t pid) const
{
    return systemd::startScope(
        m_scope, pid, m_plan.effective, m_plan.memoryByCgroup, m_plan.pidsByCgroup, m_plan.cpuByCgroup);
}

int SandboxCgroup::memoryKills() const
{
    // v1: memory.oom_control's oom_kill (Linux 4.13); v2 scopes are systemd's (not read here).
    for (const QString &dir : m_dirs) {
        QFile control(dir + QStringLiteral("/memory.oom_control"));
        if (!control.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &line : control.readAll().split('\n'))
            if (line.startsWith("oom_kill "))
                return line.mid(9).trimmed().toInt();
    }
    return 0;
}

void SandboxCgroup::destroy()
{
    if (!m_scope.isEmpty())
        systemd::stopScope(std::exchange(m_scope, QString()));
    for (const QString &dir : std::as_const(m_dirs)) {
        // The PID namespace normally takes everything down with the guest; this is the safety net.
        for (int attempt = 0; attempt < 50; ++attempt) {
            QFile procs(dir + QStringLiteral("/cgroup.procs"));
            if (procs.open(QIODevice::ReadOnly)) {
                const QList<QByteArray> pids = procs.readAll().split('\n');
                for (const QByteArray &pid : pids)
                    if (const int p = pid.toInt(); p > 1)
                        ::kill(p, SIGKILL);
            }
            if (::rmdir(QFile::encodeName(dir).constData()) == 0 || errno == ENOENT)
                break;
            ::usleep(2000);
        }
    }
    m_dirs.clear();
}

} // namespace airlock
