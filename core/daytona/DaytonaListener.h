// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daytona/DaytonaStore.h"
#include "daytona/HttpMessage.h"
#include "remote/RemoteListener.h"
#include "remote/TokenStore.h"
#include "remote/UpgradeGate.h"

#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>
#include <variant>

class QLocalSocket;
class QTcpServer;
class QTcpSocket;

namespace airlock {
class DaemonClient;
}

namespace airlock::daytona {

class DaytonaApi;

// airlockd --daytona-api ADDR:PORT: Daytona's REST and toolbox APIs over plain HTTP/1.1 on a
// loopback address. Each request carries an Airlock token as its API key (Authorization: Bearer),
// checked as --listen checks it (failures counted per peer); the key's requests go over one agent
// connection to the daemon named after the token, handed to the RPC server with its grant.
class DaytonaListener final : public QObject {
    Q_OBJECT
public:
    struct Options {
        QHostAddress address;
        quint16 port = 0;
        QStringList allowHosts; // extra names accepted in Host
        // Hosts (normalised patterns) a sandbox may be given when the SDK asks for them in its
        // networkAllowList: the person's choice, as `airlockctl mcp --allow` is.
        QStringList networkHosts;
        qint64 maxBody = 256LL * 1024 * 1024;
    };
    using Accept = remote::RemoteListener::Accept;
    // A connection of the person's, for creating sandboxes with the hosts they allowed.
    using AcceptPerson = std::function<void(QLocalSocket *)>;

    DaytonaListener(Options options, remote::TokenStore &tokens, DaytonaStore &store, Accept accept,
        AcceptPerson acceptPerson, QObject *parent = nullptr);
    ~DaytonaListener() override;

    Status listen();
    quint16 port() const;
    QString apiUrl() const; // http://ADDR:PORT/api

private:
    struct Connection;
    struct KeySession;
    void onConnection(QTcpSocket *socket);
    void onReadable(Connection *connection);
    // Where the request comes from and who sends it, checked on its head: the key's grant, or
    // the answer that refuses it.
    std::variant<remote::Grant, HttpResponse> admit(Connection *connection, const HttpRequest &head);
    void dispatch(Connection *connection, const HttpRequest &request, const remote::Grant &grant);
    void refuse(Connection *connection, const HttpResponse &response); // and close
    void handOver(KeySession *session, Connection *connection, const HttpRequest &request);
    void respond(Connection *connection, const HttpResponse &response);
    Connection *connectionOf(const QPointer<QTcpSocket> &socket) const;
    KeySession *sessionFor(const remote::Grant &grant, const QString &peer);
    bool hostAllowed(const QByteArray &host) const;
    // A connection into the daemon's own RPC server: the server's end goes to `handToServer`
    // (RpcServer::adopt or adoptLocal), ours comes back, for a DaemonClient to connectOver.
    static Result<QLocalSocket *> bridge(const std::function<void(QLocalSocket *)> &handToServer);
    void dropRevoked(); // the sessions of revoked keys end, with what they run

    Options m_options;
    remote::TokenStore &m_tokens;
    DaytonaStore &m_store;
    Accept m_accept;
    AcceptPerson m_acceptPerson;
    DaemonClient *m_person = nullptr; // connected when there are hosts to give
    QTcpServer *m_server = nullptr;
    remote::AuthLimiter m_limiter;
    QHash<QString, KeySession *> m_sessions; // by token id
    QList<Connection *> m_connections;
    qint64 m_handling = 0; // bytes of the bodies being answered
};

} // namespace airlock::daytona
