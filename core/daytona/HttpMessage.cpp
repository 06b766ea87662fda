// SPDX-License-Identifier: Apache-2.0
#include "daytona/HttpMessage.h"

#include "remote/UpgradeGate.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>

#include <algorithm>
#include <cctype>

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
    case 421:
        return QStringLiteral("Misdirected Request");
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
    m_decoded.clear();
    m_head.reset();
    return std::nullopt;
}

void HttpRequestReader::append(QByteArrayView bytes)
{
    if (failed())
        return;
    m_buffer.append(bytes);
    // What is held, chunk lines included: a body sent in tiny chunks costs its framing too.
    if (m_buffer.size() + m_decoded.size() > remote::kMaxRequestHead + m_maxBody + m_maxBody / 4 + 4096)
        fail(413,
            QStringLiteral("the request is larger than %1 bytes with its framing (send larger chunks, or less)")
                .arg(m_maxBody));
}

bool HttpRequestReader::wantsContinue()
{
    if (!m_wantsContinue || m_continueSent)
        return false;
    m_continueSent = true;
    return true;
}

const HttpRequest *HttpRequestReader::head()
{
    if (!m_head && !failed())
        parseHead();
    return m_head ? &*m_head : nullptr;
}

void HttpRequestReader::parseHead()
{
    const qsizetype end = m_buffer.indexOf("\r\n\r\n");
    if (end < 0) {
        if (m_buffer.size() > remote::kMaxRequestHead)
            fail(431, QStringLiteral("the request's head is longer than %1 bytes").arg(remote::kMaxRequestHead));
        return;
    }
    if (end + 4 > remote::kMaxRequestHead) {
        fail(431, QStringLiteral("the request's head is longer than %1 bytes").arg(remote::kMaxRequestHead));
        return;
    }
    // Strictly HTTP/1.1 (remote::parseRequestHead: CRLF only, no folded lines, the version exactly).
    const QByteArray text = m_buffer.left(end + 4);
    auto head = remote::parseRequestHead(text);
    if (!head) {
        fail(400, head.error().message);
        return;
    }
    HttpRequest r;
    r.method = head->method;
    r.headers = head->headers;
    const QByteArray target = head->target;
    if (!target.startsWith('/')) {
        fail(400, QStringLiteral("the request target must be a path starting with '/'"));
        return;
    }
    const qsizetype q = target.indexOf('?');
    const QByteArray path = q < 0 ? target : target.left(q);
    if (q >= 0)
        r.query.setQuery(QString::fromUtf8(target.mid(q + 1)));
    for (const QByteArray &segment : path.split('/')) {
        if (segment.isEmpty())
            continue;
        const QString decoded = QUrl::fromPercentEncoding(segment);
        if (decoded.contains(QChar(0)) || decoded == QLatin1String("..") || decoded == QLatin1String(".")) {
            fail(400, QStringLiteral("the path has a '.', '..' or NUL segment"));
            return;
        }
        r.segments.append(decoded);
    }
    r.keepAlive = r.header("connection").toLower() != "close";
    const QByteArray te = r.header("transfer-encoding").toLower();
    const QByteArray cl = r.header("content-length");
    if (!te.isEmpty() && !cl.isEmpty()) {
        fail(400, QStringLiteral("both Transfer-Encoding and Content-Length: send one"));
        return;
    }
    if (!te.isEmpty()) {
        if (te != "chunked") {
            fail(501,
                QStringLiteral("Transfer-Encoding '%1' is not supported (only chunked)")
                    .arg(QString::fromLatin1(te.left(40))));
            return;
        }
        m_contentLength = -1;
    } else {
        bool ok = std::all_of(cl.begin(), cl.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        m_contentLength = cl.isEmpty() || !ok ? 0 : cl.toLongLong(&ok);
        if (!ok || m_contentLength < 0) {
            fail(400, QStringLiteral("Content-Length '%1' is not a length").arg(QString::fromLatin1(cl.left(40))));
            return;
        }
        if (m_contentLength > m_maxBody) {
            fail(413,
                QStringLiteral("the body is %1 bytes; at most %2 are taken in one request")
                    .arg(m_contentLength)
                    .arg(m_maxBody));
            return;
        }
    }
    m_wantsContinue = r.header("expect").toLower() == "100-continue";
    m_continueSent = false;
    m_head = std::move(r);
    m_buffer.remove(0, end + 4);
    m_chunkAt = 0;
    m_decoded.clear();
}

int HttpRequestReader::takeChunks()
{
    // Each chunk is decoded once, as it arrives; the raw bytes before m_chunkAt are done with.
    for (;;) {
        const qsizetype eol = m_buffer.indexOf("\r\n", m_chunkAt);
        if (eol < 0)
            return m_buffer.size() - m_chunkAt > kMaxChunkLine ? -2 : 0;
        if (eol - m_chunkAt > kMaxChunkLine)
            return -2;
        QByteArray sizeText = m_buffer.mid(m_chunkAt, eol - m_chunkAt);
        if (const qsizetype semi = sizeText.indexOf(';'); semi >= 0)
            sizeText.truncate(semi);
        sizeText = sizeText.trimmed();
        const bool hex = !sizeText.isEmpty() && sizeText.size() <= 15
            && std::all_of(sizeText.begin(), sizeText.end(),
                [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
        bool ok = false;
        const qint64 size = hex ? sizeText.toLongLong(&ok, 16) : -1;
        if (!ok || size < 0)
            return -2;
        if (size > m_maxBody - m_decoded.size())
            return -3;
        const qsizetype data = eol + 2;
        if (size == 0) { // no trailers are taken: the last chunk is followed by the blank line
            if (m_buffer.size() - data < 2)
                return 0;
            if (m_buffer.mid(data, 2) != "\r\n")
                return -2;
            m_chunkAt = data + 2;
            return 1;
        }
        if (m_buffer.size() - data < size + 2)
            return 0;
        if (m_buffer.mid(data + size, 2) != "\r\n")
            return -2;
        m_decoded.append(m_buffer.constData() + data, size);
        m_chunkAt = data + size + 2;
        if (m_chunkAt > 1024 * 1024) { // what was decoded leaves the buffer now and then, not each time
            m_buffer.remove(0, m_chunkAt);
            m_chunkAt = 0;
        }
    }
}

std::optional<HttpRequest> HttpRequestReader::next()
{
    if (!head())
        return std::nullopt;
    if (m_contentLength >= 0) {
        if (m_buffer.size() < m_contentLength)
            return std::nullopt;
        HttpRequest r = std::move(*m_head);
        m_head.reset();
        r.body = m_buffer.left(m_contentLength);
        m_buffer.remove(0, m_contentLength);
        m_wantsContinue = false;
        return r;
    }
    const int taken = takeChunks();
    if (taken == 0)
        return std::nullopt;
    if (taken == -3)
        return fail(
            413, QStringLiteral("the body is more than %1 bytes, the most taken in one request").arg(m_maxBody));
    if (taken < 0)
        return fail(400, QStringLiteral("a malformed chunk in the chunked body"));
    HttpRequest r = std::move(*m_head);
    m_head.reset();
    r.body = std::exchange(m_decoded, {});
    m_buffer.remove(0, m_chunkAt);
    m_chunkAt = 0;
    m_wantsContinue = false;
    return r;
}

} // namespace airlock::daytona
