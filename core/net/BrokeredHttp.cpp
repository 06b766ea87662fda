// SPDX-License-Identifier: Apache-2.0
#include "net/BrokeredHttp.h"

namespace airlock::net::http {

namespace {
constexpr qsizetype kMaxTarget = 8 * 1024;
constexpr qsizetype kMaxChunkLine = 8 * 1024;
constexpr qsizetype kMaxTrailers = 8 * 1024;

bool isTchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
}

bool isToken(QByteArrayView s)
{
    if (s.isEmpty())
        return false;
    for (const char c : s)
        if (!isTchar(c))
            return false;
    return true;
}

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
bool onlyCrlf(QByteArrayView s)
{
    for (qsizetype i = 0; i < s.size(); ++i) {
        if (s[i] == '\r' && (i + 1 >= s.size() || s[i + 1] != '\n'))
            return false;
        if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
            return false;
    }
    return true;
}

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
} // namespace

HeadParse parseRequestHead(QByteArrayView buffer, const QString &host)
{
    const qsizetype end = buffer.first(std::min(buffer.size(), kMaxHead)).indexOf("\r\n\r\n");
    if (end < 0) {
        if (buffer.size() >= kMaxHead)
            return refuse(431, QStringLiteral("the request's head is larger than %1 KiB").arg(kMaxHead / 1024));
        return NeedMore{};
    }
    const QByteArrayView head = buffer.first(end + 2); // each line with its CRLF
    if (!onlyCrlf(head))
        return refuse(400, QStringLiteral("a line in the request's head ends otherwise than with CRLF"));
    RequestHead request;
    request.size = end + 4;
    qsizetype at = head.indexOf("\r\n");
    const QByteArrayView line = head.first(at);
    const qsizetype sp1 = line.indexOf(' '), sp2 = sp1 < 0 ? -1 : line.indexOf(' ', sp1 + 1);
    if (sp1 < 0 || sp2 < 0 || line.indexOf(' ', sp2 + 1) >= 0)
        return refuse(400, QStringLiteral("the request line is not METHOD TARGET HTTP/1.1"));
    const QByteArrayView method = line.first(sp1), target = line.sliced(sp1 + 1, sp2 - sp1 - 1),
                         version = line.sliced(sp2 + 1);
    if (!isToken(method))
        return refuse(400, QStringLiteral("the request's method is not a token"));
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
        if (isControl(c) || static_cast<unsigned char>(c) >= 0x80)
            return refuse(400, QStringLiteral("the request's target holds a control or non-ASCII byte"));
    request.method = method.toByteArray();
    request.target = target.toByteArray();

    int hosts = 0, lengths = 0, codings = 0;
    for (at += 2; at < head.size();) {
        const qsizetype next = head.indexOf("\r\n", at);
        const QByteArrayView field = head.sliced(at, next - at);
        at = next + 2;
        if (field.front() == ' ' || field.front() == '\t')
            return refuse(400, QStringLiteral("a header line is folded onto the one before"));
        const qsizetype colon = field.indexOf(':');
        if (colon < 0 || !isToken(field.first(colon)))
            return refuse(400, QStringLiteral("a header line is not NAME: VALUE (no blank before the colon)"));
        const QByteArrayView name = field.first(colon), value = trimmed(field.sliced(colon + 1));
        for (const char c : value)
            if (isControl(c))
                return refuse(
                    400, QStringLiteral("header %1 holds a control character").arg(QString::fromLatin1(name)));
        if (request.headers.size() == kMaxHeaders)
            return refuse(431, QStringLiteral("the request has more than %1 headers").arg(kMaxHeaders));
        request.headers.append({name.toByteArray(), value.toByteArray()});
        if (name.compare("host", Qt::CaseInsensitive) == 0) {
            ++hosts;
            QByteArray named = value.toByteArray().toLower();
            if (named.endsWith(":443"))
                named.chop(4);
            if (named != host.toLatin1())
                return refuse(421,
                    QStringLiteral("the request is for %1; this connection is to %2")
                        .arg(QString::fromLatin1(value.first(std::min<qsizetype>(value.size(), 200))), host));
        } else if (name.compare("content-length", Qt::CaseInsensitive) == 0) {
            ++lengths;
            bool ok = value.size() <= 18 && !value.isEmpty();
            for (const char c : value)
                ok = ok && c >= '0' && c <= '9';
            if (!ok)
                return refuse(400, QStringLiteral("Content-Length is not a number of at most 18 digits"));
            request.body = {BodyFraming::Kind::Length, value.toULongLong()};
        } else if (name.compare("transfer-encoding", Qt::CaseInsensitive) == 0) {
            ++codings;
            if (value.compare("chunked", Qt::CaseInsensitive) != 0)
                return refuse(501, QStringLiteral("only Transfer-Encoding: chunked is brokered"));
            request.body = {BodyFraming::Kind::Chunked, 0};
        } else if (name.compare("upgrade", Qt::CaseInsensitive) == 0
            || (name.compare("connection", Qt::CaseInsensitive) == 0 && listsToken(value, "upgrade"))) {
            return refuse(501, QStringLiteral("protocol upgrades (WebSocket) are not brokered"));
        }
    }
    if (hosts != 1)
        return refuse(400, QStringLiteral("the request has %1 Host headers, not one").arg(hosts));
    if (lengths > 1 || codings > 1)
        return refuse(400, QStringLiteral("the request repeats Content-Length or Transfer-Encoding"));
    if (lengths && codings)
        return refuse(400,
            QStringLiteral(
                "the request has both Content-Length and Transfer-Encoding: its body could be read two ways"));
    if (request.body.kind == BodyFraming::Kind::Length && request.body.length == 0)
        request.body = {};
    return request;
}

