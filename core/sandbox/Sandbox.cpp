// SPDX-License-Identifier: Apache-2.0
#include "sandbox/Sandbox.h"
#include "util/UntrustedFd.h"

#include "sandbox/GuestReconnect.h"

#include "model/DisplayText.h"
#include "model/EventKinds.h"
#include "model/TerminalFilter.h"
#include "model/Units.h"

#include "log/Log.h"
#include "sandbox/ProcStatus.h"
#include "sandbox/ResourceUsage.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>
#include <QTimer>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace airlock {

namespace {
constexpr int kTeardownTimeoutMs = 5000;

auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

bool waitReadable(int fd, int timeoutMs)
{
    pollfd p{fd, POLLIN, 0};
    for (;;) {
        const int rc = ::poll(&p, 1, timeoutMs);
        if (rc >= 0 || errno != EINTR)
            return rc > 0;
    }
}
} // namespace

QString sandboxStateName(SandboxState state)
{
    switch (state) {
    case SandboxState::Starting:
        return QStringLiteral("starting");
    case SandboxState::Running:
        return QStringLiteral("running");
    case SandboxState::Failed:
        return QStringLiteral("failed");
    case SandboxState::Stopped:
        return QStringLiteral("stopped");
    }
    return {};
}

Sandbox::Sandbox(SandboxSetup setup, QObject *parent)
    : QObject(parent)
    , m_setup(std::move(setup))
    , m_createdAt(QDateTime::currentDateTimeUtc())
{
}

Sandbox::~Sandbox()
{
    terminate(QStringLiteral("daemon shutdown"));
}

Status Sandbox::start(Result<LaunchedSandbox> launched)
{
    m_startClock.start();
    if (!launched) {
        m_state = SandboxState::Failed;
        m_failure = launched.error().message;
        return launched.error();
    }
    m_launched = *launched;
    m_channel = new GuestChannel(m_launched.channelFd, this);
    connectChannel();
    m_stderrNotifier = new QSocketNotifier(m_launched.stderrFd, QSocketNotifier::Read, this);
    connect(m_stderrNotifier, &QSocketNotifier::activated, this, &Sandbox::onStderr);
    return Ok{};
}

void Sandbox::connectChannel()
{
    connect(m_channel, &GuestChannel::helloReceived, this, &Sandbox::onHello);
    connect(m_channel, &GuestChannel::resumed, this,
        [this](uint32_t version, int abi, uint32_t, const QList<ResumedExec> &executions) {
            onResumed(version, abi, executions);
        });
    connect(m_channel, &GuestChannel::gapReported, this, &Sandbox::onGap);
    connect(m_channel, &GuestChannel::outputReceived, this, &Sandbox::onOutput);
    connect(m_channel, &GuestChannel::execExited, this, &Sandbox::onExited);
    connect(m_channel, &GuestChannel::spawnFailed, this, &Sandbox::onSpawnFailed);
    connect(m_channel, &GuestChannel::fatalReported, this,
        [this](const QString &why) { onGuestFailed(QStringLiteral("the sandbox agent failed: ") + why, false); });
    connect(m_channel, &GuestChannel::protocolViolated, this, [this](const QString &why) {
        onGuestFailed(QStringLiteral("the sandbox agent broke the protocol (%1); sandbox killed").arg(why), true);
    });
    connect(m_channel, &GuestChannel::stdinProgressed, this, &Sandbox::stdinBacklogShrunk);
    connect(m_channel, &GuestChannel::toolCallReceived, this, &Sandbox::toolCallRequested);
    connect(m_channel, &GuestChannel::closed, this, [this] {
        if (m_state == SandboxState::Starting || m_state == SandboxState::Running)
            QTimer::singleShot(0, this, &Sandbox::onProcessExited);
    });
    m_exitNotifier = new QSocketNotifier(m_launched.pidfd, QSocketNotifier::Read, this);
    connect(m_exitNotifier, &QSocketNotifier::activated, this, &Sandbox::onProcessExited);
    if (m_launched.proxyFd >= 0) {
        m_proxyNotifier = new QSocketNotifier(m_launched.proxyFd, QSocketNotifier::Read, this);
        connect(m_proxyNotifier, &QSocketNotifier::activated, this, &Sandbox::onProxyReadable);
    } else if (m_launched.egressListenFd >= 0) {
        m_proxyNotifier = new QSocketNotifier(m_launched.egressListenFd, QSocketNotifier::Read, this);
        connect(m_proxyNotifier, &QSocketNotifier::activated, this, &Sandbox::onEgressRelayed);
    }
    if (m_launched.execCheckFd >= 0) {
        m_execCheckNotifier = new QSocketNotifier(m_launched.execCheckFd, QSocketNotifier::Read, this);
        connect(m_execCheckNotifier, &QSocketNotifier::activated, this, &Sandbox::onExecCheckReadable);
    }
    m_helloTimer = new QTimer(this);
    m_helloTimer->setSingleShot(true);
    connect(m_helloTimer, &QTimer::timeout, this, [this] {
        onGuestFailed(QStringLiteral("the sandbox agent did not %1 within %2 s")
                          .arg(m_adopted ? QStringLiteral("answer") : QStringLiteral("start"))
                          .arg(kHelloTimeoutMs / 1000),
            false);
    });
    m_helloTimer->start(kHelloTimeoutMs);
}

