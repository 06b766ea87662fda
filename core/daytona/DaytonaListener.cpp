// SPDX-License-Identifier: Apache-2.0
#include "daytona/DaytonaListener.h"

#include "client/DaemonClient.h"
#include "daytona/DaytonaApi.h"
#include "daytona/HttpMessage.h"
#include "log/Log.h"

#include <QDateTime>
#include <QLocalSocket>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

#include <sys/socket.h>

namespace airlock::daytona {

namespace {
constexpr int kMaxConnections = 256;
constexpr int kIdleMs = 120'000; // a request begun and not finished within this is dropped
constexpr qint64 kMaxStreamBacklog = 64LL * 1024 * 1024; // unread bytes of a followed log
constexpr qsizetype kMaxQueued = 256; // requests of one key waiting for its connection to the daemon

auto logger()
{
    return log::get("daytona");
}
} // namespace

struct DaytonaListener::Connection {
    QPointer<QTcpSocket> socket;
    HttpRequestReader reader;
    bool busy = false; // a request is being answered; the next waits in the reader
    bool keepAlive = true;
    bool upgraded = false; // a WebSocket now: what the client sends is not read as HTTP
    DaytonaApi::Cancel cancel;
    QTimer *idle = nullptr;
    QString peer;
};

struct DaytonaListener::KeySession {
    DaemonClient *client = nullptr;
    DaytonaApi *api = nullptr;
    bool ready = false;
    QList<std::pair<QPointer<QTcpSocket>, HttpRequest>> queued;
};

DaytonaListener::DaytonaListener(
    Options options, remote::TokenStore &tokens, DaytonaStore &store, Accept accept, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_tokens(tokens)
    , m_store(store)
    , m_accept(std::move(accept))
{
}

DaytonaListener::~DaytonaListener()
{
    for (KeySession *s : std::as_const(m_sessions)) {
        delete s->api;
        delete s->client;
        delete s;
    }
    for (Connection *c : std::as_const(m_connections)) {
        if (c->socket)
            c->socket->abort();
        delete c;
    }
}

Status DaytonaListener::listen()
{
    if (!m_options.address.isLoopback())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("--daytona-api serves plain HTTP, so only on a loopback address (127.0.0.1:PORT); reach it "
                           "from elsewhere through a tunnel (ssh -L)"));
    m_server = new QTcpServer(this);
    m_server->setMaxPendingConnections(64);
    if (!m_server->listen(m_options.address, m_options.port))
        return makeError(ErrorCode::IoError,
            QStringLiteral("--daytona-api cannot listen on %1:%2: %3")
                .arg(m_options.address.toString())
                .arg(m_options.port)
                .arg(m_server->errorString()));
    connect(m_server, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket *socket = m_server->nextPendingConnection())
            onConnection(socket);
    });
    return Ok{};
}

quint16 DaytonaListener::port() const
{
    return m_server ? m_server->serverPort() : 0;
}

QString DaytonaListener::apiUrl() const
{
    const QString host = m_options.address.protocol() == QAbstractSocket::IPv6Protocol
        ? QLatin1Char('[') + m_options.address.toString() + QLatin1Char(']')
        : m_options.address.toString();
    return QStringLiteral("http://%1:%2/api").arg(host).arg(port());
}

bool DaytonaListener::hostAllowed(const QByteArray &host) const
{
    const QString h = QString::fromLatin1(host).toLower();
    const QString p = QString::number(port());
    QStringList names{QStringLiteral("localhost"), m_options.address.toString()};
    if (m_options.address.protocol() == QAbstractSocket::IPv6Protocol)
        names.append(QLatin1Char('[') + m_options.address.toString() + QLatin1Char(']'));
    names += m_options.allowHosts;
    for (const QString &n : std::as_const(names))
        if (h == n.toLower() || h == n.toLower() + QLatin1Char(':') + p)
            return true;
    return false;
}