bool fitsInHeaderValue(QByteArrayView value)
{
    for (const char c : value)
        if (isControl(c))
            return false;
    return trimmed(value).size() == value.size();
}

QByteArray rewriteHead(const RequestHead &head, const Credential &credential, int *substituted)
{
    int count = 0;
    QByteArray out = head.method + ' ' + head.target + " HTTP/1.1\r\n";
    for (const auto &[name, value] : head.headers) {
        if (name.toLower().startsWith("proxy-") || name.compare("accept-encoding", Qt::CaseInsensitive) == 0)
            continue;
        QByteArray v = value;
        if (!credential.placeholder.isEmpty() && name.compare(credential.header, Qt::CaseInsensitive) == 0) {
            count += int(v.count(credential.placeholder));
            v.replace(credential.placeholder, credential.secret);
        }
        out += name + ": " + v + "\r\n";
    }
    out += "Accept-Encoding: identity\r\n\r\n";
    if (substituted)
        *substituted = count;
    return out;
}

std::optional<qsizetype> ChunkedBody::feed(QByteArrayView bytes)
{
    qsizetype used = 0;
    while (used < bytes.size() && m_state != State::Done) {
        const char c = bytes[used];
        switch (m_state) {
        case State::Size:
        case State::Trailer: {
            ++used;
            m_line.append(c);
            if (m_state == State::Trailer && ++m_trailerBytes > kMaxTrailers)
                return std::nullopt;
            if (m_line.size() > kMaxChunkLine)
                return std::nullopt;
            if (c != '\n')
                break;
            if (!m_line.endsWith("\r\n") || !onlyCrlf(m_line))
                return std::nullopt;
            const QByteArrayView line = QByteArrayView(m_line).chopped(2);
            if (m_state == State::Trailer) {
                if (line.isEmpty())
                    m_state = State::Done;
                else if (line.indexOf(':') <= 0 || !isToken(line.first(line.indexOf(':'))))
                    return std::nullopt;
                m_line.clear();
                break;
            }
            const qsizetype ext = line.indexOf(';');
            const QByteArrayView digits = ext < 0 ? line : line.first(ext);
            if (digits.isEmpty() || digits.size() > 15)
                return std::nullopt;
            quint64 size = 0;
            for (const char d : digits) {
                const int v = d >= '0' && d <= '9' ? d - '0'
                    : d >= 'a' && d <= 'f'         ? d - 'a' + 10
                    : d >= 'A' && d <= 'F'         ? d - 'A' + 10
                                                   : -1;
                if (v < 0)
                    return std::nullopt;
                size = size * 16 + quint64(v);
            }
            if (ext >= 0)
                for (const char e : line.sliced(ext))
                    if (isControl(e))
                        return std::nullopt;
            m_line.clear();
            m_left = size;
            m_state = size == 0 ? State::Trailer : State::Data;
            break;
        }
        case State::Data: {
            const qsizetype take = qsizetype(std::min<quint64>(m_left, quint64(bytes.size() - used)));
            used += take;
            m_left -= quint64(take);
            if (m_left == 0) {
                m_state = State::DataEnd;
                m_dataEndSeen = 0;
            }
            break;
        }
        case State::DataEnd:
            if (c != (m_dataEndSeen == 0 ? '\r' : '\n'))
                return std::nullopt;
            ++used;
            if (++m_dataEndSeen == 2)
                m_state = State::Size;
            break;
        case State::Done:
            break;
        }
    }
    return used;
}

} // namespace airlock::net::http
