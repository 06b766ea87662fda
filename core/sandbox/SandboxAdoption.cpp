// SPDX-License-Identifier: Apache-2.0
// A sandbox that outlives its daemon: taken over by a later one (adopt, the guest's Resumed), let
// go of when the daemon stops (detach), found gone (markEnded), and the acknowledgements that let
// its guest forget what is stored (onStored). Lifecycle and executions: Sandbox.cpp.
#include "sandbox/Sandbox.h"
#include "util/UntrustedFd.h"

#include "log/Log.h"
#include "model/EventKinds.h"
#include "policy/CommandRules.h"
#include "sandbox/GuestReconnect.h"
#include "sandbox/ResourceUsage.h"

#include <QJsonArray>
#include <QSocketNotifier>
#include <QTimer>

#include <algorithm>
#include <csignal>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}
} // namespace

Status Sandbox::adopt(Adoption a)
{
    m_adopted = true;
    m_launched.pid = a.bwrapPid;
    m_launched.pidfd = a.bwrapPidfd;
    m_initPid = a.initPid;
    m_initPidfd = a.initPidfd;
    m_seq = a.stored.lastSeq;
    m_nextExec = a.stored.lastExec + 1;
    m_policyVersion = a.policyVersion;
    m_landlockAbi = a.landlockAbi;
    m_createdAt = QDateTime::fromMSecsSinceEpoch(a.createdMs, Qt::UTC);
    m_adopting = a.stored.running;
    if (!a.problem.isEmpty()) {
        // Listed as failed; rm still ends it (by the pidfds above).
        m_state = SandboxState::Failed;
        m_failure = QStringLiteral("it cannot be taken over: %1; what runs in it goes on, 'airlockctl rm %2' ends it")
                        .arg(a.problem, m_setup.spec.name);
        return makeError(ErrorCode::BoundaryUnavailable, m_failure);
    }
    m_launched.egressListenFd = a.egressListenFd;
    if (a.channelFd >= 0) {
        Status resumed = resumeOver(a.channelFd, true);
        if (!resumed) {
            m_state = SandboxState::Failed;
            m_failure = resumed.error().message;
        }
        return resumed;
    }
    // gVisor: its guest comes back by itself, and proves itself first.
    m_reconnect = new GuestReconnect(a.reconnectListenFd, m_setup.launch.resumeToken, runtimeUid(), id(), this);
    connect(m_reconnect, &GuestReconnect::reconnected, this, [this](int channelFd) {
        if (!m_reconnect || m_state != SandboxState::Starting) { // given up, or ended, meanwhile
            closeUntrusted(channelFd);
            return;
        }
        m_reconnect->deleteLater();
        m_reconnect = nullptr;
        if (Status resumed = resumeOver(channelFd, false); !resumed)
            onGuestFailed(resumed.error().message, false);
    });
    // Not back in time: listed as failed (onGuestFailed), and no longer waited for, so that a guest
    // that comes late is taken over by the next daemon, not half by this one. (Both may be due in
    // one pass of the event loop: whichever runs second finds m_reconnect gone.)
    QTimer::singleShot(kHelloTimeoutMs, m_reconnect, [this] {
        if (!m_reconnect)
            return;
        m_reconnect->deleteLater();
        m_reconnect = nullptr;
        onGuestFailed(QStringLiteral("its agent did not come back within %1 s").arg(kHelloTimeoutMs / 1000), false);
    });
    return Ok{};
}

Status Sandbox::resumeOver(int channelFd, bool handOverSockets)
{
    // New sockets for what the guest hands over (the old daemon's ends are gone with it).
    QList<int> guestEnds;
    const auto pair = [&](int &daemonEnd) -> bool {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
            return false;
        daemonEnd = sv[0];
        guestEnds.append(sv[1]);
        return true;
    };
    bool ok = !handOverSockets || pair(m_launched.execCheckFd);
    if (ok && handOverSockets && m_setup.spec.network == NetworkMode::Allowlist)
        ok = pair(m_launched.proxyFd);
    QList<ResumeAsk> asks;
    for (const StoredExecution &r : std::as_const(m_adopting)) {
        asks.append(ResumeAsk{r.id, {r.stored[1], r.stored[2]}});
        // Its programs were judged: the guest kept its exec check's listener and hands it over
        // once it has the new socket (what waited in an exec meanwhile is judged then). One
        // listener is taken for each such execution, as at its start; anything else is closed.
        if (r.execCheck && ok) {
            ExecCover cover;
            cover.judged = !r.agent.isEmpty(); // an agent's command, as exec.start decided it
            cover.requester = r.agent;
            cover.decidedBy = r.decidedBy;
            cover.approval = r.approval;
            if (cover.judged)
                cover.programs = policy::CommandRules::namedPrograms(r.argv);
            m_judged.insert(r.id, {{r.argv, r.run, cover}, nullptr, r.openAsks});
        }
    }
    Status sent = ok ? sendResume(channelFd, m_setup.launch.resumeToken, asks, guestEnds)
                     : Status(makeError(ErrorCode::IoError, QStringLiteral("socketpair failed")));
    for (int fd : std::as_const(guestEnds))
        ::close(fd);
    if (!sent) {
        closeUntrusted(channelFd);
        return sent;
    }
    m_launched.channelFd = channelFd;
    m_channel = new GuestChannel(m_launched.channelFd, this, true);
    for (const StoredExecution &r : std::as_const(m_adopting))
        m_channel->setKnownExec(r.id, true);
    connectChannel();
    return Ok{};
}

