// SPDX-License-Identifier: Apache-2.0
// Creating sandboxes: the request checked and resolved (policy, limits, mounts), then launched;
// and the one-shots of airlockctl run, which end with their command.
// (Listing and removing sandboxes: Engine.cpp; taking them over: EngineAdoption.cpp.)
#include "engine/Engine.h"

#include "engine/WorkspaceSpare.h"
#include "log/Log.h"
#include "sandbox/GuestWire.h"
#include "sandbox/Sandbox.h"
#include "sandbox/WorkspaceVolume.h"
#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QRandomGenerator>
#include <QScopeGuard>

#include <algorithm>
#include <csignal>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr int kMaxSandboxes = 4096;

auto logger()
{
    static auto l = log::get("core.engine");
    return l;
}
} // namespace

QString Engine::newId()
{
    return QString::number(QRandomGenerator::system()->generate64() & 0xffffffffffffULL, 16)
        .rightJustified(12, QLatin1Char('0'));
}

Result<std::optional<uid_t>> Engine::allocateHostUid(const QString &sandboxId)
{
    if (!m_caps.runningAsRoot)
        return std::optional<uid_t>();
    if (Status free = checkSubordinateIds(m_config.hostUids); !free)
        return free.error();
    auto uid = m_uidClaims.claim(sandboxId);
    if (!uid)
        return uid.error();
    return std::optional<uid_t>(*uid);
}

Result<Engine::Resolved> Engine::resolve(const SandboxCreation &creation) const
{
    Resolved r;
    r.spec = creation.spec;
    r.runtime = &m_runtimes.of(r.spec.isolation);
    if (m_seccompProgram.isEmpty())
        return makeError(ErrorCode::BoundaryUnavailable, m_caps.seccompError);
    if (m_sandboxes.size() >= kMaxSandboxes)
        return makeError(
            ErrorCode::LimitUnsupported, QStringLiteral("this daemon already runs %1 sandboxes").arg(kMaxSandboxes));
    if (r.spec.name.isEmpty())
        r.spec.name = QStringLiteral("sb-") + newId().left(6);
    if (Status s = validateSandboxName(r.spec.name); !s)
        return s.error();
    for (const Sandbox *s : std::as_const(m_sandboxes))
        if (s->name() == r.spec.name)
            return makeError(ErrorCode::AlreadyExists,
                QStringLiteral("a sandbox named '%1' already exists; pick another --name or remove it "
                               "with 'airlockctl rm %1'")
                    .arg(r.spec.name));
    auto user = policy::readUserLayerIfAny(userPolicyFile());
    if (!user)
        return user.error();
    r.userLayer = *user;
    auto effective = policy::resolveForSandbox(creation.policyOverrides, creation.preset, *user);
    if (!effective)
        return effective.error();
    r.policy = *effective;
    auto granted = grantedSecrets(r.policy, false);
    if (!granted)
        return granted.error();
    r.granted = *granted;
    // The policy decides network, mounts and limits; the spec carries them to the launcher.
    r.spec.network = r.policy.networkMode == QLatin1String("full") ? NetworkMode::Full
        : r.policy.networkMode == QLatin1String("allowlist")       ? NetworkMode::Allowlist
                                                                   : NetworkMode::None;
    r.spec.mounts = r.policy.mounts;
    r.spec.limits = r.policy.limits;
    // The runtime asked for, or nothing: never another boundary than the one asked for, nor a
    // policy it cannot enforce (decision 6).
    if (Status boundary = r.runtime->check(r.spec); !boundary)
        return boundary.error();
    if (Status fits = r.runtime->fitPolicy(r.policy); !fits)
        return fits.error();
    for (const Mount &m : std::as_const(r.spec.mounts))
        if (Status s = validateMount(m); !s)
            return s.error();
    // What is checked is what is opened: the canonical path, which the launcher opens with no
    // symbolic link followed (a link put in its path since is refused, not followed elsewhere).
    for (Mount &m : r.spec.mounts)
        if (const QString canonical = QFileInfo(m.hostPath).canonicalFilePath(); !canonical.isEmpty())
            m.hostPath = canonical;
    auto masked = hiddenInMounts(r.spec.mounts);
    if (!masked)
        return masked.error();
    r.hidden = *masked;
    auto plan = LimitPlan::make(r.spec.limits, m_caps);
    if (!plan)
        return plan.error();
    r.plan = *plan;
    r.runtime->fitLimits(r.plan);
    return r;
}

