// SPDX-License-Identifier: Apache-2.0
#include "daytona/HttpMessage.h"

#include "remote/UpgradeGate.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>

namespace airlock::daytona {

namespace {
constexpr qsizetype kMaxChunkLine = 64; // "FFFFFFFF;ext\r\n" and then some
} // namespace

QString statusText(int status)
{
    switch (status) {
    case 100:
        return QStringLiteral("Continue");
    case 200:
        return QStringLiteral("OK");
    case 201:
        return QStringLiteral("Created");
    case 204:
        return QStringLiteral("No Content");
    case 400:
        return QStringLiteral("Bad Request");
    case 401:
        return QStringLiteral("Unauthorized");
    case 403:
        return QStringLiteral("Forbidden");
    case 404:
        return QStringLiteral("Not Found");
    case 405:
        return QStringLiteral("Method Not Allowed");
    case 408:
        return QStringLiteral("Request Timeout");
    case 409:
        return QStringLiteral("Conflict");
    case 411:
        return QStringLiteral("Length Required");
    case 413:
        return QStringLiteral("Content Too Large");
    case 429:
        return QStringLiteral("Too Many Requests");
    case 431:
        return QStringLiteral("Request Header Fields Too Large");
    case 500:
        return QStringLiteral("Internal Server Error");
    case 501:
        return QStringLiteral("Not Implemented");
    case 503:
        return QStringLiteral("Service Unavailable");
    case 504:
        return QStringLiteral("Gateway Timeout");
    default:
        return QStringLiteral("Status");
    }
}

HttpResponse HttpResponse::json(const QJsonValue &value, int status)
{
    QByteArray body;
    if (value.isObject())
        body = QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact);
    else if (value.isArray())
        body = QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact);
    return {status, "application/json", body};
}

HttpResponse HttpResponse::error(int status, const QString &message)
{
    return json(QJsonObject{{QStringLiteral("statusCode"), status}, {QStringLiteral("error"), statusText(status)},
                    {QStringLiteral("message"), message}},
        status);
}

QByteArray HttpResponse::serialize(bool keepAlive) const
{
    QByteArray out = "HTTP/1.1 " + QByteArray::number(status) + ' ' + statusText(status).toLatin1() + "\r\n";
    if (!contentType.isEmpty())
        out += "Content-Type: " + contentType + "\r\n";
    out += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    out += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    out += "Cache-Control: no-store\r\n\r\n";
    out += body;
    return out;
}

