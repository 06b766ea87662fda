// SPDX-License-Identifier: Apache-2.0
#include "engine/Engine.h"
#include "util/Version.h"

#include "model/DisplayText.h"

#include "approval/ApprovalBroker.h"
#include "engine/DiskGuard.h"
#include "engine/WorkspaceSpare.h"
#include "log/Log.h"
#include "model/TerminalFilter.h"
#include "model/Units.h"
#include "net/EgressProxy.h"
#include "sandbox/GuestWire.h"
#include "sandbox/ResourceUsage.h"
#include "sandbox/Sandbox.h"
#include "sandbox/SeccompFilter.h"
#include "sandbox/WorkspaceVolume.h"
#include "secrets/SecretStore.h"
#include "tools/ToolGateway.h"
#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QSysInfo>
#include <QUrl>

#include <sys/stat.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr int kDiskGuardIntervalMs = 100;
} // namespace

namespace {
auto logger()
{
    static auto l = log::get("core.engine");
    return l;
}

} // namespace

Engine::Engine(EngineConfig config, HostCapabilities caps, ApprovalBroker &approvals, QObject *parent)
    : QObject(parent)
    , m_config(std::move(config))
    , m_caps(std::move(caps))
    , m_records(m_config.dataDir + QStringLiteral("/sandboxes"))
    , m_uidClaims(m_config.hostUids, m_config.instanceKey)
    , m_approvals(approvals)
{
    net::EgressProxy::Options proxy;
    proxy.hosts = m_config.resolve;
    proxy.upstreamTrust = m_config.upstreamTrust;
    m_proxy = new net::EgressProxy(
        proxy,
        [this](Sandbox *sandbox, const net::EgressQuestion &q, net::EgressProxy::Answer answer) {
            ApprovalRequest r;
            r.kind = QStringLiteral("network");
            r.requester = QStringLiteral("a process in the sandbox");
            r.destination
                = QStringLiteral("%1:%2 (%3)").arg(q.host).arg(q.port).arg(net::proxyProtocolName(q.protocol));
            r.rule = q.verdict.rule;
            r.layer = sandbox->policy().sources.value(QStringLiteral("/network/unknown")).toString();
            r.reason = q.verdict.reason;
            askPerson(sandbox, r,
                [answer](const ApprovalRequest &, const ApprovalDecision &d) { answer(d.allowed, d.describe()); });
        },
        this);
    tools::ToolRegistry registry;
    for (const QString &problem : registry.load(m_config.toolDirs))
        logger()->warn("tool left out: {}", problem.toStdString());
    m_tools = new tools::ToolGateway(
        registry, m_config.secrets,
        [this](Sandbox *sandbox, const tools::ToolCall &call, const policy::ToolVerdict &verdict,
            tools::ToolGateway::Answer answer) {
            ApprovalRequest r;
            r.kind = QStringLiteral("tool");
            r.requester = call.requester;
            r.owner = call.owner;
            r.run = call.run;
            r.tool = call.tool;
            r.arguments = call.arguments.toObject();
            r.rule = QStringLiteral("/tools/") + call.tool;
            r.layer = sandbox->policy().sources.value(r.rule).toString();
            r.reason = verdict.reason;
            askPerson(sandbox, r,
                [answer](const ApprovalRequest &, const ApprovalDecision &d) { answer(d.allowed, d.describe()); });
        },
        this);
    m_proxy->setBroker(
        [this](Sandbox *sandbox, const QString &host, quint16 port) { return brokeredRoute(sandbox, host, port); });
    m_workspacesDir = m_config.dataDir + QStringLiteral("/workspaces");
    if (m_caps.runningAsRoot)
        m_workspacesDir = QStringLiteral("/var/lib/airlock/workspaces-")
            + QString::fromLatin1(
                QCryptographicHash::hash(QFile::encodeName(m_config.dataDir), QCryptographicHash::Sha256)
                    .toHex()
                    .left(12));
    if (auto program = buildSeccompProgram())
        m_seccompProgram = *program;
    // The disk the workspaces share with the history: a sandbox whose image grows while less than
    // the reserve is free is ended, its workspace kept (DiskGuard.h).
    QDir().mkpath(m_workspacesDir);
    // Before any workspace is mounted below it: each runtime then drops the other sandboxes'
    // workspaces with one unmount (kept across restarts; made on a start with none mounted).
    if (m_caps.runningAsRoot)
        if (Status bound = volume::bindOnItself(m_workspacesDir); !bound)
            logger()->info("the other sandboxes' workspaces are detached one by one from each runtime's mount "
                           "namespace this time: {}",
                bound.error().message.toStdString());
    if (m_caps.diskDriver != volume::Driver::None)
        m_spare = new WorkspaceSpare(
            m_workspacesDir, m_caps.diskDriver, [this] { return defaultDiskBytes(); }, &Engine::newId, this);
    auto *guard = new DiskGuard(
        m_workspacesDir, m_config.diskReserveBytes,
        [this] {
            QList<DiskGuard::Image> images;
            for (const Sandbox *s : std::as_const(m_sandboxes))
                if (s->state() == SandboxState::Running)
                    images.append({s->id(), volume::imagePath(s->workspaceDir())});
            return images;
        },
        kDiskGuardIntervalMs, this);
    connect(guard, &DiskGuard::grewOnAFullDisk, this, [this](const QString &id, uint64_t free) {
        if (Sandbox *s = m_byId.value(id))
            s->fail(QStringLiteral("its workspace grew while the disk was full (%1 free, below the %2 airlockd keeps "
                                   "for the history): it was ended "
                                   "and its workspace is kept until 'airlockctl rm %3'")
                        .arg(units::formatBytes(free), units::formatBytes(m_config.diskReserveBytes), s->name()),
                QStringLiteral("disk_full"));
    });
}

