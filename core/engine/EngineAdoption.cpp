// SPDX-License-Identifier: Apache-2.0
// Sandboxes that outlive the daemon: the records a later daemon takes them over from, taking them
// over at start, and the acknowledgements that let their guests forget what is stored.
// (Creating, listing and removing sandboxes: Engine.cpp.)
#include "engine/Engine.h"

#include "engine/WorkspaceSpare.h"
#include "log/Log.h"
#include "net/SandboxCa.h"
#include "policy/Policy.h"
#include "sandbox/GvisorLauncher.h"
#include "sandbox/Limits.h"
#include "sandbox/Sandbox.h"
#include "sandbox/WorkspaceVolume.h"
#include "util/Version.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QPointer>
#include <QTimer>

#include <algorithm>
#include <unistd.h>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.engine");
    return l;
}
} // namespace

QStringList Engine::liveSandboxes(const QString &dataDir)
{
    QStringList live;
    for (const auto &[name, record] : SandboxRecords(dataDir + QStringLiteral("/sandboxes")).readAll()) {
        if (!record || !record->ended.isEmpty())
            continue;
        if (const int fd = record->bwrap.open(); fd >= 0) {
            ::close(fd);
            live.append(record->id);
        }
    }
    return live;
}

void Engine::adoptSandboxes(const StoredStream &stored)
{
    QSet<QString> keep;
    QList<QPointer<Sandbox>> answering;
    for (const auto &[name, record] : m_records.readAll()) {
        keep.insert(name); // what a record names is never reaped, even when the record is unreadable
        if (!record) {
            logger()->error(
                "sandbox record {} left alone: {}", name.toStdString(), record.error().message.toStdString());
            continue;
        }
        if (record->warm) {
            keep.remove(name);
            removeWarmLeftover(*record);
            continue;
        }
        if (Sandbox *s = adopt(*record, stored); s->state() == SandboxState::Starting)
            answering.append(s);
    }
    reapOrphans(keep);
    QElapsedTimer waited;
    waited.start();
    const auto anyStarting = [&] {
        return std::any_of(answering.cbegin(), answering.cend(),
            [](const QPointer<Sandbox> &s) { return s && s->state() == SandboxState::Starting; });
    };
    // Waits for events (the overload with a time limit would not: it polls), woken at least every
    // 50 ms to look at the clock.
    QTimer wake;
    wake.start(50);
    while (anyStarting() && waited.elapsed() < kAdoptTimeoutMs)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    if (!answering.isEmpty())
        logger()->info("took over {} sandboxes in {} ms", answering.size(), waited.elapsed());
}