void Engine::createSandbox(SandboxCreation creation, CreateDone done)
{
    if (m_stopping)
        return done(makeError(ErrorCode::SandboxNotRunning, QStringLiteral("airlockd is stopping")));
    auto resolved = resolve(creation);
    if (!resolved)
        return done(resolved.error());
    const QByteArray key = creation.oneShot ? warmKey(creation, *resolved) : QByteArray();
    if (!key.isEmpty() && key == m_warm.key && m_warm.sandbox && !m_warm.taker) {
        if (m_warm.sandbox->state() != SandboxState::Starting) // (claimWarm sees to one that failed)
            return claimWarm(creation.run, std::move(done));
        // Still starting: further along than a new one would be.
        m_warm.taker = [this, creation, done = std::move(done)](bool ready) {
            if (ready)
                claimWarm(creation.run, done);
            else
                createSandbox(creation, done);
        };
        return;
    }
    if (!key.isEmpty() && key != m_warm.key) {
        // The next one like this is made ahead once this one has ended (endIfOneShot).
        dropWarm();
        m_warm.key = key;
        m_warm.creation = creation;
        m_warm.creation.run.clear();
    }
    launch(creation, std::move(*resolved), std::move(done));
}

QByteArray Engine::warmKey(const SandboxCreation &creation, const Resolved &resolved)
{
    // Not named ones (a name is asked for once); nor gVisor's (its sandbox is more than the
    // processes a record names: a killed daemon's would be left); nor with mounts (what a path
    // names is bound when the sandbox starts: a folder moved or made again meanwhile would not
    // be the one the person names now).
    if (!creation.spec.name.isEmpty() || resolved.spec.isolation != Isolation::Namespaces
        || !resolved.spec.mounts.isEmpty())
        return {};
    // Everything it is launched with and from, but its name (made up) and run (the taker's).
    SandboxSpec spec = resolved.spec;
    spec.name.clear();
    QJsonArray granted;
    for (const auto &[grant, value] : resolved.granted)
        granted.append(QJsonArray{grant.secret, grant.env, grant.file,
            QString::fromLatin1(QCryptographicHash::hash(value, QCryptographicHash::Sha256).toHex())});
    const QJsonObject all{{QStringLiteral("spec"), spec.toJson()},
        {QStringLiteral("overrides"), creation.policyOverrides}, {QStringLiteral("preset"), creation.preset},
        {QStringLiteral("createdThrough"), creation.createdThrough},
        {QStringLiteral("policy"), resolved.policy.document},
        {QStringLiteral("userLayer"), resolved.userLayer ? QJsonValue(*resolved.userLayer) : QJsonValue()},
        {QStringLiteral("hidden"), QJsonArray::fromStringList(resolved.hidden)}, {QStringLiteral("granted"), granted}};
    return QCryptographicHash::hash(QJsonDocument(all).toJson(QJsonDocument::Compact), QCryptographicHash::Sha256);
}