void DaytonaListener::onConnection(QTcpSocket *socket)
{
    if (m_connections.size() >= kMaxConnections) {
        socket->write(HttpResponse::error(503, QStringLiteral("too many connections")).serialize(false));
        socket->disconnectFromHost();
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        return;
    }
    auto *c = new Connection{socket, HttpRequestReader(m_options.maxBody), false, true, false, {}, nullptr, {}};
    c->peer = socket->peerAddress().toString() + QLatin1Char(':') + QString::number(socket->peerPort());
    c->idle = new QTimer(socket);
    c->idle->setSingleShot(true);
    c->idle->setInterval(kIdleMs);
    connect(c->idle, &QTimer::timeout, socket, [socket] { socket->abort(); });
    m_connections.append(c);
    connect(socket, &QTcpSocket::readyRead, this, [this, c] { onReadable(c); });
    connect(socket, &QTcpSocket::disconnected, this, [this, c] {
        m_connections.removeAll(c);
        if (auto cancel = std::exchange(c->cancel, {}))
            cancel(); // its client left: a command it waits for is ended
        if (c->socket)
            c->socket->deleteLater();
        delete c;
    });
}

void DaytonaListener::onReadable(Connection *c)
{
    if (!c->socket)
        return;
    if (c->upgraded) {
        c->socket->readAll(); // pings and the close: the server ends the stream itself
        return;
    }
    c->reader.append(c->socket->readAll());
    if (c->busy)
        return; // taken when the answer is written
    if (c->reader.wantsContinue())
        c->socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    std::optional<HttpRequest> request = c->reader.next();
    if (c->reader.failed()) {
        c->keepAlive = false;
        return respond(c, HttpResponse::error(c->reader.failStatus(), c->reader.failure()));
    }
    if (!request) {
        if (c->reader.buffered() > 0)
            c->idle->start();
        return;
    }
    c->idle->stop();
    c->busy = true;
    c->keepAlive = request->keepAlive;
    dispatch(c, *request);
}

void DaytonaListener::dispatch(Connection *c, const HttpRequest &request)
{
    // Socket.IO is how Daytona pushes sandbox states; the SDK polls instead when it is absent.
    if (request.segments.value(0) == QLatin1String("api") && request.segments.value(1) == QLatin1String("socket.io"))
        return respond(c, HttpResponse::error(404, QStringLiteral("Airlock sends no events over Socket.IO")));
    if (!hostAllowed(request.header("host")))
        return respond(c,
            HttpResponse::error(421,
                QStringLiteral("Host '%1' does not name this daemon (airlockd --daytona-allow-host NAME "
                               "accepts another)")
                    .arg(QString::fromLatin1(request.header("host").left(100)))));
    if (request.headers.contains("origin"))
        return respond(c, HttpResponse::error(403, QStringLiteral("requests from web pages are refused")));
    const QString peerAddress = c->socket->peerAddress().toString();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (m_limiter.blocked(peerAddress, now))
        return respond(c,
            HttpResponse::error(429,
                QStringLiteral("too many failed attempts from this address; wait %1 s")
                    .arg((m_limiter.retryAfterMs(peerAddress, now) + 999) / 1000)));
    const QByteArray authorization = request.header("authorization");
    if (!authorization.startsWith("Bearer ")) {
        m_limiter.failed(peerAddress, now);
        return respond(c,
            HttpResponse::error(401,
                QStringLiteral("no API key: set DAYTONA_API_KEY to a token from "
                               "'airlockd token create --name NAME'")));
    }
    auto grant = m_tokens.verify(authorization.mid(7).trimmed());
    if (!grant) {
        m_limiter.failed(peerAddress, now);
        return respond(c, HttpResponse::error(401, grant.error().message));
    }
    if (grant->readOnly && request.method != "GET")
        return respond(c, HttpResponse::error(403, QStringLiteral("token '%1' is read-only").arg(grant->tokenName)));
    KeySession *session = sessionFor(*grant, c->peer);
    if (!session->ready) {
        if (session->queued.size() >= kMaxQueued)
            return respond(c, HttpResponse::error(429, QStringLiteral("too many requests wait for the daemon")));
        session->queued.append({c->socket, request});
        return;
    }
    handOver(session, c, request);
}

