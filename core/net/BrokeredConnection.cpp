// SPDX-License-Identifier: Apache-2.0
#include "net/BrokeredConnection.h"

#include "util/UntrustedFd.h"

#include <QDateTime>
#include <QSocketNotifier>
#include <QTimer>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::net {

namespace {
constexpr qsizetype kReadPerEvent = 256 * 1024; // then the other connections get a turn
constexpr qsizetype kMaxPending = 1024 * 1024; // unsent to a side: stop reading the other
constexpr qsizetype kMaxUnhandled = http::kMaxHead + 64 * 1024; // read from the sandbox, not yet handled

QByteArray reasonPhrase(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 421:
        return "Misdirected Request";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Refused";
    }
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}
} // namespace

BrokeredConnection::BrokeredConnection(int client, int upstream, BrokeredRoute route,
    std::shared_ptr<const TlsContexts> tls, QByteArray early, ProxyHandshake handshake, Callbacks callbacks,
    Options options, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_upstream(upstream)
    , m_route(std::move(route))
    , m_tls(std::move(tls))
    , m_early(std::move(early))
    , m_handshake(std::move(handshake))
    , m_callbacks(std::move(callbacks))
    , m_options(options)
    , m_clientReader(new QSocketNotifier(client, QSocketNotifier::Read, this))
    , m_clientWriter(new QSocketNotifier(client, QSocketNotifier::Write, this))
    , m_hostReader(new QSocketNotifier(upstream, QSocketNotifier::Read, this))
    , m_hostWriter(new QSocketNotifier(upstream, QSocketNotifier::Write, this))
    , m_deadline(new QTimer(this))
{
    for (QSocketNotifier *n : {m_clientReader, m_clientWriter, m_hostReader, m_hostWriter}) {
        n->setEnabled(false);
        connect(n, &QSocketNotifier::activated, this, &BrokeredConnection::onEvent);
    }
    m_deadline->setSingleShot(true);
    connect(m_deadline, &QTimer::timeout, this, [this] {
        fail(m_phase == Phase::Verifying ? QStringLiteral("%1 did not complete TLS in time").arg(m_route.host)
                                         : QStringLiteral("no traffic for %1 s").arg(m_options.idleTimeoutMs / 1000));
    });
    m_deadline->start(m_options.handshakeTimeoutMs);
    auto host = m_tls->client(m_route.host);
    if (!host) {
        QMetaObject::invokeMethod(
            this, [this, e = host.error().message] { fail(e); }, Qt::QueuedConnection);
        return;
    }
    m_hostTls.emplace(std::move(*host));
    QMetaObject::invokeMethod(this, &BrokeredConnection::onEvent, Qt::QueuedConnection);
}

BrokeredConnection::~BrokeredConnection()
{
    // Notifiers first: a descriptor closed under a watch the guest's copy keeps open would leave
    // its registration behind.
    for (QSocketNotifier *n : {m_clientReader, m_clientWriter, m_hostReader, m_hostWriter})
        delete n;
    if (m_client >= 0)
        closeUntrusted(m_client);
    if (m_upstream >= 0)
        ::close(m_upstream);
}

// Reads what the socket has (up to a turn's worth) into its TLS end; false on an error.
bool BrokeredConnection::readSocket(int fd, TlsEnd &tls, bool &eof)
{
    char buffer[16 * 1024];
    for (qsizetype total = 0; total < kReadPerEvent && !eof;) {
        // MSG_DONTWAIT, never the descriptor's O_NONBLOCK alone: the guest may have kept the
        // sandbox's socket (the same open file) and made it blocking.
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
            tls.receive(QByteArrayView(buffer, n));
            total += n;
            m_deadline->start(m_phase == Phase::Serving && m_sandboxTls && m_sandboxTls->established()
                    ? m_options.idleTimeoutMs
                    : m_options.handshakeTimeoutMs);
        } else if (n == 0) {
            eof = true;
        } else if (errno == EINTR) {
            continue;
        } else {
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
    }
    return true;
}

bool BrokeredConnection::flushSocket(int fd, QByteArray &pending)
{
    while (!pending.isEmpty()) {
        const ssize_t n = ::send(fd, pending.constData(), size_t(pending.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            pending.remove(0, n);
        else if (errno == EINTR)
            continue;
        else
            return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    return true;
}

void BrokeredConnection::onEvent()
{
    if (m_finished)
        return;
    if (m_phase != Phase::Closing) {
        if (m_hostReader->isEnabled() || m_phase == Phase::Verifying)
            if (!readSocket(m_upstream, *m_hostTls, m_hostEof))
                return fail(QStringLiteral("reading from %1: %2")
                                .arg(m_route.host, QString::fromLocal8Bit(std::strerror(errno))));
        QByteArray plain;
        if (const Status s = m_hostTls->pump(&plain); !s)
            return fail(s.error().message);
        m_fromHost += plain;
        m_hostEof = m_hostEof || m_hostTls->peerClosed();
        if (m_phase == Phase::Verifying) {
            if (m_hostEof)
                return fail(QStringLiteral("%1 closed the connection during TLS").arg(m_route.host));
            if (m_hostTls->established()) {
                auto served = m_tls->server(m_route.leaf);
                if (!served)
                    return fail(served.error().message);
                m_sandboxTls.emplace(std::move(*served));
                m_sandboxTls->receive(m_early);
                m_early.clear();
                m_toClient = m_handshake.success();
                m_phase = Phase::Serving;
                if (m_callbacks.opened)
                    m_callbacks.opened();
            }
        }
    }
    if (m_phase == Phase::Serving) {
        if (m_clientReader->isEnabled() && !readSocket(m_client, *m_sandboxTls, m_clientEof))
            return fail(
                QStringLiteral("reading from the sandbox: %1").arg(QString::fromLocal8Bit(std::strerror(errno))));
        QByteArray plain;
        if (const Status s = m_sandboxTls->pump(&plain); !s)
            return fail(QStringLiteral("the sandbox's side: %1").arg(s.error().message));
        m_fromClient += plain;
        m_clientEof = m_clientEof || m_sandboxTls->peerClosed();
        if (m_sandboxTls->established())
            serve();
        if (m_finished)
            return;
    }
    if (m_sandboxTls)
        m_toClient += m_sandboxTls->outgoing();
    if (m_hostTls)
        m_toHost += m_hostTls->outgoing();
    if (!flushSocket(m_client, m_toClient))
        return fail(QStringLiteral("writing to the sandbox: %1").arg(QString::fromLocal8Bit(std::strerror(errno))));
    if (!flushSocket(m_upstream, m_toHost))
        return fail(
            QStringLiteral("writing to %1: %2").arg(m_route.host, QString::fromLocal8Bit(std::strerror(errno))));
    if (m_phase == Phase::Closing && m_toClient.isEmpty())
        return finish();
    rearm();
}

void BrokeredConnection::rearm()
{
    const bool serving = m_phase == Phase::Serving;
    // A side is read only while what waits to go either way is bounded: what it sends may make
    // this end answer it (a TLS key update) as well as pass it on.
    const bool room = m_toClient.size() < kMaxPending && m_toHost.size() < kMaxPending
        && (!m_sandboxTls || m_sandboxTls->pendingPlain() < kMaxPending) && m_hostTls->pendingPlain() < kMaxPending;
    m_clientReader->setEnabled(serving && room && !m_clientEof && m_fromClient.size() < kMaxUnhandled);
    m_hostReader->setEnabled(m_phase != Phase::Closing && room && !m_hostEof && m_fromHost.size() < kMaxPending);
    m_clientWriter->setEnabled(!m_toClient.isEmpty());
    m_hostWriter->setEnabled(!m_toHost.isEmpty());
}

void BrokeredConnection::serve()
{
    for (bool again = true; again && m_phase == Phase::Serving;) {
        const Stage before = m_stage;
        const qsizetype unhandled = m_fromClient.size() + m_fromHost.size();
        if (m_stage == Stage::Head)
            readRequest();
        if (m_phase == Phase::Serving && m_stage == Stage::Body)
            forwardBody();
        if (m_phase == Phase::Serving && m_stage != Stage::Head)
            readAnswer();
        again = m_stage != before || m_fromClient.size() + m_fromHost.size() != unhandled;
    }
}

void BrokeredConnection::readRequest()
{
    if (m_fromClient.isEmpty()) {
        if (m_clientEof || m_hostEof) { // between requests: the end of the connection
            m_sandboxTls->close();
            m_phase = Phase::Closing;
        }
        return;
    }
    const http::HeadParse parsed = http::parseRequestHead(m_fromClient, m_route.host, m_searched);
    if (!std::holds_alternative<http::NeedMore>(parsed)) {
        m_request = Request(); // this one's, refused or not
        m_requestStartedMs = nowMs();
    }
    if (const auto *refusal = std::get_if<http::Refusal>(&parsed))
        return answerItself(refusal->status, refusal->reason);
    if (std::holds_alternative<http::NeedMore>(parsed)) {
        m_searched = m_fromClient.size();
        if (m_clientEof)
            fail(QStringLiteral("the sandbox closed the connection in a request's head"));
        return;
    }
    const auto &head = std::get<http::RequestHead>(parsed);
    m_request.method = head.method;
    m_request.target = head.target.left(300);
    const auto rewritten = http::rewriteHead(head, m_route.credential, &m_request.credential);
    if (const auto *refusal = std::get_if<http::Refusal>(&rewritten))
        return answerItself(refusal->status, refusal->reason);
    const QByteArray &out = std::get<QByteArray>(rewritten);
    m_hostTls->send(out);
    m_request.bytesUp = out.size();
    m_fromClient.remove(0, head.size);
    m_searched = 0;
    m_keepAlive = head.keepAlive;
    m_requestBody = http::BodyReader(head.body);
    m_answerHeadRead = m_answerStarted = false;
    m_hostSearched = 0;
    m_redaction = RedactionStream();
    m_stage = Stage::Body;
}

void BrokeredConnection::forwardBody()
{
    const auto step = m_requestBody.feed(m_fromClient, false);
    if (!step)
        return fail(QStringLiteral("the sandbox sent a malformed chunked body"));
    if (step->take > 0) {
        m_hostTls->send(QByteArrayView(m_fromClient).first(step->take));
        m_request.bytesUp += step->take;
        m_fromClient.remove(0, step->take);
    }
    if (step->done)
        m_stage = Stage::Answer;
    else if (m_clientEof)
        fail(QStringLiteral("the sandbox closed the connection in a request's body"));
}

void BrokeredConnection::readAnswer()
{
    while (!m_answerHeadRead) {
        if (m_fromHost.isEmpty() && !m_hostEof)
            return;
        const http::ResponseParse parsed = http::parseResponseHead(m_fromHost, m_request.method, m_hostSearched);
        if (const auto *refusal = std::get_if<http::Refusal>(&parsed))
            return m_answerStarted ? fail(refusal->reason) : answerItself(refusal->status, refusal->reason);
        if (std::holds_alternative<http::NeedMore>(parsed)) {
            m_hostSearched = m_fromHost.size();
            if (m_hostEof)
                m_answerStarted
                    ? fail(QStringLiteral("%1 closed the connection in its answer").arg(m_route.host))
                    : answerItself(502, QStringLiteral("%1 closed the connection without answering").arg(m_route.host));
            return;
        }
        const auto &head = std::get<http::ResponseHead>(parsed);
        passDown(QByteArrayView(m_fromHost).first(head.size));
        m_fromHost.remove(0, head.size);
        m_hostSearched = 0;
        m_answerStarted = true;
        if (head.interim())
            continue; // 100 Continue and the like: the final answer follows
        m_answerHeadRead = true;
        m_request.status = head.status;
        m_keepAlive = m_keepAlive && head.keepAlive && head.body.kind != http::BodyFraming::Kind::UntilClose;
        m_answerBody = http::BodyReader(head.body);
    }
    const auto step = m_answerBody.feed(m_fromHost, m_hostEof);
    if (!step)
        return fail(QStringLiteral("%1 sent a malformed chunked answer").arg(m_route.host));
    if (step->take > 0) {
        passDown(QByteArrayView(m_fromHost).first(step->take));
        m_fromHost.remove(0, step->take);
    }
    if (step->done)
        return answerCompleted();
    if (m_hostEof)
        fail(QStringLiteral("%1 closed the connection in its answer").arg(m_route.host));
}

void BrokeredConnection::passDown(QByteArrayView bytes)
{
    Redactor::Hits hits;
    m_sandboxTls->send(m_redaction.write(*m_route.redactor, bytes, &hits));
    m_request.redacted += hits.count;
    m_request.bytesDown += bytes.size();
}

void BrokeredConnection::answerCompleted()
{
    m_sandboxTls->send(m_redaction.finish());
    m_request.durationMs = nowMs() - m_requestStartedMs;
    m_stats.bytesUp += quint64(m_request.bytesUp);
    m_stats.bytesDown += quint64(m_request.bytesDown);
    ++m_stats.requests;
    if (m_callbacks.request)
        m_callbacks.request(m_request);
    // An answer before the whole request was sent: the host may not read the rest as a body.
    if (!m_keepAlive || m_stage == Stage::Body) {
        m_sandboxTls->close();
        m_phase = Phase::Closing;
        return;
    }
    m_stage = Stage::Head;
}

void BrokeredConnection::answerItself(int status, const QString &reason)
{
    QByteArray body = "airlock: " + reason.toUtf8() + '\n';
    m_route.redactor->redactInPlace(body); // a reason may quote what the host sent
    const QByteArray answer = "HTTP/1.1 " + QByteArray::number(status) + ' ' + reasonPhrase(status)
        + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + QByteArray::number(body.size())
        + "\r\nConnection: close\r\nX-Airlock-Refused: broker\r\n\r\n" + body;
    m_sandboxTls->send(answer);
    m_sandboxTls->close();
    m_request.status = status;
    m_request.refused = reason;
    m_request.durationMs = nowMs() - m_requestStartedMs;
    ++m_stats.requests;
    if (m_callbacks.request)
        m_callbacks.request(m_request);
    m_phase = Phase::Closing;
}

void BrokeredConnection::fail(const QString &error)
{
    if (m_finished)
        return;
    if (m_phase == Phase::Verifying) {
        // The sandbox's CONNECT is answered with the reason; nothing was opened.
        const QByteArray answer = m_handshake.failure(ProxyFailure::Denied, error);
        (void)!::send(m_client, answer.constData(), size_t(answer.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
        m_finished = true;
        if (m_callbacks.refused)
            m_callbacks.refused(error);
        deleteLater();
        return;
    }
    m_stats.error = error;
    finish();
}

void BrokeredConnection::finish()
{
    if (m_finished)
        return;
    m_finished = true;
    for (QSocketNotifier *n : {m_clientReader, m_clientWriter, m_hostReader, m_hostWriter})
        n->setEnabled(false);
    m_deadline->stop();
    if (m_callbacks.closed)
        m_callbacks.closed(m_stats);
    deleteLater();
}

} // namespace airlock::net