void Engine::makeWarm()
{
    if (m_stopping || m_warm.key.isEmpty() || m_warm.sandbox)
        return;
    // Made as it would be now: if anything changed since (the person's defaults, a secret), the
    // next one-shot is made when it is asked for.
    auto resolved = resolve(m_warm.creation);
    if (!resolved || warmKey(m_warm.creation, *resolved) != m_warm.key) {
        m_warm = {};
        return;
    }
    const QByteArray key = m_warm.key;
    launch(
        m_warm.creation, std::move(*resolved),
        [this, key](const Result<QJsonObject> &made) {
            if (m_warm.key != key)
                return; // dropped meanwhile
            if (!made) {
                logger()->info("no sandbox made ahead: {}", made.error().message.toStdString());
                m_warm.sandbox = nullptr;
            }
            if (const auto taker = std::exchange(m_warm.taker, {}))
                taker(made.ok());
        },
        true);
    if (!m_warmIdle) {
        m_warmIdle = new QTimer(this);
        m_warmIdle->setSingleShot(true);
        connect(m_warmIdle, &QTimer::timeout, this, [this] {
            logger()->info(
                "the sandbox made ahead for a one-shot was not asked for in {} min: removed", kWarmIdleMs / 60000);
            dropWarm();
        });
    }
    m_warmIdle->start(kWarmIdleMs);
}

void Engine::claimWarm(const QString &run, CreateDone done)
{
    Warm &w = m_warm;
    Sandbox *sandbox = std::exchange(w.sandbox, nullptr);
    const bool nameTaken = sandbox && std::any_of(m_sandboxes.cbegin(), m_sandboxes.cend(), [&](const Sandbox *s) {
        return s->name() == sandbox->name();
    });
    if (!sandbox || sandbox->state() != SandboxState::Running || nameTaken) {
        // Failed while it waited, or its made-up name was taken meanwhile: made now instead.
        if (sandbox)
            discard(sandbox, true);
        SandboxCreation creation = w.creation;
        creation.run = run;
        return createSandbox(creation, std::move(done));
    }
    if (m_warmIdle)
        m_warmIdle->stop(); // (started again when the next is made)
    m_sandboxes.append(sandbox);
    m_byId.insert(sandbox->id(), sandbox);
    sandbox->claim(run);
    saveRecord(*sandbox);
    logger()->info("sandbox {} ({}) made ahead, taken by run {}", sandbox->id().toStdString(),
        sandbox->name().toStdString(), run.toStdString());
    // (The next one is made once this one has ended: made now, it would compete with its
    // command for the main thread and the cores: a one-shot took 30 ms instead of 12 here.)
    done(describe(*sandbox));
}

void Engine::dropWarm()
{
    Warm gone = std::exchange(m_warm, {});
    if (gone.sandbox)
        discard(gone.sandbox, true);
    if (gone.taker)
        gone.taker(false);
}

void Engine::removeWarmLeftover(const SandboxRecord &record)
{
    logger()->info("removing sandbox {}: it was made ahead for a one-shot that never came", record.id.toStdString());
    for (const ProcessRef &p : {record.init, record.bwrap}) {
        const int fd = p.pid > 0 ? p.open() : -1;
        if (fd < 0)
            continue;
        ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
        pollfd gone{fd, POLLIN, 0};
        ::poll(&gone, 1, 2000);
        ::close(fd);
    }
    volume::removeWorkspace(workspacesDir() + QLatin1Char('/') + record.id);
    volume::removeRuntimeDirs(workspacesDir() + QLatin1Char('/') + record.id, m_caps.runningAsRoot);
    m_records.remove(record.id);
}

