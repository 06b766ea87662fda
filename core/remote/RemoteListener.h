// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "remote/RefusalLog.h"
#include "remote/TlsIdentity.h"
#include "remote/TokenStore.h"
#include "remote/UpgradeGate.h"

#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QPointer>

#include <functional>

class QLocalSocket;
class QTcpServer;
class QTcpSocket;
class QTimer;
class QWebSocketServer;

namespace airlock::remote {

// airlockd's TCP endpoint (airlockd --listen): TLS 1.3 with the daemon's own certificate, the
// upgrade checked by UpgradeGate before any WebSocket byte, then each accepted WebSocket becomes a
// local socket handed to the RPC server with the token's grant. Plain ws:// exists only on a
// loopback address and only when asked for (tests, and a tunnel's far end).
class RemoteListener final : public QObject {
    Q_OBJECT
public:
    struct Options {
        QHostAddress address;
        quint16 port = 0;
        bool plain = false; // ws://, loopback only
        QStringList allowHosts; // extra names accepted in Host
        QStringList allowOrigins;
    };
    // Called with the daemon's end of each accepted connection and its grant; takes the socket.
    using Accept = std::function<void(QLocalSocket *, const Grant &, const QString &peer)>;

    RemoteListener(Options options, TokenStore &tokens, Accept accept, QObject *parent = nullptr);
    ~RemoteListener() override;

    Status listen(const TlsIdentity *identity); // identity may be null only for plain
    quint16 port() const;
    QString connectionString() const; // wss://HOST:PORT#sha256=HEX (ws://HOST:PORT when plain)

Q_SIGNALS:
    // A refused upgrade (status, reason) from a peer, for the log and the history.
    void refused(const QString &peer, int status, const QString &reason);

private:
    class Server;
    void onConnection(QTcpSocket *socket);
    void onReadable(QTcpSocket *socket);
    void record(const QTcpSocket *socket, int status, const QString &reason); // status 0: before HTTP
    void respond(QTcpSocket *socket, int status, const QByteArray &reason, qint64 retryAfterMs = 0);
    void onUpgraded();

    Options m_options;
    TokenStore &m_tokens;
    Accept m_accept;
    Server *m_server = nullptr;
    QWebSocketServer *m_ws = nullptr;
    GateConfig m_gate;
    AuthLimiter m_limiter;
    RefusalLog m_refusals;
    QTimer *m_summaries = nullptr; // says the counts of a flood that stopped
    QString m_fingerprint;
    struct Admitted {
        Grant grant;
        QPointer<QTcpSocket> socket;
    };
    QHash<QString, Admitted> m_admitted; // "addr|port": between the check and the upgrade
    QList<QPointer<QTcpSocket>> m_pending; // accepted, not yet upgraded or refused; oldest first
};

// "127.0.0.1:7443", "[::1]:7443", "0.0.0.0:7443": an address (not a name) and a port.
Result<std::pair<QHostAddress, quint16>> parseListenAddress(const QString &text);

} // namespace airlock::remote