void DaytonaListener::handOver(KeySession *session, Connection *c, const HttpRequest &request)
{
    std::optional<HttpStream> stream;
    if (request.header("upgrade").toLower() == "websocket") {
        const QByteArray key = request.header("sec-websocket-key");
        if (key.isEmpty() || request.header("sec-websocket-version") != "13") {
            c->keepAlive = false;
            return respond(c,
                HttpResponse::error(400,
                    QStringLiteral("a WebSocket upgrade needs Sec-WebSocket-Key "
                                   "and Sec-WebSocket-Version: 13")));
        }
        c->keepAlive = false; // an error instead of the upgrade ends the connection
        QPointer<QTcpSocket> socket = c->socket;
        stream = HttpStream{
            [this, socket, key] {
                if (Connection *conn = connectionOf(socket)) {
                    conn->upgraded = true;
                    socket->write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                  "Sec-WebSocket-Accept: "
                        + webSocketAccept(key) + "\r\n\r\n");
                }
            },
            [socket](const QByteArray &bytes) {
                if (!socket)
                    return;
                if (socket->bytesToWrite() > kMaxStreamBacklog) // a follower that does not read
                    return socket->abort();
                socket->write(webSocketFrame(bytes));
            },
            [socket] {
                if (!socket)
                    return;
                socket->write(webSocketFrame(QByteArray("\x03\xe8", 2), 0x8)); // 1000: normal closure
                socket->disconnectFromHost();
            }};
    }
    c->cancel = session->api->handle(
        request,
        [this, socket = c->socket](const HttpResponse &response) {
            if (Connection *conn = connectionOf(socket))
                respond(conn, response);
        },
        stream);
}

DaytonaListener::Connection *DaytonaListener::connectionOf(const QPointer<QTcpSocket> &socket) const
{
    if (socket)
        for (Connection *c : m_connections)
            if (c->socket == socket)
                return c;
    return nullptr;
}

DaytonaListener::KeySession *DaytonaListener::sessionFor(const remote::Grant &grant, const QString &peer)
{
    if (KeySession *s = m_sessions.value(grant.tokenId))
        return s;
    auto *s = new KeySession;
    m_sessions.insert(grant.tokenId, s);
    s->client = new DaemonClient;
    const QString tokenId = grant.tokenId;
    const auto fail = [this, tokenId](const Error &why) {
        KeySession *gone = m_sessions.take(tokenId);
        if (!gone)
            return;
        logger()->warn(
            "Daytona API: the connection of token {} ended: {}", tokenId.toStdString(), why.message.toStdString());
        for (auto &[socket, request] : gone->queued)
            if (Connection *c = connectionOf(socket))
                respond(c, errorResponse(why));
        gone->client->deleteLater();
        if (gone->api)
            gone->api->deleteLater();
        delete gone;
    };
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        QTimer::singleShot(0, this, [fail] {
            fail(makeError(
                ErrorCode::IoError, QStringLiteral("socketpair: %1").arg(QString::fromLocal8Bit(strerror(errno)))));
        });
        return s;
    }
    auto *ours = new QLocalSocket, *daemons = new QLocalSocket;
    ours->setSocketDescriptor(pair[0]);
    daemons->setSocketDescriptor(pair[1]);
    m_accept(daemons, grant, peer);
    ConnectOptions options;
    options.clientName = QStringLiteral("daytona-api");
    options.run = grant.tokenName;
    options.agent = grant.tokenName;
    connect(s->client, &DaemonClient::disconnected, this, fail);
    s->client->connectOver(ours, options, [this, s, tokenId, fail](Status hello) {
        if (m_sessions.value(tokenId) != s)
            return;
        if (!hello)
            return fail(hello.error());
        s->api = new DaytonaApi({apiUrl().chopped(4) + QStringLiteral("/toolbox")}, m_store, tokenId, *s->client, this);
        s->ready = true;
        const auto queued = std::exchange(s->queued, {});
        for (const auto &[socket, request] : queued)
            if (Connection *c = connectionOf(socket))
                handOver(s, c, request);
    });
    logger()->info("Daytona API: token '{}' connected from {}", grant.tokenName.toStdString(), peer.toStdString());
    return s;
}

void DaytonaListener::respond(Connection *c, const HttpResponse &response)
{
    if (!c->socket)
        return;
    c->cancel = {};
    c->busy = false;
    c->socket->write(response.serialize(c->keepAlive));
    if (!c->keepAlive) {
        c->socket->disconnectFromHost();
        return;
    }
    // A request that came while this one was answered.
    if (c->reader.buffered() > 0)
        QTimer::singleShot(0, c->socket, [this, socket = c->socket] {
            if (Connection *conn = connectionOf(socket); conn && !conn->busy)
                onReadable(conn);
        });
}

} // namespace airlock::daytona
