// SPDX-License-Identifier: Apache-2.0
#include "remote/RemoteListener.h"

#include "log/Log.h"
#include "model/DisplayText.h"
#include "remote/WebSocketPipe.h"

#include <QDateTime>
#include <QLocalSocket>
#include <QNetworkInterface>
#include <QPointer>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTcpServer>
#include <QTimer>
#include <QWebSocket>
#include <QWebSocketServer>

#include <sys/socket.h>
#include <unistd.h>

namespace airlock::remote {

namespace {
constexpr int kHandshakeMs = 5'000; // from accept to the upgrade request, TLS included
constexpr int kMaxUnauthenticated = 64; // connections between accept and upgrade
constexpr int kMaxPendingPerAddress = 8;

auto logger()
{
    static auto l = log::get("daemon.remote");
    return l;
}

QString peerOf(const QTcpSocket *s)
{
    return s->peerAddress().toString();
}

// Where a connection counts as coming from, for the caps and the limiter.
QString blockOf(const QTcpSocket *s)
{
    return addressBlock(s->peerAddress());
}

QString key(const QHostAddress &address, quint16 port)
{
    return address.toString() + QLatin1Char('|') + QString::number(port);
}

QString hostForm(const QHostAddress &address)
{
    return address.protocol() == QAbstractSocket::IPv6Protocol
        ? QLatin1Char('[') + address.toString() + QLatin1Char(']')
        : address.toString();
}
} // namespace

// Accepts TCP and wraps each connection in TLS (or not, for plain ws:// on loopback).
class RemoteListener::Server final : public QTcpServer {
public:
    Server(RemoteListener *owner, std::optional<QSslConfiguration> tls)
        : QTcpServer(owner)
        , m_owner(owner)
        , m_tls(std::move(tls))
    {
    }

protected:
    void incomingConnection(qintptr fd) override
    {
        QTcpSocket *socket = m_tls ? new QSslSocket(this) : new QTcpSocket(this);
        if (!socket->setSocketDescriptor(fd)) {
            ::close(int(fd));
            delete socket;
            return;
        }
        // Requests and replies are small and answer each other: Nagle's delay would cost each
        // round trip the peer's delayed ACK (40 ms on Linux).
        socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        if (auto *ssl = qobject_cast<QSslSocket *>(socket)) {
            ssl->setSslConfiguration(*m_tls);
            // A client that cannot speak TLS 1.3 (or is not TLS at all) is refused in the handshake.
            connect(
                ssl, &QSslSocket::errorOccurred, m_owner, [owner = m_owner, ssl](QAbstractSocket::SocketError error) {
                    if (error == QAbstractSocket::SslHandshakeFailedError)
                        owner->record(ssl, 0, QStringLiteral("TLS handshake failed: %1").arg(ssl->errorString()));
                });
            ssl->startServerEncryption();
        }
        m_owner->onConnection(socket);
    }

private:
    RemoteListener *m_owner;
    std::optional<QSslConfiguration> m_tls;
};

Result<std::pair<QHostAddress, quint16>> parseListenAddress(const QString &text)
{
    const qsizetype colon = text.lastIndexOf(QLatin1Char(':'));
    QString host = text.left(colon);
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    bool ok = false;
    const uint port = text.mid(colon + 1).toUInt(&ok);
    const QHostAddress address(host);
    if (colon <= 0 || !ok || port == 0 || port > 65535 || address.isNull())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "'%1': expected ADDRESS:PORT with an IP address, like 127.0.0.1:7443, [::1]:7443 or 0.0.0.0:7443")
                .arg(text.left(100)));
    return std::pair{address, quint16(port)};
}

