// SPDX-License-Identifier: Apache-2.0
#include "rpc/RpcServer.h"
#include "model/EventKinds.h"
#include "util/Version.h"

#include "approval/ApprovalBroker.h"
#include "engine/CodeBinding.h"
#include "engine/Engine.h"
#include "history/HistoryStore.h"
#include "log/Log.h"
#include "model/Units.h"
#include "policy/Policy.h"
#include "rpc/AccessGate.h"
#include "rpc/Connection.h"
#include "rpc/ExecMethods.h"
#include "rpc/FileTransfers.h"
#include "rpc/HistoryMethods.h"
#include "rpc/MethodGroups.h"
#include "rpc/Params.h"
#include "rpc/PolicyMethods.h"
#include "rpc/RpcSession.h"
#include "rpc/SandboxMethods.h"
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
    , m_approvals(&approvals)
    , m_access(std::make_unique<AccessGate>(engine, approvals))
{
    auto execs = std::make_unique<ExecMethods>(
        engine, approvals, history, [this](const Connection *conn) { return sessionOf(conn); });
    auto files = std::make_unique<FileTransfers>(engine);
    m_execs = execs.get();
    m_files = files.get();
    m_groups.push_back(std::make_unique<SandboxMethods>(engine));
    m_groups.push_back(std::move(execs));
    m_groups.push_back(std::move(files));
    m_groups.push_back(std::make_unique<PolicyMethods>(engine));
    m_groups.push_back(std::make_unique<ApprovalMethods>(engine, approvals));
    m_groups.push_back(std::make_unique<SecretMethods>(engine));
    m_groups.push_back(std::make_unique<ToolMethods>(engine));
    m_groups.push_back(std::make_unique<HistoryMethods>(history));
    QList<Method> all = connectionMethods();
    for (const auto &group : m_groups)
        all.append(group->methods());
    for (Method &m : all) {
        if (m_methods.contains(m.name)) // a programming error: which of the two would answer?
            qFatal("RPC method %s is declared twice", QString(m.name).toUtf8().constData());
        m_methods.insert(m.name, std::move(m));
    }
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

void RpcServer::adoptLocal(QLocalSocket *socket)
{
    socket->setParent(nullptr);
    addSession(socket);
}

Session *RpcServer::addSession(QLocalSocket *socket)
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
        m_execs->expireLeasesLater(*session);
        releaseHolds(*session);
        m_approvals->cancelIf([session](const ApprovalRequest &r) { return r.owner == session; },
            QStringLiteral("the requester disconnected"));
        m_sessions.removeAll(session);
        QObject::disconnect(session->conn, nullptr, this, nullptr); // its handlers hold `session`
        session->conn->deleteLater();
        delete session;
    });
    return session;
}