void Sandbox::onStderr()
{
    char buf[4096];
    const ssize_t n = ::read(m_launched.stderrFd, buf, sizeof buf);
    if (n <= 0) {
        m_stderrNotifier->setEnabled(false);
        return;
    }
    m_stderrTail.append(buf, n);
    if (m_stderrTail.size() > 8192)
        m_stderrTail = m_stderrTail.right(8192);
    for (const QByteArray &line : QByteArray(buf, n).split('\n'))
        if (!line.trimmed().isEmpty())
            logger()->info("[{}] {}", m_setup.id.toStdString(), line.left(1024).toStdString());
}

void Sandbox::onHello(int landlockAbi, uint32_t)
{
    m_helloTimer->stop();
    m_setup.runtime->releaseStartFiles(m_launched);
    m_landlockAbi = landlockAbi;
    if (const pid_t pid = m_setup.runtime->initPid(m_launched); pid > 1) {
        m_initPid = pid;
        m_initPidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (m_initPidfd >= 0) // opened first: the namespace read is of that process, not a reuse of its pid
            m_pidNamespace = pidNamespaceOf(pid);
    }
    m_state = SandboxState::Running;
    logger()->info("sandbox {} ({}) running, landlock ABI {}, {} ms after its launch", m_setup.id.toStdString(),
        m_setup.spec.name.toStdString(), landlockAbi, m_startClock.isValid() ? m_startClock.elapsed() : -1);
    if (!m_setup.warm)
        announce();
    Q_EMIT started();
}

void Sandbox::claim(const QString &run)
{
    if (!m_setup.warm || m_state != SandboxState::Running)
        return;
    m_setup.warm = false;
    m_setup.run = run;
    m_createdAt = QDateTime::currentDateTimeUtc();
    announce();
}

void Sandbox::announce()
{
    publish(makeEvent(event::SandboxCreated,
        {{QStringLiteral("name"), m_setup.spec.name}, {QStringLiteral("spec"), m_setup.spec.toJson()},
            {QStringLiteral("preset"), m_setup.policy.preset}, {QStringLiteral("policy"), m_setup.policy.document},
            {QStringLiteral("overrides"), m_setup.policyOverrides}, // its own layer: enough to make it again
            {QStringLiteral("landlockAbi"), m_landlockAbi}}));
}

Event Sandbox::makeEvent(const QString &kind, QJsonObject payload)
{
    Event e;
    e.sandbox = m_setup.id;
    e.timeMs = nowMs();
    e.kind = kind;
    e.payload = std::move(payload);
    return e;
}

void Sandbox::publish(Event event)
{
    if (m_setup.warm)
        return; // nobody's yet: nothing of it is anyone's history (it fails unseen, and is not taken)
    event.seq = ++m_seq;
    if (!m_redactor.isEmpty() && !event.isOutput()) {
        // Whatever a payload carries (an argv, an approval's environment, a policy), no secret
        // value leaves the sandbox object.
        Redactor::Hits hits;
        event.payload = m_redactor.redactJson(event.payload, &hits);
        if (hits)
            event.payload.insert(QStringLiteral("redacted"), QJsonArray::fromStringList(hits.secrets));
    }
    if (!event.exec && event.payload.contains(QStringLiteral("exec")))
        event.exec = uint32_t(event.payload.value(QStringLiteral("exec")).toDouble());
    if (event.run.isEmpty()) {
        const auto it = event.exec ? m_execs.constFind(event.exec) : m_execs.constEnd();
        event.run = it != m_execs.constEnd() ? it->run : m_setup.run;
    }
    Q_EMIT eventOccurred(event);
}

