// SPDX-License-Identifier: Apache-2.0
#include "rpc/RpcServer.h"
#include "util/Version.h"

#include "approval/ApprovalBroker.h"
#include "engine/CodeBinding.h"
#include "engine/Engine.h"
#include "history/HistoryStore.h"
#include "log/Log.h"
#include "policy/Policy.h"
#include "rpc/Connection.h"
#include "rpc/FileTransfers.h"
#include "rpc/HistoryMethods.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
#include "rpc/SocketActivation.h"
#include "sandbox/Sandbox.h"
#include "tools/ToolGateway.h"
#include "util/Paths.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QLocalServer>
#include <QLocalSocket>
#include <QPointer>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTimer>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::rpc {

namespace {
constexpr qint64 kHighWater = 8 * 1024 * 1024;
// Past this many bytes of replies and events waiting for a client to read, its requests wait too.
constexpr qint64 kRequestPauseBacklog = 32 * 1024 * 1024;
constexpr qint64 kLowWater = 1 * 1024 * 1024;
constexpr qint64 kMaxFileChunk = 1024 * 1024;
constexpr qint64 kStdinHighWater = 4 * 1024 * 1024;
constexpr int kMaxPendingPerConnection = 16; // requests one connection may have waiting for a person

auto logger()
{
    static auto l = log::get("daemon.rpc");
    return l;
}

// "airlockctl-20261130-101500-3f9a": unique enough across connections and daemon restarts, and
// readable in `airlockctl runs`.
QString connectionRunName(const QString &client)
{
    QString base;
    for (const QChar c : client.section(QLatin1Char('/'), 0, 0).left(40))
        if (c.isLetterOrNumber() && c.unicode() < 0x80)
            base += c;
    return QStringLiteral("%1-%2-%3")
        .arg(base.isEmpty() ? QStringLiteral("client") : base,
            QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))
        .arg(QRandomGenerator::global()->bounded(0x10000), 4, 16, QLatin1Char('0'));
}

} // namespace

RpcServer::RpcServer(Engine &engine, HistoryStore *history, ApprovalBroker &approvals, QObject *parent)
    : QObject(parent)
    , m_engine(engine)
    , m_history(history)
    , m_historyMethods(new HistoryMethods(history, this))
    , m_files(new FileTransfers(engine, this))
    , m_approvals(&approvals)
{
    registerHandlers();
}

RpcServer::~RpcServer()
{
    for (Session *s : std::as_const(m_sessions))
        releaseHolds(*s);
    qDeleteAll(m_sessions);
    if (m_server) { // not when systemd passed the socket: it stays for the next start
        m_server->close();
        QFile::remove(m_socketPath);
    }
}

Status RpcServer::listen(const QString &socketPath)
{
    m_socketPath = socketPath;
    auto activated = ActivatedSocket::take(socketPath, this);
    if (!activated)
        return activated.error();
    if (*activated) {
        // systemd made the socket (SocketMode=0600 in a 0700 directory) and may hold connections on it.
        m_activated = true;
        connect(*activated, &ActivatedSocket::accepted, this, [this](QLocalSocket *socket) { addSession(socket); });
        logger()->info("listening on {} (socket activation)", socketPath.toStdString());
        return Ok{};
    }
    // The caller holds the InstanceLock, so a socket file left here belongs to a dead daemon.
    if (QFileInfo::exists(socketPath) || QFileInfo(socketPath).isSymLink()) {
        logger()->info("removing stale socket {}", socketPath.toStdString());
        QFile::remove(socketPath);
    }
    m_server = new QLocalServer(this);
    // The directory is 0700 and the daemon's umask 077; chmod makes the socket itself 0600.
    m_server->setMaxPendingConnections(256);
    if (!m_server->listen(socketPath))
        return makeError(
            ErrorCode::IoError, QStringLiteral("cannot listen on %1: %2").arg(socketPath, m_server->errorString()));
    ::chmod(QFile::encodeName(socketPath).constData(), 0600);
    connect(m_server, &QLocalServer::newConnection, this, &RpcServer::onNewConnection);
    logger()->info("listening on {}", socketPath.toStdString());
    return Ok{};
}

void RpcServer::onNewConnection()
{
    while (QLocalSocket *socket = m_server->nextPendingConnection())
        addSession(socket);
}

void RpcServer::adopt(QLocalSocket *socket, const remote::Grant &grant, const QString &peer)
{
    socket->setParent(nullptr);
    Session *session = addSession(socket);
    session->grant = grant;
    session->peer = peer;
}