RemoteListener::RemoteListener(Options options, TokenStore &tokens, Accept accept, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_tokens(tokens)
    , m_accept(std::move(accept))
{
}

RemoteListener::~RemoteListener() = default;

Status RemoteListener::listen(const TlsIdentity *identity)
{
    if (m_options.plain && !m_options.address.isLoopback())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "plain ws:// only on a loopback address (%1 is not one); remove the plain flag to serve wss://")
                .arg(m_options.address.toString()));
    std::optional<QSslConfiguration> tls;
    if (!m_options.plain) {
        if (!identity)
            return makeError(ErrorCode::Internal, QStringLiteral("wss:// needs the daemon's TLS identity"));
        QSslConfiguration c = QSslConfiguration::defaultConfiguration();
        c.setProtocol(QSsl::TlsV1_3); // exactly 1.3: a 1.2 client is refused in the handshake
        c.setLocalCertificate(identity->certificate);
        c.setPrivateKey(identity->key);
        c.setPeerVerifyMode(QSslSocket::VerifyNone); // clients prove themselves with a token
        tls = c;
        m_fingerprint = identity->fingerprint();
    }
    m_server = new Server(this, tls);
    m_server->setMaxPendingConnections(kMaxUnauthenticated);
    if (!m_server->listen(m_options.address, m_options.port))
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot listen on %1:%2: %3")
                .arg(hostForm(m_options.address))
                .arg(m_options.port)
                .arg(m_server->errorString()));
    // TLS is ours (above): the WebSocket server sees a decrypted stream either way.
    m_ws = new QWebSocketServer(QStringLiteral("airlockd"), QWebSocketServer::NonSecureMode, this);
    m_ws->setHandshakeTimeout(kHandshakeMs);
    connect(m_ws, &QWebSocketServer::newConnection, this, &RemoteListener::onUpgraded);
    m_summaries = new QTimer(this);
    m_summaries->start(int(RefusalLog::kWindowMs));
    connect(m_summaries, &QTimer::timeout, this, [this] {
        for (const QString &line : m_refusals.flush(QDateTime::currentMSecsSinceEpoch()))
            logger()->warn("{}", line.toStdString());
    });

    // The names a client may put in Host: the address listened on (every local address for a
    // wildcard), localhost on loopback, and whatever --allow-host added.
    QList<QHostAddress> addresses{m_options.address};
    if (m_options.address == QHostAddress::AnyIPv4 || m_options.address == QHostAddress::AnyIPv6
        || m_options.address == QHostAddress::Any)
        addresses = QNetworkInterface::allAddresses();
    QStringList names;
    for (const QHostAddress &a : std::as_const(addresses))
        names << hostForm(QHostAddress(a.toString().section(QLatin1Char('%'), 0, 0)));
    if (m_options.address.isLoopback())
        names << QStringLiteral("localhost");
    for (const QString &h : std::as_const(m_options.allowHosts))
        names << h.toLower();
    for (const QString &n : std::as_const(names))
        m_gate.hosts << n << n + QLatin1Char(':') + QString::number(port());
    m_gate.origins = m_options.allowOrigins;

    // A revoked token's connections end within a second.
    auto *revocation = new QTimer(this);
    connect(revocation, &QTimer::timeout, this, [this] {
        for (WebSocketPipe *pipe : findChildren<WebSocketPipe *>(Qt::FindDirectChildrenOnly))
            if (!m_tokens.isLive(pipe->property("tokenId").toString()))
                pipe->close(QStringLiteral("token revoked"));
    });
    revocation->start(1000);
    logger()->info("listening for remote clients on {}", connectionString().toStdString());
    return Ok{};
}

quint16 RemoteListener::port() const
{
    return m_server ? m_server->serverPort() : 0;
}

QString RemoteListener::connectionString() const
{
    const QString hostPort = hostForm(m_options.address) + QLatin1Char(':') + QString::number(port());
    return m_options.plain ? QStringLiteral("ws://") + hostPort
                           : QStringLiteral("wss://%1#sha256=%2").arg(hostPort, m_fingerprint);
}

void RemoteListener::onConnection(QTcpSocket *socket)
{
    // Before authentication a connection costs the daemon memory and a slot: few per address,
    // a short deadline, and when every slot is taken the oldest waiting one goes (a legitimate
    // client needs milliseconds; a squatter has to keep reconnecting).
    const QString block = blockOf(socket);
    const auto fromPeer = std::count_if(
        m_pending.cbegin(), m_pending.cend(), [&](const QPointer<QTcpSocket> &s) { return s && blockOf(s) == block; });
    if (fromPeer >= kMaxPendingPerAddress) {
        socket->abort();
        socket->deleteLater();
        return;
    }
    if (m_pending.size() >= kMaxUnauthenticated)
        if (QPointer<QTcpSocket> oldest = m_pending.takeFirst())
            oldest->abort();
    m_pending.append(socket);
    connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    connect(socket, &QObject::destroyed, this, [this] { m_pending.removeAll(QPointer<QTcpSocket>()); });
    connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadable(socket); });
    QTimer::singleShot(kHandshakeMs, socket, [this, socket] {
        if (m_pending.contains(socket))
            socket->abort();
    });
}

