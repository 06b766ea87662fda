// SPDX-License-Identifier: Apache-2.0
#include "sandbox/IsolationRuntime.h"

#include "sandbox/BwrapLauncher.h"
#include "sandbox/GvisorLauncher.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <poll.h>

#include <unistd.h>

namespace airlock {

Status BwrapRuntime::check(const SandboxSpec &) const
{
    return m_caps.checkBoundary();
}

Result<LaunchedSandbox> BwrapRuntime::launch(const LaunchRequest &request) const
{
    return launchSandbox(request, m_caps.bwrapPath);
}

Result<Reattached> BwrapRuntime::reattach(const LaunchRequest &request, const SandboxRecords &records) const
{
    auto channel = records.connect(request.id);
    if (!channel)
        return channel.error();
    Reattached r;
    r.channelFd = *channel;
    return r;
}

pid_t BwrapRuntime::initPid(const LaunchedSandbox &launched) const
{
    // bwrap writes the host pid of the sandbox's init in a few writes right after it makes it, then
    // closes the descriptor: read to its end (at hello it is all there; before it, within 2 s).
    if (launched.infoFd < 0)
        return 0;
    QByteArray report;
    char buf[4096];
    for (int waits = 0; report.size() < 65536 && waits < 200; ++waits) {
        pollfd p{launched.infoFd, POLLIN, 0};
        if (::poll(&p, 1, 10) == 0)
            continue;
        const ssize_t n = ::read(launched.infoFd, buf, sizeof buf);
        if (n <= 0)
            break;
        report.append(buf, n);
    }
    const int pid = QJsonDocument::fromJson(report).object().value(QStringLiteral("child-pid")).toInt();
    return pid > 1 ? pid_t(pid) : 0;
}

QJsonObject BwrapRuntime::boundary(const Sandbox &s) const
{
    QJsonArray namespaces = {QStringLiteral("user"), QStringLiteral("mount"), QStringLiteral("pid"),
        QStringLiteral("ipc"), QStringLiteral("uts"), QStringLiteral("cgroup")};
    if (s.spec().network != NetworkMode::Full)
        namespaces.append(QStringLiteral("net"));
    return {{QStringLiteral("runtime"), isolationName(kind())},
        {QStringLiteral("enforcedBy"),
            QStringLiteral("bubblewrap: namespaces, seccomp and Landlock on the host's kernel")},
        {QStringLiteral("namespaces"), namespaces}, {QStringLiteral("hostUid"), double(s.runtimeUid())},
        {QStringLiteral("sandboxUid"), 1000}, {QStringLiteral("capabilities"), QStringLiteral("none")},
        {QStringLiteral("noNewPrivs"), true}, {QStringLiteral("seccomp"), true},
        {QStringLiteral("landlockAbi"), s.landlockAbi()},
        {QStringLiteral("identity"),
            QStringLiteral("uid 1000 inside, host uid %1, no capabilities, no_new_privs").arg(s.runtimeUid())},
        {QStringLiteral("filters"), QStringLiteral("seccomp, landlock ABI %1").arg(s.landlockAbi())}};
}

Status GvisorRuntime::check(const SandboxSpec &spec) const
{
    if (m_caps.runscPath.isEmpty())
        return makeError(ErrorCode::BoundaryUnavailable, m_caps.runscError);
    for (const Mount &m : spec.mounts)
        if (m.copyOnWrite)
            return makeError(ErrorCode::BoundaryUnavailable,
                QStringLiteral(
                    "--isolation gvisor has no copy-on-write mounts yet (%1): use --isolation namespaces, or "
                    "mount it read-only or read-write (nothing was created)")
                    .arg(m.hostPath));
    // Its way out is the egress proxy alone (allowlist); gVisor's own network stack is never on.
    if (spec.network == NetworkMode::Full)
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral("--isolation gvisor has no direct network: use --network allowlist (through the egress "
                           "proxy) or none, or --isolation namespaces for --network full (nothing was created)"));
    return Ok{};
}