Engine::~Engine()
{
    m_usagePool.waitForDone();
    shutdown();
}

// What a default workspace gets now: 10 GiB, or what the disk has free beyond the reserve when
// that is less; 0 when that is too little for one.
uint64_t Engine::defaultDiskBytes() const
{
    constexpr uint64_t kSmallestDefault = 64ull << 20;
    const std::optional<uint64_t> free = volume::freeBytes(workspacesDir());
    if (!free)
        return LimitPlan::kDefaultDiskBytes;
    const uint64_t beyondReserve = *free > m_config.diskReserveBytes ? *free - m_config.diskReserveBytes : 0;
    return beyondReserve < kSmallestDefault ? 0 : std::min(LimitPlan::kDefaultDiskBytes, beyondReserve);
}

// The workspace: a folder of the sandbox's uid (0700), with an image of the sandbox's disk limit
// mounted on it (`prepared`: made ahead of time, WorkspaceSpare). Refused (DiskFull) when the
// disk has no more than the reserve free, or too little beyond it for a default one.
Status Engine::makeWorkspace(const QString &dir, LimitPlan &plan, std::optional<uid_t> hostUid, bool prepared) const
{
    prepareWorkspacesDir();
    const std::optional<uint64_t> free = volume::freeBytes(workspacesDir());
    const uint64_t defaultBytes = plan.diskDefaulted ? defaultDiskBytes() : 0;
    if (free && (*free <= m_config.diskReserveBytes || (plan.diskDefaulted && defaultBytes == 0)))
        return makeError(ErrorCode::DiskFull,
            QStringLiteral(
                "only %1 is free on the disk of %2, and airlockd keeps %3 of it for the history and the workspaces "
                "it has: remove sandboxes (airlockctl rm), prune the history (airlockctl prune --vacuum) or free space")
                .arg(units::formatBytes(*free), workspacesDir(), units::formatBytes(m_config.diskReserveBytes)));
    if (plan.diskDefaulted)
        plan.effective.diskBytes = defaultBytes;
    const QByteArray native = QFile::encodeName(dir);
    if (!prepared && ::mkdir(native.constData(), 0700) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot create the workspace %1").arg(dir));
    auto fail = [&](Error e) {
        volume::removeWorkspace(dir);
        return e;
    };
    // A prepared one is the daemon user's filesystem root: the sandbox's uid takes it here.
    if (hostUid && ::chown(native.constData(), *hostUid, *hostUid) != 0)
        return fail(makeError(ErrorCode::IoError, QStringLiteral("cannot hand the workspace to uid %1").arg(*hostUid)));
    if (prepared || !plan.effective.diskBytes)
        return Ok{};
    const Status made = volume::create(
        m_caps.diskDriver, dir, *plan.effective.diskBytes, hostUid.value_or(::getuid()), hostUid.value_or(::getgid()));
    return made ? made : fail(made.error());
}

// Kept workspaces go next to the workspaces directory: same filesystem, so keeping is a rename.
QString Engine::memoryDirPrefix() const
{
    return QStringLiteral("/dev/shm/.airlock-secrets-%1-").arg(m_config.instanceKey);
}

QString Engine::keptDir() const
{
    const QString ws = workspacesDir();
    return ws.endsWith(QLatin1String("/workspaces"))
        ? ws.chopped(10) + QStringLiteral("kept")
        : QString(ws).replace(QStringLiteral("/workspaces-"), QStringLiteral("/kept-"));
}

QString Engine::workspacesDir() const
{
    return m_workspacesDir;
}

// As root, workspaces sit outside the data directory, so that the path a sandbox sees in its
// mountinfo names no home. bubblewrap, run as the sandbox's uid, resolves a bind source's path (it
// re-resolves a descriptor's and checks the inode), so the folders above a workspace are passable
// by every uid but not listable (0711, root's); the workspace itself is the sandbox uid's, 0700.
// A user's daemon keeps them in its data directory (0700: its sandboxes run as that user).
void Engine::prepareWorkspacesDir() const
{
    const QString dir = workspacesDir();
    QDir().mkpath(dir);
    const mode_t mode = m_caps.runningAsRoot ? 0711 : 0700;
    if (m_caps.runningAsRoot)
        ::chmod(QFile::encodeName(QFileInfo(dir).path()).constData(), mode);
    ::chmod(QFile::encodeName(dir).constData(), mode);
}

QJsonObject Engine::daemonInfo() const
{
    return {{QStringLiteral("version"), airlock::version()}, {QStringLiteral("pid"), double(::getpid())},
        {QStringLiteral("host"), QSysInfo::machineHostName()}, {QStringLiteral("kernel"), QSysInfo::kernelVersion()},
        {QStringLiteral("sandboxes"), int(m_sandboxes.size())}, {QStringLiteral("capabilities"), m_caps.toJson()},
        {QStringLiteral("guest"), m_config.guestPath}, {QStringLiteral("dataDir"), m_config.dataDir}};
}

void Engine::attach(Sandbox *sandbox, std::optional<uid_t> hostUid)
{
    if (hostUid)
        m_hostUids.insert(sandbox, *hostUid);
    connect(sandbox, &Sandbox::eventOccurred, this, &Engine::eventPublished);
    connect(sandbox, &Sandbox::egressConnection, m_proxy, [this, sandbox](int fd) { m_proxy->handle(sandbox, fd); });
    connect(sandbox, &Sandbox::toolCallRequested, m_tools, [this, sandbox](uint32_t callId, const QByteArray &request) {
        // From inside: untrusted bytes, parsed here.
        QJsonParseError err{};
        const QJsonObject r = QJsonDocument::fromJson(request, &err).object();
        if (err.error != QJsonParseError::NoError || !r.value(QStringLiteral("tool")).isString())
            return sandbox->answerToolCall(callId,
                makeError(
                    ErrorCode::InvalidArgument, QStringLiteral("expected {\"tool\": NAME, \"arguments\": {...}}")));
        tools::ToolCall call;
        call.tool = r.value(QStringLiteral("tool")).toString().left(100);
        call.arguments = r.contains(QStringLiteral("arguments")) ? r.value(QStringLiteral("arguments"))
                                                                 : QJsonValue(QJsonObject{});
        call.requester = QStringLiteral("a process in the sandbox");
        call.run = sandbox->currentRun();
        call.owner = sandbox;
        QPointer<Sandbox> alive(sandbox);
        m_tools->call(sandbox, call, [alive, callId](Result<QJsonObject> result) {
            if (alive)
                alive->answerToolCall(callId, result);
        });
    });
    connect(sandbox, &Sandbox::execNeedsPerson, this,
        [this, sandbox](uint32_t execId, const ExecAttempt &a, const policy::CommandVerdict &v) {
            askAboutProgram(sandbox, execId, a, v);
        });
    // A program's card goes with its process (0: with all of the execution's).
    const auto programGone = [this, sandbox](uint32_t execId, quint64 notification) {
        const QString id = sandbox->id();
        m_approvals.cancelIf(
            [&](const ApprovalRequest &r) {
                return r.sandbox == id && r.exec == execId && (notification == 0 || r.notification == notification);
            },
            QStringLiteral("the program's process is gone"));
    };
    connect(sandbox, &Sandbox::judgedExecutionGone, this, [programGone](uint32_t execId) { programGone(execId, 0); });
    connect(sandbox, &Sandbox::execAbandoned, this, programGone);
    // A one-shot goes once its command's end is published (and on its way to the client).
    if (sandbox->setup().oneShot)
        connect(sandbox, &Sandbox::eventOccurred, this, [this, sandbox](const Event &e) {
            if (!e.isOutput() && e.kind == event::ExecExited) // (output is most of what streams by)
                endIfOneShotSoon(sandbox);
        });
}

void Engine::discard(Sandbox *sandbox, bool removeWorkspace)
{
    m_oneShotStarts.remove(sandbox);
    if (const auto answerCreate = m_creating.take(sandbox))
        answerCreate();
    m_proxy->dropSandbox(sandbox);
    m_sandboxes.removeAll(sandbox);
    m_byId.remove(sandbox->id());
    if (m_warm.sandbox == sandbox)
        m_warm.sandbox = nullptr;
    if (const auto launching = m_launching.find(sandbox); launching != m_launching.end()) {
        *launching = removeWorkspace; // ended by launched()
        return;
    }
    end(sandbox, removeWorkspace);
}

void Engine::end(Sandbox *sandbox, bool removeWorkspace)
{
    sandbox->terminate(QStringLiteral("removed"));
    if (const auto uid = m_hostUids.take(sandbox))
        m_uidClaims.release(uid, sandbox->id());
    m_records.remove(sandbox->id());
    // The runtime's own files (gVisor's bundle): terminate() removed them, unless the sandbox was
    // found ended when this daemon started (then nothing of it was left to terminate).
    if (!sandbox->setup().launch.runtimeDir.isEmpty())
        volume::removeRuntimeDirs(sandbox->workspaceDir(), m_caps.runningAsRoot);
    if (removeWorkspace && !volume::removeWorkspace(sandbox->workspaceDir()))
        logger()->warn("could not remove workspace {}", sandbox->workspaceDir().toStdString());
    sandbox->deleteLater();
}

Result<QJsonObject> Engine::removeSandbox(Sandbox &target, bool keepWorkspace)
{
    Sandbox *sandbox = &target;
    QJsonObject result{{QStringLiteral("id"), sandbox->id()}, {QStringLiteral("name"), sandbox->name()}};
    QString keptAt;
    if (keepWorkspace && m_launching.contains(sandbox))
        return makeError(ErrorCode::Busy,
            QStringLiteral("%1 is starting: keep its workspace once it runs, or remove it without --keep")
                .arg(sandbox->name()));
    if (keepWorkspace) {
        // Nothing writes while it is kept; what cannot be kept stays where it is, with its
        // sandbox listed (stopped), so that nothing the person asked to keep is orphaned.
        sandbox->terminate(QStringLiteral("removed"));
        const QString target = keptDir() + QLatin1Char('/') + sandbox->name() + QLatin1Char('-') + sandbox->id();
        auto kept = QDir().mkpath(keptDir())
            ? volume::keepWorkspace(m_caps.diskDriver, sandbox->workspaceDir(), target)
            : Result<QString>(makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(keptDir())));
        if (!kept)
            return makeError(ErrorCode::IoError,
                QStringLiteral("could not keep the workspace of %1 (%2); it stays at %3: 'airlockctl rm --keep %1' "
                               "tries again, 'airlockctl rm %1' deletes it")
                    .arg(sandbox->name(), kept.error().message, sandbox->workspaceDir()));
        keptAt = *kept;
    }
    discard(sandbox, !keepWorkspace);
    result.insert(QStringLiteral("workspace"), keptAt.isEmpty() ? QJsonValue() : QJsonValue(keptAt));
    sandbox->publishDeleted(result);
    logger()->info("removed sandbox {} ({})", sandbox->id().toStdString(), sandbox->name().toStdString());
    return result;
}

