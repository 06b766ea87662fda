// SPDX-License-Identifier: Apache-2.0
#include "net/SandboxCa.h"

#include "policy/NetworkRules.h"
#include "policy/Policy.h"

namespace airlock::net {

Result<SandboxCa> SandboxCa::make(const QString &sandboxId, const QStringList &hosts)
{
    SandboxCa ca;
    for (const QString &host : hosts) {
        auto name = policy::brokeredHostName(host);
        if (!name)
            return name.error();
        if (!ca.m_hosts.contains(*name))
            ca.m_hosts.append(*name);
    }
    if (ca.m_hosts.isEmpty())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("a sandbox's authority needs a brokered host"));
    x509::CertificateSpec spec;
    spec.commonName = QStringLiteral("Airlock sandbox %1").arg(sandboxId);
    spec.validSeconds = kAuthorityValidSeconds;
    spec.authority = true;
    spec.permittedDns = ca.m_hosts;
    auto made = x509::issue(spec);
    if (!made)
        return made.error();
    ca.m_authority = std::move(*made);
    return ca;
}

SandboxCa SandboxCa::resume(x509::Pem authority, QStringList hosts)
{
    SandboxCa ca;
    ca.m_authority = std::move(authority);
    ca.m_hosts = std::move(hosts);
    return ca;
}

Result<x509::Pem> SandboxCa::leafFor(const QString &host)
{
    auto name = policy::brokeredHostName(host);
    if (!name)
        return name.error();
    if (!m_hosts.contains(*name))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1 is not among this sandbox's brokered hosts (%2)")
                .arg(*name, m_hosts.join(QStringLiteral(", "))));
    const QDateTime now = QDateTime::currentDateTimeUtc();
    if (auto it = m_leaves.constFind(*name); it != m_leaves.constEnd() && it->renewAfter > now)
        return it->pem;
    x509::CertificateSpec spec;
    spec.commonName = *name;
    spec.validSeconds = kLeafValidSeconds;
    spec.dnsNames = {*name};
    auto made = x509::issue(spec, &m_authority);
    if (!made)
        return made.error();
    m_leaves.insert(*name, Leaf{*made, now.addSecs(kLeafValidSeconds - 86400)});
    return *made;
}

} // namespace airlock::net