void Sandbox::record(const QString &kind, QJsonObject payload, const QString &run, bool batched)
{
    // Programs come in bursts (a build): more of them, and faster, than connections or tool calls.
    // What a rule let run, what was refused and what asked have buckets of their own, so that a
    // flood of one never hides another; what a person decided is never counted instead of kept.
    const bool program = kind == event::ExecProgram;
    const double kBurst = program ? 2000 : 200, kPerSecond = program ? 500 : 50;
    QString bucket;
    if (program && payload.value(QStringLiteral("rule")).toString() != QLatin1String("person"))
        bucket = batched ? kind
            : payload.value(QStringLiteral("decision")).toString() == QLatin1String("ask")
            ? kind + QStringLiteral(" (asked)")
            : kind + QStringLiteral(" (refused)");
    else if (kind.startsWith(event::family::Network) || kind.startsWith(event::family::Tool))
        bucket = kind;
    if (!bucket.isEmpty()) {
        Bucket &b = m_buckets[bucket];
        const qint64 now = nowMs();
        b.tokens = b.lastMs == 0 ? kBurst : std::min(kBurst, b.tokens + double(now - b.lastMs) * kPerSecond / 1000.0);
        b.lastMs = now;
        if (b.tokens < 1) {
            ++b.suppressed;
            if (!m_suppressedReport) {
                m_suppressedReport = new QTimer(this);
                m_suppressedReport->setInterval(1000);
                connect(m_suppressedReport, &QTimer::timeout, this, [this] {
                    QJsonObject counts;
                    for (auto it = m_buckets.begin(); it != m_buckets.end(); ++it)
                        if (it->suppressed > 0)
                            counts.insert(it.key(), double(std::exchange(it->suppressed, 0)));
                    if (counts.isEmpty())
                        return m_suppressedReport->stop();
                    publish(makeEvent(event::EventsSuppressed,
                        {{QStringLiteral("counts"), counts},
                            {QStringLiteral("reason"), QStringLiteral("rate limit")}}));
                });
            }
            if (!m_suppressedReport->isActive())
                m_suppressedReport->start();
            return;
        }
        b.tokens -= 1;
    }
    Event e = makeEvent(kind, std::move(payload));
    e.run = run;
    e.batched = batched;
    publish(std::move(e));
}

void Sandbox::setPolicy(policy::EffectivePolicy effective, QJsonObject overrides, const QString &by, const QString &run,
    std::optional<QJsonObject> userLayer)
{
    const QJsonObject old = m_setup.policyOverrides;
    m_setup.userLayer = std::move(userLayer);
    m_setup.policy = std::move(effective);
    m_setup.policyOverrides = std::move(overrides);
    ++m_policyVersion;
    record(event::PolicyChanged,
        {{QStringLiteral("by"), by}, {QStringLiteral("version"), m_policyVersion}, {QStringLiteral("old"), old},
            {QStringLiteral("new"), m_setup.policyOverrides}},
        run);
}

namespace {
// NAME=value in `env`, in place of any it had.
void setVariable(QStringList &env, const QString &name, const QString &value)
{
    const QString prefix = name + QLatin1Char('=');
    env.removeIf([&prefix](const QString &kv) { return kv.startsWith(prefix); });
    env.append(prefix + value);
}
} // namespace