Result<Sandbox *> Engine::find(const QString &ref) const
{
    if (Sandbox *s = m_byId.value(ref)) // what requests name most: the id a listing or a grant gave them
        return s;
    for (Sandbox *s : m_sandboxes)
        if (s->name() == ref)
            return s;
    // Like git: a unique id prefix of at least 4 characters names a sandbox too.
    QList<Sandbox *> matches;
    if (ref.size() >= 4)
        for (Sandbox *s : m_sandboxes)
            if (s->id().startsWith(ref))
                matches.append(s);
    if (matches.size() == 1)
        return matches.first();
    if (matches.size() > 1)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' matches %2 sandbox ids; give more characters").arg(ref).arg(matches.size()));
    return makeError(
        ErrorCode::NotFound, QStringLiteral("no sandbox named '%1' (see 'airlockctl ls')").arg(ref.left(100)));
}

Result<Sandbox *> Engine::asDecided(const ApprovalRequest &request, const ApprovalDecision &decision) const
{
    auto found = find(request.sandbox);
    if (!found || (*found)->policyVersion() != request.policyVersion + (decision.always ? 1 : 0))
        return makeError(
            ErrorCode::Denied, QStringLiteral("the sandbox or its policy changed while the request waited; ask again"));
    return found;
}

QJsonObject Engine::summarize(const Sandbox &s) const
{
    return {{QStringLiteral("id"), s.id()}, {QStringLiteral("name"), s.name()},
        {QStringLiteral("state"), sandboxStateName(s.state())},
        {QStringLiteral("failure"), s.failure().isEmpty() ? QJsonValue() : QJsonValue(s.failure())},
        {QStringLiteral("network"), networkModeName(s.spec().network)},
        {QStringLiteral("hostNetwork"), s.spec().network == NetworkMode::Full},
        {QStringLiteral("createdAt"), s.createdAt().toString(Qt::ISODateWithMs)},
        {QStringLiteral("executions"), s.runningExecutions()}, {QStringLiteral("run"), s.currentRun()},
        {QStringLiteral("agent"), s.currentAgent()}};
}

