// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "model/ExecRequest.h"
#include "model/SandboxSpec.h"
#include "model/StoredSandbox.h"
#include "policy/Policy.h"
#include "sandbox/HostCapabilities.h"
#include "sandbox/HostUids.h"
#include "sandbox/IsolationRuntime.h"
#include "sandbox/Launcher.h"
#include "sandbox/Limits.h"
#include "sandbox/SandboxRecord.h"
#include "sandbox/WorkspaceFiles.h"

#include <QByteArray>
#include <QHash>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QTimer>

#include <functional>

#include <QElapsedTimer>
#include <QThreadPool>
#include <sys/types.h>

namespace airlock {

class Sandbox;
struct ExecAttempt;
class ApprovalBroker;
class SecretStore;
struct ApprovalRequest;
struct ApprovalDecision;
namespace net {
class EgressProxy;
class SandboxCa;
struct BrokeredRoute;
struct EgressQuestion;
} // namespace net
namespace tools {
class ToolGateway;
struct ToolCall;
} // namespace tools

struct EngineConfig {
    QString guestPath;
    QString dataDir;
    QString instanceKey; // from the InstanceLock: names this daemon's cgroup subtree
    bool verboseGuest = false;
    QString userPolicyFile; // empty: $XDG_CONFIG_HOME/airlock/policy.json
    // The egress proxy's own answers for these names (airlockd --resolve NAME=ADDR), trusted.
    QHash<QString, QList<QHostAddress>> resolve;
    SecretStore *secrets = nullptr; // null: no secret can be granted
    QStringList toolDirs; // host tool declarations (*.json)
    // Sandboxes go on when the daemon stops or dies, and the next daemon takes them over. Off:
    // they end with it, and what a killed daemon left is removed at the next start.
    bool sandboxesOutliveDaemon = true;
    // More of airlockd's own folders no sandbox may see (its socket's, the tool declarations').
    QStringList ownDirs;
    // As root: the host uids sandboxes get, checked by airlockd against the accounts and
    // subordinate id ranges before it starts.
    HostUidRange hostUids = kDefaultHostUids;
    // What sandboxes mount as their guest when it is not guestPath itself (a copy at a path that
    // says nothing about the host: sandbox/GuestImage.h).
    QString guestMount;
    // New workspaces are refused when less than this is free on their disk: the room the history
    // (and the workspaces there already) keep. A default workspace is no larger than what is free
    // beyond it.
    uint64_t diskReserveBytes = 512ull << 20;
    // Certificates (PEM) the credential broker trusts for brokered hosts besides the host's trust
    // store (airlockd --upstream-ca): an operator's own authority, or a test's.
    QByteArray upstreamTrust;
};

// What a sandbox is created from (sandbox.create; sandbox.run, with oneShot).
struct SandboxCreation {
    SandboxSpec spec;
    QString run; // the run (agent session) the sandbox and its events belong to
    // Its own policy layer and preset, resolved with the built-in and the person's layers
    // (built-in < user < preset < overrides).
    QJsonObject policyOverrides;
    QString preset;
    QString createdThrough; // the remote token whose connection asks (what its scope may reach later)
    bool oneShot = false; // SandboxSetup::oneShot
};

// The facade airlockd hosts: owns every sandbox on this host and publishes one event stream.
// Front ends reach it only through RPC.
class Engine final : public QObject {
    Q_OBJECT
public:
    // `approvals` is where requests that need a person go (network destinations the rules ask
    // about here; commands through the RPC server).
    Engine(EngineConfig config, HostCapabilities caps, ApprovalBroker &approvals, QObject *parent = nullptr);
    ~Engine() override;

    const HostCapabilities &capabilities() const { return m_caps; }
    QJsonObject daemonInfo() const;