Sandbox *Engine::adopt(const SandboxRecord &record, const StoredStream &stored)
{
    SandboxSetup setup;
    setup.id = record.id;
    setup.spec = record.spec;
    setup.runtime = &m_runtimes.of(record.spec.isolation);
    setup.run = record.run;
    setup.createdThrough = record.createdThrough;
    setup.oneShot = record.oneShot;
    // Where this daemon keeps workspaces, whatever the record says: rm removes it.
    setup.workspaceDir = workspacesDir() + QLatin1Char('/') + record.id;
    setup.policyOverrides = record.overrides;
    setup.userLayer = record.userLayer;
    setup.launch.id = record.id;
    setup.launch.runtimeDir = volume::runtimeDirOf(setup.workspaceDir); // as createSandbox made it
    setup.launch.network = record.spec.network;
    setup.launch.resumeToken = record.token;
    if (!record.brokerAuthority.key.isEmpty())
        setup.brokerCa
            = std::make_shared<net::SandboxCa>(net::SandboxCa::resume(record.brokerAuthority, record.brokerHosts));
    // Its uid is still its own: in this daemon's range, and claimed by it (again, if the claim went).
    const bool uidInRange = record.hostUid ? m_caps.runningAsRoot && m_uidClaims.reclaim(*record.hostUid, record.id)
                                           : !m_caps.runningAsRoot;
    const std::optional<uid_t> hostUid = uidInRange ? record.hostUid : std::nullopt;
    setup.launch.dropToUid = hostUid;
    setup.cgroup = SandboxCgroup::existing(m_caps, m_config.instanceKey, record.id);
    QString problem;
    if (QFileInfo(record.workspaceDir).absoluteFilePath() != setup.workspaceDir)
        problem
            = QStringLiteral("its record names the workspace %1, not %2").arg(record.workspaceDir, setup.workspaceDir);
    if (!uidInRange && problem.isEmpty())
        problem = QStringLiteral("its record names a host uid this daemon does not give sandboxes");
    if (auto effective = policy::resolveForSandbox(record.overrides, record.preset, record.userLayer))
        setup.policy = *effective;
    else
        problem = QStringLiteral("its policy no longer resolves (%1)").arg(effective.error().message);
    if (auto plan = LimitPlan::make(record.spec.limits, m_caps)) {
        setup.plan = *plan;
        // The workspace's size is its image's, whatever a default would be here and now.
        setup.plan.effective.diskBytes.reset();
        if (volume::hasImage(setup.workspaceDir))
            setup.plan.effective.diskBytes = uint64_t(QFileInfo(volume::imagePath(setup.workspaceDir)).size());
    } else if (problem.isEmpty())
        problem = QStringLiteral("its limits cannot be planned here (%1)").arg(plan.error().message);
    auto *sandbox = new Sandbox(std::move(setup), this);
    m_sandboxes.append(sandbox);
    m_byId.insert(record.id, sandbox);
    attach(sandbox, hostUid);
    auto granted = grantedSecrets(sandbox->policy(), false);
    if (granted)
        addSecrets(*sandbox, *granted);
    else if (problem.isEmpty())
        problem = granted.error().message;

    auto history = stored(record.id);
    if (!history)
        logger()->warn("sandbox {}: its stream cannot be read from the history ({}); taken over without it",
            record.id.toStdString(), history.error().message.toStdString());
    Adoption a;
    a.bwrapPid = record.bwrap.pid;
    a.initPid = record.init.pid;
    a.policyVersion = record.policyVersion;
    a.landlockAbi = record.landlockAbi;
    a.createdMs = record.createdMs;
    a.stored = history ? *history : StoredSandbox{};
    // A one-shot whose command ended while no daemon was there goes once it is taken over; one
    // found ended goes now. (One that cannot be taken over stays: what runs in it goes on.)
    if (!record.ended.isEmpty()) {
        sandbox->markEnded(record.ended, a, false);
        endIfOneShotSoon(sandbox);
        return sandbox;
    }
    a.bwrapPidfd = record.bwrap.open();
    // (gVisor's has no init on the host: the runtime's process alone stands for it.)
    const bool hasInit = record.spec.isolation != Isolation::Gvisor;
    a.initPidfd = hasInit ? record.init.open() : -1;
    if (a.bwrapPidfd < 0 || (hasInit && a.initPidfd < 0)) {
        for (int fd : {a.bwrapPidfd, a.initPidfd})
            if (fd >= 0)
                ::close(fd);
        const QString reason
            = QStringLiteral("it ended while airlockd was away; its workspace is kept until 'airlockctl rm %1'")
                  .arg(record.spec.name);
        logger()->warn(
            "sandbox {} ({}): {}", record.id.toStdString(), record.spec.name.toStdString(), reason.toStdString());
        SandboxCgroup leftovers = SandboxCgroup::existing(m_caps, m_config.instanceKey, record.id);
        leftovers.destroy();
        sandbox->markEnded(reason, a, true);
        SandboxRecord ended = record;
        ended.ended = reason;
        (void)m_records.write(ended);
        endIfOneShotSoon(sandbox);
        return sandbox;
    }
    if (problem.isEmpty()) {
        auto back = sandbox->setup().runtime->reattach(sandbox->setup().launch, m_records);
        if (back) {
            a.channelFd = back->channelFd;
            a.reconnectListenFd = back->reconnectListenFd;
            a.egressListenFd = back->egressListenFd;
        } else {
            problem = back.error().message;
        }
    }
    a.problem = problem;
    connect(sandbox, &Sandbox::started, this, [this, sandbox] {
        saveRecord(*sandbox);
        endIfOneShotSoon(sandbox);
    });
    if (Status adopted = sandbox->adopt(a); !adopted)
        logger()->error("sandbox {} ({}): {}", record.id.toStdString(), record.spec.name.toStdString(),
            adopted.error().message.toStdString()); // (what it says says what goes on, and what ends it)
    return sandbox;
}

