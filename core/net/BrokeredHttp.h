// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 as the credential broker reads it from a sandbox (issue 24): the proxy terminates the
// sandbox's TLS to a brokered host, puts the real secret where the policy says in each request's
// head, and sends the request on. What a sandbox sends is hostile, and the broker and the real host
// must never read a request two ways (request smuggling would let a request past the rewrite), so
// the parser is strict: only HTTP/1.1, CRLF line ends, no folded or ambiguous headers, one way to
// delimit a body (Content-Length, or Transfer-Encoding: chunked alone), bounded sizes. Anything
// else is refused with the status to answer and why. No I/O here.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>

#include <optional>
#include <utility>
#include <variant>

namespace airlock::net::http {

inline constexpr qsizetype kMaxHead = 64 * 1024;
inline constexpr int kMaxHeaders = 100;

// How a message's body is delimited after its head.
struct BodyFraming {
    enum class Kind { None, Length, Chunked, UntilClose } kind = Kind::None; // UntilClose: responses only
    quint64 length = 0; // Kind::Length
};

struct RequestHead {
    QByteArray method;
    QByteArray target;
    QList<std::pair<QByteArray, QByteArray>> headers; // names as sent, values without surrounding blanks
    BodyFraming body;
    qsizetype size = 0; // bytes of the buffer the head took, its blank line included
};

// A request that is refused: the status to answer the sandbox with, and why (for it and the log).
struct Refusal {
    int status = 400;
    QString reason;
};

// The head is not complete yet (and within kMaxHead).
struct NeedMore { };

using HeadParse = std::variant<RequestHead, Refusal, NeedMore>;

// The head at the start of `buffer`, for a request to `host` (its Host header must name it, with
// :443 or no port).
HeadParse parseRequestHead(QByteArrayView buffer, const QString &host);

struct ResponseHead {
    int status = 0;
    QList<std::pair<QByteArray, QByteArray>> headers;
    BodyFraming body;
    qsizetype size = 0;
    bool interim() const { return status >= 100 && status < 200; } // a final response follows
};

using ResponseParse = std::variant<ResponseHead, Refusal, NeedMore>;

// The head of the host's answer to a request with `method`, at the start of `buffer`, with how its
// body is delimited (RFC 9112 6.3: none after HEAD, 1xx, 204 and 304; Content-Length or chunked;
// else until the host closes). What the broker could pass on wrongly is refused (the sandbox is then
// answered 502): a message framed two ways, a switch of protocols, anything but HTTP/1.x.
ResponseParse parseResponseHead(QByteArrayView buffer, QByteArrayView method);

// Where the real secret goes: in header `header` (any case), for `placeholder` within its value.
// The secret is put nowhere else: not in other headers, the target or the body.
struct Credential {
    QByteArray header;
    QByteArray placeholder;
    QByteArray secret;
};

// Whether bytes can stand in a header value as they are (no CR, LF, NUL or other controls but tab):
// a secret that cannot is refused before anything is brokered with it.
bool fitsInHeaderValue(QByteArrayView value);

// The head to send to the host: the request line and headers as parsed, the credential put in,
// the broker's own hop-by-hop headers (Proxy-*) left out, and Accept-Encoding: identity (so that
// what comes back can be searched for the secret). `substituted`: how many placeholders were
// replaced.
QByteArray rewriteHead(const RequestHead &head, const Credential &credential, int *substituted = nullptr);

// Follows a chunked body through the bytes that arrive, to find where it ends (the last chunk and
// its trailers) without decoding it; a malformed one is an error. Bounded: chunk-size lines and
// trailers of at most 8 KiB, sizes below 2^60.
class ChunkedBody {
public:
    // How many of `bytes` belong to the body (all of them until it ends); nullopt when malformed.
    std::optional<qsizetype> feed(QByteArrayView bytes);
    bool done() const { return m_state == State::Done; }

private:
    enum class State { Size, Data, DataEnd, Trailer, Done };
    State m_state = State::Size;
    QByteArray m_line; // the size line or trailer line so far
    quint64 m_left = 0; // data bytes of the current chunk still to come
    int m_dataEndSeen = 0; // of the CRLF after a chunk's data
    qsizetype m_trailerBytes = 0;
};

} // namespace airlock::net::http