RpcServer::Session *RpcServer::addSession(QLocalSocket *socket)
{
    auto *session = new Session;
    session->conn = new Connection(socket, this);
    session->conn->pauseWhileBacklogged(kRequestPauseBacklog);
    m_sessions.append(session);
    QTimer::singleShot(m_helloTimeoutMs, session->conn, [this, conn = session->conn] {
        Session *s = sessionOf(conn);
        if (!s || s->greeted)
            return;
        logger()->info("closing a connection that said no hello within {} ms", m_helloTimeoutMs);
        conn->closeWithError(makeError(ErrorCode::HandshakeRequired,
            QStringLiteral("no \"hello\" within %1 ms of connecting").arg(m_helloTimeoutMs)));
    });
    connect(session->conn, &Connection::messageReceived, this,
        [this, session](const QJsonObject &m) { onMessage(*session, m); });
    connect(session->conn, &Connection::framingFailed, this, [session](const Error &e) {
        logger()->warn("closing a connection after a malformed frame: {}", e.message.toStdString());
        session->conn->closeWithError(e);
    });
    connect(session->conn, &Connection::dataReceived, this,
        [this, session](quint32 transfer, QByteArrayView bytes) { m_files->onData(session->conn, transfer, bytes); });
    connect(session->conn, &Connection::bytesFlushed, this, [this, session](qint64 pending) {
        if (pending < kLowWater && !session->holding.isEmpty())
            releaseHolds(*session);
        m_files->pump(session->conn);
    });
    connect(session->conn, &Connection::disconnected, this, [this, session] {
        m_files->drop(session->conn);
        expireLeasesLater(*session);
        releaseHolds(*session);
        m_approvals->cancelIf([session](const ApprovalRequest &r) { return r.owner == session; },
            QStringLiteral("the requester disconnected"));
        m_sessions.removeAll(session);
        session->conn->deleteLater();
        delete session;
    });
    return session;
}

void RpcServer::expireLeasesLater(const Session &session)
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
            if (!sandbox || !m_engine.signal(sandboxId, exec, SIGKILL))
                return; // gone, or already ended
            (*sandbox)->record(QStringLiteral("exec.lease_expired"),
                {{QStringLiteral("exec"), double(exec)}, {QStringLiteral("leaseMs"), double(lease)},
                    {QStringLiteral("client"), client}},
                run);
            logger()->info(
                "execution {}:{} killed: its client left {} ms ago (lease)", sandboxId.toStdString(), exec, lease);
        });
    }
}

Status RpcServer::ownExecution(const Session &s, const QString &sandboxRef, uint32_t exec) const
{
    if (s.agent.isEmpty())
        return Ok{};
    auto sandbox = m_engine.find(sandboxRef);
    if (sandbox && s.execs.contains({(*sandbox)->id(), exec}))
        return Ok{};
    return makeError(
        ErrorCode::Denied, QStringLiteral("an agent connection can only feed or signal the executions it started"));
}

RpcServer::Session *RpcServer::sessionOf(const Connection *conn) const
{
    for (Session *s : m_sessions)
        if (s->conn == conn)
            return s;
    return nullptr;
}

void RpcServer::startExecution(
    QPointer<Connection> conn, const QString &sandboxId, const ExecRequest &request, bool attach, const Reply &reply)
{
    auto sandbox = m_engine.find(sandboxId);
    if (!sandbox)
        return reply(sandbox.error());
    if (Status recording = historyWritable(); !recording)
        return reply(recording.error());
    auto exec = m_engine.exec(sandboxId, request);
    if (!exec)
        return reply(exec.error());
    // Its start is committed before this reply (airlockd flushes it); if that failed, the
    // execution must not run unrecorded.
    if (Status recorded = historyWritable(); !recorded) {
        (void)(*sandbox)->signal(*exec, SIGKILL);
        return reply(recorded.error());
    }
    if (Session *s = sessionOf(conn); s && (attach || request.leaseMs))
        s->execs.insert({(*sandbox)->id(), *exec});
    if (Session *s = sessionOf(conn); s && request.leaseMs)
        s->leases.insert({(*sandbox)->id(), *exec}, qint64(*request.leaseMs));
    reply(QJsonObject{{QStringLiteral("sandbox"), (*sandbox)->id()}, {QStringLiteral("exec"), double(*exec)}});
}

Status RpcServer::historyWritable() const
{
    return m_history ? m_history->writable() : Status(Ok{});
}