void Engine::launch(const SandboxCreation &creation, Resolved resolved, CreateDone done, bool warm)
{
    QElapsedTimer spent;
    spent.start();
    const IsolationRuntime &runtime = *resolved.runtime;
    const SandboxSpec &spec = resolved.spec;
    // A default workspace made ahead of time, when one is ready: the sandbox takes its id.
    QString id = newId();
    std::optional<QString> spare
        = resolved.plan.diskDefaulted && m_spare ? m_spare->take(defaultDiskBytes()) : std::nullopt;
    if (spare)
        id = *spare;
    auto dropSpare = qScopeGuard([&] {
        if (spare)
            volume::removeWorkspace(workspacesDir() + QLatin1Char('/') + *spare);
    });
    SandboxSetup setup;
    setup.id = id;
    auto authority = brokerAuthority(id, resolved.policy);
    if (!authority)
        return done(authority.error());
    setup.brokerCa = *authority;
    setup.spec = spec;
    setup.plan = resolved.plan;
    setup.run = creation.run;
    setup.createdThrough = creation.createdThrough;
    setup.oneShot = creation.oneShot;
    setup.warm = warm;
    setup.policy = resolved.policy;
    setup.policyOverrides = creation.policyOverrides;
    setup.userLayer = resolved.userLayer;
    setup.workspaceDir = workspacesDir() + QLatin1Char('/') + id;
    const auto claimed = allocateHostUid(id);
    if (!claimed)
        return done(claimed.error());
    const std::optional<uid_t> hostUid = *claimed;
    auto unclaim = qScopeGuard([&] {
        if (hostUid)
            m_uidClaims.release(*hostUid, id);
    });
    if (Status made = makeWorkspace(setup.workspaceDir, setup.plan, hostUid, spare.has_value()); !made)
        return done(made.error());
    dropSpare.dismiss();
    const LimitPlan &plan = setup.plan;
    auto cgroup = SandboxCgroup::create(m_caps, m_config.instanceKey, id, plan);
    if (!cgroup) {
        volume::removeWorkspace(setup.workspaceDir);
        return done(cgroup.error());
    }
    setup.cgroup = *cgroup;
    setup.runtime = &runtime;
    LaunchRequest &launch = setup.launch;
    launch.id = id;
    launch.runtimeDir = volume::runtimeDirOf(setup.workspaceDir); // the sandbox uid's, like its workspace
    launch.memoryDirPrefix = memoryDirPrefix();
    launch.guestPath = m_config.guestMount.isEmpty() ? m_config.guestPath : m_config.guestMount;
    launch.gvisorPreload = QFileInfo(m_config.guestPath).dir().filePath(QStringLiteral("airlock-gvisor-preload.so"));
    launch.hostname = spec.name;
    launch.network = spec.network;
    launch.workspaceDir = setup.workspaceDir;
    launch.mounts = spec.mounts;
    launch.hiddenPaths = resolved.hidden;
    launch.seccompProgram = m_seccompProgram;
    launch.cgroupProcsFiles = setup.cgroup.procsFiles();
    if (setup.cgroup.placesFromOutside())
        launch.placeChild = [cgroup = setup.cgroup](pid_t pid) { return cgroup.place(pid); };
    launch.dropToUid = hostUid;
    if (!plan.pidsByCgroup)
        launch.nproc = plan.effective.pids;
    launch.tmpBytes = plan.effective.tmpBytes;
    launch.verboseGuest = m_config.verboseGuest;
    for (const auto &[grant, value] : std::as_const(resolved.granted))
        if (!grant.file.isEmpty())
            launch.dataFiles.append({grant.file, value});
    if (setup.brokerCa)
        launch.trustFiles = trustFiles(*setup.brokerCa);

    // It outlives this daemon: its guest listens for the next one (bubblewrap) or comes back to it
    // (gVisor), and they prove themselves to each other with the token (kept in the sandbox's
    // record, readable by this user alone).
    int resumeListen = -1;
    if (m_config.sandboxesOutliveDaemon && runtime.canOutliveDaemon()) {
        if (runtime.guestListens()) {
            auto listening = m_records.listen(id);
            if (!listening) {
                setup.cgroup.destroy();
                volume::removeWorkspace(setup.workspaceDir);
                return done(listening.error());
            }
            resumeListen = *listening;
            launch.resumeListenFd = resumeListen;
        }
        launch.resumeToken.resize(wire::kResumeTokenSize);
        QRandomGenerator::system()->generate(reinterpret_cast<quint32 *>(launch.resumeToken.data()),
            reinterpret_cast<quint32 *>(launch.resumeToken.data() + launch.resumeToken.size()));
    }

    unclaim.dismiss(); // discard() releases it from here on
    auto *sandbox = new Sandbox(std::move(setup), this);
    addSecrets(*sandbox, resolved.granted);
    if (warm) {
        m_warm.sandbox = sandbox; // listed once it is claimed
    } else {
        m_sandboxes.append(sandbox);
        m_byId.insert(id, sandbox);
    }
    attach(sandbox, hostUid);
    auto finished = std::make_shared<bool>(false);
    connect(sandbox, &Sandbox::started, this, [this, sandbox, done, finished] {
        *finished = true;
        m_creating.remove(sandbox);
        saveRecord(*sandbox);
        done(describe(*sandbox));
    });
    connect(sandbox, &Sandbox::startFailed, this, [this, sandbox, done, finished](const Error &error) {
        if (*finished)
            return;
        *finished = true;
        m_creating.remove(sandbox);
        discard(sandbox, true);
        done(error);
    });
    // Removed before it started (rm by name, the daemon stopping): the create is answered too.
    m_creating.insert(sandbox, [done, finished] {
        if (std::exchange(*finished, true))
            return;
        done(makeError(
            ErrorCode::SandboxNotRunning, QStringLiteral("the sandbox was removed while it was being created")));
    });
    // Its runtime is started off this thread (a launch mostly waits on the kernel); meanwhile it
    // is listed as starting, and removing it ends it once the launch has returned.
    m_launching.insert(sandbox, std::nullopt);
    Launching launching{resumeListen, double(spent.nsecsElapsed()) / 1e6, {}, std::move(done)};
    launching.since.start();
    m_launcher.launch(runtime, sandbox->setup().launch,
        [this, sandbox, launching = std::move(launching)](
            Result<LaunchedSandbox> result) mutable { launched(sandbox, std::move(result), std::move(launching)); });
}

