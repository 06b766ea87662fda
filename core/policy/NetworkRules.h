// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "policy/CommandRules.h"

#include <QHostAddress>
#include <QStringList>

namespace airlock::policy {

struct NetworkVerdict {
    Decision decision = Decision::Deny;
    QString rule; // the pattern that decided, or "default" / the mode
    QString reason; // for a person
    QString host; // the destination as matched: normalised name or canonical IP
    bool ipLiteral = false;
    // Allowed by a wildcard rule and by no rule that names the host exactly: a name the sandbox may
    // have made up, which DNS would carry to whoever serves the zone. It is looked up only when
    // `lookupRule` (a network.resolveWildcards pattern) says so.
    bool wildcard = false;
    QString lookupRule;
    QJsonObject toJson() const;
};

// The decision on one destination, taken *before* anything is resolved (the egress proxy resolves
// only what is allowed, then calls checkResolved on the address it is about to connect to).
// Rules are host patterns with optional ports: `example.com` (that name only), `*.example.com`
// (names under it, not the bare domain), `10.0.0.5`, `[::1]:8080`; no port means any port. Deny
// beats allow. IP literals in any spelling (decimal, octal, hex, IPv4-mapped IPv6) are allowed
// only when a rule names that address; loopback, private, link-local, metadata and other special
// ranges are refused, after resolution too, unless a rule names the address. A rule that names
// a host exactly beats a wildcard that also matches it; `resolveWildcards` are the wildcard
// patterns whose names the proxy may look up in DNS (see NetworkVerdict::wildcard).
class NetworkRules {
public:
    NetworkRules() = default;
    NetworkRules(QString mode, QStringList allow, QStringList deny, Decision unknown, QStringList resolveWildcards = {})
        : m_mode(std::move(mode))
        , m_allow(std::move(allow))
        , m_deny(std::move(deny))
        , m_resolveWildcards(std::move(resolveWildcards))
        , m_unknown(unknown)
    {
    }

    NetworkVerdict evaluate(const QString &host, quint16 port) const;
    // The address the proxy would connect to for an allowed name: no DNS rebinding into the LAN.
    NetworkVerdict checkResolved(const NetworkVerdict &allowed, const QHostAddress &address, quint16 port) const;

    // Loopback, private (RFC 1918, CGNAT, ULA), link-local (metadata included), unspecified,
    // multicast, broadcast, documentation and other reserved ranges; IPv4-mapped addresses count as
    // their IPv4 address.
    static bool isSpecialAddress(const QHostAddress &address);
    // An IPv4 address in any spelling inet_aton accepts (2130706433, 0177.0.0.1, 127.1), or IPv6.
    static std::optional<QHostAddress> parseAddress(const QString &host);

private:
    bool named(const QString &pattern, const QString &host, quint16 port) const;
    const QString *firstMatch(const QStringList &patterns, const QString &host, quint16 port) const;

    QString m_mode = QStringLiteral("none");
    QStringList m_allow, m_deny, m_resolveWildcards;
    Decision m_unknown = Decision::Deny;
};

} // namespace airlock::policy
