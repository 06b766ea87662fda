// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Certificates.h"
#include "util/Result.h"

#include <QDateTime>
#include <QHash>
#include <QStringList>

namespace airlock::net {

// The certificate authority one sandbox trusts for the hosts whose credentials the egress proxy
// brokers: the proxy poses as such a host with a certificate from it, and puts the real secret in
// the request it sends on. One per sandbox, so what one sandbox trusts is worth nothing in another.
// Its key never leaves the daemon, and its name constraints list only the brokered hosts (and their
// subdomains, as RFC 5280 has it): a certificate it signed for any other name fails verification
// in the sandbox, so it cannot be used to pose as anything else even by mistake.
class SandboxCa {
public:
    static constexpr qint64 kAuthorityValidSeconds = 10LL * 365 * 86400;
    static constexpr qint64 kLeafValidSeconds = 30LL * 86400; // issued again with less than a day left

    // A fresh authority for `hosts` (names; not addresses, wildcards or ports).
    static Result<SandboxCa> make(const QString &sandboxId, const QStringList &hosts);
    // The one a sandbox was started with (from its record, when a daemon takes it over).
    static SandboxCa resume(x509::Pem authority, QStringList hosts);

    const QStringList &hosts() const { return m_hosts; }
    // The authority's certificate: what the sandbox trusts.
    const QByteArray &certificatePem() const { return m_authority.certificate; }
    // Its key and certificate: for the daemon's private state only.
    const x509::Pem &authority() const { return m_authority; }
    // A key and certificate to serve TLS as `host`, one of hosts() (others are refused: typed
    // InvalidArgument). The same until it is a day from its end.
    Result<x509::Pem> leafFor(const QString &host);

private:
    struct Leaf {
        x509::Pem pem;
        QDateTime renewAfter;
    };
    x509::Pem m_authority;
    QStringList m_hosts;
    QHash<QString, Leaf> m_leaves;
};

} // namespace airlock::net