void Engine::launched(Sandbox *sandbox, Result<LaunchedSandbox> result, Launching launching)
{
    QElapsedTimer spent;
    spent.start();
    if (launching.resumeListen >= 0)
        ::close(launching.resumeListen); // the guest has its own now
    // (Nothing but discard() ends a sandbox whose runtime is being started: the others need its
    // channel, or its running.)
    const std::optional<bool> ending = m_launching.take(sandbox);
    // It takes what was started even when it is to end now: ending it ends that too.
    const Status started = sandbox->start(std::move(result));
    if (ending)
        return end(sandbox, *ending);
    if (!started) {
        m_creating.remove(sandbox); // answered here, once
        discard(sandbox, true);
        return launching.done(started.error());
    }
    const SandboxSpec &spec = sandbox->spec();
    logger()->info("creating sandbox {} ({}), network {}{} ({:.1f} ms here, {:.1f} ms starting its runtime)",
        sandbox->id().toStdString(), spec.name.toStdString(), networkModeName(spec.network).toStdString(),
        sandbox->setup().warm ? ", made ahead" : "", launching.hereMs + double(spent.nsecsElapsed()) / 1e6,
        double(launching.since.nsecsElapsed()) / 1e6);
}

void Engine::holdOneShot(Sandbox *sandbox)
{
    if (sandbox && m_sandboxes.contains(sandbox))
        ++m_oneShotStarts[sandbox];
}

void Engine::releaseOneShot(Sandbox *sandbox)
{
    if (!sandbox || !m_oneShotStarts.contains(sandbox))
        return;
    if (--m_oneShotStarts[sandbox] <= 0)
        m_oneShotStarts.remove(sandbox);
    endIfOneShot(sandbox);
}

void Engine::endIfOneShotSoon(Sandbox *sandbox)
{
    QMetaObject::invokeMethod(
        this, [this, alive = QPointer<Sandbox>(sandbox)] { endIfOneShot(alive); }, Qt::QueuedConnection);
}

void Engine::endIfOneShot(Sandbox *sandbox)
{
    if (!sandbox || !m_sandboxes.contains(sandbox) || !sandbox->setup().oneShot || sandbox->runningExecutions() > 0
        || m_oneShotStarts.contains(sandbox) || sandbox->state() == SandboxState::Starting)
        return;
    logger()->info("sandbox {} ({}) was made for one command, which ended: removing it", sandbox->id().toStdString(),
        sandbox->name().toStdString());
    if (auto removed = removeSandbox(*sandbox, false); !removed)
        logger()->warn(
            "could not remove sandbox {}: {}", sandbox->id().toStdString(), removed.error().message.toStdString());
    // The next one like it, made while nobody waits for one.
    QTimer::singleShot(0, this, [this] { makeWarm(); });
}