QJsonObject Engine::describe(const Sandbox &s) const
{
    QJsonArray mounts;
    for (const Mount &m : s.spec().mounts)
        mounts.append(QJsonObject{{QStringLiteral("host"), m.hostPath}, {QStringLiteral("path"), m.sandboxPath},
            {QStringLiteral("writable"), m.writable}});
    QJsonArray credentials; // what it is given: names and how, never values
    for (const policy::CredentialGrant &g : s.policy().grants)
        credentials.append(QJsonObject{{QStringLiteral("secret"), g.secret},
            {g.file.isEmpty() ? QStringLiteral("env") : QStringLiteral("file"), g.file.isEmpty() ? g.env : g.file}});
    QJsonValue disk; // what the workspace's filesystem holds now, when it has a size of its own
    if (volume::hasImage(s.workspaceDir()) && volume::mounted(s.workspaceDir()))
        if (const auto used = volume::usage(s.workspaceDir()))
            disk = QJsonObject{{QStringLiteral("usedBytes"), double(used->usedBytes)},
                {QStringLiteral("sizeBytes"), double(used->sizeBytes)}};
    QJsonObject described = summarize(s);
    const std::pair<QString, QJsonValue> more[] = {{QStringLiteral("workspace"), s.workspaceDir()},
        {QStringLiteral("mounts"), mounts}, {QStringLiteral("limits"), s.limitPlan().toJson(m_caps)},
        {QStringLiteral("disk"), disk}, {QStringLiteral("preset"), s.policy().preset},
        {QStringLiteral("credentials"), credentials}, {QStringLiteral("policyVersion"), s.policyVersion()},
        {QStringLiteral("lastSeq"), double(s.lastSeq())}, {QStringLiteral("isolation"), s.runtime().boundary(s)}};
    for (const auto &[key, value] : more)
        described.insert(key, value);
    return described;
}

