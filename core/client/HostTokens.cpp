// SPDX-License-Identifier: Apache-2.0
#include "client/HostTokens.h"

#include "secrets/KeychainSecretStore.h"
#include "secrets/SecretStore.h"
#include "util/Paths.h"

#include <memory>

namespace airlock::hosttokens {

namespace {
const QString kKeyring = QStringLiteral("secret-service");
const QString kFile = QStringLiteral("file");

QString secretName(const QString &host)
{
    return QStringLiteral("host-token.") + host;
}

std::unique_ptr<SecretStore> open(const QString &backend)
{
    if (backend == kKeyring) {
        QString why;
        return KeychainSecretStore::open(paths::configDir() + QStringLiteral("/host-tokens-index.json"), &why);
    }
    return std::make_unique<FileSecretStore>(paths::configDir() + QStringLiteral("/host-tokens.json"));
}
} // namespace

Result<QString> save(const QString &host, const QByteArray &token)
{
    for (const QString &backend : {kKeyring, kFile}) {
        auto store = open(backend);
        if (!store)
            continue;
        if (Status s = store->set(secretName(host), token); !s)
            return s.error();
        return backend;
    }
    return makeError(ErrorCode::IoError, QStringLiteral("no place to keep the token"));
}

Result<QByteArray> load(const QString &host, const QString &backend)
{
    auto store = open(backend);
    if (!store)
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral(
                "host '%1': its token is in the session keyring, which does not answer; unlock it, or add the "
                "host again with --token-file")
                .arg(host));
    return store->get(secretName(host));
}

void remove(const QString &host, const QString &backend)
{
    if (auto store = open(backend))
        (void)store->remove(secretName(host));
}

Status addHost(HostRegistry &hosts, const QString &name, const QString &url, const QByteArray &token)
{
    if (Status checked = HostRegistry(hosts).add(name, url); !checked)
        return checked;
    QString backend;
    if (!token.isEmpty()) {
        auto saved = save(name, token);
        if (!saved)
            return saved.error();
        backend = *saved;
    }
    return hosts.add(name, url, backend);
}

Status removeHost(HostRegistry &hosts, const QString &name)
{
    const auto entry = hosts.find(name);
    if (Status removed = hosts.remove(name); !removed)
        return removed;
    if (entry && !entry->token.isEmpty())
        remove(entry->name, entry->token);
    return Ok{};
}

} // namespace airlock::hosttokens