    using CreateDone = std::function<void(Result<QJsonObject>)>;
    // Validates, plans limits (fail closed), starts bwrap; `done` runs once the guest answered.
    // The sandbox's policy is resolved from its layers; the effective network mode, mounts and
    // limits are what it gets, whatever the spec said.
    void createSandbox(SandboxCreation creation, CreateDone done);
    // A one-shot sandbox (SandboxCreation::oneShot) in which nothing runs any more, or never
    // will (its command ended, was refused, or its client went before it started), is removed
    // with its workspace. Anything else is left alone.
    void endIfOneShot(Sandbox *sandbox);
    // The same in the next turn of the event loop (not from inside what the sandbox is doing).
    void endIfOneShotSoon(Sandbox *sandbox);
    // A one-shot's own command is on its way (waiting for a person, say): it is not ended, by
    // another execution's end, until every hold is released.
    void holdOneShot(Sandbox *sandbox);
    void releaseOneShot(Sandbox *sandbox);
    // What was made ahead holds the person's defaults and secrets as they were: dropped at once
    // when they change (a later sandbox.run would not take it anyway).
    void forgetMadeAhead() { dropWarm(); }
    // The sandbox's own policy layer, or the effective policy with the layer of every value.
    QJsonObject policy(const Sandbox &sandbox, bool effective) const;
    // Replaces a running sandbox's own layer. What can change live (commands, tools, network
    // lists) applies at once; a change of network mode, mounts or limits is refused.
    Result<QJsonObject> setPolicy(
        Sandbox &sandbox, const QJsonObject &overrides, const QString &by, const QString &run);
    // Appends a command rule to the sandbox's own layer (an "always" approval), recorded like any
    // policy change. Refused when the rule would not cover argv (a shell string, a wrapper).
    Result<QJsonObject> addCommandRule(
        const QString &ref, const QStringList &argv, const QStringList &env, const QString &by, const QString &run);
    // Appends a network allow rule for exactly this host (an "always" approval of a destination).
    Result<QJsonObject> addNetworkRule(const QString &ref, const QString &host, const QString &by, const QString &run);
    // The rule an "always" decision adds for a pending request, by its kind. Refused (nothing
    // decided) when the policy moved since the request was made.
    Result<QJsonObject> allowAlways(const ApprovalRequest &request, const QString &by);
    // Puts a request (a command, a destination, a tool call) in front of a person: fills in the
    // sandbox, its policy version and what the process could reach, masks secrets, records the
    // request and the decision. A sandbox with too many waiting is answered "denied" at once.
    using Answer = std::function<void(const ApprovalRequest &, const ApprovalDecision &)>;
    void askPerson(Sandbox *sandbox, ApprovalRequest request, Answer answer);
    // The workspace files a command runs as code, bound by content (engine/CodeBinding.h).
    QJsonArray bindCode(const Sandbox &sandbox, const QStringList &argv, const QString &cwd) const;
    // What a person is shown beside the request itself: its parts and their verdicts, a risk
    // summary, and for a connection what was running in the sandbox.
    void describeForPerson(const Sandbox &sandbox, ApprovalRequest &request) const;
    // A program that a judged execution started, stopped in its execve by a rule that judges it
    // wherever it runs: the person decides, with the chain that started it on the card.
    void askAboutProgram(
        Sandbox *sandbox, uint32_t execId, const ExecAttempt &attempt, const policy::CommandVerdict &verdict);
    // What a process in the sandbox can reach: network destinations, credentials, writable paths,
    // tools (shown with every approval request).
    Result<QJsonObject> capabilities(const QString &ref) const;
    // What the policy would say, and why, about one of: {"argv": [...]} (a command), {"url": URL}
    // (the network rules, before any name is resolved), {"tool": NAME, "arguments": {...}}.
    // `draft`: the sandbox's own layer as an editor would apply it; its verdict is added as "draft".
    Result<QJsonObject> check(const Sandbox &sandbox, const QJsonObject &request,
        const std::optional<QJsonObject> &draft = std::nullopt) const;
    Result<QJsonObject> removeSandbox(Sandbox &sandbox, bool keepWorkspace);
    SecretStore *secrets() const { return m_config.secrets; }
    // Host tools: what a sandbox's policy says about each declared one; a call, gated and recorded.
    QJsonArray listTools(const Sandbox &sandbox) const;
    void callTool(Sandbox &sandbox, tools::ToolCall call, std::function<void(Result<QJsonObject>)> done);
    // Each as describe() gives it, or only what summarize() does (`brief`: no file system asked).
    QJsonArray listSandboxes(bool brief = false) const;
    // What each sandbox is doing now, for a fleet view sampling about once a second: CPU time so
    // far, resident memory and processes (from /proc, one pass for all), running executions, its
    // last line of output, and the agent and run of its newest execution.
    // `commands` names the first kUsageCommands running ones ("execution 3: make test"). The
    // /proc pass runs on a worker thread (thousands of processes must not stall the daemon), and
    // one pass answers everyone who asked while it ran.
    // A pass that ended less than kUsageReuseMs ago answers again (a client asking without pause
    // gets no more passes than one every kUsageReuseMs). `sampledMs` is when it was taken, on
    // this daemon's monotonic clock: rates are computed from it, not from when answers arrive.
    void sampleUsage(std::function<void(QJsonArray sandboxes, qint64 sampledMs)> done);
    static constexpr int kUsageCommands = 5;
    static constexpr int kUsageReuseMs = 250;
    // What `info` shows: the sandbox, what it may reach and what enforces each limit.
    QJsonObject describe(const Sandbox &sandbox) const;
    QJsonObject summarize(const Sandbox &sandbox) const; // the part of describe() a list shows

