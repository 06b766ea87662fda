// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QSet>

#include "model/SandboxSpec.h"
#include "sandbox/HostCapabilities.h"

#include <QJsonObject>
#include <QStringList>

#include <sys/types.h>

namespace airlock {

// The limits a sandbox actually runs with and what enforces each one. Built before anything is
// started: a limit the spec asks for that no mechanism here can enforce is an error (fail closed).
struct LimitPlan {
    static constexpr uint64_t kDefaultDiskBytes = 10ull
        << 30; // a workspace's size unless asked (less on a fuller disk)
    Limits effective;
    bool memoryByCgroup = false;
    bool pidsByCgroup = false; // otherwise RLIMIT_NPROC, enforced by what pidsInside says
    QString pidsInside = QStringLiteral("RLIMIT_NPROC (sandbox user namespace)");
    QString memoryOf; // whose memory the cgroup counts, when the runtime says ("gVisor's sentry and gofer")
    bool cpuByCgroup = false;
    bool memoryDefaulted = false; // no --memory: the default bound
    bool diskDefaulted = false; // no --disk: the default size (the engine may lower it to what the disk has)

    static Result<LimitPlan> make(const Limits &requested, const HostCapabilities &caps);
    QJsonObject toJson(const HostCapabilities &caps) const; // {limit: {value, enforcedBy}}
};

// A per-sandbox cgroup. v1 (root): one directory per controller, which the sandbox's first process
// joins itself. v2: a systemd scope (sandbox/SystemdScope.h), which systemd moves it into.
class SandboxCgroup {
public:
    // Directories are <controller>/airlock/<instanceKey>/<sandboxId>: each daemon owns a subtree.
    static Result<SandboxCgroup> create(
        const HostCapabilities &caps, const QString &instanceKey, const QString &sandboxId, const LimitPlan &plan);
    // Removes what a previous (SIGKILLed) daemon with this key left behind; with removeRoot, also
    // the now empty instance directories (at shutdown).
    // Sandboxes in `keep` outlived that daemon and are left alone.
    static void reapInstance(
        const HostCapabilities &caps, const QString &instanceKey, bool removeRoot, const QSet<QString> &keep = {});
    // The cgroup an earlier daemon with this key made for sandbox `sandboxId` (what exists of it).
    static SandboxCgroup existing(const HostCapabilities &caps, const QString &instanceKey, const QString &sandboxId);
    SandboxCgroup() = default;

    bool isEmpty() const { return m_dirs.isEmpty() && m_scope.isEmpty(); }
    // cgroup.procs files the sandbox's first process writes itself into before exec.
    QStringList procsFiles() const;
    // Whether the sandbox's first process must wait, before exec, to be placed by place().
    bool placesFromOutside() const { return !m_scope.isEmpty(); }
    Status place(pid_t pid) const;
    // Processes the kernel ended because the sandbox reached its memory limit (0: none, or not
    // known: cgroup v2 scopes are not read).
    int memoryKills() const;
    // Kills whatever is left and removes the directories. Safe to call twice.
    void destroy();

private:
    QStringList m_dirs;
    QString m_scope; // v2: the systemd scope's unit name
    LimitPlan m_plan;
};

} // namespace airlock
