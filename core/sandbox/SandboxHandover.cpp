// SPDX-License-Identifier: Apache-2.0
// The sandbox's side of what the guest hands over on its SOCK_SEQPACKET sockets: egress
// connections (allowlist sandboxes; under gVisor, relayed to a listening socket instead) and each judged execution's
// exec-check listener, and the judgement of the programs that listener reports; and the answers to the tool calls
// it passes on. (Lifecycle, executions and output: Sandbox.cpp.)
#include "sandbox/Sandbox.h"
#include "util/UntrustedFd.h"

#include "model/BoundedArgv.h"
#include "model/EventKinds.h"

#include "log/Log.h"
#include "policy/ProgramForms.h"
#include "sandbox/GvisorLauncher.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}
} // namespace

namespace {
// One message of a SOCK_SEQPACKET socket from the guest, with the one descriptor it may carry (the
// caller closes it if it does not want it). Anything more is broken protocol (`overfull`): the
// kernel has closed it within the receive's deadline.
struct GuestMessage {
    QByteArray data;
    int fd = -1;
    bool overfull = false; // more data or descriptors than a message of the protocol carries
    bool again = false; // nothing waiting now
};
GuestMessage receiveFromGuest(int sock)
{
    GuestMessage m;
    char buf[64];
    int flags = 0;
    const ssize_t n = receiveUntrusted(sock, buf, sizeof buf, MSG_DONTWAIT, &m.fd, &flags);
    if (n <= 0) {
        m.again = n < 0 && (errno == EAGAIN || errno == EINTR);
        closeUntrusted(std::exchange(m.fd, -1));
        return m;
    }
    m.data = QByteArray(buf, n);
    m.overfull = flags & (MSG_CTRUNC | MSG_TRUNC);
    return m;
}

// A connected TCP socket: what the guest's proxy listener accepts, and nothing else (a unix
// socket could carry descriptors of its own).
bool isTcpStream(int fd)
{
    int type = 0, domain = 0, protocol = 0;
    socklen_t len = sizeof type;
    struct stat st { };
    return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0
        && type == SOCK_STREAM && (len = sizeof domain, ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0)
        && (domain == AF_INET || domain == AF_INET6)
        && (len = sizeof protocol, ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0)
        && protocol == IPPROTO_TCP;
}
} // namespace

void Sandbox::onProxyReadable()
{
    // The guest is untrusted: each message is one connected TCP socket, and anything else breaks
    // the protocol and ends the sandbox (closing what it passed costs this thread: it may linger).
    for (int i = 0; i < 64; ++i) {
        GuestMessage m = receiveFromGuest(m_launched.proxyFd);
        if (m.data.isEmpty() && m.fd < 0) {
            if (!m.again)
                m_proxyNotifier->setEnabled(false); // the guest closed its end
            return;
        }
        if (m.overfull || m.fd < 0 || !isTcpStream(m.fd)) {
            closeUntrusted(std::exchange(m.fd, -1));
            return onGuestFailed(
                QStringLiteral("the guest broke the protocol: an egress connection that is not one TCP socket"), true);
        }
        Q_EMIT egressConnection(m.fd);
    }
}

void Sandbox::onEgressRelayed()
{
    // Only the runtime reaches this socket (its folder is the daemon's and the runtime's group's):
    // each connection is one the guest relays from inside. Whatever else connects is refused.
    for (int i = 0; i < 64; ++i) {
        const int fd = acceptFromRuntime(m_launched.egressListenFd, runtimeUid(), id(), "egress");
        if (fd < 0)
            return;
        Q_EMIT egressConnection(fd);
    }
}

