// SPDX-License-Identifier: Apache-2.0
#include "net/ProxyHandshake.h"
#include "net/BrokeredHttp.h"

#include <QList>

namespace airlock::net {

namespace {
constexpr char kSocksVersion = 0x05;

// Bytes a host or authority may never contain: whitespace, controls and URL delimiters.
bool cleanHost(QByteArrayView host)
{
    if (host.isEmpty() || host.size() > 255)
        return false;
    for (char c : host) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7f || c == '/' || c == '@' || c == '?' || c == '#' || c == '\\' || c == '%')
            return false;
    }
    return true;
}

std::optional<quint16> parsePort(QByteArrayView digits)
{
    if (digits.isEmpty() || digits.size() > 5)
        return std::nullopt;
    uint port = 0;
    for (char c : digits) {
        if (c < '0' || c > '9')
            return std::nullopt;
        port = port * 10 + uint(c - '0');
    }
    if (port == 0 || port > 65535)
        return std::nullopt;
    return quint16(port);
}

// "host:port", "[v6]:port"; without a port, defaultPort (0: a port is required).
std::optional<std::pair<QByteArray, quint16>> parseAuthority(QByteArrayView authority, quint16 defaultPort)
{
    QByteArrayView host = authority;
    QByteArrayView port;
    if (authority.startsWith('[')) {
        const qsizetype close = authority.indexOf(']');
        if (close < 0)
            return std::nullopt;
        host = authority.first(close + 1);
        const QByteArrayView rest = authority.sliced(close + 1);
        if (!rest.isEmpty()) {
            if (!rest.startsWith(':'))
                return std::nullopt;
            port = rest.sliced(1);
        }
    } else if (const qsizetype colon = authority.lastIndexOf(':'); colon >= 0) {
        host = authority.first(colon);
        port = authority.sliced(colon + 1);
    }
    if (!cleanHost(host))
        return std::nullopt;
    std::optional<quint16> p = port.isEmpty() && !authority.endsWith(':') && defaultPort
        ? std::optional<quint16>(defaultPort)
        : parsePort(port);
    if (!p)
        return std::nullopt;
    return std::pair{host.toByteArray(), *p};
}

// Hop-by-hop headers are the proxy's, not the destination's.
bool hopByHop(QByteArrayView name)
{
    for (const char *h : {"connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
             "te", "trailer", "upgrade"})
        if (name.compare(QByteArrayView(h), Qt::CaseInsensitive) == 0)
            return true;
    return false;
}

// "example.com:80" and "EXAMPLE.com" name the same origin for a default port of 80.
QByteArray originKey(QByteArrayView authority)
{
    QByteArray a = authority.toByteArray().toLower();
    if (a.endsWith(":80"))
        a.chop(3);
    return a;
}

QByteArray printable(const QString &text)
{
    QByteArray out = text.toUtf8();
    for (char &c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    return out;
}
} // namespace

QString proxyProtocolName(ProxyProtocol protocol)
{
    switch (protocol) {
    case ProxyProtocol::HttpConnect:
        return QStringLiteral("http-connect");
    case ProxyProtocol::HttpForward:
        return QStringLiteral("http");
    case ProxyProtocol::Socks5:
        return QStringLiteral("socks5");
    }
    return {};
}

ProxyHandshake::Step ProxyHandshake::fail(const QString &error)
{
    m_done = true;
    Step s;
    s.error = error;
    s.reply = m_protocol && (*m_protocol != ProxyProtocol::Socks5 || m_socksMethodChosen)
        ? failure(ProxyFailure::BadRequest, error)
        : QByteArray();
    return s;
}

ProxyHandshake::Step ProxyHandshake::feed(QByteArrayView data)
{
    if (m_done)
        return {};
    m_buf.append(data);
    if (m_buf.isEmpty())
        return {};
    if (!m_protocol)
        m_protocol = m_buf.at(0) == kSocksVersion ? ProxyProtocol::Socks5 : ProxyProtocol::HttpConnect; // refined below
    return *m_protocol == ProxyProtocol::Socks5 ? parseSocks() : parseHttp();
}

