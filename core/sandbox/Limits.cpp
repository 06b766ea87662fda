// SPDX-License-Identifier: Apache-2.0
#include "sandbox/Limits.h"

#include "log/Log.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <csignal>
#include <unistd.h>

namespace airlock {

namespace {
constexpr uint64_t kDefaultPids = 1024;
constexpr uint64_t kDefaultOpenFiles = 1024;
constexpr uint64_t kDefaultOutputBytes = 1ull << 30;

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
    if (requested.memoryBytes) {
        if (!caps.cgroupMemory)
            return makeError(ErrorCode::LimitUnsupported,
                             QStringLiteral("a memory limit needs the cgroup memory controller, which this daemon "
                                            "cannot use (%1); drop --memory or fix the host")
                                 .arg(caps.cgroupError.isEmpty() ? QStringLiteral("controller not delegated")
                                                                 : caps.cgroupError));
        plan.memoryByCgroup = true;
    }
    plan.pidsByCgroup = caps.cgroupPids;
    if (!plan.effective.pids)
        plan.effective.pids = kDefaultPids;
    if (!plan.effective.openFiles)
        plan.effective.openFiles = kDefaultOpenFiles;
    if (!plan.effective.outputBytes)
        plan.effective.outputBytes = kDefaultOutputBytes;
    return plan;
}

QJsonObject LimitPlan::toJson(const HostCapabilities &caps) const
{
    QJsonObject o;
    auto put = [&](const char *key, const std::optional<uint64_t> &v, const QString &by) {
        o.insert(QLatin1String(key), QJsonObject{{QStringLiteral("value"), v ? QJsonValue(double(*v)) : QJsonValue()},
                                                 {QStringLiteral("enforcedBy"), v ? by : QStringLiteral("unlimited")}});
    };
    const QString cg = QStringLiteral("cgroup %1").arg(caps.cgroupVersion);
    put("memoryBytes", effective.memoryBytes, cg + QStringLiteral(" memory"));
    put("pids", effective.pids,
        pidsByCgroup ? cg + QStringLiteral(" pids") : QStringLiteral("RLIMIT_NPROC (sandbox user namespace)"));
    put("cpuSeconds", effective.cpuSeconds, QStringLiteral("RLIMIT_CPU per process"));
    put("openFiles", effective.openFiles, QStringLiteral("RLIMIT_NOFILE"));
    put("fileSizeBytes", effective.fileSizeBytes, QStringLiteral("RLIMIT_FSIZE"));
    put("wallMs", effective.wallMs, QStringLiteral("daemon timer per execution (SIGKILL)"));
    put("outputBytes", effective.outputBytes, QStringLiteral("daemon byte count per execution (SIGKILL)"));
    return o;
}

namespace {
QStringList instanceDirs(const HostCapabilities &caps, const QString &instanceKey)
{
    const QString suffix = QStringLiteral("/airlock/") + instanceKey;
    if (caps.cgroupVersion == QLatin1String("v1"))
        return {caps.cgroupRoot + QStringLiteral("/memory") + suffix, caps.cgroupRoot + QStringLiteral("/pids") + suffix};
    if (caps.cgroupVersion == QLatin1String("v2"))
        return {caps.cgroupRoot + suffix};
    return {};
}
} // namespace

void SandboxCgroup::reapInstance(const HostCapabilities &caps, const QString &instanceKey, bool removeRoot, const QSet<QString> &keep)
{
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

SandboxCgroup SandboxCgroup::existing(const HostCapabilities &caps, const QString &instanceKey, const QString &sandboxId)
{
    SandboxCgroup cg;
    for (const QString &root : instanceDirs(caps, instanceKey))
        if (const QString dir = root + QLatin1Char('/') + sandboxId; QFileInfo(dir).isDir())
            cg.m_dirs.append(dir);
    return cg;
}

Result<SandboxCgroup> SandboxCgroup::create(const HostCapabilities &caps, const QString &instanceKey,
                                            const QString &sandboxId, const LimitPlan &plan)
{
    SandboxCgroup cg;
    if (!plan.memoryByCgroup && !plan.pidsByCgroup)
        return cg;
    auto failed = [&](const QString &what) {
        cg.destroy();
        return makeError(ErrorCode::LimitUnsupported, QStringLiteral("cgroup: %1").arg(what));
    };
    auto makeDir = [&](const QString &parent) -> Result<QString> {
        const QString dir = parent + QStringLiteral("/airlock/") + instanceKey + QLatin1Char('/') + sandboxId;
        if (!QDir().mkpath(dir))
            return makeError(ErrorCode::LimitUnsupported, QStringLiteral("cannot create %1").arg(dir));
        cg.m_dirs.append(dir);
        return dir;
    };
    if (caps.cgroupVersion == QLatin1String("v1")) {
        if (plan.memoryByCgroup) {
            auto dir = makeDir(caps.cgroupRoot + QStringLiteral("/memory"));
            if (!dir)
                return failed(dir.error().message);
            if (!writeFile(*dir + QStringLiteral("/memory.limit_in_bytes"), QByteArray::number(*plan.effective.memoryBytes)))
                return failed(QStringLiteral("cannot set memory.limit_in_bytes in %1").arg(*dir));
        }
        if (plan.pidsByCgroup) {
            auto dir = makeDir(caps.cgroupRoot + QStringLiteral("/pids"));
            if (!dir)
                return failed(dir.error().message);
            if (!writeFile(*dir + QStringLiteral("/pids.max"), QByteArray::number(*plan.effective.pids)))
                return failed(QStringLiteral("cannot set pids.max in %1").arg(*dir));
        }
        return cg;
    }
    auto dir = makeDir(caps.cgroupRoot);
    if (!dir)
        return failed(dir.error().message);
    if (plan.memoryByCgroup
        && !writeFile(*dir + QStringLiteral("/memory.max"), QByteArray::number(*plan.effective.memoryBytes)))
        return failed(QStringLiteral("cannot set memory.max in %1").arg(*dir));
    if (plan.pidsByCgroup && !writeFile(*dir + QStringLiteral("/pids.max"), QByteArray::number(*plan.effective.pids)))
        return failed(QStringLiteral("cannot set pids.max in %1").arg(*dir));
    return cg;
}

QStringList SandboxCgroup::procsFiles() const
{
    QStringList files;
    for (const QString &dir : m_dirs)
        files.append(dir + QStringLiteral("/cgroup.procs"));
    return files;
}

void SandboxCgroup::destroy()
{
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
