// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/FileChange.h"

#include "model/Event.h"
#include "model/EventKinds.h"
#include "model/ExecRequest.h"
#include "model/SandboxSpec.h"
#include "model/StoredSandbox.h"
#include "net/SandboxCa.h"
#include "policy/Policy.h"
#include "sandbox/ExecListener.h"
#include "sandbox/GuestChannel.h"
#include "sandbox/IsolationRuntime.h"
#include "sandbox/Limits.h"
#include "secrets/RedactionStream.h"
#include "secrets/Redactor.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QSet>

#include <unistd.h>

class QSocketNotifier;
class QTimer;

namespace airlock {

class GuestReconnect;

enum class SandboxState { Starting, Running, Failed, Stopped };
QString sandboxStateName(SandboxState state);

// Everything a sandbox needs from the daemon to start, decided before it starts.
struct SandboxSetup {
    QString id;
    SandboxSpec spec;
    LimitPlan plan;
    QString workspaceDir;
    const IsolationRuntime *runtime = nullptr; // the engine's: it starts the sandbox and says what holds it
    LaunchRequest launch;
    SandboxCgroup cgroup;
    QString run; // the run that created it
    policy::EffectivePolicy policy;
    QJsonObject policyOverrides; // the sandbox's own layer
    std::optional<QJsonObject> userLayer; // the person's defaults it was resolved with
    QString createdThrough; // the id of the remote token whose connection created it; empty: a local client
    // It ends with its command (airlockctl run): removed, workspace and all, once no execution
    // runs in it (Engine::endIfOneShot).
    bool oneShot = false;
    // Made ahead of time for a one-shot nobody has asked for yet: it starts like any other, but
    // its creation is published only once it is claimed (Sandbox::claim), with the run that takes it.
    bool warm = false;
    // The authority its brokered hosts' certificates come from (none without a brokered credential).
    std::shared_ptr<net::SandboxCa> brokerCa;
};

// What a daemon that takes a running sandbox over knows of it: from its record (the processes,
// found alive) and from the history (what it stored of the sandbox's stream).
struct Adoption {
    int channelFd = -1; // connected to the guest's resume socket; Resume not sent yet
    int reconnectListenFd = -1; // or, instead, where the guest comes back (Reattached)
    int egressListenFd = -1; // Reattached
    int bwrapPidfd = -1;
    int initPidfd = -1;
    pid_t bwrapPid = 0;
    pid_t initPid = 0;
    int policyVersion = 1;
    int landlockAbi = 0;
    qint64 createdMs = 0;
    StoredSandbox stored;
    QString problem; // why it cannot be taken over (its processes are left as they are)
};

// One live sandbox: its bwrap process, its guest channel and its executions. Publishes everything
// that happens as Events with its own gap-free sequence numbers.
class Sandbox final : public QObject {
    Q_OBJECT
public:
    explicit Sandbox(SandboxSetup setup, QObject *parent = nullptr);
    ~Sandbox() override;

