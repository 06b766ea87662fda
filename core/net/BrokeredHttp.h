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
    bool keepAlive = true; // no Connection: close
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
// :443 or no port). Only the methods an API is called with are brokered (GET, HEAD, POST, PUT,
// PATCH, DELETE, OPTIONS): CONNECT would make the host read what follows as a tunnel, TRACE would
// echo the head. `searched`: how much of `buffer` an earlier call found no end of head in (a
// head that comes a byte at a time is then not searched again from its start each time).
HeadParse parseRequestHead(QByteArrayView buffer, const QString &host, qsizetype searched = 0);

struct ResponseHead {
    int status = 0;
    QList<std::pair<QByteArray, QByteArray>> headers;
    BodyFraming body;
    qsizetype size = 0;
    bool keepAlive = true; // HTTP/1.1 without Connection: close, or HTTP/1.0 with keep-alive
    bool interim() const { return status >= 100 && status < 200; } // a final response follows
};

using ResponseParse = std::variant<ResponseHead, Refusal, NeedMore>;

// The head of the host's answer to a request with `method`, at the start of `buffer`, with how its
// body is delimited (RFC 9112 6.3: none after HEAD, 1xx, 204 and 304; Content-Length or chunked;
// else until the host closes). What the broker could pass on wrongly is refused (the sandbox is then
// answered 502): a message framed two ways, a switch of protocols, anything but HTTP/1.x.
ResponseParse parseResponseHead(QByteArrayView buffer, QByteArrayView method, qsizetype searched = 0);

// Where the real secret goes: in header `header` (any case), whose value is the placeholder, or a
// scheme and the placeholder ("Bearer PLACEHOLDER"). The secret is put nowhere else: not in other
// headers, the target or the body; and never next to text of the sandbox's (which could make the
// host answer with part of it).
struct Credential {
    QByteArray header;
    QByteArray placeholder;
    QByteArray secret;
};

// An HTTP token (RFC 9110 5.6.2: a method, a header's name): visible ASCII but the delimiters.
bool isToken(QByteArrayView s);

// Whether bytes can stand in a header value as they are (no CR, LF, NUL or other controls but tab):
// a secret that cannot is refused before anything is brokered with it.
bool fitsInHeaderValue(QByteArrayView value);

// The head to send to the host: the request line and headers as parsed, the credential put in,
// Content-Length as a plain number, and Accept-Encoding: identity last, so that what comes back can
// be searched for the secret whole. Left out: the broker's own headers (Proxy-*) and what would let
// an answer come back compressed or in pieces (Accept-Encoding, TE, Range, If-Range). Refused: the
// credential's header twice, or the placeholder in it with other text around it (400), a secret that
// cannot stand in a header (500). `substituted`: whether the secret was put in.
std::variant<QByteArray, Refusal> rewriteHead(
    const RequestHead &head, const Credential &credential, bool *substituted = nullptr);

// Follows a chunked body through the bytes that arrive, to find where it ends (the last chunk)
// without decoding it; a malformed one is an error. Strict, as nothing an API client sends needs
// more: no chunk extensions and no trailers (a host could read either otherwise than the broker);
// sizes of at most 15 hex digits.
class ChunkedBody {
public:
    // How many of `bytes` belong to the body (all of them until it ends); nullopt when malformed.
    std::optional<qsizetype> feed(QByteArrayView bytes);
    bool done() const { return m_state == State::Done; }

private:
    enum class State { Size, SizeLf, Data, DataCr, DataLf, End, EndLf, Done };
    State m_state = State::Size;
    int m_digits = 0; // of the size so far
    quint64 m_left = 0; // the size so far, then the data bytes of the chunk still to come
};

// Follows one message's body, framed as its head says, through the bytes that arrive after the
// head: how many of them belong to it, and whether it has ended.
class BodyReader {
public:
    explicit BodyReader(BodyFraming framing = {});
    struct Step {
        qsizetype take = 0; // the first `take` bytes are the body's
        bool done = false; // it ends with them
    };
    // `closed`: no more bytes will come (a body until the close ends there). nullopt: a chunked
    // body that is malformed.
    std::optional<Step> feed(QByteArrayView bytes, bool closed);
    BodyFraming::Kind kind() const { return m_framing.kind; }

private:
    BodyFraming m_framing;
    quint64 m_left = 0; // of a body with a length
    ChunkedBody m_chunks;
};

} // namespace airlock::net::http