ProxyHandshake::Step ProxyHandshake::parseHttp()
{
    const qsizetype end = m_buf.indexOf("\r\n\r\n");
    if (end < 0) {
        if (m_buf.size() > kMaxHead)
            return fail(QStringLiteral("the request head is longer than %1 bytes").arg(kMaxHead));
        return {};
    }
    if (end > kMaxHead)
        return fail(QStringLiteral("the request head is longer than %1 bytes").arg(kMaxHead));
    const QByteArrayView head = QByteArrayView(m_buf).first(end);
    if (head.contains('\0'))
        return fail(QStringLiteral("the request head contains a NUL byte"));
    QList<QByteArrayView> lines;
    for (qsizetype from = 0;;) {
        const qsizetype eol = head.indexOf("\r\n", from);
        const QByteArrayView line = head.sliced(from, (eol < 0 ? head.size() : eol) - from);
        if (line.contains('\r') || line.contains('\n'))
            return fail(QStringLiteral("the request head has a bare CR or LF"));
        lines.append(line);
        if (eol < 0)
            break;
        from = eol + 2;
    }
    const QList<QByteArrayView> parts = [&] {
        QList<QByteArrayView> p;
        for (qsizetype from = 0;;) {
            const qsizetype sp = lines[0].indexOf(' ', from);
            p.append(lines[0].sliced(from, (sp < 0 ? lines[0].size() : sp) - from));
            if (sp < 0)
                return p;
            from = sp + 1;
        }
    }();
    if (parts.size() != 3 || !http::isToken(parts[0]) || (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0"))
        return fail(QStringLiteral(
            "expected a request line like 'CONNECT host:443 HTTP/1.1' or 'GET http://host/path HTTP/1.1'"));
    const QByteArrayView method = parts[0], requestTarget = parts[1], version = parts[2];

    QList<std::pair<QByteArrayView, QByteArrayView>> headers;
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArrayView line = lines[i];
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0 || !http::isToken(line.first(colon)))
            return fail(QStringLiteral("malformed header line %1 (folded lines and spaces before ':' are not accepted)")
                            .arg(i + 1));
        headers.append({line.first(colon), line.sliced(colon + 1).trimmed()});
    }
    const QByteArrayView early = QByteArrayView(m_buf).sliced(end + 4);

    ProxyTarget target;
    if (method == "CONNECT") {
        auto authority = parseAuthority(requestTarget, 0);
        if (!authority)
            return fail(QStringLiteral("CONNECT needs host:port (a name or address, and a port from 1 to 65535)"));
        target.protocol = ProxyProtocol::HttpConnect;
        target.host = QString::fromUtf8(authority->first);
        target.port = authority->second;
        target.upstreamFirst = early.toByteArray();
    } else {
        m_protocol = ProxyProtocol::HttpForward;
        if (!requestTarget.startsWith("http://") && !requestTarget.startsWith("HTTP://"))
            return fail(requestTarget.startsWith("https://")
                    ? QStringLiteral("https:// goes through CONNECT, not a plain request")
                    : QStringLiteral("a proxy request needs an absolute http:// URL or CONNECT"));
        const QByteArrayView rest = requestTarget.sliced(7);
        qsizetype pathAt = 0;
        while (pathAt < rest.size() && rest[pathAt] != '/' && rest[pathAt] != '?')
            ++pathAt;
        const QByteArrayView authorityText = rest.first(pathAt);
        if (authorityText.contains('@'))
            return fail(QStringLiteral("user names and passwords in proxy URLs are not accepted"));
        auto authority = parseAuthority(authorityText, 80);
        if (!authority)
            return fail(QStringLiteral("the URL's host or port is malformed"));
        QByteArray path = rest.sliced(pathAt).toByteArray();
        if (path.contains('#'))
            return fail(QStringLiteral("a request target cannot carry a fragment"));
        if (path.isEmpty() || path.startsWith('?'))
            path.prepend('/');
        int hostHeaders = 0;
        qint64 contentLength = -1;
        QByteArray out = method.toByteArray() + ' ' + path + ' ' + version.toByteArray() + "\r\n";
        for (const auto &[name, value] : std::as_const(headers)) {
            // The body is relayed by its declared length and not a byte more, so nothing after it
            // (a second request, for another host) can ride along.
            if (name.compare("transfer-encoding", Qt::CaseInsensitive) == 0)
                return fail(QStringLiteral("request bodies in chunks are not relayed; send a Content-Length"));
            if (name.compare("content-length", Qt::CaseInsensitive) == 0) {
                bool ok = false;
                const qint64 n = value.toByteArray().toLongLong(&ok);
                if (!ok || n < 0 || (contentLength >= 0 && contentLength != n))
                    return fail(QStringLiteral("the Content-Length header is malformed"));
                contentLength = n;
            }
            if (name.compare("host", Qt::CaseInsensitive) == 0) {
                // The Host header must name the destination we decide on: the server routes by it.
                if (++hostHeaders > 1 || originKey(value) != originKey(authorityText))
                    return fail(QStringLiteral("the Host header does not match the request target"));
            }
            if (hopByHop(name))
                continue;
            out += name.toByteArray() + ": " + value.toByteArray() + "\r\n";
        }
        if (hostHeaders == 0)
            out += "Host: " + authorityText.toByteArray() + "\r\n";
        // One request per connection: a reused connection would reach this destination, whatever
        // the next request's URL says.
        out += "Connection: close\r\n\r\n";
        target.protocol = ProxyProtocol::HttpForward;
        target.host = QString::fromUtf8(authority->first);
        target.port = authority->second;
        const qint64 body = std::max<qint64>(contentLength, 0);
        target.upstreamFirst = out + early.first(std::min<qint64>(early.size(), body)).toByteArray();
        target.upstreamLimit = body - std::min<qint64>(early.size(), body);
    }
    m_done = true;
    m_buf.clear();
    Step s;
    s.target = std::move(target);
    return s;
}

ProxyHandshake::Step ProxyHandshake::parseSocks()
{
    // The method choice goes out first, whatever follows it in the same read.
    QByteArray chosen;
    Step step = parseSocksRequest(chosen);
    step.reply.prepend(chosen);
    return step;
}