namespace {
// Every folder from `from` down to the parent of `to` may be passed through by any uid.
bool traversableByOthers(const QString &from, const QString &to)
{
    for (QString p = QFileInfo(to).path(); p.size() >= from.size(); p = QFileInfo(p).path()) {
        struct stat st { };
        if (::stat(QFile::encodeName(p).constData(), &st) != 0 || !(st.st_mode & S_IXOTH))
            return false;
        if (p == from || p == QLatin1String("/"))
            break;
    }
    return true;
}
} // namespace

Result<QStringList> Engine::hiddenInMounts(const QList<Mount> &mounts) const
{
    // What is airlockd's own: the history, records and resume sockets of every sandbox, the
    // other sandboxes' workspaces, the person's secrets, policy and tools, the daemon's socket.
    // Made if missing (a folder that does not exist yet could not be covered, and would appear
    // in a mount later).
    QStringList own;
    QStringList dirs{
        m_config.dataDir, workspacesDir(), keptDir(), paths::configDir(), paths::stateDir(), paths::runtimeDir()};
    dirs += m_config.ownDirs;
    for (const QString &dir : std::as_const(dirs)) {
        if (dir.isEmpty())
            continue;
        if (!QFileInfo::exists(dir))
            (void)paths::ensurePrivateDir(dir);
        if (const QString canonical = QFileInfo(dir).canonicalFilePath();
            !canonical.isEmpty() && !own.contains(canonical))
            own.append(canonical);
    }
    // One cover for a folder and what is in it.
    own.removeIf([&](const QString &dir) {
        return std::any_of(
            own.cbegin(), own.cend(), [&](const QString &other) { return dir.startsWith(other + QLatin1Char('/')); });
    });
    const auto below = [](const QString &path, const QString &dir) {
        return path == dir || path.startsWith(dir + QLatin1Char('/'));
    };
    QStringList hidden;
    QStringList shown; // where airlockd's folders are inside the mounts, covered or not
    for (const Mount &m : mounts) {
        const QString host = QFileInfo(m.hostPath).canonicalFilePath();
        if (host.isEmpty())
            continue; // a source that does not exist fails where it is opened, with its own message
        for (const QString &dir : std::as_const(own)) {
            if (below(host, dir))
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral(
                        "mount %1: it is inside airlockd's own %2, which no sandbox may see (it holds the history, the "
                        "other sandboxes and the keys to them); mount a folder of your own instead")
                        .arg(m.hostPath, dir));
            if (host != QLatin1String("/") && !dir.startsWith(host + QLatin1Char('/')))
                continue;
            // Below the mount: it is there, inside, covered by an empty read-only folder. Written
            // to, the mount could move the covered folder aside and make one of its own where
            // airlockd keeps the next sandbox's record.
            if (m.writable)
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("mount %1 read-write: it holds airlockd's own %2, which a sandbox could move aside "
                                   "and replace; "
                                   "mount it read-only (:ro), or a folder below it")
                        .arg(m.hostPath, dir));
            shown.append(m.sandboxPath + dir.mid(host == QLatin1String("/") ? 0 : host.size()));
            // A root daemon's sandboxes run as uids of their own: what they cannot reach needs no
            // cover (and could not be given one).
            if (m_caps.runningAsRoot && !traversableByOthers(host, dir))
                continue;
            hidden.append(shown.constLast());
        }
    }
    // Nor may a mount be put inside one of them (bwrap would make its mount point there).
    for (const Mount &m : mounts)
        for (const QString &h : std::as_const(shown))
            if (below(m.sandboxPath, h))
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral(
                        "mount %1 at %2: that is inside %3, which shows airlockd's own folder (covered, or out of the "
                        "sandbox's reach); mount it elsewhere")
                        .arg(m.hostPath, m.sandboxPath, h));
    return hidden;
}

} // namespace airlock
