// SPDX-License-Identifier: Apache-2.0
#include "net/BrokeredHttp.h"

#include "util/HttpText.h"

namespace airlock::net::http {

namespace {
constexpr qsizetype kMaxTarget = 8 * 1024;

// A control character other than horizontal tab (these never stand in a field value).
bool isControl(char c)
{
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
}

QByteArrayView trimmed(QByteArrayView s)
{
    while (!s.isEmpty() && (s.front() == ' ' || s.front() == '\t'))
        s = s.sliced(1);
    while (!s.isEmpty() && (s.back() == ' ' || s.back() == '\t'))
        s.chop(1);
    return s;
}

// Every CR is followed by LF and every LF follows a CR.
Refusal refuse(int status, const QString &reason)
{
    return Refusal{status, reason};
}

// A Connection header's value names `token` (comma-separated, any case).
bool listsToken(QByteArrayView value, QByteArrayView token)
{
    for (const QByteArray &item : value.toByteArray().split(','))
        if (trimmed(item).compare(token, Qt::CaseInsensitive) == 0)
            return true;
    return false;
}

using Fields = QList<std::pair<QByteArray, QByteArray>>;

// A Connection header of `fields` names `token`.
bool connectionLists(const Fields &fields, QByteArrayView token)
{
    for (const auto &[name, value] : fields)
        if (name.compare("connection", Qt::CaseInsensitive) == 0 && listsToken(value, token))
            return true;
    return false;
}

// What is read (a request from the sandbox, or the host's answer) and the status each kind of
// refusal answers with: the sandbox's own request is told what was wrong with it; anything wrong
// with the host's answer is a 502 to the sandbox.
struct Side {
    QString what;
    int malformed, tooLarge, unsupported;
};
const Side kRequestSide{QStringLiteral("request"), 400, 431, 501};
const Side kResponseSide{QStringLiteral("response"), 502, 502, 502};

// Where a message's head ends in `buffer` (its blank line included), NeedMore, or a refusal.
std::variant<qsizetype, Refusal, NeedMore> headEnd(QByteArrayView buffer, qsizetype searched, const Side &side)
{
    const qsizetype end = buffer.first(std::min(buffer.size(), kMaxHead))
                              .indexOf("\r\n\r\n", std::clamp<qsizetype>(searched - 3, 0, buffer.size()));
    if (end < 0) {
        if (buffer.size() >= kMaxHead)
            return refuse(side.tooLarge,
                QStringLiteral("the %1's head is larger than %2 KiB").arg(side.what).arg(kMaxHead / 1024));
        return NeedMore{};
    }
    if (!airlock::http::onlyCrlf(buffer.first(end + 2)))
        return refuse(
            side.malformed, QStringLiteral("a line in the %1's head ends otherwise than with CRLF").arg(side.what));
    return end + 4;
}

// The header lines of `head` (each with its CRLF) from `at`, checked, into `fields`.
std::optional<Refusal> readFields(QByteArrayView head, qsizetype at, Fields &fields, const Side &side)
{
    while (at < head.size()) {
        const qsizetype next = head.indexOf("\r\n", at);
        const QByteArrayView field = head.sliced(at, next - at);
        at = next + 2;
        if (field.front() == ' ' || field.front() == '\t')
            return refuse(side.malformed, QStringLiteral("a header line is folded onto the one before"));
        const qsizetype colon = field.indexOf(':');
        if (colon < 0 || !isToken(field.first(colon)))
            return refuse(
                side.malformed, QStringLiteral("a header line is not NAME: VALUE (no blank before the colon)"));
        const QByteArrayView name = field.first(colon), value = trimmed(field.sliced(colon + 1));
        for (const char c : value)
            if (isControl(c))
                return refuse(side.malformed,
                    QStringLiteral("header %1 holds a control character").arg(QString::fromLatin1(name)));
        if (fields.size() == kMaxHeaders)
            return refuse(
                side.tooLarge, QStringLiteral("the %1 has more than %2 headers").arg(side.what).arg(kMaxHeaders));
        fields.append({name.toByteArray(), value.toByteArray()});
    }
    return std::nullopt;
}

// How a message with `fields` delimits its body by Content-Length and Transfer-Encoding (`none`
// when it has neither), or a refusal when it could be read two ways.
std::variant<BodyFraming, Refusal> framing(const Fields &fields, BodyFraming none, const Side &side)
{
    BodyFraming body = none;
    int lengths = 0, codings = 0;
    for (const auto &[name, value] : fields) {
        if (name.compare("content-length", Qt::CaseInsensitive) == 0) {
            ++lengths;
            bool ok = value.size() <= 18 && !value.isEmpty();
            for (const char c : value)
                ok = ok && c >= '0' && c <= '9';
            if (!ok)
                return refuse(side.malformed, QStringLiteral("Content-Length is not a number of at most 18 digits"));
            body = {value.toULongLong() ? BodyFraming::Kind::Length : BodyFraming::Kind::None, value.toULongLong()};
        } else if (name.compare("transfer-encoding", Qt::CaseInsensitive) == 0) {
            ++codings;
            if (value.compare("chunked", Qt::CaseInsensitive) != 0)
                return refuse(side.unsupported, QStringLiteral("only Transfer-Encoding: chunked is brokered"));
            body = {BodyFraming::Kind::Chunked, 0};
        }
    }
    if (lengths > 1 || codings > 1)
        return refuse(
            side.malformed, QStringLiteral("the %1 repeats Content-Length or Transfer-Encoding").arg(side.what));
    if (lengths && codings)
        return refuse(side.malformed,
            QStringLiteral("the %1 has both Content-Length and Transfer-Encoding: its body could be read two ways")
                .arg(side.what));
    return body;
}

// A Connection header naming anything but close and keep-alive: the names of headers a proxy at
// the host would drop (Connection: Content-Length is a way to smuggle a request past it).
bool namesHeaders(const Fields &fields)
{
    for (const auto &[name, value] : fields)
        if (name.compare("connection", Qt::CaseInsensitive) == 0)
            for (const QByteArray &item : value.split(','))
                if (const QByteArrayView token = trimmed(item); !token.isEmpty()
                    && token.compare("close", Qt::CaseInsensitive) != 0
                    && token.compare("keep-alive", Qt::CaseInsensitive) != 0
                    && token.compare("upgrade", Qt::CaseInsensitive) != 0)
                    return true;
    return false;
}

bool upgrades(const Fields &fields)
{
    for (const auto &[name, value] : fields)
        if (name.compare("upgrade", Qt::CaseInsensitive) == 0
            || (name.compare("connection", Qt::CaseInsensitive) == 0 && listsToken(value, "upgrade")))
            return true;
    return false;
}
} // namespace

bool isToken(QByteArrayView s)
{
    if (s.isEmpty())
        return false;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || QByteArrayView("\"(),/:;<=>?@[\\]{}").contains(c))
            return false;
    }
    return true;
}

