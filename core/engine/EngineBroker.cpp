// SPDX-License-Identifier: Apache-2.0
// The credential broker's part in the engine: the authority a sandbox with brokered credentials
// trusts, and what the egress proxy brokers for each of its connections (decision 8).
#include "engine/Engine.h"
#include "net/BrokeredConnection.h"
#include "net/SandboxCa.h"
#include "sandbox/Sandbox.h"

#include <QFile>
#include <QFileInfo>

namespace airlock {

namespace {
// Debian's bundle of the host's trusted authorities (what OpenSSL reads by default there).
constexpr char kSystemBundle[] = "/etc/ssl/certs/ca-certificates.crt";

const policy::CredentialGrant *brokeredGrant(const policy::EffectivePolicy &policy, const QString &host)
{
    for (const policy::CredentialGrant &g : policy.grants)
        if (g.brokered() && g.brokerHost == host)
            return &g;
    return nullptr;
}
} // namespace

Status Engine::checkBrokered(const policy::EffectivePolicy &policy)
{
    for (const policy::CredentialGrant &g : policy.grants) {
        if (!g.brokered())
            continue;
        if (policy.networkMode != QLatin1String("allowlist"))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("secret '%1' is brokered for %2, which needs network mode \"allowlist\": only then "
                               "does the sandbox's traffic pass the egress proxy that brokers it (the mode is \"%3\")")
                    .arg(g.secret, g.brokerHost, policy.networkMode));
        for (const policy::CredentialGrant &other : policy.grants)
            if (other.secret == g.secret && !other.brokered())
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("/credentials/grants: secret '%1' is brokered for %2 and also granted as %3, which "
                                   "would put it inside the sandbox: grant it one way")
                        .arg(g.secret, g.brokerHost,
                            other.env.isEmpty() ? QStringLiteral("file ") + other.file
                                                : QStringLiteral("$") + other.env));
    }
    return Ok{};
}

Result<std::shared_ptr<net::SandboxCa>> Engine::brokerAuthority(
    const QString &id, const policy::EffectivePolicy &policy)
{
    QStringList hosts;
    for (const policy::CredentialGrant &g : policy.grants)
        if (g.brokered() && !hosts.contains(g.brokerHost))
            hosts.append(g.brokerHost);
    if (hosts.isEmpty())
        return std::shared_ptr<net::SandboxCa>();
    if (Status ok = checkBrokered(policy); !ok)
        return ok.error();
    auto made = net::SandboxCa::make(id, hosts);
    if (!made)
        return made.error();
    return std::make_shared<net::SandboxCa>(std::move(*made));
}

QList<std::pair<QString, QByteArray>> Engine::trustFiles(const net::SandboxCa &authority)
{
    QFile system(QString::fromLatin1(kSystemBundle));
    QByteArray bundle = system.open(QIODevice::ReadOnly) ? system.readAll() : QByteArray();
    if (!bundle.isEmpty() && !bundle.endsWith('\n'))
        bundle += '\n';
    bundle += authority.certificatePem();
    QList<std::pair<QString, QByteArray>> files{{QString::fromLatin1(kTrustAuthorityPath), authority.certificatePem()},
        {QString::fromLatin1(kTrustBundlePath), bundle}};
    // What reads the system's bundle without being told where (OpenSSL's default, git, Go).
    const QFileInfo systemFile(QString::fromLatin1(kSystemBundle));
    if (systemFile.isFile() && !systemFile.isSymLink())
        files.append({systemFile.filePath(), bundle});
    return files;
}

Result<std::optional<net::BrokeredRoute>> Engine::brokeredRoute(
    Sandbox *sandbox, const QString &host, quint16 port) const
{
    const policy::CredentialGrant *grant = brokeredGrant(sandbox->policy(), host);
    if (!grant)
        return std::optional<net::BrokeredRoute>();
    if (port != 443)
        return makeError(ErrorCode::Denied,
            QStringLiteral("the credential for %1 is brokered on port 443 only (HTTPS), not %2").arg(host).arg(port));
    net::SandboxCa *authority = sandbox->brokerCa();
    if (!authority)
        return makeError(ErrorCode::Denied,
            QStringLiteral("secret '%1' is brokered for %2, but this sandbox has no authority for it here: it "
                           "started without brokered credentials, or an earlier daemon started it, and what a "
                           "sandbox trusts is fixed when it starts: create a new sandbox with this policy")
                .arg(grant->secret, host));
    auto leaf = authority->leafFor(host);
    if (!leaf)
        return makeError(ErrorCode::Denied,
            QStringLiteral("%1 (the policy brokers it since the sandbox started: create a new sandbox to broker it)")
                .arg(leaf.error().message));
    auto secret = secretOf(*grant);
    if (!secret)
        return secret.error();
    auto redactor = std::make_shared<Redactor>();
    redactor->add(grant->secret, *secret);
    return std::optional<net::BrokeredRoute>(net::BrokeredRoute{host, *leaf,
        {grant->brokerHeader.toLatin1(), grant->placeholder(), *secret}, grant->secret, std::move(redactor)});
}

void Engine::addSecrets(Sandbox &sandbox, const QList<std::pair<policy::CredentialGrant, QByteArray>> &granted) const
{
    for (const auto &[grant, value] : granted) {
        if (!grant.brokered()) {
            sandbox.addSecret(grant.secret, value);
        } else if (auto secret = secretOf(grant)) {
            sandbox.addSecret(grant.secret, *secret);
        }
    }
}

} // namespace airlock