void Sandbox::onExecCheckReadable()
{
    // One message per judged execution: its id and the listener of the filter its first process
    // installed, when it starts and again when this daemon takes the sandbox over (adopt() says
    // which executions then wait for one). Anything else, or a listener for an execution that is
    // not waiting for one, is closed: nothing answers for that filter here, so its processes' execs
    // wait (the guest holds a copy) or fail (ENOSYS); nothing runs unjudged.
    for (int i = 0; i < 64; ++i) {
        GuestMessage m = receiveFromGuest(m_launched.execCheckFd);
        if (m.data.isEmpty() && m.fd < 0) {
            if (!m.again)
                m_execCheckNotifier->setEnabled(false);
            return;
        }
        uint32_t execId = 0;
        // Anything but an id and a listener breaks the protocol and ends the sandbox (what it
        // passed may linger when closed, and each costs this thread).
        if (m.overfull || m.data.size() != sizeof execId || m.fd < 0 || !ExecListener::isListener(m.fd)) {
            closeUntrusted(std::exchange(m.fd, -1));
            return onGuestFailed(
                QStringLiteral("the guest broke the protocol: an exec check that is not an id and a listener"), true);
        }
        std::memcpy(&execId, m.data.constData(), sizeof execId);
        auto judged = m_judged.find(execId);
        if (judged == m_judged.end() || judged->listener) {
            logger()->warn("sandbox {}: the guest passed an exec check that no execution waits for; closed",
                m_setup.id.toStdString());
            ::close(m.fd); // a listener: nothing queued, nothing lingers
            continue;
        }
        judged->listener = new ExecListener(m.fd, m_setup.workspaceDir, this);
        connect(judged->listener, &ExecListener::attempted, this,
            [this, execId](const ExecAttempt &a) { onExecAttempt(execId, a); });
        connect(judged->listener, &ExecListener::abandoned, this,
            [this, execId](quint64 id) { Q_EMIT execAbandoned(execId, id); });
        connect(judged->listener, &ExecListener::drained, this, [this, execId] {
            // No process of the execution is left: nothing more to judge for it.
            if (const auto it = m_judged.constFind(execId); it != m_judged.cend()) {
                it->listener->deleteLater();
                m_judged.erase(it);
                Q_EMIT judgedExecutionGone(execId);
            }
        });
        // What the daemon before asked a person about and was killed before answering: the kernel
        // tells nobody of it again (it was received), and the question went with that daemon.
        // Refused by its notification's id, as a stopping daemon refuses it.
        for (const QJsonObject &ask : std::exchange(judged->openAsks, {})) {
            ExecAttempt a;
            a.id = ask.value(QStringLiteral("notification")).toString().toULongLong();
            a.pid = pid_t(ask.value(QStringLiteral("pid")).toInt());
            a.parentPid = pid_t(ask.value(QStringLiteral("parent")).toInt());
            a.path = ask.value(QStringLiteral("path")).toString();
            a.cwd = ask.value(QStringLiteral("cwd")).toString();
            for (const QJsonValue &arg : ask.value(QStringLiteral("argv")).toArray())
                a.argv.append(arg.toString());
            if (a.id != 0 && judged->listener->answer(a.id, false))
                recordExec(execId, a,
                    {policy::Decision::Deny, QStringLiteral("airlockd"), QString(),
                        QStringLiteral("airlockd went away before a person decided")});
        }
    }
}

void Sandbox::onExecAttempt(uint32_t execId, const ExecAttempt &a)
{
    const auto it = m_judged.constFind(execId);
    if (it == m_judged.cend())
        return;
    const ExecCover &cover = it->execution.cover;
    using policy::CommandVerdict;
    using policy::Decision;
    CommandVerdict v;
    // A program the decision named word for word (its path may differ: `git` ran as /usr/bin/git).
    const auto named = [&](const QStringList &program) {
        for (const QStringList &p : cover.programs)
            if (p.size() == program.size() && policy::programName(p.first()) == policy::programName(program.first())
                && p.mid(1) == program.mid(1))
                return true;
        return false;
    };
    if (!a.unreadable.isEmpty()) {
        v = {Decision::Deny, QStringLiteral("-"), QStringLiteral("builtin"),
            QStringLiteral("cannot be judged: %1").arg(a.unreadable)};
    } else if (a.argv.isEmpty()) {
        v = {Decision::Deny, QStringLiteral("-"), QStringLiteral("builtin"), QStringLiteral("an empty argument list")};
    } else if (!cover.judged) {
        v = {Decision::Allow, QStringLiteral("covered"), QString(),
            QStringLiteral("under a person's own command: recorded, not judged")};
    } else {
        // Every program it starts (the file, its interpreters), and the name it is told: a rule
        // about any of them counts, and the strictest decides.
        QList<QStringList> programs = a.programs();
        if (a.argv.first() != a.path)
            programs.append(a.argv);
        bool first = true;
        for (const QStringList &program : std::as_const(programs)) {
            CommandVerdict one = m_setup.policy.commands.evaluateNested(program);
            if (one.decision == Decision::Ask && named(program))
                one = {Decision::Allow, QStringLiteral("covered"), QString(),
                    QStringLiteral("named by the decided command")};
            if (first || int(one.decision) > int(v.decision)
                || (one.decision == v.decision && v.rule == QLatin1String("covered")))
                v = one;
            first = false;
        }
    }
    // A PATH search's miss that nothing refused: the kernel fails it (ENOENT), nothing to record.
    if (a.missing && v.decision == Decision::Allow)
        return (void)it->listener->answer(a.id, true);
    if (v.decision == Decision::Ask) {
        recordExec(execId, a, v);
        it->listener->watch(a);
        Q_EMIT execNeedsPerson(execId, a, v);
        return;
    }
    it->listener->answer(a.id, v.decision == Decision::Allow);
    recordExec(execId, a, v);
}

