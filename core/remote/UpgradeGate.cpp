// SPDX-License-Identifier: Apache-2.0
#include "remote/UpgradeGate.h"

#include "util/HttpText.h"

namespace airlock::remote {

namespace {
GateDecision refuse(int status, const QString &reason)
{
    return {std::nullopt, status, reason.toUtf8()};
}

Error malformed(const QString &what)
{
    return makeError(ErrorCode::ProtocolError, QStringLiteral("malformed request head: %1").arg(what));
}
} // namespace

Result<UpgradeRequest> parseRequestHead(const QByteArray &head)
{
    if (head.size() > kMaxRequestHead || !head.endsWith("\r\n\r\n"))
        return malformed(QStringLiteral("the head must end in a blank line within %1 bytes").arg(kMaxRequestHead));
    // Strictly HTTP/1.1 as RFC 9112 writes it: every line ends in CRLF, no folded header lines, the
    // version exactly (what a proxy in front reads otherwise can differ from what is read here).
    if (!http::onlyCrlf(head))
        return malformed(QStringLiteral("a line of the head ends otherwise than with CRLF (a bare CR or LF)"));
    const QList<QByteArray> lines = head.left(head.size() - 4).split('\n');
    const auto withoutCr = [](const QByteArray &line) { return line.endsWith('\r') ? line.chopped(1) : line; };
    UpgradeRequest r;
    const QList<QByteArray> requestLine = withoutCr(lines.constFirst()).split(' ');
    if (requestLine.size() != 3 || requestLine.at(2) != "HTTP/1.1")
        return malformed(QStringLiteral("expected 'METHOD TARGET HTTP/1.1' (HTTP/1.1 exactly)"));
    r.method = requestLine.at(0);
    r.target = requestLine.at(1);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray line = withoutCr(lines.at(i));
        if (line.startsWith(' ') || line.startsWith('\t'))
            return malformed(QStringLiteral("a folded header line (obsolete)"));
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            return malformed(QStringLiteral("a header line without a name"));
        const QByteArray name = line.left(colon).trimmed().toLower();
        for (char c : name)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-'))
                return malformed(QStringLiteral("a header name with '%1'").arg(QLatin1Char(c)));
        if (r.headers.contains(name))
            return malformed(QStringLiteral("header '%1' given twice").arg(QString::fromLatin1(name)));
        r.headers.insert(name, line.mid(colon + 1).trimmed());
    }
    return r;
}

GateDecision checkUpgrade(const UpgradeRequest &request, const GateConfig &config, TokenStore &tokens)
{
    if (request.method != "GET")
        return refuse(405, QStringLiteral("only GET upgrades to a WebSocket"));
    if (request.target.contains('?'))
        return refuse(
            400, QStringLiteral("the URL takes no query: a token goes in the Authorization header, never in a URL"));
    if (request.target != "/")
        return refuse(404, QStringLiteral("the daemon answers at / only"));
    const QString host = QString::fromLatin1(request.headers.value("host")).toLower();
    if (host.isEmpty() || !config.hosts.contains(host))
        return refuse(421,
            QStringLiteral("Host '%1' does not name this daemon (start airlockd with --allow-host NAME to accept it)")
                .arg(host.left(100)));
    if (request.headers.contains("origin")
        && !config.origins.contains(QString::fromLatin1(request.headers.value("origin"))))
        return refuse(403,
            QStringLiteral("foreign Origin '%1': web pages may not drive the daemon")
                .arg(QString::fromLatin1(request.headers.value("origin").left(100))));
    if (request.headers.value("upgrade").toLower() != "websocket")
        return refuse(426, QStringLiteral("expected a WebSocket upgrade"));
    const QByteArray authorization = request.headers.value("authorization");
    if (authorization.isEmpty())
        return refuse(401, QStringLiteral("no token: send 'Authorization: Bearer alk_…' (airlockd token create)"));
    if (!authorization.startsWith("Bearer "))
        return refuse(401, QStringLiteral("expected 'Authorization: Bearer alk_…'"));
    auto grant = tokens.verify(authorization.mid(7).trimmed());
    if (!grant)
        return refuse(401, grant.error().message);
    return {*grant, 101, {}};
}

void AuthLimiter::prune(const QString &peer, qint64 nowMs)
{
    auto it = m_failures.find(peer);
    if (it == m_failures.end())
        return;
    while (!it->empty() && nowMs - it->front() > kWindowMs)
        it->pop_front();
    if (it->empty())
        m_failures.erase(it);
}

bool AuthLimiter::blocked(const QString &peer, qint64 nowMs)
{
    prune(peer, nowMs);
    return m_failures.value(peer).size() >= size_t(kMaxFailures);
}

void AuthLimiter::failed(const QString &peer, qint64 nowMs)
{
    if (m_failures.size() > 10000) // many addresses: forget the quiet ones
        for (const QString &p : m_failures.keys())
            prune(p, nowMs);
    auto &times = m_failures[peer];
    times.push_back(nowMs);
    while (times.size() > size_t(kMaxFailures))
        times.pop_front();
}

qint64 AuthLimiter::retryAfterMs(const QString &peer, qint64 nowMs)
{
    const auto times = m_failures.value(peer);
    return times.empty() ? 0 : std::max<qint64>(0, kWindowMs - (nowMs - times.front()));
}

} // namespace airlock::remote