ProxyHandshake::Step ProxyHandshake::parseSocksRequest(QByteArray &chosen)
{
    Step step;
    if (!m_socksMethodChosen) {
        if (m_buf.size() < 2)
            return {};
        const int methods = static_cast<unsigned char>(m_buf.at(1));
        if (m_buf.size() < 2 + methods)
            return {};
        if (methods == 0 || !QByteArrayView(m_buf).sliced(2, methods).contains('\0')) {
            Step s = fail(QStringLiteral("SOCKS5 clients must offer 'no authentication'"));
            s.reply = QByteArray("\x05\xff", 2);
            return s;
        }
        m_socksMethodChosen = true;
        chosen = QByteArray("\x05\x00", 2);
        m_buf.remove(0, 2 + methods);
    }
    if (m_buf.size() < 4)
        return step;
    const auto byte = [&](qsizetype i) { return static_cast<unsigned char>(m_buf.at(i)); };
    if (byte(0) != 5 || byte(2) != 0)
        return fail(QStringLiteral("malformed SOCKS5 request"));
    if (byte(1) != 1) {
        Step s = fail(QStringLiteral("only SOCKS5 CONNECT is supported (not BIND or UDP ASSOCIATE)"));
        s.reply = QByteArray("\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00", 10);
        return s;
    }
    qsizetype need = 0;
    QString host;
    switch (byte(3)) {
    case 1:
        need = 4 + 4 + 2;
        if (m_buf.size() < need)
            return step;
        host = QStringLiteral("%1.%2.%3.%4").arg(byte(4)).arg(byte(5)).arg(byte(6)).arg(byte(7));
        break;
    case 3: {
        if (m_buf.size() < 5)
            return step;
        const int len = byte(4);
        need = 5 + len + 2;
        if (m_buf.size() < need)
            return step;
        const QByteArrayView name = QByteArrayView(m_buf).sliced(5, len);
        if (!cleanHost(name) || name.contains(':') || name.startsWith('['))
            return fail(QStringLiteral("the SOCKS5 host name is malformed"));
        host = QString::fromUtf8(name);
        break;
    }
    case 4: {
        need = 4 + 16 + 2;
        if (m_buf.size() < need)
            return step;
        QString v6;
        for (int i = 0; i < 16; i += 2)
            v6 += (i ? QStringLiteral(":") : QString()) + QString::number(byte(4 + i) << 8 | byte(5 + i), 16);
        host = QLatin1Char('[') + v6 + QLatin1Char(']');
        break;
    }
    default: {
        Step s = fail(QStringLiteral("unknown SOCKS5 address type %1").arg(byte(3)));
        s.reply = QByteArray("\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00", 10);
        return s;
    }
    }
    const quint16 port = quint16(byte(need - 2) << 8 | byte(need - 1));
    if (port == 0)
        return fail(QStringLiteral("SOCKS5 port 0"));
    ProxyTarget target;
    target.protocol = ProxyProtocol::Socks5;
    target.host = host;
    target.port = port;
    target.upstreamFirst = m_buf.sliced(need);
    m_done = true;
    m_buf.clear();
    step.target = std::move(target);
    return step;
}

QByteArray ProxyHandshake::success() const
{
    if (m_protocol == ProxyProtocol::Socks5)
        return QByteArray("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
    if (m_protocol == ProxyProtocol::HttpConnect)
        return "HTTP/1.1 200 Connection established\r\n\r\n";
    return {};
}

QByteArray ProxyHandshake::failure(ProxyFailure failure, const QString &detail) const
{
    if (m_protocol == ProxyProtocol::Socks5) {
        if (!m_socksMethodChosen)
            return {};
        char code = 0x01;
        switch (failure) {
        case ProxyFailure::BadRequest:
            code = 0x01;
            break;
        case ProxyFailure::Denied:
            code = 0x02;
            break;
        case ProxyFailure::Unreachable:
            code = 0x04;
            break;
        case ProxyFailure::Refused:
            code = 0x05;
            break;
        case ProxyFailure::TimedOut:
            code = 0x04;
            break;
        }
        QByteArray r("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
        r[1] = code;
        return r;
    }
    const char *status = "400 Bad Request";
    switch (failure) {
    case ProxyFailure::BadRequest:
        status = "400 Bad Request";
        break;
    case ProxyFailure::Denied:
        status = "403 Forbidden";
        break;
    case ProxyFailure::Unreachable:
    case ProxyFailure::Refused:
        status = "502 Bad Gateway";
        break;
    case ProxyFailure::TimedOut:
        status = "504 Gateway Timeout";
        break;
    }
    const QByteArray body = "airlock: " + printable(detail) + "\n";
    return "HTTP/1.1 " + QByteArray(status) + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
        + QByteArray::number(body.size()) + "\r\nConnection: close\r\nX-Airlock: "
        + (failure == ProxyFailure::Denied ? "denied" : "failed") + "\r\n\r\n" + body;
}

} // namespace airlock::net