QByteArray webSocketAccept(const QByteArray &key)
{
    return QCryptographicHash::hash(QByteArray(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"), QCryptographicHash::Sha1)
        .toBase64();
}

QByteArray webSocketFrame(const QByteArray &payload, quint8 opcode)
{
    QByteArray frame;
    frame.reserve(payload.size() + 10);
    frame.append(char(0x80 | opcode));
    const quint64 n = quint64(payload.size());
    if (n < 126) {
        frame.append(char(n));
    } else if (n < 65536) {
        frame.append(char(126));
        frame.append(char(n >> 8));
        frame.append(char(n & 0xff));
    } else {
        frame.append(char(127));
        for (int shift = 56; shift >= 0; shift -= 8)
            frame.append(char((n >> shift) & 0xff));
    }
    frame += payload;
    return frame;
}

std::optional<HttpRequest> HttpRequestReader::fail(int status, const QString &why)
{
    m_failStatus = status;
    m_failure = why;
    m_buffer.clear();
    m_head.reset();
    return std::nullopt;
}

bool HttpRequestReader::wantsContinue()
{
    if (!m_wantsContinue || m_continueSent)
        return false;
    m_continueSent = true;
    return true;
}

qsizetype HttpRequestReader::chunkedEnd(qsizetype from, QByteArray *body)
{
    qsizetype at = from;
    qint64 total = 0;
    // First walk to the end without copying (the body may arrive in many pieces), then decode.
    for (int pass = 0; pass < 2; ++pass) {
        at = from;
        total = 0;
        for (;;) {
            const qsizetype eol = m_buffer.indexOf("\r\n", at);
            if (eol < 0)
                return m_buffer.size() - at > kMaxChunkLine ? -2 : -1;
            if (eol - at > kMaxChunkLine)
                return -2;
            QByteArray sizeText = m_buffer.mid(at, eol - at);
            if (const qsizetype semi = sizeText.indexOf(';'); semi >= 0)
                sizeText.truncate(semi);
            bool ok = false;
            const qint64 size = sizeText.trimmed().toLongLong(&ok, 16);
            if (!ok || size < 0 || sizeText.trimmed().isEmpty())
                return -2;
            at = eol + 2;
            if (size == 0) {
                // No trailers are taken: the last chunk is followed by the blank line.
                if (m_buffer.size() - at < 2)
                    return -1;
                if (m_buffer.mid(at, 2) != "\r\n")
                    return -2;
                at += 2;
                break;
            }
            total += size;
            if (total > m_maxBody)
                return -3;
            if (m_buffer.size() - at < size + 2)
                return -1;
            if (pass == 1)
                body->append(m_buffer.constData() + at, size);
            at += size;
            if (m_buffer.mid(at, 2) != "\r\n")
                return -2;
            at += 2;
        }
        if (pass == 0)
            body->reserve(total);
    }
    return at;
}

std::optional<HttpRequest> HttpRequestReader::next()
{
    if (failed())
        return std::nullopt;
    if (!m_head) {
        const qsizetype end = m_buffer.indexOf("\r\n\r\n");
        if (end < 0) {
            if (m_buffer.size() > remote::kMaxRequestHead)
                return fail(
                    431, QStringLiteral("the request's head is longer than %1 bytes").arg(remote::kMaxRequestHead));
            return std::nullopt;
        }
        if (end + 4 > remote::kMaxRequestHead)
            return fail(431, QStringLiteral("the request's head is longer than %1 bytes").arg(remote::kMaxRequestHead));
        auto head = remote::parseRequestHead(m_buffer.left(end + 4));
        if (!head)
            return fail(400, head.error().message);
        HttpRequest r;
        r.method = head->method;
        r.headers = head->headers;
        const QByteArray target = head->target;
        if (!target.startsWith('/'))
            return fail(400, QStringLiteral("the request target must be a path starting with '/'"));
        const qsizetype q = target.indexOf('?');
        const QByteArray path = q < 0 ? target : target.left(q);
        if (q >= 0)
            r.query.setQuery(QString::fromUtf8(target.mid(q + 1)));
        for (const QByteArray &segment : path.split('/')) {
            if (segment.isEmpty())
                continue;
            const QString decoded = QUrl::fromPercentEncoding(segment);
            if (decoded.contains(QChar(0)) || decoded == QLatin1String("..") || decoded == QLatin1String("."))
                return fail(400, QStringLiteral("the path has a '.', '..' or NUL segment"));
            r.segments.append(decoded);
        }
        r.keepAlive = r.header("connection").toLower() != "close";
        const QByteArray te = r.header("transfer-encoding").toLower();
        const QByteArray cl = r.header("content-length");
        if (!te.isEmpty() && !cl.isEmpty())
            return fail(400, QStringLiteral("both Transfer-Encoding and Content-Length: send one"));
        if (!te.isEmpty()) {
            if (te != "chunked")
                return fail(501,
                    QStringLiteral("Transfer-Encoding '%1' is not supported (only chunked)")
                        .arg(QString::fromLatin1(te.left(40))));
            m_contentLength = -1;
        } else {
            bool ok = true;
            m_contentLength = cl.isEmpty() ? 0 : cl.toLongLong(&ok);
            if (!ok || m_contentLength < 0)
                return fail(
                    400, QStringLiteral("Content-Length '%1' is not a length").arg(QString::fromLatin1(cl.left(40))));
            if (m_contentLength > m_maxBody)
                return fail(413,
                    QStringLiteral("the body is %1 bytes; at most %2 are taken in one request")
                        .arg(m_contentLength)
                        .arg(m_maxBody));
        }
        m_wantsContinue = r.header("expect").toLower() == "100-continue";
        m_continueSent = false;
        m_head = std::move(r);
        m_bodyStart = end + 4;
    }
    if (m_contentLength >= 0) {
        if (m_buffer.size() - m_bodyStart < m_contentLength)
            return std::nullopt;
        HttpRequest r = std::move(*m_head);
        m_head.reset();
        r.body = m_buffer.mid(m_bodyStart, m_contentLength);
        m_buffer.remove(0, m_bodyStart + m_contentLength);
        m_wantsContinue = false;
        return r;
    }
    QByteArray body;
    const qsizetype end = chunkedEnd(m_bodyStart, &body);
    if (end == -1)
        return std::nullopt;
    if (end == -3)
        return fail(
            413, QStringLiteral("the body is more than %1 bytes, the most taken in one request").arg(m_maxBody));
    if (end < 0)
        return fail(400, QStringLiteral("a malformed chunk in the chunked body"));
    HttpRequest r = std::move(*m_head);
    m_head.reset();
    r.body = std::move(body);
    m_buffer.remove(0, end);
    m_wantsContinue = false;
    return r;
}

} // namespace airlock::daytona
