// SPDX-License-Identifier: Apache-2.0
#include "sandbox/IsolationRuntime.h"

#include "sandbox/BwrapLauncher.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>
#include <QJsonDocument>

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

pid_t BwrapRuntime::initPid(const LaunchedSandbox &launched) const
{
    // bwrap wrote the host pid of the sandbox's init before exec'ing the guest.
    char buf[4096];
    const ssize_t n = launched.infoFd >= 0 ? ::read(launched.infoFd, buf, sizeof buf - 1) : -1;
    if (n <= 0)
        return 0;
    const int pid = QJsonDocument::fromJson(QByteArray(buf, n)).object().value(QStringLiteral("child-pid")).toInt();
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
        {QStringLiteral("namespaces"), namespaces},
        {QStringLiteral("hostUid"), s.hostUid() ? QJsonValue(double(*s.hostUid())) : QJsonValue(double(::getuid()))},
        {QStringLiteral("sandboxUid"), 1000}, {QStringLiteral("capabilities"), QStringLiteral("none")},
        {QStringLiteral("noNewPrivs"), true}, {QStringLiteral("seccomp"), true},
        {QStringLiteral("landlockAbi"), s.landlockAbi()}};
}

Status GvisorRuntime::check(const SandboxSpec &) const
{
    return makeError(ErrorCode::BoundaryUnavailable,
        m_caps.runscPath.isEmpty() ? m_caps.runscError
                                   : QStringLiteral("--isolation gvisor is not in this airlockd yet; nothing was "
                                                    "created (use --isolation namespaces)"));
}

Result<LaunchedSandbox> GvisorRuntime::launch(const LaunchRequest &) const
{
    return check({}).error();
}

pid_t GvisorRuntime::initPid(const LaunchedSandbox &) const
{
    return 0;
}

QJsonObject GvisorRuntime::boundary(const Sandbox &) const
{
    return {{QStringLiteral("runtime"), isolationName(kind())}};
}

} // namespace airlock