    const QString &id() const { return m_setup.id; }
    const QString &name() const { return m_setup.spec.name; }
    const QString &createdThrough() const { return m_setup.createdThrough; }
    const SandboxSpec &spec() const { return m_setup.spec; }
    const LimitPlan &limitPlan() const { return m_setup.plan; }
    const QString &workspaceDir() const { return m_setup.workspaceDir; }
    // Its copy-on-write mounts (decision 9) in order, each with the folder holding its changes.
    struct CowMount {
        int index = 0;
        QString upper;
        Mount mount;
    };
    QList<CowMount> copyOnWriteMounts() const;
    // What they changed, listed on a thread of its own (the sandbox decides how much there is to
    // walk: the daemon's main thread never does); `done` runs on the main thread, unless the
    // sandbox is gone by then.
    struct CowListing {
        CowMount mount;
        Result<QList<cow::Change>> changes;
    };
    void listCopyOnWrite(std::function<void(const QList<CowListing> &)> done);
    SandboxState state() const { return m_state; }
    QString failure() const { return m_failure; }
    QDateTime createdAt() const { return m_createdAt; }
    int runningExecutions() const { return int(m_execs.size()); }
    // "execution 3: make test" for each running execution, oldest first.
    QStringList runningCommands() const;
    int landlockAbi() const { return m_landlockAbi; }
    uint64_t lastSeq() const { return m_seq; }
    const policy::EffectivePolicy &policy() const { return m_setup.policy; }
    const QJsonObject &policyOverrides() const { return m_setup.policyOverrides; }
    const SandboxSetup &setup() const { return m_setup; }
    const IsolationRuntime &runtime() const { return *m_setup.runtime; }
    int policyVersion() const { return m_policyVersion; }
    // The run of the newest execution (or the one that created the sandbox): what the sandbox's
    // own activity, like its network connections, is filed under.
    const QString &currentRun() const { return m_currentRun.isEmpty() ? m_setup.run : m_currentRun; }
    // The agent that asked for the newest execution (empty: a person's own command, or none yet).
    const QString &currentAgent() const { return m_currentAgent; }
    // How much of what it printed last is kept for lastOutputLine().
    static constexpr qsizetype kOutputTailBytes = 512;
    // The PID namespace its processes are in (0 until it runs): what their usage is summed by.
    // Only while it runs: nsfs inodes are reused, and a gone sandbox's would name another's.
    quint64 pidNamespace() const { return m_state == SandboxState::Running ? m_pidNamespace : 0; }
    // Its last line of output, as lastOutputLine() gives it, with every secret masked (the line
    // is put together from several chunks: each was masked alone, a secret across them is not).
    QString lastOutputLine() const;
    // Records a fact about this sandbox that the daemon decided (approvals, refusals) in its stream.
    // What the sandbox's own processes can cause at will (network.*, tool.*) is rate-limited per
    // kind: past a burst, events are counted instead of stored, and an events.suppressed event
    // says how many of which kind were not recorded.
    // `batched`: see Event::batched.
    void record(const QString &kind, QJsonObject payload, const QString &run, bool batched = false);
    // Replaces the policy of a running sandbox and records who changed what (policy.changed).
    // `userLayer`: the person's defaults it was resolved with.
    void setPolicy(policy::EffectivePolicy effective, QJsonObject overrides, const QString &by, const QString &run,
        std::optional<QJsonObject> userLayer = std::nullopt);

    // Takes what its runtime started (Launcher, on another thread): started() or startFailed()
    // follows once the guest has said hello or failed. A failed launch is returned.
    Status start(Result<LaunchedSandbox> launched);
    // A warm sandbox (SandboxSetup::warm) that has started becomes `run`'s: created now, and
    // its creation published.
    void claim(const QString &run);
    // Takes over a sandbox a previous daemon started (the Adoption's descriptors are its now).
    // started() or startFailed() follows once the guest has answered the Resume, or not.
    Status adopt(Adoption adoption);
    // A sandbox found gone when a daemon came back: it stays listed (failed, with `reason`) until
    // rm; what was running is recorded as interrupted (publish: only the first time it is found).
    // (The Adoption's descriptors are not used.)
    void markEnded(const QString &reason, const Adoption &adoption, bool publish);
    // Lets go of it without ending anything: the daemon stops, a later one takes the sandbox over.
    void detach();
    // Whether it outlives this daemon (and so is detached, not ended, when the daemon stops).
    bool outlivesDaemon() const { return m_setup.launch.outlivesDaemon() || m_adopted; }
    // Launched by this daemon and not yet said hello: no record of it exists yet.
    bool unrecorded() const { return !m_adopted && m_state == SandboxState::Starting; }
    // An event of this sandbox's is stored (and now published): the guest may forget the output.
    void onStored(const Event &event);
    pid_t bwrapPid() const { return m_launched.pid; }
    pid_t initPid() const { return m_initPid; }
    // `secretEnv` are the credentials granted as environment variables, set after everything
    // else; their names (never values) are recorded in a credential.injected event.
    using SecretEnv = QList<std::pair<policy::CredentialGrant, QByteArray>>;
    Result<uint32_t> exec(const ExecRequest &request, const SecretEnv &secretEnv = {});
    // From now on this value (and its encodings) is masked in everything the sandbox publishes.
    void addSecret(const QString &name, const QByteArray &value) { m_redactor.add(name, value); }
    const Redactor &redactor() const { return m_redactor; }
    net::SandboxCa *brokerCa() const { return m_setup.brokerCa.get(); }
    // The result of a tool call made from inside, or why there is none.
    void answerToolCall(uint32_t callId, const Result<QJsonObject> &result);
    // Refused once kStdinBacklogLimit bytes wait for the guest (the command does not read).
    Status writeStdin(uint32_t execId, QByteArrayView data, bool eof);
    qint64 stdinBacklog() const;
    static constexpr qint64 kStdinBacklogLimit = 64 * 1024 * 1024;
    Status signal(uint32_t execId, int signo);
    // The signal to every running execution; how many there were.
    int signalAll(int signo);
    Status resize(uint32_t execId, uint16_t rows, uint16_t cols);
    // Kills the whole process tree (the PID namespace) and waits for bwrap. Idempotent.
    void terminate(const QString &reason);
    // Ends it for a reason of the host's (not a rule the sandbox broke): listed as failed, with
    // `why`; its running executions are killed with `killReason` (exec.exited's reason); a
    // sandbox.failed event.
    void fail(const QString &why, const QString &killReason)
    {
        failAllExecutions(killReason);
        onGuestFailed(why, false);
    }