Status GvisorRuntime::fitPolicy(policy::EffectivePolicy &p) const
{
    // The exec check needs seccomp user notification, which gVisor refuses (EINVAL): asked for, it
    // is refused; by default, commands are judged as the agent asks for them, not what they start.
    if (p.judgeExecs && p.sources.contains(QStringLiteral("/commands/judgeExecs")))
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral(
                "/commands/judgeExecs: gVisor cannot judge the programs a command starts (it has no "
                "seccomp user notification); set it to false in the policy layer '%1', or use --isolation namespaces "
                "(nothing was created or changed)")
                .arg(p.sources.value(QStringLiteral("/commands/judgeExecs")).toString()));
    p.judgeExecs = false;
    QJsonObject commands = p.document.value(QStringLiteral("commands")).toObject();
    commands.insert(QStringLiteral("judgeExecs"), false);
    p.document.insert(QStringLiteral("commands"), commands);
    p.sources.insert(QStringLiteral("/commands/judgeExecs"), QStringLiteral("runtime:gvisor"));
    return Ok{};
}

void GvisorRuntime::fitLimits(LimitPlan &plan) const
{
    // The sandbox's processes are the sentry's tasks: a pids cgroup would count gVisor's own host
    // threads (about 160 at rest), not them. The sentry enforces RLIMIT_NPROC, set by the guest.
    plan.pidsByCgroup = false;
    plan.pidsInside = QStringLiteral("RLIMIT_NPROC inside gVisor");
    plan.memoryOf = QStringLiteral("gVisor's sentry and gofer, which hold the sandbox's memory");
}

Result<LaunchedSandbox> GvisorRuntime::launch(const LaunchRequest &request) const
{
    return launchGvisor(request, m_caps.runscPath);
}

Result<Reattached> GvisorRuntime::reattach(const LaunchRequest &request, const SandboxRecords &) const
{
    return reattachGvisor(request);
}

void GvisorRuntime::releaseStartFiles(LaunchedSandbox &launched) const
{
    if (!launched.stagedDir.isEmpty())
        removeStaged(std::exchange(launched.stagedDir, QString()));
}

pid_t GvisorRuntime::initPid(const LaunchedSandbox &) const
{
    return 0; // the sandbox's processes are the sentry's tasks, not host processes
}

QJsonObject GvisorRuntime::boundary(const Sandbox &s) const
{
    QString filters = QStringLiteral("seccomp inside gVisor; no Landlock and no exec check (gVisor has neither)");
    filters += s.outlivesDaemon() ? QStringLiteral("; outlives the daemon (its agent comes back to the next one)")
                                  : QStringLiteral("; ends with the daemon");
    if (s.spec().network == NetworkMode::Allowlist)
        filters += QStringLiteral("; egress relayed to the daemon's socket");
    // Egress and coming back take runsc --host-uds=open, which lets more than the daemon's
    // sockets through.
    if (s.spec().network == NetworkMode::Allowlist || s.outlivesDaemon())
        filters += QStringLiteral("; host unix sockets under its mounts reachable, as under bubblewrap");
    return {{QStringLiteral("runtime"), isolationName(kind())},
        {QStringLiteral("enforcedBy"),
            QStringLiteral("gVisor: a user-space kernel between the sandbox and the host's, rootless, seccomp inside")},
        {QStringLiteral("runsc"), m_caps.runscPath}, {QStringLiteral("hostUid"), double(s.runtimeUid())},
        {QStringLiteral("sandboxUid"), 0}, // gVisor's root, which is hostUid to the host
        {QStringLiteral("capabilities"), QStringLiteral("none on the host")}, {QStringLiteral("noNewPrivs"), true},
        {QStringLiteral("seccomp"), true}, {QStringLiteral("landlockAbi"), 0}, {QStringLiteral("execCheck"), false},
        {QStringLiteral("outlivesDaemon"), s.outlivesDaemon()},
        {QStringLiteral("identity"),
            QStringLiteral("root inside gVisor, host uid %1, no capabilities on the host, no_new_privs")
                .arg(s.runtimeUid())},
        {QStringLiteral("filters"), filters}};
}

} // namespace airlock
