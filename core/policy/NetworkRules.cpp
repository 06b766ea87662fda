// SPDX-License-Identifier: Apache-2.0
#include "policy/NetworkRules.h"

#include "policy/Policy.h"

#include <QUrl>

#include <arpa/inet.h>

namespace airlock::policy {

namespace {
NetworkVerdict verdict(Decision d, const QString &rule, const QString &reason, const QString &host, bool ip)
{
    return {d, rule, reason, host, ip, false, {}};
}

// "[v6]" or "v4" as rules write addresses.
QString canonical(const QHostAddress &a)
{
    return a.protocol() == QAbstractSocket::IPv6Protocol ? QLatin1Char('[') + a.toString() + QLatin1Char(']')
                                                         : a.toString();
}
} // namespace

QJsonObject NetworkVerdict::toJson() const
{
    return {{QStringLiteral("decision"), decisionName(decision)}, {QStringLiteral("rule"), rule},
        {QStringLiteral("reason"), reason}, {QStringLiteral("host"), host}, {QStringLiteral("ipLiteral"), ipLiteral},
        {QStringLiteral("wildcard"), wildcard},
        {QStringLiteral("lookupRule"), lookupRule.isEmpty() ? QJsonValue() : QJsonValue(lookupRule)}};
}

std::optional<QHostAddress> NetworkRules::parseAddress(const QString &host)
{
    QString h = host;
    if (h.startsWith(QLatin1Char('[')) && h.endsWith(QLatin1Char(']')))
        h = h.mid(1, h.size() - 2);
    if (h.contains(QLatin1Char(':'))) {
        QHostAddress v6(h);
        if (v6.protocol() != QAbstractSocket::IPv6Protocol)
            return std::nullopt;
        bool mapped = false;
        const quint32 v4 = v6.toIPv4Address(&mapped);
        return mapped ? QHostAddress(v4) : v6; // ::ffff:a.b.c.d is a.b.c.d, for rules and ranges alike
    }
    // inet_aton accepts every spelling a client library might: 2130706433, 0x7f.1, 0177.0.0.1.
    in_addr addr{};
    const QByteArray latin = h.toLatin1();
    if (h.isEmpty() || latin.contains('\0') || ::inet_aton(latin.constData(), &addr) == 0)
        return std::nullopt;
    return QHostAddress(ntohl(addr.s_addr));
}

bool NetworkRules::isSpecialAddress(const QHostAddress &address)
{
    bool mapped = false;
    const quint32 v4 = address.toIPv4Address(&mapped); // also for ::ffff:a.b.c.d
    if (address.protocol() == QAbstractSocket::IPv4Protocol || mapped) {
        struct Range {
            quint32 net;
            int bits;
        };
        static const Range ranges[] = {
            {0x00000000, 8},
            {0x0a000000, 8},
            {0x64400000, 10},
            {0x7f000000, 8},
            {0xa9fe0000, 16},
            {0xac100000, 12},
            {0xc0000000, 24},
            {0xc0000200, 24},
            {0xc0a80000, 16},
            {0xc6120000, 15},
            {0xc6336400, 24},
            {0xcb007100, 24},
            {0xe0000000, 4},
            {0xf0000000, 4},
        };
        for (const Range &r : ranges)
            if ((v4 >> (32 - r.bits)) == (r.net >> (32 - r.bits)))
                return true;
        return false;
    }
    if (address.protocol() != QAbstractSocket::IPv6Protocol)
        return true; // nothing else is a destination
    const Q_IPV6ADDR b = address.toIPv6Address();
    const auto zero
        = [&](int from, int to) { return std::all_of(b.c + from, b.c + to, [](quint8 x) { return x == 0; }); };
    // ::/96 holds ::, ::1 and the IPv4-compatible ::a.b.c.d; ::ffff:0:a.b.c.d is SIIT's IPv4.
    const bool embedsOrIsLocal = zero(0, 12) || (zero(0, 8) && b.c[8] == 0xff && b.c[9] == 0xff && zero(10, 12));
    const bool ula = (b.c[0] & 0xfe) == 0xfc; // fc00::/7
    const bool siteLocal = b.c[0] == 0xfe && (b.c[1] & 0xc0) == 0xc0; // fec0::/10
    const bool linkLocal = b.c[0] == 0xfe && (b.c[1] & 0xc0) == 0x80; // fe80::/10
    const bool teredo = b.c[0] == 0x20 && b.c[1] == 0x01 && b.c[2] == 0 && b.c[3] == 0; // 2001::/32 embeds IPv4
    const bool discard = b.c[0] == 0x01 && zero(1, 8); // 100::/64
    const bool multicast = b.c[0] == 0xff;
    const bool documentation = b.c[0] == 0x20 && b.c[1] == 0x01 && b.c[2] == 0x0d && b.c[3] == 0xb8;
    const bool nat64 = b.c[0] == 0x00 && b.c[1] == 0x64 && b.c[2] == 0xff && b.c[3] == 0x9b; // 64:ff9b::/96
    const bool sixToFour = b.c[0] == 0x20 && b.c[1] == 0x02; // 2002::/16 embeds IPv4
    return embedsOrIsLocal || ula || siteLocal || linkLocal || teredo || discard || multicast || documentation || nat64
        || sixToFour;
}

bool NetworkRules::named(const QString &pattern, const QString &host, quint16 port) const
{
    QString p = pattern;
    const qsizetype colon = p.lastIndexOf(QLatin1Char(':'));
    if (colon > 0 && !p.endsWith(QLatin1Char(']'))) {
        if (p.mid(colon + 1).toUInt() != port)
            return false;
        p.truncate(colon);
    }
    if (p.startsWith(QLatin1String("*.")))
        return host.size() > p.size() - 1 && host.endsWith(p.mid(1)); // sub.example.com, never example.com
    return p == host;
}

const QString *NetworkRules::firstMatch(const QStringList &patterns, const QString &host, quint16 port) const
{
    for (const QString &p : patterns)
        if (named(p, host, port))
            return &p;
    return nullptr;
}

NetworkVerdict NetworkRules::evaluate(const QString &rawHost, quint16 port) const
{
    if (m_mode == QLatin1String("none"))
        return verdict(
            Decision::Deny, QStringLiteral("mode none"), QStringLiteral("this sandbox has no network"), rawHost, false);
    const std::optional<QHostAddress> ip = parseAddress(rawHost);
    QString host;
    if (ip) {
        host = canonical(*ip);
    } else {
        auto normal = normaliseHostPattern(rawHost);
        if (!normal || normal->startsWith(QLatin1String("*.")) || normal->contains(QLatin1Char(':')))
            return verdict(Decision::Deny, QStringLiteral("-"),
                QStringLiteral("'%1' is not a host name").arg(rawHost.left(200)), rawHost, false);
        host = *normal;
    }
    if (m_mode == QLatin1String("full"))
        return verdict(Decision::Allow, QStringLiteral("mode full"),
            QStringLiteral("this sandbox has the host network"), host, bool(ip));
    if (const QString *deny = firstMatch(m_deny, host, port))
        return verdict(Decision::Deny, *deny,
            QStringLiteral("%1:%2 matches deny rule '%3'").arg(host).arg(port).arg(*deny), host, bool(ip));
    if (ip) {
        // An address is reachable only when a rule names it; names never cover addresses.
        if (const QString *allow = firstMatch(m_allow, host, port))
            return verdict(Decision::Allow, *allow,
                QStringLiteral("%1:%2 matches rule '%3'").arg(host).arg(port).arg(*allow), host, true);
        return verdict(Decision::Deny, QStringLiteral("ip literal"),
            QStringLiteral("%1 is an address%2 and no rule names it")
                .arg(host, isSpecialAddress(*ip) ? QStringLiteral(" in a refused range") : QString()),
            host, true);
    }
    // A rule that names the host beats a wildcard: the person wrote that name, so it may be looked up.
    const QString *allow = nullptr;
    for (const QString &p : m_allow)
        if (named(p, host, port)
            && (!allow || (allow->startsWith(QLatin1String("*.")) && !p.startsWith(QLatin1String("*.")))))
            allow = &p;
    if (allow) {
        NetworkVerdict v = verdict(Decision::Allow, *allow,
            QStringLiteral("%1:%2 matches rule '%3'").arg(host).arg(port).arg(*allow), host, false);
        v.wildcard = allow->startsWith(QLatin1String("*."));
        if (const QString *lookup = v.wildcard ? firstMatch(m_resolveWildcards, host, port) : nullptr)
            v.lookupRule = *lookup;
        return v;
    }
    return verdict(
        m_unknown, QStringLiteral("default"), QStringLiteral("no rule names %1:%2").arg(host).arg(port), host, false);
}

NetworkVerdict NetworkRules::checkResolved(
    const NetworkVerdict &allowed, const QHostAddress &address, quint16 port) const
{
    if (allowed.decision != Decision::Allow || allowed.ipLiteral || m_mode == QLatin1String("full"))
        return allowed;
    const QString ip = canonical(address);
    // A deny rule that names an address holds for names that resolve to it too.
    if (const QString *deny = firstMatch(m_deny, ip, port))
        return verdict(Decision::Deny, *deny,
            QStringLiteral("%1 resolves to %2, which deny rule '%3' names").arg(allowed.host, ip, *deny), allowed.host,
            false);
    if (!isSpecialAddress(address))
        return allowed;
    if (const QString *allow = firstMatch(m_allow, ip, port))
        return verdict(Decision::Allow, *allow,
            QStringLiteral("%1 resolves to %2, which rule '%3' names").arg(allowed.host, ip, *allow), allowed.host,
            false);
    return verdict(Decision::Deny, QStringLiteral("refused range"),
        QStringLiteral("%1 resolves to %2 (loopback, private, link-local or reserved); no rule names that address")
            .arg(allowed.host, ip),
        allowed.host, false);
}

} // namespace airlock::policy