Result<uint32_t> Sandbox::exec(const ExecRequest &request, const SecretEnv &secretEnv)
{
    if (m_state != SandboxState::Running)
        return makeError(ErrorCode::SandboxNotRunning,
            QStringLiteral("sandbox %1 is %2%3")
                .arg(m_setup.spec.name, sandboxStateName(m_state),
                    m_failure.isEmpty() ? QString() : QStringLiteral(": ") + m_failure));
    const uint32_t id = m_nextExec++;
    const Limits &limits = m_setup.plan.effective;
    SpawnRequest spawn;
    spawn.execId = id;
    spawn.argv = request.argv;
    spawn.cwd = request.cwd;
    spawn.env = request.effectiveEnvironment();
    if (m_setup.spec.network == NetworkMode::Allowlist) {
        // The only way out; the request cannot point these elsewhere (there is nowhere else).
        const QString http = QStringLiteral("http://127.0.0.1:%1").arg(kEgressProxyPort);
        const QString socks = QStringLiteral("socks5h://127.0.0.1:%1").arg(kEgressProxyPort);
        const QString local = QStringLiteral("localhost,127.0.0.1,::1");
        for (const auto &[name, value] : {std::pair{"HTTP_PROXY", http}, std::pair{"HTTPS_PROXY", http},
                 std::pair{"ALL_PROXY", socks}, std::pair{"NO_PROXY", local}}) {
            setVariable(spawn.env, QString::fromLatin1(name), value);
            setVariable(spawn.env, QString::fromLatin1(name).toLower(), value);
        }
    }
    if (m_setup.brokerCa) {
        // Its own authority, for the brokered hosts, as each kind of client looks for it.
        const QString bundle = QString::fromLatin1(kTrustBundlePath);
        for (const auto &[name, value] : {std::pair{"SSL_CERT_FILE", bundle}, std::pair{"CURL_CA_BUNDLE", bundle},
                 std::pair{"REQUESTS_CA_BUNDLE", bundle},
                 std::pair{"NODE_EXTRA_CA_CERTS", QString::fromLatin1(kTrustAuthorityPath)}}) {
            setVariable(spawn.env, QString::fromLatin1(name), value);
        }
    }
    QJsonArray injected;
    for (const auto &[grant, value] : secretEnv) {
        setVariable(spawn.env, grant.env, QString::fromUtf8(value));
        QJsonObject one{{QStringLiteral("secret"), grant.secret}, {QStringLiteral("env"), grant.env}};
        if (grant.brokered()) // a placeholder: the secret stays with the proxy
            one.insert(QStringLiteral("brokeredFor"), grant.brokerHost);
        else
            m_redactor.add(grant.secret, value);
        injected.append(one);
    }
    spawn.judged = m_setup.policy.judgeExecs && m_launched.execCheckFd >= 0;
    if (spawn.judged)
        m_judged.insert(
            id, {{request.argv, request.run.isEmpty() ? m_setup.run : request.run, request.cover}, nullptr, {}});
    spawn.tty = request.tty;
    // A terminal is always the stdin of a tty execution (like docker -t): it may just get no input.
    spawn.stdinOpen = request.stdinOpen || request.tty;
    spawn.rows = request.rows;
    spawn.cols = request.cols;
    spawn.cpuSeconds = limits.cpuSeconds.value_or(0);
    spawn.fileSizeBytes = limits.fileSizeBytes.value_or(0);
    spawn.openFiles = limits.openFiles.value_or(0);

    Execution &e = m_execs[id];
    e.argv = request.argv;
    e.run = request.run.isEmpty() ? m_setup.run : request.run;
    m_currentRun = e.run;
    m_currentAgent = request.cover.requester;
    e.startedMs = nowMs();
    const std::optional<uint64_t> timeout = request.timeoutMs ? request.timeoutMs : limits.wallMs;
    if (timeout)
        startTimeout(id, qint64(*timeout));
    spawn.timeoutMs = timeout.value_or(0); // the guest's, for when this daemon is not there to kill
    e.hasTimeout = spawn.timeoutMs > 0;
    m_channel->setKnownExec(id, true);
    m_channel->sendSpawn(spawn);

    QJsonArray envNames;
    for (const auto &kv : request.env)
        envNames.append(kv.first);
    QJsonObject started{{QStringLiteral("exec"), double(id)},
        {QStringLiteral("argv"), QJsonArray::fromStringList(request.argv)}, {QStringLiteral("cwd"), request.cwd},
        {QStringLiteral("envNames"), envNames}, {QStringLiteral("tty"), request.tty},
        {QStringLiteral("timeoutMs"), timeout ? QJsonValue(double(*timeout)) : QJsonValue()}};
    // Who asked for it and how it was decided (a person's own command: neither).
    for (const auto &[key, value] : {std::pair{"agent", &request.cover.requester},
             {"decidedBy", &request.cover.decidedBy}, {"approval", &request.cover.approval}})
        if (!value->isEmpty())
            started.insert(QLatin1String(key), *value);
    // What a daemon that takes the sandbox over needs to go on judging its programs.
    if (spawn.judged)
        started.insert(QStringLiteral("execCheck"), true);
    publish(makeEvent(event::ExecStarted, started));
    if (!injected.isEmpty())
        publish(makeEvent(
            event::CredentialInjected, {{QStringLiteral("exec"), double(id)}, {QStringLiteral("grants"), injected}}));
    return id;
}