HeadParse parseRequestHead(QByteArrayView buffer, const QString &host, qsizetype searched)
{
    const auto end = headEnd(buffer, searched, kRequestSide);
    if (const auto *r = std::get_if<Refusal>(&end))
        return *r;
    if (std::holds_alternative<NeedMore>(end))
        return NeedMore{};
    RequestHead request;
    request.size = std::get<qsizetype>(end);
    const QByteArrayView head = buffer.first(request.size - 2); // each line with its CRLF
    const qsizetype at = head.indexOf("\r\n");
    const QByteArrayView line = head.first(at);
    const qsizetype sp1 = line.indexOf(' '), sp2 = sp1 < 0 ? -1 : line.indexOf(' ', sp1 + 1);
    if (sp1 < 0 || sp2 < 0 || line.indexOf(' ', sp2 + 1) >= 0)
        return refuse(400, QStringLiteral("the request line is not METHOD TARGET HTTP/1.1"));
    const QByteArrayView method = line.first(sp1), target = line.sliced(sp1 + 1, sp2 - sp1 - 1),
                         version = line.sliced(sp2 + 1);
    if (!isToken(method))
        return refuse(400, QStringLiteral("the request's method is not a token"));
    static const QList<QByteArrayView> kMethods{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    if (!kMethods.contains(method))
        return refuse(501,
            QStringLiteral("method %1 is not brokered (only GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS)")
                .arg(QString::fromLatin1(method.first(std::min<qsizetype>(method.size(), 32)))));
    if (version != "HTTP/1.1")
        return version.startsWith("HTTP/")
            ? refuse(505, QStringLiteral("only HTTP/1.1 is brokered"))
            : refuse(400, QStringLiteral("the request line is not METHOD TARGET HTTP/1.1"));
    if (target.isEmpty() || target.front() != '/' || target.size() > kMaxTarget)
        return refuse(400,
            QStringLiteral("the request's target is not a path of at most %1 KiB (origin form, as a client sends "
                           "to the host itself)")
                .arg(kMaxTarget / 1024));
    for (const char c : target)
        if (isControl(c) || c == '\t' || static_cast<unsigned char>(c) >= 0x80)
            return refuse(400, QStringLiteral("the request's target holds a control or non-ASCII byte"));
    request.method = method.toByteArray();
    request.target = target.toByteArray();
    if (auto refused = readFields(head, at + 2, request.headers, kRequestSide))
        return *refused;

    int hosts = 0;
    for (const auto &[name, value] : std::as_const(request.headers)) {
        if (name.compare("host", Qt::CaseInsensitive) != 0)
            continue;
        ++hosts;
        QByteArray named = value.toLower();
        if (named.endsWith(":443"))
            named.chop(4);
        if (named != host.toLatin1())
            return refuse(421,
                QStringLiteral("the request is for %1; this connection is to %2")
                    .arg(QString::fromLatin1(value.left(200)), host));
    }
    if (hosts != 1)
        return refuse(400, QStringLiteral("the request has %1 Host headers, not one").arg(hosts));
    if (upgrades(request.headers))
        return refuse(501, QStringLiteral("protocol upgrades (WebSocket) are not brokered"));
    if (namesHeaders(request.headers))
        return refuse(400,
            QStringLiteral("Connection may name only close and keep-alive (a header named there could be "
                           "dropped on the way and the request read otherwise)"));
    const auto body = framing(request.headers, {}, kRequestSide);
    if (const auto *r = std::get_if<Refusal>(&body))
        return *r;
    request.body = std::get<BodyFraming>(body);
    request.keepAlive = !connectionLists(request.headers, "close");
    return request;
}

ResponseParse parseResponseHead(QByteArrayView buffer, QByteArrayView method, qsizetype searched)
{
    const auto end = headEnd(buffer, searched, kResponseSide);
    if (const auto *r = std::get_if<Refusal>(&end))
        return *r;
    if (std::holds_alternative<NeedMore>(end))
        return NeedMore{};
    ResponseHead response;
    response.size = std::get<qsizetype>(end);
    const QByteArrayView head = buffer.first(response.size - 2);
    const qsizetype at = head.indexOf("\r\n");
    const QByteArrayView line = head.first(at);
    // "HTTP/1.x NNN reason"
    const bool shaped = line.size() >= 12 && (line.startsWith("HTTP/1.1 ") || line.startsWith("HTTP/1.0 "))
        && (line.size() == 12 || line[12] == ' ');
    int status = 0;
    for (qsizetype i = 9; shaped && i < 12; ++i)
        status = line[i] >= '0' && line[i] <= '9' ? status * 10 + (line[i] - '0') : -1000;
    if (!shaped || status < 100 || status > 599)
        return refuse(502, QStringLiteral("the host's answer does not start with an HTTP/1.x status line"));
    for (const char c : line.sliced(9))
        if (isControl(c))
            return refuse(502, QStringLiteral("the host's status line holds a control character"));
    response.status = status;
    if (auto refused = readFields(head, at + 2, response.headers, kResponseSide))
        return *refused;
    if (status == 101) // (CONNECT, whose 2xx would switch too, is never brokered)
        return refuse(502, QStringLiteral("the host switched protocols, which is not brokered"));
    const auto body = framing(response.headers, {BodyFraming::Kind::UntilClose, 0}, kResponseSide);
    if (const auto *r = std::get_if<Refusal>(&body))
        return *r;
    response.body = std::get<BodyFraming>(body);
    for (const auto &[name, value] : response.headers)
        if (name.compare("content-encoding", Qt::CaseInsensitive) == 0
            && value.compare("identity", Qt::CaseInsensitive) != 0)
            return refuse(502,
                QStringLiteral("the host encoded its answer (Content-Encoding: %1) though asked for identity: the "
                               "secret could pass encoded")
                    .arg(QString::fromLatin1(value.left(40))));
    response.keepAlive = line.startsWith("HTTP/1.1 ") ? !connectionLists(response.headers, "close")
                                                      : connectionLists(response.headers, "keep-alive");
    if (response.interim() || status == 204 || status == 304 || method.compare("HEAD", Qt::CaseInsensitive) == 0)
        response.body = {};
    return response;
}

bool fitsInHeaderValue(QByteArrayView value)
{
    for (const char c : value)
        if (isControl(c))
            return false;
    return trimmed(value).size() == value.size();
}

std::variant<QByteArray, Refusal> rewriteHead(const RequestHead &head, const Credential &credential, bool *substituted)
{
    if (!fitsInHeaderValue(credential.secret) || credential.placeholder.isEmpty())
        return refuse(500, QStringLiteral("the brokered secret cannot stand in a header value"));
    static const QList<QByteArrayView> kLeftOut{"accept-encoding", "te", "range", "if-range"};
    bool put = false;
    int credentials = 0;
    QByteArray out = head.method + ' ' + head.target + " HTTP/1.1\r\n";
    for (const auto &[name, value] : head.headers) {
        const QByteArray lower = name.toLower();
        if (lower.startsWith("proxy-") || kLeftOut.contains(lower))
            continue;
        QByteArray v = value;
        if (lower == "content-length") {
            v = QByteArray::number(head.body.kind == BodyFraming::Kind::Length ? head.body.length : 0);
        } else if (lower == credential.header.toLower()) {
            if (++credentials > 1)
                return refuse(400,
                    QStringLiteral("the request has more than one %1 header")
                        .arg(QString::fromLatin1(credential.header)));
            // The placeholder, or "Bearer" and the placeholder. No other scheme: one that makes the
            // host decode the value (Basic) could have it answer with a form no search looks for.
            const qsizetype at = v.indexOf(credential.placeholder);
            const bool atEnd = at >= 0 && at + credential.placeholder.size() == v.size(); // (and only there)
            const bool alone = atEnd
                && (at == 0 || (at == 7 && QByteArrayView(v).first(7).compare("Bearer ", Qt::CaseInsensitive) == 0));
            if (at >= 0 && !alone)
                return refuse(400,
                    QStringLiteral("the placeholder stands in %1 with other text around it (write it alone, or "
                                   "after Bearer: \"Bearer PLACEHOLDER\")")
                        .arg(QString::fromLatin1(credential.header)));
            if (at >= 0) {
                v.replace(at, credential.placeholder.size(), credential.secret);
                put = true;
            }
        }
        out += name + ": " + v + "\r\n";
    }
    out += "Accept-Encoding: identity\r\n\r\n";
    if (substituted)
        *substituted = put;
    return out;
}

std::optional<qsizetype> ChunkedBody::feed(QByteArrayView bytes)
{
    qsizetype used = 0;
    // The one byte a state expects next, and the state after it.
    const auto expect = [&](char wanted, State next) {
        if (bytes[used++] != wanted)
            return false;
        m_state = next;
        return true;
    };
    while (used < bytes.size() && m_state != State::Done) {
        switch (m_state) {
        case State::Size: {
            const char c = bytes[used++];
            const int v = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f'         ? c - 'a' + 10
                : c >= 'A' && c <= 'F'         ? c - 'A' + 10
                                               : -1;
            if (v >= 0 && m_digits < 15) {
                m_left = m_left * 16 + quint64(v);
                ++m_digits;
            } else if (c == '\r' && m_digits > 0) {
                m_state = State::SizeLf; // no extensions, no blanks: digits, then CRLF
            } else {
                return std::nullopt;
            }
            break;
        }
        case State::SizeLf:
            if (!expect('\n', m_left == 0 ? State::End : State::Data))
                return std::nullopt;
            m_digits = 0;
            break;
        case State::Data: {
            const qsizetype take = qsizetype(std::min<quint64>(m_left, quint64(bytes.size() - used)));
            used += take;
            m_left -= quint64(take);
            if (m_left == 0)
                m_state = State::DataCr;
            break;
        }
        case State::DataCr:
            if (!expect('\r', State::DataLf))
                return std::nullopt;
            break;
        case State::DataLf:
            if (!expect('\n', State::Size))
                return std::nullopt;
            break;
        case State::End: // no trailers: the blank line at once
            if (!expect('\r', State::EndLf))
                return std::nullopt;
            break;
        case State::EndLf:
            if (!expect('\n', State::Done))
                return std::nullopt;
            break;
        case State::Done:
            break;
        }
    }
    return used;
}

BodyReader::BodyReader(BodyFraming framing)
    : m_framing(framing)
    , m_left(framing.length)
{
}

std::optional<BodyReader::Step> BodyReader::feed(QByteArrayView bytes, bool closed)
{
    switch (m_framing.kind) {
    case BodyFraming::Kind::Length: {
        const auto take = qsizetype(std::min<quint64>(m_left, quint64(bytes.size())));
        m_left -= quint64(take);
        return Step{take, m_left == 0};
    }
    case BodyFraming::Kind::Chunked: {
        const auto take = m_chunks.feed(bytes);
        if (!take)
            return std::nullopt;
        return Step{*take, m_chunks.done()};
    }
    case BodyFraming::Kind::UntilClose:
        return Step{bytes.size(), closed};
    case BodyFraming::Kind::None:
        break;
    }
    return Step{0, true};
}

} // namespace airlock::net::http
