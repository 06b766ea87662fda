// SPDX-License-Identifier: Apache-2.0
#include "net/SandboxCa.h"

#include "policy/NetworkRules.h"
#include "policy/Policy.h"

namespace airlock::net {

Result<QString> brokeredHostName(const QString &host)
{
    const auto refused = [&](const QString &why) {
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' is not a host a credential can be brokered for: %2").arg(host.left(200), why));
    };
    if (policy::NetworkRules::parseAddress(host))
        return refused(QStringLiteral("an address, not a name (name the host its certificate is for)"));
    auto name = policy::normaliseHostPattern(host);
    if (!name)
        return refused(name.error().message);
    if (name->startsWith(QLatin1String("*.")))
        return refused(QStringLiteral("a wildcard (name each host, e.g. api.example.com)"));
    if (name->contains(QLatin1Char(':')))
        return refused(QStringLiteral("a port (the proxy brokers on 443 only; name the host alone)"));
    if (!name->contains(QLatin1Char('.')))
        return refused(QStringLiteral("a name of one label (name the host in full, e.g. api.example.com)"));
    // An address in another spelling ("127.1.", "0x7f.1") is one once normalised; a name whose last
    // label is a number is taken for an address by URL parsers.
    const QString last = name->section(QLatin1Char('.'), -1);
    bool number = false;
    last.toULongLong(&number, 10);
    if (!number && last.startsWith(QLatin1String("0x")))
        last.mid(2).toULongLong(&number, 16);
    if (policy::NetworkRules::parseAddress(*name) || number || last.startsWith(QLatin1String("0x")))
        return refused(QStringLiteral("an address, not a name (name the host its certificate is for)"));
    return name;
}

Result<SandboxCa> SandboxCa::make(const QString &sandboxId, const QStringList &hosts)
{
    SandboxCa ca;
    for (const QString &host : hosts) {
        auto name = brokeredHostName(host);
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

Result<x509::Pem> SandboxCa::leafFor(const QString &host)
{
    auto name = brokeredHostName(host);
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