void Sandbox::startTimeout(uint32_t execId, qint64 timeoutMs)
{
    Execution &e = m_execs[execId];
    e.timer = new QTimer(this);
    e.timer->setSingleShot(true);
    connect(e.timer, &QTimer::timeout, this, [this, execId] {
        auto it = m_execs.find(execId);
        if (it == m_execs.end())
            return;
        it->killReason = QStringLiteral("timeout");
        m_channel->sendSignal(execId, SIGKILL);
    });
    e.timer->start(std::chrono::milliseconds(std::max<qint64>(0, timeoutMs)));
}

Status Sandbox::writeStdin(uint32_t execId, QByteArrayView data, bool eof)
{
    if (!m_execs.contains(execId))
        return makeError(
            ErrorCode::NotFound, QStringLiteral("no running execution %1 in %2").arg(execId).arg(m_setup.spec.name));
    if (stdinBacklog() + data.size() > kStdinBacklogLimit)
        return makeError(ErrorCode::IoError,
            QStringLiteral("execution %1 is not reading its input; %2 bytes are already waiting")
                .arg(execId)
                .arg(stdinBacklog()));
    if (!data.isEmpty())
        m_channel->sendStdin(execId, data);
    if (eof)
        m_channel->sendStdin(execId, {});
    return Ok{};
}

qint64 Sandbox::stdinBacklog() const
{
    return m_channel ? m_channel->stdinBacklog() : 0;
}

Status Sandbox::signal(uint32_t execId, int signo)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end())
        return makeError(
            ErrorCode::NotFound, QStringLiteral("no running execution %1 in %2").arg(execId).arg(m_setup.spec.name));
    if (signo < 1 || signo > 64)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("invalid signal %1 (expected 1..64)").arg(signo));
    if (signo == SIGKILL || signo == SIGTERM || signo == SIGINT)
        it->killReason = QStringLiteral("user");
    m_channel->sendSignal(execId, signo);
    return Ok{};
}

int Sandbox::signalAll(int signo)
{
    const QList<uint32_t> running = m_execs.keys();
    for (uint32_t execId : running)
        (void)signal(execId, signo);
    return int(running.size());
}

Status Sandbox::resize(uint32_t execId, uint16_t rows, uint16_t cols)
{
    if (!m_execs.contains(execId))
        return makeError(ErrorCode::NotFound, QStringLiteral("no running execution %1").arg(execId));
    m_channel->sendResize(execId, rows, cols);
    return Ok{};
}

QString Sandbox::lastOutputLine() const
{
    QByteArray line = airlock::lastOutputLine(m_outputTail).toUtf8();
    m_redactor.redactInPlace(line);
    return QString::fromUtf8(line);
}

QStringList Sandbox::runningCommands() const
{
    QList<uint32_t> ids = m_execs.keys();
    std::sort(ids.begin(), ids.end());
    QStringList out;
    for (uint32_t id : ids) {
        // The argv as the history keeps it: with every secret masked.
        Redactor::Hits hits;
        const QJsonObject masked = m_redactor.redactJson(
            {{QStringLiteral("argv"), QJsonArray::fromStringList(m_execs.value(id).argv)}}, &hits);
        out.append(QStringLiteral("execution %1: %2")
                       .arg(id)
                       .arg(display::commandLine(masked.value(QStringLiteral("argv")).toArray(), 200)));
    }
    return out;
}

void Sandbox::holdOutput(const void *holder, bool hold)
{
    if (hold)
        m_outputHolds.insert(holder);
    else
        m_outputHolds.remove(holder);
    if (m_channel)
        m_channel->setReadingPaused(!m_outputHolds.isEmpty());
}

void Sandbox::onOutput(uint32_t execId, int stream, qint64 timeNs, QByteArrayView data)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end())
        return;
    Execution &e = *it;
    e.bytes[stream] += uint64_t(data.size());
    if (m_redactor.isEmpty() && e.masked[stream].held() == 0)
        return emitOutput(e, execId, stream, timeNs, data);
    // Masked before anyone sees it, store and clients alike; same length, so offsets stay true.
    Redactor::Hits hits;
    const QByteArray clean = e.masked[stream].write(m_redactor, data, &hits);
    if (hits) {
        Redactor::Hits before = e.redacted;
        e.redacted.merge(hits);
        if (e.redacted.secrets != before.secrets) // the first time, per secret and execution
            publish(makeEvent(event::CredentialRedacted,
                {{QStringLiteral("exec"), double(execId)},
                    {QStringLiteral("stream"), stream == 1 ? QStringLiteral("stdout") : QStringLiteral("stderr")},
                    {QStringLiteral("secrets"), QJsonArray::fromStringList(e.redacted.secrets)}}));
    }
    emitOutput(e, execId, stream, timeNs, clean);
}