    // A sandbox by name, id or unique id prefix (of at least 4 characters). Requests resolve their
    // sandbox once, and the methods below act on it.
    Result<Sandbox *> find(const QString &ref) const;
    // The sandbox a person's decision about `request` applies to, as it was when they decided:
    // the same policy version, or the one after it that an "always" decision's own rule made.
    Result<Sandbox *> asDecided(const ApprovalRequest &request, const ApprovalDecision &decision) const;
    // Starts an execution with the secrets its policy grants as environment variables.
    Result<uint32_t> exec(Sandbox &sandbox, const ExecRequest &request);
    Result<int> signalAll(Sandbox &sandbox, int signo); // every running execution; how many
    // params.signal of a request to signal (9 when absent): 1..64.
    static Status signalCheck(const QJsonObject &params);
    // The person's defaults for new sandboxes: {file, policy (their layer), effective, sources}.
    Result<QJsonObject> userDefaults() const;
    // Replaces them (validated, written atomically); sandboxes created from now on start from them.
    Status setUserDefaults(const QJsonObject &layer, const QString &by);
    // A sandbox's workspace, for cp: every path resolved beneath it.
    WorkspaceFiles files(const Sandbox &sandbox) const;

    // The sandboxes whose records name live processes: what runs in them is not interrupted.
    static QStringList liveSandboxes(const QString &dataDir);
    // Takes over the sandboxes earlier daemons left (`stored`: what the history holds of each
    // one's stream), lists those found gone (failed, their workspaces kept until rm), and removes
    // the cgroups nothing uses. Returns once every guest answered or kAdoptTimeoutMs passed.
    // Without sandboxesOutliveDaemon: removes what a SIGKILLed predecessor left, workspaces too.
    // Call only while holding the InstanceLock, so that no live daemon's sandboxes are touched.
    using StoredStream = std::function<Result<StoredSandbox>(const QString &sandboxId)>;
    void adoptSandboxes(const StoredStream &stored);
    static constexpr int kAdoptTimeoutMs = 5000;
    // An event is stored (and published): its sandbox's guest may forget what it kept for it.
    void onEventStored(const airlock::Event &event);
    // The daemon stops: sandboxes that outlive it are let go of, the others killed and their
    // workspaces removed.
    void shutdown();

Q_SIGNALS:
    void eventPublished(const airlock::Event &event);

private:
    static QString newId();
    // A creation checked and resolved against the policy's layers; nothing made yet.
    struct Resolved {
        SandboxSpec spec; // named, with the policy's network, mounts and limits
        const IsolationRuntime *runtime = nullptr;
        policy::EffectivePolicy policy;
        std::optional<QJsonObject> userLayer;
        QList<std::pair<policy::CredentialGrant, QByteArray>> granted;
        QStringList hidden; // hiddenInMounts()
        LimitPlan plan;
    };
    Result<Resolved> resolve(const SandboxCreation &creation) const;
    // `warm`: made ahead for a one-shot (m_warm), nobody's until claimed. The Sandbox is made and
    // listed (starting) here; its runtime is started on a thread of m_launcher, and given to it
    // in launched().
    void launch(const SandboxCreation &creation, Resolved resolved, CreateDone done, bool warm = false);
    struct Launching {
        int resumeListen = -1; // the guest's, once its runtime has started: closed then
        double hereMs = 0; // what launch() took of this thread
        QElapsedTimer since;
        CreateDone done;
    };
    void launched(Sandbox *sandbox, Result<LaunchedSandbox> result, Launching launching);