void RpcServer::releaseHolds(Session &session)
{
    for (Sandbox *s : std::as_const(session.holding))
        s->holdOutput(&session, false);
    session.holding.clear();
}

void RpcServer::onMessage(Session &session, const QJsonObject &message)
{
    const QJsonValue id = message.value(QStringLiteral("id"));
    const QString method = message.value(QStringLiteral("method")).toString();
    if (method.isEmpty() || (!id.isDouble() && !id.isString())) {
        // Replies and notifications from a client are not part of this protocol.
        session.conn->send(makeErrorReply(id.isUndefined() ? QJsonValue() : id,
            makeError(ErrorCode::ProtocolError, QStringLiteral("expected a request with \"id\" and \"method\""))));
        return;
    }
    const QJsonValue paramsValue = message.value(QStringLiteral("params"));
    if (!paramsValue.isUndefined() && !paramsValue.isObject()) {
        session.conn->send(makeErrorReply(id, invalid(QStringLiteral("params: expected an object"))));
        return;
    }
    QPointer<Connection> conn = session.conn;
    const Reply reply = [conn, id](Result<QJsonObject> r) {
        if (!conn)
            return;
        conn->send(r ? makeResult(id, *r) : makeErrorReply(id, r.error()));
    };
    if (!session.greeted && method != QLatin1String("hello")) {
        session.conn->closeWithError(makeError(ErrorCode::HandshakeRequired,
            QStringLiteral("the first request must be \"hello\" with the protocol version")));
        return;
    }
    QJsonObject params = paramsValue.toObject();
    if (Status allowed = permitted(session, method, params); !allowed)
        return reply(allowed.error());
    // What agents did is the person's record: an agent does not drop it.
    if (method == QLatin1String("history.prune") && !session.agent.isEmpty())
        return reply(makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot prune the history")));
    if (HistoryMethods::handles(method)) {
        // {"method": "progress", "params": {"id": <the request's>, ...}}, like MCP's progress.
        const HistoryMethods::Progress progress = [conn, id](QJsonObject step) {
            step.insert(QStringLiteral("id"), id);
            if (conn)
                conn->send(makeNotification(QStringLiteral("progress"), step));
        };
        return m_historyMethods->handle(method, params, reply, progress);
    }
    if (FileTransfers::handles(method))
        return m_files->handle(session.conn, method, params, reply);
    const auto handler = m_handlers.constFind(method);
    if (handler == m_handlers.cend()) {
        QJsonObject err = makeErrorReply(id, invalid(QStringLiteral("unknown method '%1'").arg(method.left(100))));
        QJsonObject e = err.value(QStringLiteral("error")).toObject();
        e.insert(QStringLiteral("code"), -32601);
        err.insert(QStringLiteral("error"), e);
        session.conn->send(err);
        return;
    }
    (*handler)(session, params, filtered(session, method, reply));
}

bool RpcServer::wants(const Session &s, const Event &e) const
{
    if (!covers(s, e.sandbox))
        return false;
    if (s.allEvents || s.sandboxes.contains(e.sandbox))
        return true;
    if (e.kind == QLatin1String("sandbox.deleted") || e.kind == QLatin1String("sandbox.failed")) {
        for (const auto &[sb, ex] : s.execs)
            if (sb == e.sandbox)
                return true;
        return false;
    }
    if (e.batched) // programs a rule let run, by the thousand: for the sandbox's watchers
        return false;
    const uint32_t exec = e.isOutput() ? e.exec : uint32_t(e.payload.value(QStringLiteral("exec")).toDouble());
    return exec && s.execs.contains({e.sandbox, exec});
}

void RpcServer::onEvent(const Event &event)
{
    QByteArray frame; // JSON events, or the header of an output event
    for (Session *s : std::as_const(m_sessions)) {
        if (!s->greeted || !s->conn->isOpen() || !wants(*s, event))
            continue;
        if (frame.isEmpty())
            frame = event.isOutput() ? encodeOutputHeader(event)
                                     : encodeJson(makeNotification(QStringLiteral("event"), eventToJson(event)));
        if (event.isOutput())
            s->conn->sendOutput(frame, event.data);
        else
            s->conn->sendFrame(frame);
        if (event.isOutput() && s->conn->pendingBytes() > kHighWater) {
            if (auto sb = m_engine.find(event.sandbox); sb && !s->holding.contains(*sb)) {
                s->holding.insert(*sb);
                (*sb)->holdOutput(s, true);
            }
        }
        if (event.kind == QLatin1String("exec.exited"))
            s->execs.remove({event.sandbox, event.exec});
    }
    if (event.kind == QLatin1String("sandbox.deleted") || event.kind == QLatin1String("sandbox.failed")) {
        m_approvals->cancelIf([&](const ApprovalRequest &r) { return r.sandbox == event.sandbox; },
            QStringLiteral("the sandbox was deleted"));
        for (Session *s : std::as_const(m_sessions)) {
            if (event.kind == QLatin1String("sandbox.deleted"))
                s->sandboxes.remove(event.sandbox);
            for (auto it = s->holding.begin(); it != s->holding.end();) {
                if ((*it)->id() == event.sandbox)
                    it = s->holding.erase(it);
                else
                    ++it;
            }
        }
    }
}

void RpcServer::askToRun(Session &s, Sandbox *sandbox, const ExecRequest &exec, const ApprovalRequest &request,
    bool attach, const Reply &reply, int round)
{
    // The approval binds the files the command runs as code: one changed before it runs is asked
    // about again, with its new content on the card (twice; a third change is refused).
    constexpr int kMaxRounds = 3;
    const QJsonArray bound = m_engine.bindCode(*sandbox, exec.argv, exec.cwd);
    ApprovalRequest r = request;
    r.files = bound;
    QPointer<Connection> conn = s.conn;
    m_engine.askPerson(sandbox, r,
        [this, conn, exec, attach, reply, bound, round, r](const ApprovalRequest &req, const ApprovalDecision &d) {
            auto found = m_engine.find(req.sandbox);
            if (!d.allowed)
                return reply(makeError(ErrorCode::Denied, d.describe()));
            // What was approved is what runs: the same argv, cwd and sandbox, at the same policy version.
            // ("always" moved the policy one version on, by its own rule.)
            if (!found || (*found)->policyVersion() != req.policyVersion + (d.always ? 1 : 0))
                return reply(makeError(ErrorCode::Denied,
                    QStringLiteral("the sandbox or its policy changed while the request waited; ask again")));
            if (!conn)
                return; // the requester is gone: nothing runs for nobody
            if (const QString changed = changedCode(bound, m_engine.bindCode(**found, exec.argv, exec.cwd));
                !changed.isEmpty()) {
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
                        Session *session = conn ? sessionOf(conn) : nullptr;
                        auto sandbox = m_engine.find(sandboxId);
                        if (!session || !sandbox)
                            return; // the requester or the sandbox went meanwhile: nothing runs
                        askToRun(*session, *sandbox, exec, again, attach, reply, round + 1);
                    },
                    Qt::QueuedConnection);
                return;
            }
            ExecRequest approved = exec;
            approved.cover.decidedBy = QStringLiteral("approved by %1").arg(d.by);
            approved.cover.approval = req.id;
            startExecution(conn, req.sandbox, approved, attach, reply);
        });
}