void Sandbox::emitOutput(Execution &e, uint32_t execId, int stream, qint64 timeNs, QByteArrayView data)
{
    const uint64_t offset = e.emitted[stream];
    e.emitted[stream] += uint64_t(data.size());
    const uint64_t cap = *m_setup.plan.effective.outputBytes;
    if (e.truncated)
        return;
    QByteArrayView forward = data;
    if (e.forwarded + uint64_t(data.size()) > cap) {
        forward = data.first(qsizetype(cap - e.forwarded));
        e.truncated = true;
    }
    e.forwarded += uint64_t(forward.size());
    if (!forward.isEmpty()) {
        Event ev = makeEvent(event::ExecOutput);
        ev.timeMs = timeNs / 1'000'000;
        ev.exec = execId;
        ev.stream = stream;
        ev.offset = qint64(offset);
        ev.run = e.run; // at hand here: publish() need not look the execution up for every chunk
        ev.data = forward.toByteArray();
        // A line never runs across executions or streams: each piece of one was masked alone.
        if (const uint64_t source = (uint64_t(execId) << 2) | uint64_t(stream);
            std::exchange(m_tailSource, source) != source && !m_outputTail.isEmpty())
            m_outputTail.append('\n');
        if (forward.size() >= kOutputTailBytes) {
            m_outputTail = ev.data.right(kOutputTailBytes);
        } else {
            m_outputTail.append(ev.data);
            m_outputTail.remove(0, std::max<qsizetype>(0, m_outputTail.size() - kOutputTailBytes));
        }
        publish(std::move(ev));
    }
    if (e.truncated) {
        e.killReason = QStringLiteral("output_limit");
        publish(makeEvent(event::ExecTruncated,
            {{QStringLiteral("exec"), double(execId)}, {QStringLiteral("limitBytes"), double(cap)}}));
        m_channel->sendSignal(execId, SIGKILL);
    }
}

void Sandbox::onExited(const GuestExit &x)
{
    auto it = m_execs.find(x.execId);
    if (it == m_execs.end())
        return;
    // Killed by the guest at its deadline: while no daemon was there (the exit is replayed to the
    // one that took over), or with this one too late. A reason this daemon gave first stands; a
    // guest that says so of an execution it was given no deadline for is not believed.
    if (x.timedOut && it->hasTimeout && it->killReason.isEmpty())
        it->killReason = QStringLiteral("timeout");
    QString status;
    if (it->killReason == QLatin1String("timeout"))
        status = QStringLiteral("timed_out");
    else if (x.signaled)
        status = QStringLiteral("killed");
    else
        status = x.code == 0 ? QStringLiteral("succeeded") : QStringLiteral("failed");
    QJsonObject p{{QStringLiteral("status"), status},
        {QStringLiteral("exitCode"), x.signaled ? QJsonValue() : QJsonValue(x.code)},
        {QStringLiteral("signal"), x.signaled ? QJsonValue(x.code) : QJsonValue()},
        {QStringLiteral("durationMs"), double(x.durationUs) / 1000.0},
        {QStringLiteral("userMs"), double(x.userUs) / 1000.0},
        {QStringLiteral("systemMs"), double(x.systemUs) / 1000.0}, {QStringLiteral("maxRssKb"), double(x.maxRssKb)}};
    finishExecution(x.execId, p);
}

void Sandbox::onSpawnFailed(uint32_t execId, int errnum, const QString &message)
{
    // It failed before its exec check was handed over (a cwd that does not exist): none will come.
    if (const auto judged = m_judged.constFind(execId); judged != m_judged.cend() && !judged->listener)
        m_judged.erase(judged);
    finishExecution(execId,
        {{QStringLiteral("status"), QStringLiteral("failed")},
            {QStringLiteral("exitCode"), errnum == ENOENT ? 127 : 126}, {QStringLiteral("signal"), QJsonValue()},
            {QStringLiteral("error"), message}});
}