void Sandbox::onResumed(uint32_t version, int landlockAbi, const QList<ResumedExec> &executions)
{
    m_helloTimer->stop();
    if (version != wire::kProtocolVersion) {
        // Another Airlock's agent (an upgrade replaced the daemon): its processes go on; this
        // daemon cannot speak for them, and says so instead of killing them.
        m_state = SandboxState::Failed;
        m_failure = QStringLiteral(
            "its agent speaks protocol %1 and this airlockd %2, so it cannot be taken over; what runs in it "
            "goes on, its workspace is kept; 'airlockctl rm %3' ends it")
                        .arg(version)
                        .arg(wire::kProtocolVersion)
                        .arg(m_setup.spec.name);
        m_channel->close();
        logger()->warn("sandbox {}: {}", m_setup.id.toStdString(), m_failure.toStdString());
        Q_EMIT startFailed(makeError(ErrorCode::BoundaryUnavailable, m_failure));
        return;
    }
    m_landlockAbi = landlockAbi;
    if (m_initPidfd >= 0)
        m_pidNamespace = pidNamespaceOf(m_initPid);
    QHash<uint32_t, ResumedExec> said;
    for (const ResumedExec &e : executions)
        said.insert(e.execId, e);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    int running = 0, finished = 0, lost = 0;
    QList<uint32_t> interrupted;
    for (const StoredExecution &r : std::as_const(m_adopting)) {
        Execution &e = m_execs[r.id];
        e.argv = r.argv;
        e.run = r.run;
        e.startedMs = r.startedMs;
        e.hasTimeout = r.timeoutMs && *r.timeoutMs > 0;
        const ResumedExec state = said.value(r.id);
        // Where the guest's replay starts: past what is stored when the daemon before had
        // acknowledged more than it stored (a long output's tail, which the history drops anyway).
        for (int stream : {1, 2})
            e.bytes[stream] = e.emitted[stream] = std::max<uint64_t>(r.stored[stream], state.from[stream - 1]);
        e.forwarded = e.emitted[1] + e.emitted[2];
        if (state.state == wire::ResumeRunning) {
            ++running;
            if (r.timeoutMs)
                startTimeout(r.id, r.startedMs + *r.timeoutMs - now);
        } else if (state.state == wire::ResumeFinished) {
            ++finished; // its output, then its exit, follow
        } else {
            interrupted.append(r.id);
        }
        // Only a running execution's exec check comes (the guest let go of the others' with them).
        if (const auto judged = m_judged.constFind(r.id);
            state.state != wire::ResumeRunning && judged != m_judged.cend() && !judged->listener)
            m_judged.erase(judged);
    }
    // What the guest runs or ran that no stored start speaks of (its start was not stored before
    // the daemon went, or something else started it): stopped and forgotten, not adopted, and said.
    for (const ResumedExec &e : executions) {
        m_nextExec = std::max(m_nextExec, e.execId + 1); // its number is not given again
        if (m_execs.contains(e.execId) || e.state == wire::ResumeUnknown)
            continue;
        logger()->warn("sandbox {}: execution {} has no stored start; {}", m_setup.id.toStdString(), e.execId,
            e.state == wire::ResumeRunning ? "killed" : "forgotten");
        if (e.state == wire::ResumeRunning)
            m_channel->sendSignal(e.execId, SIGKILL);
        else
            m_channel->sendAck(e.execId, 0, 0);
        publish(makeEvent(event::ExecUnknown,
            {{QStringLiteral("exec"), double(e.execId)}, {QStringLiteral("pid"), e.pid},
                {QStringLiteral("state"),
                    e.state == wire::ResumeRunning ? QStringLiteral("running") : QStringLiteral("finished")},
                {QStringLiteral("action"),
                    e.state == wire::ResumeRunning ? QStringLiteral("killed") : QStringLiteral("forgotten")},
                {QStringLiteral("reason"),
                    QStringLiteral("the sandbox's agent reported an execution no daemon recorded starting")}}));
    }
    for (uint32_t id : std::as_const(interrupted)) {
        ++lost;
        finishExecution(id,
            {{QStringLiteral("status"), QStringLiteral("interrupted")}, {QStringLiteral("exitCode"), QJsonValue()},
                {QStringLiteral("signal"), QJsonValue()},
                {QStringLiteral("error"), QStringLiteral("its process was gone when airlockd came back")}});
    }
    m_adopting.clear();
    m_state = SandboxState::Running;
    logger()->info("sandbox {} ({}) taken over: {} running, {} finished meanwhile, {} lost", m_setup.id.toStdString(),
        m_setup.spec.name.toStdString(), running, finished, lost);
    publish(makeEvent(event::SandboxAdopted,
        {{QStringLiteral("running"), running}, {QStringLiteral("finishedMeanwhile"), finished},
            {QStringLiteral("interrupted"), lost}}));
    Q_EMIT started();
}