Session *RpcServer::sessionOf(const Connection *conn) const
{
    for (Session *s : m_sessions)
        if (s->conn == conn)
            return s;
    return nullptr;
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
    const QString name = message.value(QStringLiteral("method")).toString();
    if (name.isEmpty() || (!id.isDouble() && !id.isString())) {
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
    if (!session.greeted && name != method::Hello) {
        session.conn->closeWithError(makeError(ErrorCode::HandshakeRequired,
            QStringLiteral("the first request must be \"hello\" with the protocol version")));
        return;
    }
    const auto found = m_methods.constFind(name);
    if (found == m_methods.cend()) {
        QJsonObject err = makeErrorReply(id, invalid(QStringLiteral("unknown method '%1'").arg(name.left(100))));
        QJsonObject e = err.value(QStringLiteral("error")).toObject();
        e.insert(QStringLiteral("code"), -32601);
        err.insert(QStringLiteral("error"), e);
        session.conn->send(err);
        return;
    }
    // {"method": "progress", "params": {"id": <the request's>, ...}}, like MCP's progress.
    const Progress progress = [conn, id](QJsonObject step) {
        step.insert(QStringLiteral("id"), id);
        if (conn)
            conn->send(makeNotification(method::ProgressNotification, step));
    };
    dispatch(*found, session, paramsValue.toObject(), reply, progress);
}

void RpcServer::dispatch(
    const Method &method, Session &session, QJsonObject params, const Reply &reply, const Progress &progress)
{
    if (Status allowed = m_access->permitted(session, method, params); !allowed)
        return reply(allowed.error());
    const Reply answer = m_access->filtered(session, method, reply); // a listing cut to a token's sandboxes
    Call call{session, params, answer, progress};
    // The request as it was written first (its sandbox named, its execution, its own parameters),
    // then whether the history can record it, then what it names.
    Result<QString> ref = QString();
    if (method.needs & NeedsSandbox)
        if (ref = stringParam(params, "sandbox"); !ref)
            return reply(ref.error());
    if (method.needs & NeedsExec) {
        auto exec = execParam(params);
        if (!exec)
            return reply(exec.error());
        call.exec = *exec;
    }
    if (method.check)
        if (Status wellFormed = method.check(params); !wellFormed)
            return reply(wellFormed.error());
    if (method.needs & WritesHistory && m_history)
        if (Status recording = m_history->writable(); !recording)
            return reply(recording.error());
    if (method.needs & NeedsSandbox) {
        auto sandbox = m_engine.find(*ref);
        if (!sandbox)
            return reply(sandbox.error());
        call.sandbox = *sandbox;
    }
    if (method.needs & NeedsExec)
        if (Status mine = m_access->ownsExecution(session, method, call.sandbox->id(), call.exec); !mine)
            return reply(mine.error());
    method.handler(call);
}

QList<Method> RpcServer::connectionMethods()
{
    using A = Access;
    constexpr Access open{A::Agent::Allowed, nullptr, A::Token::Open, A::Scope::None};
    return {
        {method::Hello, open, NeedsNothing, [this](Call &c) { hello(c); }},
        {method::DaemonInfo, open, NeedsNothing,
            [this](Call &c) {
                QJsonObject info = m_engine.daemonInfo();
                info.insert(QStringLiteral("socket"), m_socketPath);
                info.insert(QStringLiteral("socketActivated"), m_activated);
                info.insert(QStringLiteral("clients"), sessionCount());
                QStringList notices = m_notices;
                if (const auto floor = m_history ? m_history->diskFloor() : std::nullopt)
                    notices.append(QStringLiteral("the disk holding the history has %1 free, under the %2 it leaves "
                                                  "free: it keeps %3 of output until there is room again (the oldest "
                                                  "goes first); free space on that disk, or prune with 'airlockctl "
                                                  "prune --keep SIZE'")
                                       .arg(units::formatBytes(uint64_t(floor->freeBytes)),
                                           units::formatBytes(uint64_t(floor->keepFreeBytes)),
                                           units::formatBytes(uint64_t(floor->keptBytes))));
                if (!notices.isEmpty())
                    info.insert(QStringLiteral("notices"), QJsonArray::fromStringList(notices));
                c.reply(info);
            }},
        // Every event, or one sandbox's (the only kind a token scoped to sandboxes may ask for).
        {method::EventsSubscribe, {A::Agent::Allowed, nullptr, A::Token::Open, A::Scope::Param}, NeedsNothing,
            [this](Call &c) { subscribe(c); }},
    };
}

void RpcServer::hello(Call &c)
{
    Session &s = c.session;
    const int version = c.params.value(QStringLiteral("protocol")).toInt(-1);
    if (version != kProtocolVersion) {
        s.conn->closeWithError(makeError(ErrorCode::VersionMismatch,
            QStringLiteral("client speaks protocol %1, this daemon speaks %2; use matching Airlock versions")
                .arg(version)
                .arg(kProtocolVersion)));
        return;
    }
    // A run groups one agent session's work; without a name, this connection is its own run.
    // Names are shown in every listing: plain characters only, never terminal controls.
    static const QRegularExpression runName(
        QRegularExpression::anchoredPattern(QStringLiteral("[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}")));
    const QString run = c.params.value(QStringLiteral("run")).toString();
    if (!run.isEmpty() && !runName.match(run).hasMatch()) {
        s.conn->closeWithError(invalid(QStringLiteral("run names are 1 to 200 letters, digits and . _ : @ / + - "
                                                      "(starting with a letter or digit)")));
        return;
    }
    const QString agent = c.params.value(QStringLiteral("agent")).toString();
    if (!agent.isEmpty() && !runName.match(agent).hasMatch()) {
        s.conn->closeWithError(invalid(QStringLiteral("agent names are 1 to 200 letters, digits and . _ : @ / + - "
                                                      "(starting with a letter or digit)")));
        return;
    }
    s.agent = agent;
    s.greeted = true;
    s.client = c.params.value(QStringLiteral("client")).toString().left(200);
    if (s.client.isEmpty())
        s.client = QStringLiteral("client"); // who made a change or a decision, in the history
    if (s.grant) // a remote client names itself; the token says who it is
        s.client = QStringLiteral("%1 (token %2 from %3)").arg(s.client, s.grant->tokenName, s.peer);
    s.run = run.isEmpty() ? connectionRunName(s.client) : run;
    c.reply(QJsonObject{{QStringLiteral("protocol"), kProtocolVersion}, {QStringLiteral("daemon"), airlock::version()},
        {QStringLiteral("pid"), double(::getpid())}});
}

void RpcServer::subscribe(Call &c)
{
    Session &s = c.session;
    if (!c.params.contains(QStringLiteral("sandbox"))) {
        s.allEvents = true;
        return c.reply(QJsonObject{});
    }
    auto ref = stringParam(c.params, "sandbox");
    if (!ref)
        return c.reply(ref.error());
    auto sandbox = m_engine.find(*ref);
    if (!sandbox)
        return c.reply(sandbox.error());
    s.sandboxes.insert((*sandbox)->id());
    // What came before lastSeq is stored by the time the client reads it (events the history gate
    // still holds included), and the rest comes to it.
    if (m_history)
        (void)m_history->flush();
    c.reply(QJsonObject{
        {QStringLiteral("sandbox"), (*sandbox)->id()}, {QStringLiteral("lastSeq"), double((*sandbox)->lastSeq())}});
}

bool RpcServer::wants(const Session &s, const Event &e) const
{
    if (!m_access->covers(s, e.sandbox))
        return false;
    if (s.allEvents || s.sandboxes.contains(e.sandbox))
        return true;
    if (e.kind == event::SandboxDeleted || e.kind == event::SandboxFailed) {
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
                                     : encodeJson(makeNotification(method::EventNotification, eventToJson(event)));
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
        if (event.kind == event::ExecExited)
            s->execs.remove({event.sandbox, event.exec});
    }
    if (event.kind == event::SandboxDeleted || event.kind == event::SandboxFailed) {
        m_approvals->cancelIf([&](const ApprovalRequest &r) { return r.sandbox == event.sandbox; },
            QStringLiteral("the sandbox was deleted"));
        for (Session *s : std::as_const(m_sessions)) {
            if (event.kind == event::SandboxDeleted)
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

} // namespace airlock::rpc
