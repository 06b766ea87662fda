// SPDX-License-Identifier: Apache-2.0
#include "rpc/ExecMethods.h"

#include "approval/ApprovalBroker.h"
#include "engine/CodeBinding.h"
#include "engine/Engine.h"
#include "history/HistoryStore.h"
#include "log/Log.h"
#include "model/EventKinds.h"
#include "model/ExecRequest.h"
#include "policy/CommandRules.h"
#include "rpc/Connection.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
#include "rpc/SandboxMethods.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>
#include <QTimer>

#include <csignal>
#include <memory>

namespace airlock::rpc {

namespace {
auto logger()
{
    static auto l = log::get("daemon.rpc");
    return l;
}
} // namespace

ExecMethods::ExecMethods(
    Engine &engine, ApprovalBroker &approvals, HistoryStore *history, SessionOf sessionOf, QObject *parent)
    : QObject(parent)
    , m_engine(engine)
    , m_approvals(approvals)
    , m_history(history)
    , m_sessionOf(std::move(sessionOf))
{
}

namespace {
Status execRequestCheck(const QJsonObject &p)
{
    auto request = ExecRequest::fromJson(p);
    return request ? Status(Ok{}) : Status(request.error());
}

Status runCheck(const QJsonObject &p)
{
    if (!p.value(QStringLiteral("exec")).isObject())
        return invalid(QStringLiteral("params.exec: expected the command to run, as exec.start takes it"));
    return execRequestCheck(p.value(QStringLiteral("exec")).toObject());
}

Status stdinCheck(const QJsonObject &p)
{
    auto data = base64Param(p, "data");
    return data ? Status(Ok{}) : Status(data.error());
}

Status sizeCheck(const QJsonObject &p)
{
    const int rows = p.value(QStringLiteral("rows")).toInt(-1);
    const int cols = p.value(QStringLiteral("cols")).toInt(-1);
    if (rows < 1 || rows > 10000 || cols < 1 || cols > 10000)
        return invalid(QStringLiteral("params.rows/cols: expected 1..10000"));
    return Ok{};
}
} // namespace

QList<Method> ExecMethods::methods()
{
    using A = Access;
    // Agents feed and signal only the executions they started.
    constexpr Access own{A::Agent::OwnExecutions, nullptr, A::Token::Full, A::Scope::Param};
    return {
        {method::ExecStart, access::sandboxed, NeedsSandbox | WritesHistory, [this](Call &c) { start(c); },
            execRequestCheck},
        // A sandbox made for one command, which ends with it (airlockctl run): created as
        // sandbox.create would, then started as exec.start would, as one request.
        {method::SandboxRun, {A::Agent::DefaultPolicyOnly, nullptr, A::Token::Full, A::Scope::SpecName}, WritesHistory,
            [this](Call &c) { runOneShot(c); }, runCheck},
        {method::ExecStdin, own, NeedsSandbox | NeedsExec, [this](Call &c) { feed(c); }, stdinCheck},
        {method::ExecSignal, own, NeedsSandbox | NeedsExec, [this](Call &c) { sendSignal(c); }},
        {method::ExecResize, own, NeedsSandbox | NeedsExec, [this](Call &c) { resize(c); }, sizeCheck},
    };
}

void ExecMethods::start(Call &c)
{
    auto request = ExecRequest::fromJson(c.params);
    if (!request)
        return c.reply(request.error());
    begin(c.session, *c.sandbox, *request, c.params.value(QStringLiteral("attach")).toBool(true), c.reply);
}

namespace {
// Held by every copy of a one-shot's reply: once the last is gone (the command started, was
// refused, or its client left before it could start), a sandbox in which nothing runs goes.
class OneShotEnd {
public:
    OneShotEnd(Engine &engine, Sandbox *sandbox)
        : m_engine(&engine)
        , m_sandbox(sandbox)
    {
        engine.holdOneShot(sandbox);
    }
    OneShotEnd(const OneShotEnd &) = delete;
    OneShotEnd &operator=(const OneShotEnd &) = delete;
    ~OneShotEnd()
    {
        // Later: not from inside whatever drops the last reply (a decision, a removal).
        if (m_engine)
            QMetaObject::invokeMethod(
                m_engine, [engine = m_engine, sandbox = m_sandbox] { engine->releaseOneShot(sandbox); },
                Qt::QueuedConnection);
    }

private:
    QPointer<Engine> m_engine;
    QPointer<Sandbox> m_sandbox;
};

} // namespace

void ExecMethods::runOneShot(Call &c)
{
    auto creation = creationFrom(c.session, c.params);
    if (!creation)
        return c.reply(creation.error());
    const QJsonObject execParams = c.params.value(QStringLiteral("exec")).toObject();
    auto request = ExecRequest::fromJson(execParams);
    if (!request)
        return c.reply(request.error());
    creation->oneShot = true;
    const bool attach = execParams.value(QStringLiteral("attach")).toBool(true);
    QPointer<Connection> conn = c.session.conn;
    m_engine.createSandbox(
        *creation, [this, conn, request = *request, attach, reply = c.reply](const Result<QJsonObject> &created) {
            if (!created)
                return reply(created.error());
            auto sandbox = m_engine.find(created->value(QStringLiteral("id")).toString());
            if (!sandbox)
                return reply(sandbox.error());
            auto ending = std::make_shared<OneShotEnd>(m_engine, *sandbox);
            Session *s = m_sessionOf(conn);
            if (!s)
                return; // its client is gone: nothing runs for nobody
            begin(*s, **sandbox, request, attach, [reply, ending](const Result<QJsonObject> &r) { reply(r); });
        });
}

void ExecMethods::begin(Session &s, Sandbox &sb, ExecRequest request, bool attach, const Reply &reply)
{
    request.run = s.run;
    if (!s.isAgent()) { // a person's own command: the boundary applies, the command rules do not
        if (!request.forAgent.isEmpty()) { // an agent a person starts: what it starts is judged
            request.cover.judged = true;
            request.cover.requester = request.forAgent;
            request.cover.programs = policy::CommandRules::namedPrograms(request.argv);
            request.cover.decidedBy = QStringLiteral("started by a person (agent run)");
        }
        return startExecution(s.conn, sb, request, attach, reply);
    }

    // An agent's command: the command rules decide, or a person does.
    QStringList envNames, envShown;
    for (const auto &[name, value] : std::as_const(request.env)) {
        envNames.append(name);
        envShown.append(name + QLatin1Char('=') + value);
    }
    const policy::CommandVerdict verdict = sb.policy().commands.evaluate(request.argv, envNames);
    if (verdict.decision == policy::Decision::Deny) {
        sb.record(event::CommandDenied,
            {{QStringLiteral("requester"), s.agent}, {QStringLiteral("argv"), QJsonArray::fromStringList(request.argv)},
                {QStringLiteral("envNames"), QJsonArray::fromStringList(envNames)},
                {QStringLiteral("cwd"), request.cwd}, {QStringLiteral("rule"), verdict.rule},
                {QStringLiteral("layer"), verdict.layer}, {QStringLiteral("reason"), verdict.reason}},
            s.run);
        return reply(makeError(ErrorCode::Denied, QStringLiteral("denied by policy: %1").arg(verdict.reason)));
    }
    // What the decision covers when the command starts programs (the exec check).
    request.cover.judged = true;
    request.cover.requester = s.agent;
    request.cover.programs = policy::CommandRules::namedPrograms(request.argv);
    if (verdict.decision == policy::Decision::Allow) {
        request.cover.decidedBy = QStringLiteral("allowed by rule '%1' (%2)").arg(verdict.rule, verdict.layer);
        return startExecution(s.conn, sb, request, attach, reply);
    }
    if (m_approvals.pendingFor(&s) >= kMaxPendingPerConnection)
        return reply(makeError(ErrorCode::Denied,
            QStringLiteral("%1 requests of this connection already wait for a person").arg(kMaxPendingPerConnection)));
    ApprovalRequest r;
    r.owner = &s;
    r.env = envShown;
    r.run = s.run;
    r.requester = s.agent;
    r.argv = request.argv;
    r.cwd = request.cwd;
    r.rule = verdict.rule;
    r.layer = verdict.layer;
    r.reason = verdict.reason;
    askToRun(s, sb, request, r, attach, reply, 0);
}

void ExecMethods::startExecution(
    QPointer<Connection> conn, Sandbox &sandbox, const ExecRequest &request, bool attach, const Reply &reply)
{
    const auto historyWritable = [this] { return m_history ? m_history->writable() : Status(Ok{}); };
    if (Status recording = historyWritable(); !recording)
        return reply(recording.error());
    auto exec = m_engine.exec(sandbox, request);
    if (!exec)
        return reply(exec.error());
    // Its start is committed before this reply (airlockd flushes it); if that failed, the
    // execution must not run unrecorded.
    if (Status recorded = historyWritable(); !recorded) {
        (void)sandbox.signal(*exec, SIGKILL);
        return reply(recorded.error());
    }
    if (Session *s = m_sessionOf(conn); s && (attach || request.leaseMs))
        s->execs.insert({sandbox.id(), *exec});
    if (Session *s = m_sessionOf(conn); s && request.leaseMs)
        s->leases.insert({sandbox.id(), *exec}, qint64(*request.leaseMs));
    reply(QJsonObject{{QStringLiteral("sandbox"), sandbox.id()}, {QStringLiteral("exec"), double(*exec)}});
}

void ExecMethods::askToRun(Session &s, Sandbox &sandbox, const ExecRequest &exec, const ApprovalRequest &request,
    bool attach, const Reply &reply, int round)
{
    // The approval binds the files the command runs as code: one changed before it runs is asked
    // about again, with its new content on the card (twice; a third change is refused).
    constexpr int kMaxRounds = 3;
    const QJsonArray bound = m_engine.bindCode(sandbox, exec.argv, exec.cwd);
    ApprovalRequest r = request;
    r.files = bound;
    QPointer<Connection> conn = s.conn;
    m_engine.askPerson(&sandbox, r,
        [this, conn, exec, attach, reply, bound, round, r](const ApprovalRequest &req, const ApprovalDecision &d) {
            if (!d.allowed)
                return reply(makeError(ErrorCode::Denied, d.describe()));
            // What was approved is what runs: the same argv, cwd and sandbox, at the same policy version.
            auto found = m_engine.asDecided(req, d);
            if (!found)
                return reply(found.error());
            if (!conn)
                return; // the requester is gone: nothing runs for nobody
            const QString changed = changedCode(bound, m_engine.bindCode(**found, exec.argv, exec.cwd));
            if (!changed.isEmpty()) {
                if (round + 1 >= kMaxRounds)
                    return reply(makeError(ErrorCode::Denied,
                        QStringLiteral("%1 changed after it was approved, %2 times: not run")
                            .arg(changed)
                            .arg(round + 1)));
                ApprovalRequest again = r;
                again.reason
                    = QStringLiteral("%1 changed after %2 approved it as it was: asked again").arg(changed, d.by);
                // Asked once the broker is done with this decision.
                const QString sandboxId = req.sandbox;
                QMetaObject::invokeMethod(
                    this,
                    [this, conn, sandboxId, exec, again, attach, reply, round] {
                        Session *session = conn ? m_sessionOf(conn) : nullptr;
                        auto sandbox = m_engine.find(sandboxId);
                        if (!session || !sandbox)
                            return; // the requester or the sandbox went meanwhile: nothing runs
                        askToRun(*session, **sandbox, exec, again, attach, reply, round + 1);
                    },
                    Qt::QueuedConnection);
                return;
            }
            ExecRequest approved = exec;
            approved.cover.decidedBy = QStringLiteral("approved by %1").arg(d.by);
            approved.cover.approval = req.id;
            startExecution(conn, **found, approved, attach, reply);
        });
}

void ExecMethods::feed(Call &c)
{
    auto data = base64Param(c.params, "data");
    if (!data)
        return c.reply(data.error());
    Sandbox *sandbox = c.sandbox;
    const Status done = sandbox->writeStdin(c.exec, *data, c.params.value(QStringLiteral("eof")).toBool());
    if (!done)
        return c.reply(done.error());
    // Flow control: a client sends its next chunk after this reply, so hold the reply while the
    // guest is behind.
    if (sandbox->stdinBacklog() < kStdinHighWater)
        return c.reply(QJsonObject{});
    auto connection = std::make_shared<QMetaObject::Connection>();
    *connection = connect(sandbox, &Sandbox::stdinBacklogShrunk, this, [reply = c.reply, connection](qint64 backlog) {
        if (backlog >= kStdinHighWater)
            return;
        QObject::disconnect(*connection);
        reply(QJsonObject{});
    });
}

void ExecMethods::sendSignal(Call &c)
{
    const Status done = c.sandbox->signal(c.exec, c.params.value(QStringLiteral("signal")).toInt(9));
    c.reply(done ? Result<QJsonObject>(QJsonObject{}) : Result<QJsonObject>(done.error()));
}

void ExecMethods::resize(Call &c)
{
    const int rows = c.params.value(QStringLiteral("rows")).toInt(); // checked: sizeCheck
    const int cols = c.params.value(QStringLiteral("cols")).toInt();
    const Status done = c.sandbox->resize(c.exec, uint16_t(rows), uint16_t(cols));
    c.reply(done ? Result<QJsonObject>(QJsonObject{}) : Result<QJsonObject>(done.error()));
}

void ExecMethods::expireLeasesLater(const Session &session)
{
    for (auto it = session.leases.cbegin(); it != session.leases.cend(); ++it) {
        // Named copies, not a structured binding: clang 14 cannot capture those.
        const QString sandboxId = it.key().first;
        const uint32_t exec = it.key().second;
        if (!session.execs.contains(it.key()))
            continue; // it has ended
        const QString run = session.run, client = session.client;
        QTimer::singleShot(it.value(), this, [this, sandboxId, exec, run, client, lease = it.value()] {
            auto sandbox = m_engine.find(sandboxId);
            if (!sandbox || (*sandbox)->id() != sandboxId || !(*sandbox)->signal(exec, SIGKILL))
                return; // gone, or already ended
            (*sandbox)->record(event::ExecLeaseExpired,
                {{QStringLiteral("exec"), double(exec)}, {QStringLiteral("leaseMs"), double(lease)},
                    {QStringLiteral("client"), client}},
                run);
            logger()->info(
                "execution {}:{} killed: its client left {} ms ago (lease)", sandboxId.toStdString(), exec, lease);
        });
    }
}

} // namespace airlock::rpc
