// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "remote/TokenStore.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>

#include <functional>

class QLocalServer;
class QLocalSocket;

namespace airlock {
class ApprovalBroker;
struct ApprovalRequest;
struct ExecRequest;
class Engine;
class HistoryStore;
class Sandbox;
} // namespace airlock

namespace airlock::rpc {

class Connection;
class HistoryMethods;
class FileTransfers;

// The daemon's RPC endpoint: a unix socket (0600 in a 0700 directory, one daemon per socket),
// the version handshake, method dispatch into the Engine and event fan-out to subscribers.
class RpcServer final : public QObject {
    Q_OBJECT
public:
    // Something a person should know about this daemon (a damaged history set aside): in daemon.info.
    void addNotice(const QString &notice) { m_notices.append(notice); }
    // history may be null (then the history.* methods answer that it is unavailable).
    RpcServer(Engine &engine, HistoryStore *history, ApprovalBroker &approvals, QObject *parent = nullptr);
    ~RpcServer() override;

    // Removes a stale socket and listens. The caller must hold the InstanceLock for socketPath.
    Status listen(const QString &socketPath);
    QString socketPath() const { return m_socketPath; }
    // A connection from another machine (remote::RemoteListener): limited to what its token
    // grants. Takes the socket.
    void adopt(QLocalSocket *socket, const remote::Grant &grant, const QString &peer);
    int sessionCount() const { return int(m_sessions.size()); }
    // A connection that has not said hello this long after it opened is closed (a client that
    // connects and says nothing must not hold a session, and its memory, for ever).
    static constexpr int kHelloTimeoutMs = 10000;
    void setHelloTimeout(int ms) { m_helloTimeoutMs = ms; }
    // An event of the daemon's stream (the engine's, as the history lets it through) to every
    // session that wants it.
    void onEvent(const Event &event);

private:
    struct Session;
    using Reply = std::function<void(Result<QJsonObject>)>;
    using Handler = std::function<void(Session &, const QJsonObject &, const Reply &)>;

    void onNewConnection();
    Session *addSession(QLocalSocket *socket);
    // What a remote session's token allows (RpcServerGrants.cpp); always Ok for local sessions.
    // A sandbox named in params is replaced by its id: the method acts on the sandbox checked.
    Status permitted(const Session &session, const QString &method, QJsonObject &params) const;
    bool covers(const Session &session, const QString &sandboxId) const;
    bool reaches(const remote::Grant &grant, const QString &sandboxId) const; // a running sandbox, by id
    Reply filtered(const Session &session, const QString &method, Reply reply) const;
    void onMessage(Session &session, const QJsonObject &message);
    void releaseHolds(Session &session);
    // Executions started with a lease are killed (and that recorded) once their lease runs out
    // after the session that started them has gone.
    void expireLeasesLater(const Session &session);
    void registerHandlers();
    void registerSettingsHandlers(); // policies and secrets (RpcServerSettings.cpp)
    bool wants(const Session &session, const Event &event) const;
    // New sandboxes and executions are refused while their history cannot be written.
    Status historyWritable() const;
    // Starts an execution for a connection (after any approval), replying with its id.
    void startExecution(
        QPointer<Connection> conn, const QString &sandbox, const ExecRequest &request, bool attach, const Reply &reply);
    Session *sessionOf(const Connection *conn) const;
    // An agent's command that asks: a person decides, on what it runs bound by content.
    void askToRun(Session &session, Sandbox *sandbox, const ExecRequest &exec, const ApprovalRequest &request,
        bool attach, const Reply &reply, int round);
    // Agents may only touch the executions they started (stdin, signals, resize).
    Status ownExecution(const Session &session, const QString &sandboxRef, uint32_t exec) const;

    Engine &m_engine;
    HistoryStore *m_history;
    HistoryMethods *m_historyMethods;
    FileTransfers *m_files;
    ApprovalBroker *m_approvals; // shared with the engine
    QLocalServer *m_server = nullptr;
    QString m_socketPath;
    QStringList m_notices;
    bool m_activated = false; // systemd passed the socket (rpc/SocketActivation.h)
    int m_helloTimeoutMs = kHelloTimeoutMs;
    QHash<QString, Handler> m_handlers;
    QList<Session *> m_sessions;
};

} // namespace airlock::rpc
