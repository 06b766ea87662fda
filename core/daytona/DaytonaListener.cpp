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
#include <variant>

namespace airlock::daytona {

namespace {
constexpr int kMaxConnections = 1024;
constexpr int kFirstRequestMs = 10'000; // from connecting to a request's first byte
constexpr int kIdleMs = 60'000; // between the requests of a kept-alive connection
constexpr int kRequestMs = 30'000; // for a request's head, and for each 64 KiB of its body
constexpr qint64 kProgressBytes = 64 * 1024;
constexpr qint64 kReadBuffer = 256 * 1024; // what a busy connection's socket holds before TCP waits
constexpr qint64 kMaxBufferedTotal = 1024LL * 1024 * 1024; // of all requests being read
constexpr int kRevocationCheckMs = 1000;
constexpr qint64 kMaxStreamBacklog = 4LL * 1024 * 1024; // unread bytes of a followed log
constexpr int kStreamStallMs = 30'000; // a follower whose unread bytes do not go down for this long
// A followed log goes in WebSocket messages of at most this size: the SDK spreads each message's
// bytes into a function call's arguments (Stream.js, `buf.push(...chunk)`), which overflows
// Node's stack past some hundred thousand.
constexpr qsizetype kStreamMessage = 32 * 1024;
constexpr int kMaxPerKey = 64; // requests of one key being answered (followed logs included)
constexpr qsizetype kMaxQueued = 256; // requests of one key waiting for its connection to the daemon

auto logger()
{
    return log::get("daytona");
}
} // namespace

struct DaytonaListener::Connection {
    Connection(QTcpSocket *s, qint64 maxBody)
        : socket(s)
        , reader(maxBody)
    {
    }
    QPointer<QTcpSocket> socket;
    HttpRequestReader reader;
    bool busy = false; // a request is being answered; the next waits in the socket
    bool keepAlive = true;
    bool upgraded = false; // a WebSocket now: what the client sends is not read as HTTP
    bool closing = false; // answered for the last time
    std::optional<remote::Grant> grant; // of the request being read, once its head passed
    QString tokenId; // of the request being answered
    DaytonaApi::Cancel cancel;
    QTimer *deadline = nullptr;
    qint64 sinceProgress = 0; // body bytes since the deadline was last moved
    qint64 handling = 0; // the body of the request being answered
    QString peer;
};

struct DaytonaListener::KeySession {
    DaemonClient *client = nullptr;
    DaytonaApi *api = nullptr;
    bool ready = false;
    QList<std::pair<QPointer<QTcpSocket>, HttpRequest>> queued;
};

DaytonaListener::DaytonaListener(Options options, remote::TokenStore &tokens, DaytonaStore &store, Accept accept,
    AcceptPerson acceptPerson, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_tokens(tokens)
    , m_store(store)
    , m_accept(std::move(accept))
    , m_acceptPerson(std::move(acceptPerson))
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
    if (!m_options.networkHosts.isEmpty()) {
        auto ours = bridge(m_acceptPerson);
        if (!ours)
            return ours.error();
        m_person = new DaemonClient(this);
        ConnectOptions options;
        options.clientName = QStringLiteral("daytona-api (hosts the person allowed)");
        m_person->connectOver(*ours, options, [](Status hello) {
            if (!hello)
                logger()->warn("Daytona API: the person's connection failed: {}", hello.error().message.toStdString());
        });
    }
    auto *revocations = new QTimer(this);
    connect(revocations, &QTimer::timeout, this, &DaytonaListener::dropRevoked);
    revocations->start(kRevocationCheckMs);
    connect(m_server, &QTcpServer::newConnection, this, [this] {
        while (QTcpSocket *socket = m_server->nextPendingConnection())
            onConnection(socket);
    });
    return Ok{};
}

Result<QLocalSocket *> DaytonaListener::bridge(const std::function<void(QLocalSocket *)> &handToServer)
{
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return makeError(
            ErrorCode::IoError, QStringLiteral("socketpair: %1").arg(QString::fromLocal8Bit(strerror(errno))));
    auto *ours = new QLocalSocket, *daemons = new QLocalSocket;
    ours->setSocketDescriptor(pair[0]);
    daemons->setSocketDescriptor(pair[1]);
    handToServer(daemons);
    return ours;
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
    auto *c = new Connection(socket, m_options.maxBody);
    c->peer = socket->peerAddress().toString() + QLatin1Char(':') + QString::number(socket->peerPort());
    // A busy connection is not read: its client waits on TCP, not on the daemon's memory.
    socket->setReadBufferSize(kReadBuffer);
    socket->setSocketOption(QAbstractSocket::LowDelayOption, 1); // an answer goes out whole, at once
    c->deadline = new QTimer(socket);
    c->deadline->setSingleShot(true);
    connect(c->deadline, &QTimer::timeout, socket, [socket] { socket->abort(); });
    c->deadline->start(kFirstRequestMs);
    m_connections.append(c);
    connect(socket, &QTcpSocket::readyRead, this, [this, c] { onReadable(c); });
    connect(socket, &QTcpSocket::disconnected, this, [this, c] {
        m_connections.removeAll(c);
        m_handling -= std::exchange(c->handling, 0);
        if (auto cancel = std::exchange(c->cancel, {}))
            cancel(); // its client left: a command it waits for is ended
        if (c->socket)
            c->socket->deleteLater();
        delete c;
    });
}

void DaytonaListener::onReadable(Connection *c)
{
    if (!c->socket || c->closing)
        return;
    if (c->upgraded) {
        c->socket->readAll(); // pings and the close: the server ends the stream itself
        return;
    }
    if (c->busy)
        return; // read when the answer is written
    const bool starting = c->reader.buffered() == 0;
    const QByteArray bytes = c->socket->readAll();
    if (bytes.isEmpty() && starting)
        return; // (a request already in the reader, pipelined behind the last, goes on)
    c->reader.append(bytes);
    // What is being read, and the bodies being answered, together.
    qint64 buffered = m_handling;
    for (const Connection *other : std::as_const(m_connections))
        buffered += other->reader.buffered();
    if (buffered > kMaxBufferedTotal && !c->reader.failed())
        return refuse(c, HttpResponse::error(503, QStringLiteral("too many requests are being read; try again")));
    // A request's head must come whole within its deadline, and its body keep coming: a trickle
    // does not hold the connection.
    if (starting) {
        c->deadline->start(kRequestMs);
        c->sinceProgress = 0;
    } else if (!bytes.isEmpty() && c->grant && (c->sinceProgress += bytes.size()) >= kProgressBytes) {
        c->deadline->start(kRequestMs);
        c->sinceProgress = 0;
    }
    if (!c->grant) {
        const HttpRequest *head = c->reader.head();
        if (c->reader.failed())
            return refuse(c, HttpResponse::error(c->reader.failStatus(), c->reader.failure()));
        if (!head)
            return;
        // Who asks, and from where, before any of the body is taken.
        auto admitted = admit(c, *head);
        if (const auto *refused = std::get_if<HttpResponse>(&admitted))
            return refuse(c, *refused);
        c->grant = std::get<remote::Grant>(admitted);
    }
    std::optional<HttpRequest> request = c->reader.next();
    if (c->reader.failed())
        return refuse(c, HttpResponse::error(c->reader.failStatus(), c->reader.failure()));
    if (!request) {
        if (c->reader.wantsContinue())
            c->socket->write("HTTP/1.1 100 Continue\r\n\r\n");
        return;
    }
    c->deadline->stop(); // answering may wait for a person
    c->busy = true;
    c->keepAlive = request->keepAlive;
    const remote::Grant grant = *std::exchange(c->grant, std::nullopt);
    dispatch(c, *request, grant);
}

void DaytonaListener::refuse(Connection *c, const HttpResponse &response)
{
    c->keepAlive = false; // what follows the head is not read: the connection ends here
    respond(c, response);
}

std::variant<remote::Grant, HttpResponse> DaytonaListener::admit(Connection *c, const HttpRequest &head)
{
    // Socket.IO is how Daytona pushes sandbox states; the SDK polls instead when it is absent.
    if (head.segments.value(0) == QLatin1String("api") && head.segments.value(1) == QLatin1String("socket.io"))
        return HttpResponse::error(404, QStringLiteral("Airlock sends no events over Socket.IO"));
    if (!hostAllowed(head.header("host")))
        return HttpResponse::error(421,
            QStringLiteral("Host '%1' does not name this daemon (airlockd --allow-host NAME accepts another)")
                .arg(QString::fromLatin1(head.header("host").left(100))));
    if (head.headers.contains("origin"))
        return HttpResponse::error(403, QStringLiteral("requests from web pages are refused"));
    // A valid key is never slowed down by others' failures; failures are, per address.
    const QString peerAddress = c->socket->peerAddress().toString();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const QByteArray authorization = head.header("authorization");
    auto grant = authorization.startsWith("Bearer ")
        ? m_tokens.verify(authorization.mid(7).trimmed())
        : Result<remote::Grant>(makeError(ErrorCode::Denied,
            QStringLiteral("no API key: set DAYTONA_API_KEY to a token from 'airlockd token create --name NAME'")));
    if (grant) {
        if (grant->readOnly && head.method != "GET")
            return HttpResponse::error(403, QStringLiteral("token '%1' is read-only").arg(grant->tokenName));
        return *grant;
    }
    if (m_limiter.blocked(peerAddress, now))
        return HttpResponse::error(429,
            QStringLiteral("too many failed attempts from this address; wait %1 s")
                .arg((m_limiter.retryAfterMs(peerAddress, now) + 999) / 1000));
    m_limiter.failed(peerAddress, now);
    return HttpResponse::error(401, grant.error().message);
}

void DaytonaListener::dispatch(Connection *c, const HttpRequest &request, const remote::Grant &grant)
{
    c->tokenId = grant.tokenId;
    qsizetype ofKey = 0;
    for (const Connection *other : std::as_const(m_connections))
        ofKey += other->tokenId == grant.tokenId ? 1 : 0;
    if (ofKey > kMaxPerKey)
        return refuse(c,
            HttpResponse::error(
                429, QStringLiteral("%1 requests of this key are being answered already").arg(kMaxPerKey)));
    c->handling = request.body.size();
    m_handling += c->handling;
    KeySession *session = sessionFor(grant, c->peer);
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
                    // A follower must keep taking what it is sent: its backlog may not stand still.
                    connect(socket, &QTcpSocket::bytesWritten, conn->deadline, [deadline = conn->deadline, socket] {
                        if (socket && socket->bytesToWrite() > 0)
                            deadline->start(kStreamStallMs);
                        else
                            deadline->stop();
                    });
                }
            },
            [this, socket](const QByteArray &bytes) {
                Connection *conn = connectionOf(socket);
                if (!conn || conn->closing)
                    return;
                if (socket->bytesToWrite() > kMaxStreamBacklog) { // a follower that does not read
                    conn->closing = true;
                    // Not from here: the command's output is being given to its followers.
                    QMetaObject::invokeMethod(socket, &QAbstractSocket::abort, Qt::QueuedConnection);
                    return;
                }
                if (!conn->deadline->isActive())
                    conn->deadline->start(kStreamStallMs);
                for (qsizetype at = 0; at < bytes.size(); at += kStreamMessage)
                    socket->write(webSocketFrame(bytes.mid(at, kStreamMessage)));
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
    const remote::Grant granted = grant;
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
    auto ours = bridge([this, &grant, &peer](QLocalSocket *daemons) { m_accept(daemons, grant, peer); });
    if (!ours) {
        QTimer::singleShot(0, this, [fail, why = ours.error()] { fail(why); });
        return s;
    }
    ConnectOptions options;
    options.clientName = QStringLiteral("daytona-api");
    options.run = grant.tokenName;
    options.agent = grant.tokenName;
    connect(s->client, &DaemonClient::disconnected, this, fail);
    s->client->connectOver(*ours, options, [this, s, tokenId, grant = granted, fail](Status hello) {
        if (m_sessions.value(tokenId) != s)
            return;
        if (!hello)
            return fail(hello.error());
        s->api = new DaytonaApi({apiUrl().chopped(4) + QStringLiteral("/toolbox"), m_options.networkHosts, m_person},
            m_store, grant, *s->client, this);
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
    if (!c->socket || c->closing)
        return;
    c->cancel = {};
    c->busy = false;
    c->tokenId.clear();
    m_handling -= std::exchange(c->handling, 0);
    c->socket->write(response.serialize(c->keepAlive));
    if (!c->keepAlive) {
        c->closing = true;
        c->socket->disconnectFromHost();
        return;
    }
    c->deadline->start(kIdleMs);
    // What the client sent meanwhile waits in the socket (or in the reader).
    if (c->socket->bytesAvailable() > 0 || c->reader.buffered() > 0)
        QTimer::singleShot(0, c->socket, [this, socket = c->socket] {
            if (Connection *conn = connectionOf(socket); conn && !conn->busy)
                onReadable(conn);
        });
}

void DaytonaListener::dropRevoked()
{
    const QStringList tokenIds = m_sessions.keys();
    for (const QString &tokenId : tokenIds) {
        if (m_tokens.isLive(tokenId))
            continue;
        KeySession *s = m_sessions.take(tokenId);
        logger()->info("Daytona API: token {} was revoked; its requests and commands end", tokenId.toStdString());
        // Its waiting clients are told, then what they wait for is ended.
        for (Connection *c : std::as_const(m_connections)) {
            if (c->tokenId != tokenId)
                continue;
            auto cancel = std::exchange(c->cancel, {});
            if (c->upgraded) { // a WebSocket: closed saying why (1008, policy violation)
                c->closing = true;
                c->socket->write(webSocketFrame(QByteArray("\x03\xf0", 2) + "the API key was revoked", 0x8));
                c->socket->disconnectFromHost();
            } else {
                refuse(c, HttpResponse::error(401, QStringLiteral("the API key was revoked")));
            }
            if (cancel)
                cancel();
        }
        for (auto &[socket, request] : s->queued)
            if (Connection *c = connectionOf(socket))
                refuse(c, HttpResponse::error(401, QStringLiteral("the API key was revoked")));
        if (s->api)
            s->api->shutdown();
        // The signals just sent reach the daemon before the connection ends (and a lease ends
        // whatever they did not).
        QTimer::singleShot(500, s->client, [client = s->client, api = s->api] {
            delete api;
            client->close();
            client->deleteLater();
        });
        delete s;
    }
}

} // namespace airlock::daytona