QJsonArray Engine::listSandboxes(bool brief) const
{
    QJsonArray out;
    for (const Sandbox *s : m_sandboxes)
        out.append(brief ? summarize(*s) : describe(*s));
    return out;
}

void Engine::sampleUsage(std::function<void(QJsonArray, qint64)> done)
{
    if (!m_usageClock.isValid())
        m_usageClock.start();
    if (m_lastUsageMs >= 0 && m_usageClock.elapsed() - m_lastUsageMs < kUsageReuseMs && m_usageWaiting.isEmpty())
        return done(m_lastUsage, m_lastUsageMs);
    m_usageWaiting.append(std::move(done));
    if (m_usageWaiting.size() > 1)
        return;
    QSet<quint64> namespaces;
    for (const Sandbox *s : std::as_const(m_sandboxes))
        if (s->pidNamespace())
            namespaces.insert(s->pidNamespace());
    // The pool is waited for before this engine goes, so `this` outlives the pass; the answer is
    // posted back to this thread (and dropped with the engine if it is going).
    m_usagePool.start([this, namespaces] {
        QHash<quint64, ResourceUsage> usage = usageByPidNamespace(namespaces);
        const qint64 sampledMs = m_usageClock.elapsed(); // only read here: started before the first pass
        QMetaObject::invokeMethod(
            this,
            [this, usage = std::move(usage), sampledMs] {
                m_lastUsageMs = sampledMs;
                QJsonArray out;
                for (const Sandbox *s : std::as_const(m_sandboxes)) { // as they are now: one may have gone meanwhile
                    const ResourceUsage u = s->pidNamespace() ? usage.value(s->pidNamespace()) : ResourceUsage{};
                    out.append(QJsonObject{{QStringLiteral("id"), s->id()}, {QStringLiteral("name"), s->name()},
                        {QStringLiteral("cpuNs"), double(u.cpuNs)},
                        {QStringLiteral("memoryBytes"), double(u.memoryBytes)},
                        {QStringLiteral("processes"), u.processes},
                        {QStringLiteral("executions"), s->runningExecutions()},
                        {QStringLiteral("commands"),
                            QJsonArray::fromStringList(s->runningCommands().mid(0, kUsageCommands))},
                        {QStringLiteral("lastOutput"), s->lastOutputLine().left(300)},
                        {QStringLiteral("agent"), s->currentAgent()}, {QStringLiteral("run"), s->currentRun()}});
                }
                m_lastUsage = out;
                for (const auto &reply : std::exchange(m_usageWaiting, {}))
                    reply(out, m_lastUsageMs);
            },
            Qt::QueuedConnection);
    });
}