void RpcServer::registerHandlers()
{
    m_handlers.insert(QStringLiteral("hello"), [](Session &s, const QJsonObject &p, const Reply &reply) {
        const int version = p.value(QStringLiteral("protocol")).toInt(-1);
        if (version != kProtocolVersion) {
            s.conn->closeWithError(makeError(ErrorCode::VersionMismatch,
                QStringLiteral("client speaks protocol %1, this daemon speaks %2; use "
                               "matching Airlock versions")
                    .arg(version)
                    .arg(kProtocolVersion)));
            return;
        }
        // A run groups one agent session's work; without a name, this connection is its own run.
        // Names are shown in every listing: plain characters only, never terminal controls.
        static const QRegularExpression runName(
            QRegularExpression::anchoredPattern(QStringLiteral("[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}")));
        const QString run = p.value(QStringLiteral("run")).toString();
        if (!run.isEmpty() && !runName.match(run).hasMatch()) {
            s.conn->closeWithError(
                invalid(QStringLiteral("run names are 1 to 200 letters, digits and . _ : @ / + - (starting with a "
                                       "letter or digit)")));
            return;
        }
        const QString agent = p.value(QStringLiteral("agent")).toString();
        if (!agent.isEmpty() && !runName.match(agent).hasMatch()) {
            s.conn->closeWithError(
                invalid(QStringLiteral("agent names are 1 to 200 letters, digits and . _ : @ / + - (starting with "
                                       "a letter or digit)")));
            return;
        }
        s.agent = agent;
        s.greeted = true;
        s.client = p.value(QStringLiteral("client")).toString().left(200);
        if (s.client.isEmpty())
            s.client = QStringLiteral("client"); // who made a change or a decision, in the history
        if (s.grant) // a remote client names itself; the token says who it is
            s.client = QStringLiteral("%1 (token %2 from %3)").arg(s.client, s.grant->tokenName, s.peer);
        s.run = run.isEmpty() ? connectionRunName(s.client) : run;
        reply(QJsonObject{{QStringLiteral("protocol"), kProtocolVersion},
            {QStringLiteral("daemon"), airlock::version()}, {QStringLiteral("pid"), double(::getpid())}});
    });
    m_handlers.insert(QStringLiteral("daemon.info"), [this](Session &, const QJsonObject &, const Reply &reply) {
        QJsonObject info = m_engine.daemonInfo();
        info.insert(QStringLiteral("socket"), m_socketPath);
        info.insert(QStringLiteral("socketActivated"), m_activated);
        info.insert(QStringLiteral("clients"), sessionCount());
        if (!m_notices.isEmpty())
            info.insert(QStringLiteral("notices"), QJsonArray::fromStringList(m_notices));
        reply(info);
    });
    m_handlers.insert(QStringLiteral("sandbox.create"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        const QJsonObject specJson = p.value(QStringLiteral("spec")).toObject();
        auto spec = SandboxSpec::fromJson(specJson);
        if (!spec)
            return reply(spec.error());
        const QJsonValue policyValue = p.value(QStringLiteral("policy"));
        // An agent gets the person's defaults (user layer, locked preset) and only limits of its own.
        if (!s.agent.isEmpty()
            && (!policyValue.isUndefined() || !p.value(QStringLiteral("preset")).toString().isEmpty()
                || specJson.contains(QStringLiteral("network"))
                || !specJson.value(QStringLiteral("mounts")).toArray().isEmpty()))
            return reply(makeError(ErrorCode::Denied,
                QStringLiteral("an agent connection creates sandboxes with the default policy only "
                               "(no policy, preset, network or mounts of its own)")));
        if (!policyValue.isUndefined() && !policyValue.isObject())
            return reply(invalid(QStringLiteral("params.policy: expected a policy object")));
        if (Status valid = policy::validate(policyValue.toObject()); !valid)
            return reply(
                makeError(ErrorCode::InvalidArgument, QStringLiteral("policy: %1").arg(valid.error().message)));
        if (Status recording = historyWritable(); !recording)
            return reply(recording.error());
        m_engine.createSandbox(
            *spec, s.run,
            [reply](Result<QJsonObject> r) { reply(r ? Result<QJsonObject>(*r) : Result<QJsonObject>(r.error())); },
            policy::withSpecFields(policyValue.toObject(), specJson),
            p.value(QStringLiteral("preset")).toString().left(100), s.grant ? s.grant->tokenId : QString());
    });
    m_handlers.insert(QStringLiteral("approvals.list"), [this](Session &s, const QJsonObject &, const Reply &reply) {
        QJsonArray pending;
        for (const ApprovalRequest &r : m_approvals->pending()) {
            QJsonObject request = r.toJson();
            if (!s.agent.isEmpty())
                request.remove(QStringLiteral("nonce")); // an agent sees what waits, never how to decide it
            pending.append(request);
        }
        reply(QJsonObject{{QStringLiteral("approvals"), pending}});
    });
    // A requester that no longer wants what it asked for takes the question back from the person
    // (an agent's cancelled call): answered as denied, and recorded as withdrawn. Without an id:
    // every request of this connection (a client that is ending).
    m_handlers.insert(
        QStringLiteral("approvals.withdraw"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
            const QString by = QStringLiteral("withdrawn by %1").arg(s.agent.isEmpty() ? s.client : s.agent);
            if (!p.contains(QStringLiteral("id"))) {
                QJsonArray withdrawn;
                for (const ApprovalRequest &r : m_approvals->pending())
                    if (r.owner == &s)
                        withdrawn.append(r.id);
                const QString why = p.value(QStringLiteral("reason")).toString().left(200);
                m_approvals->cancelIf([&](const ApprovalRequest &r) { return r.owner == &s; },
                    why.isEmpty() ? by : QStringLiteral("%1: %2").arg(by, why));
                return reply(QJsonObject{{QStringLiteral("withdrawn"), withdrawn}});
            }
            auto id = stringParam(p, "id");
            if (!id)
                return reply(id.error());
            const auto pending = m_approvals->pending();
            const auto it
                = std::find_if(pending.cbegin(), pending.cend(), [&](const ApprovalRequest &r) { return r.id == *id; });
            if (it == pending.cend())
                return reply(
                    makeError(ErrorCode::NotFound, QStringLiteral("no approval %1 is waiting").arg(id->left(40))));
            if (it->owner != &s)
                return reply(makeError(
                    ErrorCode::Denied, QStringLiteral("approval %1 is not this connection's to withdraw").arg(*id)));
            m_approvals->cancelIf([&](const ApprovalRequest &r) { return r.id == *id; }, by);
            reply(QJsonObject{{QStringLiteral("withdrawn"), *id}});
        });
    m_handlers.insert(QStringLiteral("approvals.decide"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        // An agent must not approve its own requests (nor anyone's).
        if (!s.agent.isEmpty())
            return reply(makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot decide approvals")));
        auto id = stringParam(p, "id");
        auto nonce = stringParam(p, "nonce");
        const QString decision = p.value(QStringLiteral("decision")).toString();
        if (!id || !nonce)
            return reply(!id ? id.error() : nonce.error());
        if (decision != QLatin1String("allow") && decision != QLatin1String("deny"))
            return reply(invalid(QStringLiteral("params.decision: expected \"allow\" or \"deny\"")));
        const bool always = decision == QLatin1String("allow") && p.value(QStringLiteral("always")).toBool();
        const QString &by = s.client;
        if (always) {
            // The rule goes in first: if it could not cover the command, nothing is decided.
            // Only for a decision that will be taken: check it first (one thread: it still holds after).
            if (Status valid = m_approvals->check(*id, *nonce); !valid)
                return reply(valid.error());
            const auto pending = m_approvals->pending();
            const auto it
                = std::find_if(pending.cbegin(), pending.cend(), [&](const ApprovalRequest &r) { return r.id == *id; });
            auto added = m_engine.allowAlways(*it, by);
            if (!added)
                return reply(added.error());
        }
        const Status decided = m_approvals->decide(*id, *nonce,
            {decision == QLatin1String("allow"), always, by, p.value(QStringLiteral("reason")).toString().left(1000)});
        reply(decided
                ? Result<QJsonObject>(QJsonObject{{QStringLiteral("id"), *id}, {QStringLiteral("decision"), decision}})
                : Result<QJsonObject>(decided.error()));
    });
    registerSettingsHandlers();
    m_handlers.insert(QStringLiteral("tools.list"), [this](Session &, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto listed = m_engine.listTools(*ref);
        reply(listed ? Result<QJsonObject>(QJsonObject{{QStringLiteral("tools"), *listed}})
                     : Result<QJsonObject>(listed.error()));
    });
    m_handlers.insert(QStringLiteral("tools.call"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto tool = stringParam(p, "tool");
        if (!ref || !tool)
            return reply(!ref ? ref.error() : tool.error());
        if (Status recording = historyWritable(); !recording)
            return reply(recording.error());
        tools::ToolCall call;
        call.tool = tool->left(100);
        call.arguments = p.value(QStringLiteral("arguments"));
        call.requester = s.agent.isEmpty() ? s.client : s.agent;
        call.run = s.run;
        call.owner = &s;
        QPointer<Connection> conn = s.conn;
        m_engine.callTool(*ref, call, [conn, reply](Result<QJsonObject> result) {
            if (conn)
                reply(result);
        });
    });
    m_handlers.insert(QStringLiteral("sandbox.list"), [this](Session &, const QJsonObject &, const Reply &reply) {
        reply(QJsonObject{{QStringLiteral("sandboxes"), m_engine.listSandboxes()}});
    });
    m_handlers.insert(QStringLiteral("sandbox.stats"), [this](Session &s, const QJsonObject &, const Reply &reply) {
        QPointer<Connection> conn = s.conn;
        m_engine.sampleUsage([conn, reply](const QJsonArray &sandboxes, qint64 sampledMs) {
            if (conn)
                reply(QJsonObject{
                    {QStringLiteral("sandboxes"), sandboxes}, {QStringLiteral("sampledMs"), double(sampledMs)}});
        });
    });
    m_handlers.insert(QStringLiteral("sandbox.info"), [this](Session &, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto info = m_engine.sandboxInfo(*ref);
        reply(info ? Result<QJsonObject>(*info) : Result<QJsonObject>(info.error()));
    });
    m_handlers.insert(QStringLiteral("sandbox.delete"), [this](Session &, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto r = m_engine.removeSandbox(*ref, p.value(QStringLiteral("keep")).toBool());
        reply(r ? Result<QJsonObject>(*r) : Result<QJsonObject>(r.error()));
    });
    m_handlers.insert(QStringLiteral("exec.start"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto request = ExecRequest::fromJson(p);
        if (!request)
            return reply(request.error());
        request->run = s.run;
        if (Status recording = historyWritable(); !recording)
            return reply(recording.error());
        auto sandbox = m_engine.find(*ref);
        if (!sandbox)
            return reply(sandbox.error());
        const bool attach = p.value(QStringLiteral("attach")).toBool(true);
        if (s.agent.isEmpty()) // a person's own command: the boundary applies, the command rules do not
            return startExecution(s.conn, (*sandbox)->id(), *request, attach, reply);

        // An agent's command: the command rules decide, or a person does.
        Sandbox *sb = *sandbox;
        QStringList envNames, envShown;
        for (const auto &[name, value] : std::as_const(request->env)) {
            envNames.append(name);
            envShown.append(name + QLatin1Char('=') + value);
        }
        const policy::CommandVerdict verdict = sb->policy().commands.evaluate(request->argv, envNames);
        const QJsonObject asked{{QStringLiteral("requester"), s.agent},
            {QStringLiteral("argv"), QJsonArray::fromStringList(request->argv)},
            {QStringLiteral("envNames"), QJsonArray::fromStringList(envNames)}, {QStringLiteral("cwd"), request->cwd},
            {QStringLiteral("rule"), verdict.rule}, {QStringLiteral("layer"), verdict.layer},
            {QStringLiteral("reason"), verdict.reason}};
        if (verdict.decision == policy::Decision::Deny) {
            sb->record(QStringLiteral("command.denied"), asked, s.run);
            return reply(makeError(ErrorCode::Denied, QStringLiteral("denied by policy: %1").arg(verdict.reason)));
        }
        // What the decision covers when the command starts programs (the exec check).
        request->cover.judged = true;
        request->cover.requester = s.agent;
        request->cover.programs = policy::CommandRules::namedPrograms(request->argv);
        if (verdict.decision == policy::Decision::Allow) {
            request->cover.decidedBy = QStringLiteral("allowed by rule '%1' (%2)").arg(verdict.rule, verdict.layer);
            return startExecution(s.conn, sb->id(), *request, attach, reply);
        }
        if (m_approvals->pendingFor(&s) >= kMaxPendingPerConnection)
            return reply(makeError(ErrorCode::Denied,
                QStringLiteral("%1 requests of this connection already wait for a person")
                    .arg(kMaxPendingPerConnection)));
        ApprovalRequest r;
        r.owner = &s;
        r.env = envShown;
        r.run = s.run;
        r.requester = s.agent;
        r.argv = request->argv;
        r.cwd = request->cwd;
        r.rule = verdict.rule;
        r.layer = verdict.layer;
        r.reason = verdict.reason;
        askToRun(s, sb, *request, r, attach, reply, 0);
    });
    m_handlers.insert(QStringLiteral("exec.stdin"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto exec = execParam(p);
        auto data = base64Param(p, "data");
        if (!ref || !exec || !data)
            return reply(!ref ? ref.error() : !exec ? exec.error() : data.error());
        if (Status mine = ownExecution(s, *ref, *exec); !mine)
            return reply(mine.error());
        const Status done = m_engine.writeStdin(*ref, *exec, *data, p.value(QStringLiteral("eof")).toBool());
        if (!done)
            return reply(done.error());
        // Flow control: a client sends its next chunk after this reply, so hold the reply while
        // the guest is behind. The sandbox is known to exist here.
        Sandbox *sandbox = *m_engine.find(*ref);
        if (sandbox->stdinBacklog() < kStdinHighWater)
            return reply(QJsonObject{});
        auto connection = std::make_shared<QMetaObject::Connection>();
        *connection = connect(sandbox, &Sandbox::stdinBacklogShrunk, this, [reply, connection](qint64 backlog) {
            if (backlog >= kStdinHighWater)
                return;
            QObject::disconnect(*connection);
            reply(QJsonObject{});
        });
    });
    m_handlers.insert(QStringLiteral("exec.signal"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto exec = execParam(p);
        if (!ref || !exec)
            return reply(!ref ? ref.error() : exec.error());
        if (Status mine = ownExecution(s, *ref, *exec); !mine)
            return reply(mine.error());
        const Status done = m_engine.signal(*ref, *exec, p.value(QStringLiteral("signal")).toInt(9));
        reply(done ? Result<QJsonObject>(QJsonObject{}) : Result<QJsonObject>(done.error()));
    });
    // Everything running in a sandbox, which stays: for a person (an agent signals only its own).
    m_handlers.insert(QStringLiteral("sandbox.kill"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        if (!s.agent.isEmpty())
            return reply(makeError(
                ErrorCode::Denied, QStringLiteral("an agent connection can only signal the executions it started")));
        auto killed = m_engine.signalAll(*ref, p.value(QStringLiteral("signal")).toInt(9));
        reply(killed ? Result<QJsonObject>(QJsonObject{{QStringLiteral("executions"), *killed}})
                     : Result<QJsonObject>(killed.error()));
    });
    m_handlers.insert(QStringLiteral("exec.resize"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto exec = execParam(p);
        const int rows = p.value(QStringLiteral("rows")).toInt(-1), cols = p.value(QStringLiteral("cols")).toInt(-1);
        if (!ref || !exec)
            return reply(!ref ? ref.error() : exec.error());
        if (Status mine = ownExecution(s, *ref, *exec); !mine)
            return reply(mine.error());
        if (rows < 1 || rows > 10000 || cols < 1 || cols > 10000)
            return reply(invalid(QStringLiteral("params.rows/cols: expected 1..10000")));
        const Status done = m_engine.resize(*ref, *exec, uint16_t(rows), uint16_t(cols));
        reply(done ? Result<QJsonObject>(QJsonObject{}) : Result<QJsonObject>(done.error()));
    });
    m_handlers.insert(QStringLiteral("fs.write"), [this](Session &, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto path = stringParam(p, "path");
        auto data = base64Param(p, "data");
        if (!ref || !path || !data)
            return reply(!ref ? ref.error() : !path ? path.error() : data.error());
        const double offset = p.value(QStringLiteral("offset")).toDouble(0);
        if (offset < 0 || offset > 1e15 || data->size() > kMaxFileChunk)
            return reply(invalid(QStringLiteral("params.offset/data: chunks of at most 1 MiB at a valid offset")));
        const int mode = p.value(QStringLiteral("mode")).toInt(0644);
        auto files = m_engine.files(*ref);
        if (!files)
            return reply(files.error());
        auto written = files->write(*path, p.value(QStringLiteral("name")).toString(), *data, qint64(offset),
            p.value(QStringLiteral("truncate")).toBool(offset == 0), mode);
        reply(written ? Result<QJsonObject>(QJsonObject{{QStringLiteral("path"), *written}})
                      : Result<QJsonObject>(written.error()));
    });
    m_handlers.insert(QStringLiteral("fs.read"), [this](Session &, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        auto path = stringParam(p, "path");
        if (!ref || !path)
            return reply(!ref ? ref.error() : path.error());
        const double offset = p.value(QStringLiteral("offset")).toDouble(0);
        const double length = p.value(QStringLiteral("length")).toDouble(double(kMaxFileChunk));
        if (offset < 0 || offset > 1e15 || length < 0 || length > double(kMaxFileChunk))
            return reply(invalid(QStringLiteral("params.offset/length: at most 1 MiB per read")));
        auto files = m_engine.files(*ref);
        if (!files)
            return reply(files.error());
        auto chunk = files->read(*path, qint64(offset), qint64(length));
        if (!chunk)
            return reply(chunk.error());
        reply(QJsonObject{{QStringLiteral("data"), QString::fromLatin1(chunk->data.toBase64())},
            {QStringLiteral("size"), double(chunk->size)}, {QStringLiteral("eof"), chunk->eof}});
    });
    m_handlers.insert(QStringLiteral("events.subscribe"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        if (!p.contains(QStringLiteral("sandbox"))) {
            s.allEvents = true;
            return reply(QJsonObject{});
        }
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto sandbox = m_engine.find(*ref);
        if (!sandbox)
            return reply(sandbox.error());
        s.sandboxes.insert((*sandbox)->id());
        // What came before lastSeq is stored by the time the client reads it (events the history
        // gate still holds included), and the rest comes to it.
        if (m_history)
            (void)m_history->flush();
        reply(QJsonObject{
            {QStringLiteral("sandbox"), (*sandbox)->id()}, {QStringLiteral("lastSeq"), double((*sandbox)->lastSeq())}});
    });
}

} // namespace airlock::rpc