void Sandbox::finishExecution(uint32_t execId, QJsonObject p)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end())
        return;
    for (int stream : {1, 2}) // what was held back is no secret after all
        if (it->masked[stream].held() > 0)
            emitOutput(*it, execId, stream, nowMs() * 1'000'000, it->masked[stream].finish());
    const Execution e = *it;
    m_execs.erase(it);
    if (m_channel)
        m_channel->setKnownExec(execId, false);
    delete e.timer;
    p.insert(QStringLiteral("exec"), double(execId));
    p.insert(QStringLiteral("reason"), e.killReason.isEmpty() ? QJsonValue() : QJsonValue(e.killReason));
    p.insert(QStringLiteral("bytesOut"), double(e.bytes[1]));
    p.insert(QStringLiteral("bytesErr"), double(e.bytes[2]));
    p.insert(QStringLiteral("truncated"), e.truncated);
    if (e.redacted)
        p.insert(QStringLiteral("redactions"), e.redacted.count);
    if (!p.contains(QStringLiteral("durationMs")))
        p.insert(QStringLiteral("durationMs"), double(nowMs() - e.startedMs));
    Event exited = makeEvent(event::ExecExited, p);
    exited.run = e.run; // the execution is gone from m_execs already
    publish(std::move(exited));
    reportFileChanges(execId, e.run);
}

void Sandbox::failAllExecutions(const QString &reason)
{
    const QList<uint32_t> ids = m_execs.keys();
    for (uint32_t id : ids) {
        m_execs[id].killReason = reason;
        finishExecution(id,
            {{QStringLiteral("status"), QStringLiteral("killed")}, {QStringLiteral("exitCode"), QJsonValue()},
                {QStringLiteral("signal"), SIGKILL}});
    }
}

void Sandbox::onGuestFailed(const QString &why, bool violation)
{
    if (m_state == SandboxState::Failed || m_state == SandboxState::Stopped)
        return;
    const bool starting = m_state == SandboxState::Starting;
    (violation ? logger()->error("sandbox {}: {}", m_setup.id.toStdString(), why.toStdString())
               : logger()->warn("sandbox {}: {}", m_setup.id.toStdString(), why.toStdString()));
    // A sandbox being taken over whose guest did not answer as it should, but broke no rule, and
    // which still runs: not this daemon's to end. Listed as failed; the next daemon tries again,
    // and rm ends it.
    if (starting && m_adopted && !violation && m_launched.pidfd >= 0 && !waitReadable(m_launched.pidfd, 0)) {
        for (QSocketNotifier *n : {m_exitNotifier, m_stderrNotifier, m_proxyNotifier, m_execCheckNotifier})
            if (n)
                n->setEnabled(false);
        if (m_channel)
            m_channel->close();
        m_state = SandboxState::Failed;
        m_failure = QStringLiteral("it could not be taken over (%1); what runs in it goes on: restart airlockd to try "
                                   "again, or 'airlockctl rm %2' "
                                   "ends it")
                        .arg(why, m_setup.spec.name);
        Q_EMIT startFailed(makeError(ErrorCode::BoundaryUnavailable, m_failure));
        return;
    }
    terminate(why);
    m_state = SandboxState::Failed;
    m_failure = why;
    if (starting) {
        Q_EMIT startFailed(makeError(ErrorCode::BoundaryUnavailable, why));
    } else {
        publish(makeEvent(
            event::SandboxFailed, {{QStringLiteral("reason"), why}, {QStringLiteral("violation"), violation}}));
    }
}

void Sandbox::onProcessExited()
{
    if (m_state == SandboxState::Failed || m_state == SandboxState::Stopped)
        return;
    // Collect whatever bwrap printed before it went away: that is the error message.
    while (waitReadable(m_launched.stderrFd, 0)) {
        const qsizetype before = m_stderrTail.size();
        onStderr();
        if (m_stderrTail.size() == before)
            break;
    }
    const QString detail = QString::fromUtf8(m_stderrTail).trimmed().section(QLatin1Char('\n'), -3);
    // Under gVisor the sandbox's memory is the sentry's: at the limit the kernel ends all of it.
    if (m_state == SandboxState::Running && m_setup.cgroup.memoryKills() > 0 && m_setup.plan.effective.memoryBytes)
        return onGuestFailed(QStringLiteral("the sandbox reached its memory limit (%1) and the kernel ended %2")
                                 .arg(units::formatBytes(*m_setup.plan.effective.memoryBytes), m_setup.runtime->name()),
            false);
    onGuestFailed(m_state == SandboxState::Starting
            ? QStringLiteral("%1 could not create the sandbox: %2")
                  .arg(m_setup.runtime->name(),
                      detail.isEmpty() ? QStringLiteral("it exited without a message") : detail)
            : QStringLiteral("the sandbox exited unexpectedly%1")
                  .arg(detail.isEmpty() ? QString() : QStringLiteral(": ") + detail),
        false);
}

