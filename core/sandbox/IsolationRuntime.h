// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/SandboxSpec.h"
#include "policy/Policy.h"
#include "sandbox/HostCapabilities.h"
#include "sandbox/LaunchRequest.h"
#include "sandbox/Limits.h"
#include "sandbox/SandboxRecord.h"
#include "util/Result.h"

#include <QJsonObject>

#include <sys/types.h>

namespace airlock {

class Sandbox;

// What stands between a sandbox and the host's kernel (decision 6): whether it can run a sandbox
// as asked, how it starts one, where the sandbox's init is, and what enforces the boundary. A
// Sandbox keeps executions, redaction and events over the guest channel, whatever its runtime.
class IsolationRuntime {
public:
    virtual ~IsolationRuntime() = default;
    virtual Isolation kind() const = 0;
    // What runs it, in a sentence's words ("bubblewrap could not create the sandbox").
    virtual QString name() const = 0;
    // Ok when it can run this sandbox as asked; otherwise why, and the fix. Asked before anything
    // is made: a sandbox never runs with less than it asked for, nor with another runtime.
    virtual Status check(const SandboxSpec &spec) const = 0;
    // The policy as this runtime enforces it: what it cannot enforce and was asked for explicitly
    // is refused (why, and the fix); a built-in default it cannot enforce is set to what it does,
    // which boundary() shows. Asked at create and at every policy change.
    virtual Status fitPolicy(policy::EffectivePolicy &policy) const = 0;
    // The limits as this runtime enforces them (what counts processes, whose memory a cgroup holds).
    virtual void fitLimits(LimitPlan &) const { }
    // Whether its sandboxes can outlive the daemon (the guest waits for the next one, or goes to it).
    virtual bool canOutliveDaemon() const = 0;
    // Whether its guest listens for a later daemon on a socket it is given at launch
    // (LaunchRequest::resumeListenFd, made by SandboxRecords::listen), or comes back by itself.
    virtual bool guestListens() const = 0;
    virtual Result<LaunchedSandbox> launch(const LaunchRequest &request) const = 0;
    // A later daemon's way back to a sandbox this runtime launched for an earlier one (`request`
    // as the sandbox's record gives it: id, runtime folder, network, uid, token).
    virtual Result<Reattached> reattach(const LaunchRequest &request, const SandboxRecords &records) const = 0;
    // What it read when it started and the sandbox needs no more (gVisor: secrets staged in
    // memory), gone: once the guest says hello, and when the sandbox ends before.
    virtual void releaseStartFiles(LaunchedSandbox &) const { }
    // The host pid of the sandbox's init, once its guest has said hello (0: unknown).
    virtual pid_t initPid(const LaunchedSandbox &launched) const = 0;
    // What enforces the boundary, for info and the console: {"runtime": its kind, "enforcedBy", …}.
    virtual QJsonObject boundary(const Sandbox &sandbox) const = 0;
};

// Bubblewrap: the host's kernel, behind user, mount, pid, ipc, uts, cgroup and (unless the network
// is full) net namespaces, seccomp, Landlock, no capabilities and no_new_privs.
class BwrapRuntime final : public IsolationRuntime {
public:
    explicit BwrapRuntime(const HostCapabilities &caps)
        : m_caps(caps)
    {
    }
    Isolation kind() const override { return Isolation::Namespaces; }
    QString name() const override { return QStringLiteral("bubblewrap"); }
    Status check(const SandboxSpec &spec) const override;
    Status fitPolicy(policy::EffectivePolicy &) const override { return Ok{}; }
    bool canOutliveDaemon() const override { return true; }
    bool guestListens() const override { return true; }
    Result<LaunchedSandbox> launch(const LaunchRequest &request) const override;
    Result<Reattached> reattach(const LaunchRequest &request, const SandboxRecords &records) const override;
    pid_t initPid(const LaunchedSandbox &launched) const override;
    QJsonObject boundary(const Sandbox &sandbox) const override;

private:
    const HostCapabilities &m_caps;
};

// gVisor (runsc, rootless): a user-space kernel (the sentry) between the sandbox and the host's
// kernel; the same view, seccomp program and guest. It has no Landlock and no seccomp user
// notification (no exec check). No descriptor crosses into gVisor after it starts: a guest whose
// daemon went connects to the next one's socket in its runtime folder (GuestReconnect).
class GvisorRuntime final : public IsolationRuntime {
public:
    explicit GvisorRuntime(const HostCapabilities &caps)
        : m_caps(caps)
    {
    }
    Isolation kind() const override { return Isolation::Gvisor; }
    QString name() const override { return QStringLiteral("gVisor (runsc)"); }
    Status check(const SandboxSpec &spec) const override;
    Status fitPolicy(policy::EffectivePolicy &policy) const override;
    void fitLimits(LimitPlan &plan) const override;
    bool canOutliveDaemon() const override { return true; }
    bool guestListens() const override { return false; }
    Result<LaunchedSandbox> launch(const LaunchRequest &request) const override;
    Result<Reattached> reattach(const LaunchRequest &request, const SandboxRecords &records) const override;
    void releaseStartFiles(LaunchedSandbox &launched) const override;
    pid_t initPid(const LaunchedSandbox &launched) const override;
    QJsonObject boundary(const Sandbox &sandbox) const override;

private:
    const HostCapabilities &m_caps;
};

// The runtimes of one engine, by kind.
class IsolationRuntimes {
public:
    explicit IsolationRuntimes(const HostCapabilities &caps)
        : m_bwrap(caps)
        , m_gvisor(caps)
    {
    }
    const IsolationRuntime &of(Isolation kind) const
    {
        return kind == Isolation::Gvisor ? static_cast<const IsolationRuntime &>(m_gvisor) : m_bwrap;
    }

private:
    BwrapRuntime m_bwrap;
    GvisorRuntime m_gvisor;
};

} // namespace airlock