    // A one-shot made ahead of time like the last one asked for (airlockctl run): launched with
    // everything decided, its events held, listed nowhere, until the next sandbox.run that
    // would be made the same in every respect but the run takes it. One at most; made again
    // after each one-shot ends, dropped when another is asked for and after kWarmIdleMs unused.
    struct Warm {
        QByteArray key; // warmKey() of what it was made from
        SandboxCreation creation;
        QPointer<Sandbox> sandbox; // null: none is made now
        std::function<void(bool ready)> taker; // the one-shot that takes it once it is ready (or not)
    };
    static constexpr int kWarmIdleMs = 10 * 60 * 1000;
    // Empty when a one-shot like this one is not made ahead (named ones: a name is asked for once).
    static QByteArray warmKey(const SandboxCreation &creation, const Resolved &resolved);
    void makeWarm();
    void claimWarm(const QString &run, CreateDone done);
    void dropWarm();
    // What a killed daemon left of one made ahead (its record says warm): ended and removed.
    void removeWarmLeftover(const SandboxRecord &record);
    QString userPolicyFile() const;
    // As root, a host uid of the configured range that no sandbox of any root daemon holds, and
    // that no subordinate id range reaches (checked again for every sandbox).
    Result<std::optional<uid_t>> allocateHostUid(const QString &sandboxId);
    QString workspacesDir() const;
    void prepareWorkspacesDir() const;
    Status makeWorkspace(const QString &dir, LimitPlan &plan, std::optional<uid_t> hostUid, bool prepared) const;
    uint64_t defaultDiskBytes() const;
    QString keptDir() const;
    // Where a runtime stages, in memory, what it reads at start and must never reach a disk
    // (LaunchRequest::memoryDirPrefix): this daemon instance's names in /dev/shm.
    QString memoryDirPrefix() const;
    // Unlisted and ended, with its workspace unless kept. One whose runtime is being started is
    // unlisted now and ended once its launch has returned (m_launching).
    void discard(Sandbox *sandbox, bool removeWorkspace);
    void end(Sandbox *sandbox, bool removeWorkspace);
    // Where airlockd's own directories would show inside these mounts (to be covered); an error
    // for a mount inside one of them.
    Result<QStringList> hiddenInMounts(const QList<Mount> &mounts) const;
    // Connects a new or adopted sandbox to the proxy, the tools and the approvals.
    void attach(Sandbox *sandbox, std::optional<uid_t> hostUid);
    // Writes what a later daemon needs to take it over (sandboxes that outlive this daemon).
    void saveRecord(const Sandbox &sandbox, const QString &ended = {});
    Sandbox *adopt(const SandboxRecord &record, const StoredStream &stored);
    void reapOrphans(const QSet<QString> &keep);
    // The sandbox's granted secrets masked in everything a request shows a person (or lists to an
    // agent); what runs keeps the real values.
    void maskSecrets(ApprovalRequest &request) const;
    // approval.decided in the request's sandbox stream.
    void recordDecision(const ApprovalRequest &request, const ApprovalDecision &decision);