void RemoteListener::onReadable(QTcpSocket *socket)
{
    if (!m_pending.contains(socket))
        return;
    const QByteArray head = socket->peek(kMaxRequestHead);
    const qsizetype end = head.indexOf("\r\n\r\n");
    if (end < 0) {
        if (head.size() >= kMaxRequestHead)
            respond(socket, 431, "the request head is larger than 8 KiB");
        return;
    }
    const QString peer = blockOf(socket);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (m_limiter.blocked(peer, now))
        return respond(
            socket, 429, "too many failed attempts from this address; wait", m_limiter.retryAfterMs(peer, now));
    auto request = parseRequestHead(head.left(end + 4));
    GateDecision decision = request ? checkUpgrade(*request, m_gate, m_tokens)
                                    : GateDecision{std::nullopt, 400, request.error().message.toUtf8()};
    if (!decision.grant) {
        if (decision.status == 401)
            m_limiter.failed(peer, now);
        return respond(socket, decision.status, decision.reason);
    }
    // Admitted: the WebSocket server reads the same request (peeked, still unread) and upgrades.
    disconnect(socket, &QTcpSocket::readyRead, this, nullptr);
    m_pending.removeAll(socket);
    const QString admittedKey = key(socket->peerAddress(), socket->peerPort());
    m_admitted.insert(admittedKey, {*decision.grant, socket});
    // Until the WebSocket takes it: a handshake Qt refuses must not leave the grant behind.
    connect(socket, &QObject::destroyed, this, [this, admittedKey] { m_admitted.remove(admittedKey); });
    disconnect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater); // the WebSocket server owns it now
    // What the peer sends waits in the kernel, not in our memory, while the daemon is busy: the
    // sender slows down instead (a little over one message).
    socket->setReadBufferSize(2 * WebSocketPipe::kMaxMessage);
    m_ws->handleConnection(socket);
}

void RemoteListener::record(const QTcpSocket *socket, int status, const QString &reason)
{
    const QString peer = peerOf(socket);
    for (const QString &line :
        m_refusals.refused(peer, blockOf(socket), status, reason, QDateTime::currentMSecsSinceEpoch()))
        logger()->warn("{}", line.toStdString());
    Q_EMIT refused(peer, status, reason);
}

void RemoteListener::respond(QTcpSocket *socket, int status, const QByteArray &reason, qint64 retryAfterMs)
{
    record(socket, status, QString::fromUtf8(reason));
    QByteArray phrase = reason;
    phrase.replace('\r', ' ').replace('\n', ' ');
    QByteArray response = "HTTP/1.1 " + QByteArray::number(status) + ' ' + phrase
        + "\r\nConnection: close\r\nContent-Type: text/plain\r\n";
    if (retryAfterMs > 0)
        response += "Retry-After: " + QByteArray::number((retryAfterMs + 999) / 1000) + "\r\n";
    response += "Content-Length: " + QByteArray::number(phrase.size() + 1) + "\r\n\r\n" + phrase + '\n';
    disconnect(socket, &QTcpSocket::readyRead, this, nullptr);
    m_pending.removeAll(socket);
    socket->write(response);
    socket->disconnectFromHost(); // after what is written; the upgrade never happens
}

void RemoteListener::onUpgraded()
{
    while (QWebSocket *ws = m_ws->nextPendingConnection()) {
        const Admitted admitted = m_admitted.take(key(ws->peerAddress(), ws->peerPort()));
        const Grant &grant = admitted.grant;
        int pair[2];
        if (grant.tokenId.isEmpty() || !admitted.socket
            || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
            ws->close(QWebSocketProtocol::CloseCodeAbnormalDisconnection, QStringLiteral("internal error"));
            ws->deleteLater();
            continue;
        }
        auto *ours = new QLocalSocket, *daemons = new QLocalSocket;
        ours->setSocketDescriptor(pair[0]);
        daemons->setSocketDescriptor(pair[1]);
        const QString peer = ws->peerAddress().toString() + QLatin1Char(':') + QString::number(ws->peerPort());
        auto *pipe = new WebSocketPipe(ws, ours, admitted.socket, this);
        pipe->setProperty("tokenId", grant.tokenId);
        connect(pipe, &WebSocketPipe::closed, pipe, [pipe, peer](const QString &why) {
            logger()->info("remote client {} left: {}", peer.toStdString(), why.toStdString());
            pipe->deleteLater();
        });
        logger()->info("remote client {} with token '{}' ({})", peer.toStdString(), grant.tokenName.toStdString(),
            grant.describe().toStdString());
        m_accept(daemons, grant, peer);
    }
}

} // namespace airlock::remote