void Sandbox::onGap(uint32_t execId, int stream, quint64 offset, quint64 bytes)
{
    auto it = m_execs.find(execId);
    if (it == m_execs.end())
        return;
    // Whatever was held back as a possible secret's start is not continued by what follows.
    if (it->masked[stream].held() > 0)
        emitOutput(*it, execId, stream, QDateTime::currentMSecsSinceEpoch() * 1'000'000, it->masked[stream].finish());
    if (offset != it->bytes[stream])
        logger()->warn("sandbox {}: gap at {} of execution {}, {} bytes were had", m_setup.id.toStdString(), offset,
            execId, it->bytes[stream]);
    it->bytes[stream] = offset + bytes;
    it->emitted[stream] = offset + bytes;
    publish(makeEvent(event::ExecGap,
        {{QStringLiteral("exec"), double(execId)},
            {QStringLiteral("stream"), stream == 1 ? QStringLiteral("stdout") : QStringLiteral("stderr")},
            {QStringLiteral("offset"), double(offset)}, {QStringLiteral("bytes"), double(bytes)},
            {QStringLiteral("reason"),
                QStringLiteral("printed while airlockd was away, more than the sandbox keeps")}}));
}

void Sandbox::markEnded(const QString &reason, const Adoption &a, bool publishIt)
{
    m_adopted = true;
    m_reaped = true; // nothing of it is left to kill
    m_createdAt = QDateTime::fromMSecsSinceEpoch(a.createdMs, Qt::UTC);
    m_seq = a.stored.lastSeq;
    m_nextExec = a.stored.lastExec + 1;
    m_policyVersion = a.policyVersion;
    m_landlockAbi = a.landlockAbi;
    m_state = SandboxState::Failed;
    m_failure = reason;
    if (!publishIt)
        return;
    for (const StoredExecution &r : a.stored.running) {
        Execution &e = m_execs[r.id];
        e.argv = r.argv;
        e.run = r.run;
        e.startedMs = r.startedMs;
        finishExecution(r.id,
            {{QStringLiteral("status"), QStringLiteral("interrupted")}, {QStringLiteral("exitCode"), QJsonValue()},
                {QStringLiteral("signal"), QJsonValue()}, {QStringLiteral("error"), reason}});
    }
    publish(
        makeEvent(event::SandboxFailed, {{QStringLiteral("reason"), reason}, {QStringLiteral("violation"), false}}));
}

void Sandbox::detach()
{
    if (m_reaped)
        return;
    m_reaped = true;
    if (m_helloTimer)
        m_helloTimer->stop();
    for (QSocketNotifier *n : {m_exitNotifier, m_stderrNotifier, m_proxyNotifier, m_execCheckNotifier})
        if (n)
            n->setEnabled(false);
    // The guest keeps a copy of each listener: what waits in an exec that was not read yet waits for
    // the next daemon. What was read and not answered (a person was asked) would never be told to
    // it again, so it is refused rather than left waiting until it is killed.
    for (auto it = m_judged.cbegin(); it != m_judged.cend(); ++it) {
        if (!it->listener)
            continue;
        for (const ExecAttempt &a : it->listener->refuseOpen())
            recordExec(it.key(), a,
                {policy::Decision::Deny, QStringLiteral("airlockd"), QString(),
                    QStringLiteral("airlockd stopped before a person decided")});
    }
    for (const Judged &j : std::as_const(m_judged))
        delete j.listener;
    m_judged.clear();
    for (const Execution &e : std::as_const(m_execs))
        delete e.timer;
    m_execs.clear(); // they go on in the sandbox; the next daemon finds them in the history
    if (m_channel)
        m_channel->close();
    delete std::exchange(m_reconnect, nullptr); // a guest that had not come back waits for the next daemon
    for (int *fd : {&m_launched.pidfd, &m_launched.stderrFd, &m_launched.infoFd, &m_launched.proxyFd,
             &m_launched.egressListenFd, &m_launched.execCheckFd, &m_initPidfd})
        if (*fd >= 0) // the guest's sockets: what it queued on them is closed with them, here
            closeUntrusted(std::exchange(*fd, -1));
    logger()->info("sandbox {} left running for the next airlockd", m_setup.id.toStdString());
}

void Sandbox::onStored(const Event &event)
{
    if (!m_channel || !event.exec)
        return;
    if (event.isOutput())
        m_channel->sendAck(event.exec, uint8_t(event.stream), uint64_t(event.offset) + uint64_t(event.data.size()));
    else if (event.kind == event::ExecExited)
        m_channel->sendAck(event.exec, 0, 0);
}

} // namespace airlock