    // The last event of a sandbox, after terminate().
    void publishDeleted(const QJsonObject &payload) { publish(makeEvent(event::SandboxDeleted, payload)); }
    std::optional<uid_t> hostUid() const { return m_setup.launch.dropToUid; }
    // The host uid its runtime runs as: its own (a root daemon's sandbox) or the daemon's.
    uid_t runtimeUid() const { return hostUid() ? *hostUid() : ::getuid(); }

    // Backpressure from slow subscribers: output reading pauses while anyone holds a pause.
    void holdOutput(const void *holder, bool hold);

    // The person's answer for a program that execNeedsPerson() reported.
    void answerExec(uint32_t execId, const ExecAttempt &attempt, bool allow, const QString &by);
    // An execution whose programs are judged: its command, its run, how it was decided (for
    // approval cards). Kept for as long as any of its processes is left.
    struct JudgedExecution {
        QStringList argv;
        QString run;
        ExecCover cover;
    };
    JudgedExecution judged(uint32_t execId) const { return m_judged.value(execId).execution; }

Q_SIGNALS:
    void started();
    void startFailed(const airlock::Error &error);
    void stdinBacklogShrunk(qint64 backlog);
    void eventOccurred(const airlock::Event &event);
    // An allowlist sandbox's process connected to the proxy port inside; the receiver owns `fd`
    // (a connected stream socket, checked to be one).
    void egressConnection(int fd);
    // airlock-tool inside asked for a host tool; answer with answerToolCall().
    void toolCallRequested(uint32_t callId, const QByteArray &request);
    // A program that execution `execId` started asks (a rule judges it wherever it runs); it waits
    // in its execve until answerExec().
    void execNeedsPerson(
        uint32_t execId, const airlock::ExecAttempt &attempt, const airlock::policy::CommandVerdict &verdict);
    // No process of a judged execution is left (what still waited for a person is moot).
    void judgedExecutionGone(uint32_t execId);
    // The process that execNeedsPerson() was about has gone (killed while it waited).
    void execAbandoned(uint32_t execId, quint64 notification);

private:
    // What its copy-on-write folders hold, as execution `exec` ended: files.changed, when it is
    // not what the last one said.
    void reportFileChanges(uint32_t exec, const QString &run);
    void publishFileChanges(uint32_t exec, const QString &run, const QList<CowListing> &listing);
    QByteArray m_lastFileChanges;
    bool m_listing = false; // a listing for files.changed runs
    std::optional<std::pair<uint32_t, QString>> m_listAgain; // an execution that ended meanwhile

    struct Execution {
        QStringList argv;
        QString run;
        qint64 startedMs = 0;
        uint64_t bytes[3] = {0, 0, 0}; // by stream
        uint64_t emitted[3] = {0, 0, 0};
        RedactionStream masked[3]; // by stream; holds back what may be the start of a secret
        Redactor::Hits redacted;
        uint64_t forwarded = 0;
        bool truncated = false;
        QString killReason; // timeout | output_limit | user
        QTimer *timer = nullptr;
        bool hasTimeout = false; // the guest was given a deadline: only then may it say it killed at it
    };