Result<uint32_t> Engine::exec(Sandbox &sandbox, const ExecRequest &request)
{
    auto secretEnv = grantedSecrets(sandbox.policy(), true);
    if (!secretEnv)
        return secretEnv.error();
    return sandbox.exec(request, *secretEnv);
}

Result<QByteArray> Engine::secretOf(const policy::CredentialGrant &g) const
{
    if (!m_config.secrets)
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral("the policy grants secret '%1' but this daemon has no secret store").arg(g.secret));
    auto value = m_config.secrets->get(g.secret);
    if (!value)
        return makeError(value.error().code,
            QStringLiteral("the policy grants secret '%1'%2: %3")
                .arg(g.secret,
                    g.brokered()          ? QStringLiteral(" brokered for ") + g.brokerHost
                        : g.env.isEmpty() ? QStringLiteral(" as file ") + g.file
                                          : QStringLiteral(" as $") + g.env,
                    value.error().message));
    return *value;
}

Result<QList<std::pair<policy::CredentialGrant, QByteArray>>> Engine::grantedSecrets(
    const policy::EffectivePolicy &policy, bool envOnly) const
{
    QList<std::pair<policy::CredentialGrant, QByteArray>> out;
    for (const policy::CredentialGrant &g : policy.grants) {
        if (envOnly && g.env.isEmpty())
            continue;
        // A brokered one's placeholder needs no store: it is read when the sandbox is made (to
        // fail then) and by the proxy, not at every execution.
        if (g.brokered() && envOnly) {
            out.append({g, g.placeholder()});
            continue;
        }
        auto value = secretOf(g);
        if (!value)
            return value.error();
        out.append({g, g.brokered() ? g.placeholder() : *value});
    }
    return out;
}