void Engine::saveRecord(const Sandbox &sandbox, const QString &ended)
{
    if (!sandbox.outlivesDaemon())
        return;
    const SandboxSetup &setup = sandbox.setup();
    SandboxRecord r;
    r.id = setup.id;
    r.spec = setup.spec;
    r.run = setup.run;
    r.createdThrough = setup.createdThrough;
    r.preset = setup.policy.preset;
    r.userLayer = setup.userLayer;
    r.overrides = setup.policyOverrides;
    r.policyVersion = sandbox.policyVersion();
    r.workspaceDir = setup.workspaceDir;
    r.hostUid = setup.launch.dropToUid;
    r.bwrap = ProcessRef::of(sandbox.bwrapPid()).value_or(ProcessRef{});
    r.init = ProcessRef::of(sandbox.initPid()).value_or(ProcessRef{});
    r.token = setup.launch.resumeToken;
    r.createdMs = sandbox.createdAt().toMSecsSinceEpoch();
    r.landlockAbi = sandbox.landlockAbi();
    r.daemonVersion = airlock::version();
    r.ended = ended;
    r.oneShot = setup.oneShot;
    r.warm = setup.warm;
    if (setup.brokerCa) {
        r.brokerAuthority = setup.brokerCa->authority();
        r.brokerHosts = setup.brokerCa->hosts();
    }
    if (Status s = m_records.write(r); !s)
        logger()->error(
            "sandbox {}: {}; a later daemon cannot take it over", r.id.toStdString(), s.error().message.toStdString());
}

void Engine::onEventStored(const Event &event)
{
    if (Sandbox *s = m_byId.value(event.sandbox))
        s->onStored(event);
}

void Engine::reapOrphans(const QSet<QString> &keep)
{
    // Workspaces of sandboxes that died with a previous daemon that did not let them outlive it
    // (SIGKILL): nothing runs in them. A sandbox that may outlive its daemon has a record, and
    // its workspace is only ever removed by rm.
    WorkspaceSpare::removeLeftovers(workspacesDir()); // a spare is nobody's: made again
    QDir dir(workspacesDir());
    const QStringList entries = dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden);
    for (const QString &orphan : entries) {
        // A runtime's folder without a sandbox record (gVisor's bundle): its sandbox ended with
        // that daemon (it did not outlive it), and its workspace goes with it.
        const QString workspace = volume::workspaceOfRuntimeDir(orphan);
        if (!workspace.isEmpty() && !keep.contains(workspace)) {
            logger()->info("removing {} and its workspace: its sandbox ended with the previous daemon",
                dir.filePath(orphan).toStdString());
            QDir(dir.filePath(orphan)).removeRecursively();
            volume::removeWorkspace(dir.filePath(workspace));
        }
    }
    for (const QString &orphan : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden)) {
        // (A kept sandbox's runtime folder is its own: a gVisor guest comes back through it.)
        if (keep.contains(orphan) || keep.contains(volume::workspaceOfRuntimeDir(orphan)))
            continue;
        if (m_config.sandboxesOutliveDaemon) {
            logger()->warn(
                "workspace {} belongs to no sandbox this daemon knows of; kept", dir.filePath(orphan).toStdString());
            continue;
        }
        logger()->info("removing orphaned workspace {}", orphan.toStdString());
        volume::removeWorkspace(dir.filePath(orphan));
    }
    // Secrets a runtime read at start (gVisor), of sandboxes that never ran: no sandbox of this
    // instance is starting yet. (Only this daemon's own folders: /dev/shm is everybody's.)
    removeStagedLeftovers(memoryDirPrefix());
    SandboxCgroup::reapInstance(m_caps, m_config.instanceKey, false, keep);
    if (m_caps.runningAsRoot)
        m_uidClaims.releaseAllBut(keep);
    if (m_spare)
        m_spare->refill();
}

} // namespace airlock