    // The values of a policy's grants (all of them, or those given as environment variables);
    // fails closed, naming the grant, when one cannot be read. A brokered grant's value is its
    // placeholder (its secret is read only for all grants: when a sandbox is made or taken over).
    Result<QList<std::pair<policy::CredentialGrant, QByteArray>>> grantedSecrets(
        const policy::EffectivePolicy &policy, bool envOnly) const;
    Result<QByteArray> secretOf(const policy::CredentialGrant &grant) const; // from the store
    // What the sandbox's output is searched for: the granted values, and a brokered grant's real
    // secret (never inside, but should a host's echo get past the broker, it is masked here too)
    // rather than its placeholder.
    void addSecrets(Sandbox &sandbox, const QList<std::pair<policy::CredentialGrant, QByteArray>> &granted) const;
    // The credential broker (EngineBroker.cpp). A sandbox whose policy brokers credentials gets an
    // authority for their hosts, and its certificate in what the launch makes it trust.
    // What brokering needs of a policy: network mode allowlist, and a brokered secret granted no
    // other way.
    static Status checkBrokered(const policy::EffectivePolicy &policy);
    static Result<std::shared_ptr<net::SandboxCa>> brokerAuthority(
        const QString &id, const policy::EffectivePolicy &policy);
    // The files that make a sandbox trust its authority (LaunchRequest::trustFiles).
    static QList<std::pair<QString, QByteArray>> trustFiles(const net::SandboxCa &authority);
    // What the egress proxy brokers for a sandbox's connection to host:port, if anything.
    Result<std::optional<net::BrokeredRoute>> brokeredRoute(Sandbox *sandbox, const QString &host, quint16 port) const;

    Result<QJsonObject> addToolRule(const QString &ref, const QString &tool, const QString &by, const QString &run);

    EngineConfig m_config;
    HostCapabilities m_caps;
    IsolationRuntimes m_runtimes{m_caps}; // after m_caps, which they read
    QByteArray m_seccompProgram;
    QString m_workspacesDir;
    QHash<Sandbox *, std::function<void()>> m_creating; // answers a create whose sandbox goes before it starts
    // Sandboxes whose runtimes are being started, and whether to end them (removing their
    // workspace or not) once the launch has returned.
    QHash<Sandbox *, std::optional<bool>> m_launching;
    Launcher m_launcher{this, Launcher::defaultThreads()};
    bool m_stopping = false; // shutdown() has begun: nothing more is created
    QList<Sandbox *> m_sandboxes;
    QHash<QString, Sandbox *> m_byId;
    QSet<QString> m_outlived; // let go of at shutdown, still running
    SandboxRecords m_records;
    QList<std::function<void(QJsonArray, qint64)>> m_usageWaiting; // answered by the /proc pass under way
    QJsonArray m_lastUsage;
    qint64 m_lastUsageMs = -1;
    QElapsedTimer m_usageClock;
    QThreadPool m_usagePool;
    Warm m_warm;
    QHash<Sandbox *, int> m_oneShotStarts; // holdOneShot()
    QTimer *m_warmIdle = nullptr;
    class WorkspaceSpare *m_spare = nullptr; // a default workspace made ahead of time (null: no images here)
    QHash<Sandbox *, uid_t> m_hostUids;
    HostUidClaims m_uidClaims;
    ApprovalBroker &m_approvals;
    net::EgressProxy *m_proxy = nullptr;
    tools::ToolGateway *m_tools = nullptr;
};

} // namespace airlock