void Sandbox::answerExec(uint32_t execId, const ExecAttempt &attempt, bool allow, const QString &by)
{
    const auto it = m_judged.constFind(execId);
    if (it == m_judged.cend() || !it->listener)
        return; // its processes are all gone
    // The daemon decides too (a timeout, too many waiting, the process gone): only a person's
    // decision is recorded as the person's.
    const bool sent = it->listener->answer(attempt.id, allow);
    const bool person = by != QLatin1String("airlockd");
    recordExec(execId, attempt,
        {allow ? policy::Decision::Allow : policy::Decision::Deny,
            person ? QStringLiteral("person") : QStringLiteral("airlockd"), QString(),
            QStringLiteral("%1 by %2%3")
                .arg(allow ? QStringLiteral("approved") : QStringLiteral("denied"), by,
                    sent ? QString() : QStringLiteral(", but its process had gone: it did not run"))});
}

void Sandbox::recordExec(uint32_t execId, const ExecAttempt &a, const policy::CommandVerdict &v)
{
    const auto it = m_judged.constFind(execId);
    // The notification's id (the kernel's, as text: 64 bits) ties a decision to the question it
    // answers; a daemon that takes the sandbox over finds what was asked and not decided by it.
    QJsonObject p{{QStringLiteral("exec"), double(execId)}, {QStringLiteral("notification"), QString::number(a.id)},
        {QStringLiteral("pid"), double(a.pid)}, {QStringLiteral("parent"), double(a.parentPid)},
        {QStringLiteral("path"), a.path.left(4096)}, {QStringLiteral("cwd"), a.cwd},
        {QStringLiteral("decision"), policy::decisionName(v.decision)}, {QStringLiteral("rule"), v.rule},
        {QStringLiteral("layer"), v.layer}, {QStringLiteral("reason"), v.reason}};
    const QJsonObject argv = boundedArgv(a.argv);
    for (auto k = argv.begin(); k != argv.end(); ++k)
        p.insert(k.key(), k.value());
    if (it != m_judged.cend() && v.rule == QLatin1String("covered"))
        p.insert(QStringLiteral("coveredBy"),
            it->execution.cover.decidedBy.isEmpty() ? QStringLiteral("a person's own command")
                                                    : it->execution.cover.decidedBy);
    // What a rule let run comes by the thousand in a build and rides the history's batch; a
    // refusal, and what a person decided, is committed before anyone hears of it.
    const bool batched = v.decision == policy::Decision::Allow && v.rule != QLatin1String("person");
    record(event::ExecProgram, p, it != m_judged.cend() ? it->execution.run : QString(), batched);
}

void Sandbox::answerToolCall(uint32_t callId, const Result<QJsonObject> &result)
{
    if (!m_channel)
        return;
    if (result) {
        // The answer goes into the sandbox: nothing of the host's secrets in it.
        QJsonObject clean = *result;
        if (!m_redactor.isEmpty()) {
            Redactor::Hits hits;
            clean = m_redactor.redactJson(clean, &hits);
        }
        // One frame at most: the longest text fields are cut (and the result says so) until it fits.
        QByteArray json = QJsonDocument(clean).toJson(QJsonDocument::Compact);
        while (json.size() > qsizetype(wire::kMaxPayload) - 64) {
            QString longest;
            qsizetype size = -1;
            for (auto it = clean.begin(); it != clean.end(); ++it)
                if (it.value().isString() && it.value().toString().size() > size) {
                    longest = it.key();
                    size = it.value().toString().size();
                }
            if (size <= 0) {
                m_channel->sendToolResult(callId, false,
                    QByteArrayLiteral("invalid_argument the tool's result is too large to pass into the sandbox"));
                return;
            }
            clean.insert(longest, clean.value(longest).toString().left(size / 2));
            clean.insert(QStringLiteral("truncated"), true);
            json = QJsonDocument(clean).toJson(QJsonDocument::Compact);
        }
        m_channel->sendToolResult(callId, true, json);
    } else {
        m_channel->sendToolResult(
            callId, false, (errorCodeName(result.error().code) + QLatin1Char(' ') + result.error().message).toUtf8());
    }
}

} // namespace airlock
