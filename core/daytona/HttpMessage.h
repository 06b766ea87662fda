// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonValue>
#include <QStringList>
#include <QUrlQuery>

#include <functional>
#include <optional>

namespace airlock::daytona {

// One HTTP/1.1 request as the Daytona API reads it: the path's segments percent-decoded, the
// query, headers (names lowercased, each at most once) and the whole body.
struct HttpRequest {
    QByteArray method;
    QStringList segments; // "/api/sandbox/x" -> {"api", "sandbox", "x"}
    QUrlQuery query;
    QHash<QByteArray, QByteArray> headers;
    QByteArray body;
    bool keepAlive = true;

    QByteArray header(const QByteArray &name) const { return headers.value(name); }
    QString queryValue(const QString &name) const { return query.queryItemValue(name, QUrl::FullyDecoded); }
};

// What goes back: a status, a content type and a body; errors in Daytona's shape.
struct HttpResponse {
    int status = 200;
    QByteArray contentType = "application/json";
    QByteArray body;

    static HttpResponse json(const QJsonValue &value, int status = 200);
    // {"statusCode", "error", "message"}: what the SDK turns into its error classes by status.
    static HttpResponse error(int status, const QString &message);
    QByteArray serialize(bool keepAlive) const;
};

// An answer that stays open: a WebSocket the SDK follows a command's logs over. open() answers the
// upgrade, write() sends one binary message, end() closes it (after what was written).
struct HttpStream {
    std::function<void()> open;
    std::function<void(const QByteArray &)> write;
    std::function<void()> end;
};
// The server's side of RFC 6455 as far as the logs need it: the Sec-WebSocket-Accept of a key, and
// an unmasked frame (binary by default; 0x8 closes).
QByteArray webSocketAccept(const QByteArray &key);
QByteArray webSocketFrame(const QByteArray &payload, quint8 opcode = 0x2);

// Requests read off a byte stream one after another: a head of at most 8 KiB, then a body by
// Content-Length or chunked, at most maxBody bytes. A malformed or oversized request ends the
// stream with the status to answer it with.
class HttpRequestReader {
public:
    explicit HttpRequestReader(qint64 maxBody)
        : m_maxBody(maxBody)
    {
    }
    // More bytes; past the head and body limits (framing included), the stream fails with 413.
    void append(QByteArrayView bytes);
    // The head of the request being read once it is whole, before its body is taken: for the checks
    // that come first (who asks, from where). Null while more must come, or when failed.
    const HttpRequest *head();
    // A whole request when one is there (taken off the buffer); nothing when more must come;
    // failed() when the stream can go no further.
    std::optional<HttpRequest> next();
    bool failed() const { return m_failStatus != 0; }
    int failStatus() const { return m_failStatus; }
    QString failure() const { return m_failure; }
    // The head asked for "Expect: 100-continue": say go on, once.
    bool wantsContinue();
    qsizetype buffered() const { return m_buffer.size() + m_decoded.size(); }

private:
    std::optional<HttpRequest> fail(int status, const QString &why);
    void parseHead();
    // Decodes the chunks that are whole: 1 at the last one, 0 when more must come, -2 malformed,
    // -3 too large.
    int takeChunks();

    qint64 m_maxBody;
    QByteArray m_buffer; // after the head once it is parsed
    std::optional<HttpRequest> m_head; // parsed, waiting for its body
    qint64 m_contentLength = -1; // -1: chunked
    qsizetype m_chunkAt = 0; // in m_buffer: where the next chunk's size line starts
    QByteArray m_decoded; // of a chunked body, so far
    bool m_continueSent = false, m_wantsContinue = false;
    int m_failStatus = 0;
    QString m_failure;
};

QString statusText(int status);

} // namespace airlock::daytona