    void announce(); // sandbox.created
    QElapsedTimer m_startClock; // from start() (not for one taken over)
    Event makeEvent(const QString &kind, QJsonObject payload = {});
    void publish(Event event);
    void onHello(int landlockAbi, uint32_t guestPid);
    // How long a guest has to say hello (or answer Resume, or come back to a daemon taking it over).
    static constexpr int kHelloTimeoutMs = 15000;
    // Sends Resume over a connection to the guest (with new sockets for it to take where
    // handOverSockets: bubblewrap's) and listens for its answer; `channelFd` is closed if not.
    Status resumeOver(int channelFd, bool handOverSockets);
    void onResumed(uint32_t version, int landlockAbi, const QList<ResumedExec> &executions);
    void onGap(uint32_t execId, int stream, quint64 offset, quint64 bytes);
    void connectChannel();
    int initPidfdBeforeHello() const; // its init's pidfd from the runtime's report, or -1
    void startTimeout(uint32_t execId, qint64 timeoutMs);
    void onOutput(uint32_t execId, int stream, qint64 timeNs, QByteArrayView data);
    void emitOutput(Execution &e, uint32_t execId, int stream, qint64 timeNs, QByteArrayView data);
    void onExited(const GuestExit &exit);
    void onSpawnFailed(uint32_t execId, int errnum, const QString &message);
    void onGuestFailed(const QString &why, bool violation);
    void onProcessExited();
    void onStderr();
    void onProxyReadable();
    void onEgressRelayed(); // gVisor's egress socket (LaunchedSandbox::egressListenFd)
    void onExecCheckReadable();
    void onExecAttempt(uint32_t execId, const ExecAttempt &attempt);
    void recordExec(uint32_t execId, const ExecAttempt &attempt, const policy::CommandVerdict &verdict);
    void finishExecution(uint32_t execId, QJsonObject payload);
    void failAllExecutions(const QString &reason);

    SandboxSetup m_setup;
    SandboxState m_state = SandboxState::Starting;
    QString m_failure;
    QDateTime m_createdAt;
    LaunchedSandbox m_launched;
    GuestChannel *m_channel = nullptr;
    GuestReconnect *m_reconnect = nullptr; // while its guest has not come back (adopt())
    QSocketNotifier *m_exitNotifier = nullptr;
    QSocketNotifier *m_stderrNotifier = nullptr;
    QSocketNotifier *m_proxyNotifier = nullptr;
    QSocketNotifier *m_execCheckNotifier = nullptr;
    // Executions whose programs are judged, with how each was decided: kept, with its listener,
    // for as long as any process of it is left (a background job outlives its execution).
    struct Judged {
        JudgedExecution execution;
        ExecListener *listener = nullptr;
        QList<QJsonObject> openAsks; // taken over: see StoredExecution::openAsks
    };
    QHash<uint32_t, Judged> m_judged;
    QString m_currentRun;
    QString m_currentAgent;
    QByteArray m_outputTail;
    uint64_t m_tailSource = 0; // execution and stream of its last bytes
    quint64 m_pidNamespace = 0;
    QByteArray m_stderrTail; // last bytes bwrap/guest printed, for start-up errors
    QTimer *m_helloTimer = nullptr;
    QHash<uint32_t, Execution> m_execs;
    QSet<const void *> m_outputHolds;
    uint32_t m_nextExec = 1;
    uint64_t m_seq = 0;
    int m_policyVersion = 1;
    int m_landlockAbi = 0;
    bool m_reaped = false;
    bool m_adopted = false;
    QList<StoredExecution> m_adopting; // until the guest answers
    int m_initPidfd = -1;
    pid_t m_initPid = 0;
    Redactor m_redactor;
    struct Bucket {
        double tokens = 0;
        qint64 lastMs = 0;
        qint64 suppressed = 0;
    };
    QHash<QString, Bucket> m_buckets;
    QTimer *m_suppressedReport = nullptr;
};

} // namespace airlock
