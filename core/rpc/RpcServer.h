// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "rpc/MethodTable.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>

#include <functional>
#include <memory>
#include <vector>

class QLocalServer;
class QLocalSocket;

namespace airlock::remote {
struct Grant;
}

namespace airlock {
class ApprovalBroker;
class Engine;
class HistoryStore;
} // namespace airlock

namespace airlock::rpc {

class AccessGate;
class Connection;
class ExecMethods;
class FileTransfers;
struct Session;

// The daemon's RPC endpoint: a unix socket (0600 in a 0700 directory, one daemon per socket),
// the version handshake, dispatch through one table of methods (each declared once, with who
// may call it and what it needs: rpc/MethodTable.h) and event fan-out to subscribers.
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
    // A connection of the daemon's own that acts for the person who runs it (the Daytona API
    // creating a sandbox with the hosts the person allowed): as a local client. Takes the socket.
    void adoptLocal(QLocalSocket *socket);
    int sessionCount() const { return int(m_sessions.size()); }
    // A connection that has not said hello this long after it opened is closed (a client that
    // connects and says nothing must not hold a session, and its memory, for ever).
    static constexpr int kHelloTimeoutMs = 10000;
    void setHelloTimeout(int ms) { m_helloTimeoutMs = ms; }
    // An event of the daemon's stream (the engine's, as the history lets it through) to every
    // session that wants it.
    void onEvent(const Event &event);
    // Every method this daemon answers, as declared (for the protocol document's check).
    QList<Method> methods() const { return m_methods.values(); }

private:
    void onNewConnection();
    Session *addSession(QLocalSocket *socket);
    void onMessage(Session &session, const QJsonObject &message);
    // The checks every request passes before its handler, in order: who may call the method,
    // the sandbox and execution it names, a history that can record it.
    void dispatch(
        const Method &method, Session &session, QJsonObject params, const Reply &reply, const Progress &progress);
    void releaseHolds(Session &session);
    Session *sessionOf(const Connection *conn) const;
    bool wants(const Session &session, const Event &event) const;
    // hello, daemon.info, events.subscribe: the connection itself.
    QList<Method> connectionMethods();
    void hello(Call &call);
    void subscribe(Call &call);

    Engine &m_engine;
    HistoryStore *m_history;
    ApprovalBroker *m_approvals; // shared with the engine
    std::unique_ptr<AccessGate> m_access;
    std::vector<std::unique_ptr<MethodGroup>> m_groups;
    ExecMethods *m_execs; // in m_groups
    FileTransfers *m_files; // in m_groups
    QLocalServer *m_server = nullptr;
    QString m_socketPath;
    QStringList m_notices;
    bool m_activated = false; // systemd passed the socket (rpc/SocketActivation.h)
    int m_helloTimeoutMs = kHelloTimeoutMs;
    QHash<QString, Method> m_methods;
    QList<Session *> m_sessions;
};

} // namespace airlock::rpc