int Sandbox::initPidfdBeforeHello() const
{
    if (m_launched.pidfd < 0)
        return -1;
    const pid_t pid = m_setup.runtime->initPid(m_launched); // waits a little for bwrap's report
    if (pid <= 1)
        return -1;
    // Opened while bwrap, its parent, is alive and has not reaped it: the pid is still that child's.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0 && statusPids(pid).parentHostPid != m_launched.pid) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void Sandbox::terminate(const QString &reason)
{
    // Nothing started (its launch failed, or is under way): only its cgroup to remove, and what a
    // launch under way starts is still ended by a later call.
    if (m_reaped)
        return;
    if (m_launched.pid <= 0) {
        if (!m_adopted)
            m_setup.cgroup.destroy();
        return;
    }
    m_reaped = true;
    if (m_helloTimer)
        m_helloTimer->stop();
    delete std::exchange(m_reconnect, nullptr); // its guest had not come back: nothing waits for it now
    // Ended before its guest said hello: its init is found from what the runtime reported (it may
    // not have yet). A sandbox that outlives the daemon does not die with bwrap, so killing bwrap
    // alone would leave its init running, as a host uid soon handed to another sandbox.
    if (m_initPidfd < 0 && !m_adopted)
        m_initPidfd = initPidfdBeforeHello();
    // Killing the sandbox's init takes its whole PID namespace down; the kernel finishes that
    // before the init's pidfd turns readable, so nothing inside survives this call.
    if (m_initPidfd >= 0) {
        ::syscall(SYS_pidfd_send_signal, m_initPidfd, SIGKILL, nullptr, 0);
        waitReadable(m_initPidfd, kTeardownTimeoutMs);
        ::close(m_initPidfd);
        m_initPidfd = -1;
    }
    // By its pidfd: a sandbox taken over from an earlier daemon is not our child, and its pid
    // alone could name another process by now.
    if (m_launched.pidfd >= 0)
        ::syscall(SYS_pidfd_send_signal, m_launched.pidfd, SIGKILL, nullptr, 0);
    waitReadable(m_launched.pidfd, kTeardownTimeoutMs);
    ::waitpid(m_launched.pid, nullptr, WNOHANG);
    if (m_exitNotifier)
        m_exitNotifier->setEnabled(false);
    if (m_stderrNotifier)
        m_stderrNotifier->setEnabled(false);
    if (m_proxyNotifier)
        m_proxyNotifier->setEnabled(false);
    if (m_execCheckNotifier)
        m_execCheckNotifier->setEnabled(false);
    for (const Judged &j : std::as_const(m_judged))
        delete j.listener;
    m_judged.clear();
    if (m_channel)
        m_channel->close();
    for (int *fd : {&m_launched.pidfd, &m_launched.stderrFd, &m_launched.infoFd, &m_launched.proxyFd,
             &m_launched.egressListenFd, &m_launched.execCheckFd})
        if (*fd >= 0) // the guest's sockets: what it queued on them is closed with them, here
            closeUntrusted(std::exchange(*fd, -1));
    m_setup.cgroup.destroy();
    if (!m_setup.launch.runtimeDir.isEmpty()) // the runtime's own files (gVisor's bundle), nothing of the sandbox's
        volume::removeRuntimeDirs(m_setup.launch.workspaceDir, m_setup.launch.dropToUid.has_value());
    m_setup.runtime->releaseStartFiles(m_launched);
    failAllExecutions(QStringLiteral("sandbox_deleted"));
    if (m_state == SandboxState::Running || m_state == SandboxState::Starting)
        m_state = SandboxState::Stopped;
    logger()->info("sandbox {} terminated: {}", m_setup.id.toStdString(), reason.toStdString());
}

} // namespace airlock