Status Engine::signalCheck(const QJsonObject &params)
{
    const int signo = params.value(QStringLiteral("signal")).toInt(9);
    if (signo < 1 || signo > 64)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("invalid signal %1 (expected 1..64)").arg(signo));
    return Ok{};
}

Result<int> Engine::signalAll(Sandbox &sandbox, int signo)
{
    if (Status valid = signalCheck({{QStringLiteral("signal"), signo}}); !valid)
        return valid.error();
    return sandbox.signalAll(signo);
}

WorkspaceFiles Engine::files(const Sandbox &sandbox) const
{
    return WorkspaceFiles(sandbox.workspaceDir(), sandbox.hostUid());
}

void Engine::shutdown()
{
    // No new sandbox from here; the runtimes being started are let finish and given to their
    // sandboxes, which end below with the rest (one still starting has no record: nothing would
    // find it later).
    m_stopping = true;
    m_warm.taker = {}; // (its client goes with the daemon)
    m_launcher.stop();
    m_launcher.deliverFinished();
    dropWarm();
    const QList<Sandbox *> all = m_sandboxes;
    QSet<QString> &left = m_outlived; // the destructor calls this again: what went on stays kept
    for (Sandbox *s : all) {
        // What outlives the daemon is let go of as it is; a failed one stays listed for the next.
        // One still starting has no record yet (it is written at hello): no later daemon could
        // find it, so it ends here.
        if (m_config.sandboxesOutliveDaemon && s->outlivesDaemon() && !s->unrecorded()) {
            s->detach();
            left.insert(s->id());
            m_proxy->dropSandbox(s);
            m_sandboxes.removeAll(s);
            m_byId.remove(s->id());
            m_hostUids.remove(s);
            delete s;
            continue;
        }
        discard(s, true);
    }
    if (!all.isEmpty() && !left.isEmpty())
        logger()->info("{} sandboxes go on; the next airlockd takes them over", left.size());
    SandboxCgroup::reapInstance(m_caps, m_config.instanceKey, true, left);
    delete m_spare; // waits for one being made, and removes it
    m_spare = nullptr;
    if (workspacesDir().startsWith(QLatin1String("/var/lib/airlock/")))
        ::rmdir(QFile::encodeName(workspacesDir()).constData()); // only when empty
}

} // namespace airlock
