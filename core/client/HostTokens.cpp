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

// The store of that backend. Null, with why, when it is the keyring and none answers; an error when
// one may but this program cannot reach it (a broken install: never a reason to use the file).
Result<std::unique_ptr<SecretStore>> open(const QString &backend, QString *why)
{
    if (backend == kKeyring) {
        auto keyring = KeychainSecretStore::open(paths::configDir() + QStringLiteral("/host-tokens-index.json"), why);
        if (!keyring)
            return keyring.error();
        return std::unique_ptr<SecretStore>(std::move(*keyring));
    }
    return std::unique_ptr<SecretStore>(std::make_unique<FileSecretStore>(filePath()));
}
} // namespace

QString fellBackNotice(const QString &host, const QString &why)
{
    return QStringLiteral("the token of '%1' is kept in %2 (readable by you alone): no keyring answered (%3)")
        .arg(host, filePath(), why);
}

QString filePath()
{
    return paths::configDir() + QStringLiteral("/host-tokens.json");
}

Result<QString> save(const QString &host, const QByteArray &token, QString *fellBack)
{
    for (const QString &backend : {kKeyring, kFile}) {
        QString why;
        auto store = open(backend, &why);
        if (!store)
            return makeError(store.error().code,
                QStringLiteral("cannot keep the token of '%1': %2").arg(host, store.error().message));
        if (!*store) { // no keyring answers: the 0600 file, and the caller says so
            if (fellBack)
                *fellBack = why;
            continue;
        }
        if (Status s = (*store)->set(secretName(host), token); !s)
            return s.error();
        return backend;
    }
    return makeError(ErrorCode::IoError, QStringLiteral("no place to keep the token"));
}

Result<QByteArray> load(const QString &host, const QString &backend)
{
    QString why;
    auto store = open(backend, &why);
    if (!store)
        return makeError(store.error().code, QStringLiteral("host '%1': %2").arg(host, store.error().message));
    if (!*store)
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral("host '%1': its token is in the session keyring, which does not answer (%2); unlock it, "
                           "or add the host again with --token-file")
                .arg(host, why));
    return (*store)->get(secretName(host));
}

void remove(const QString &host, const QString &backend)
{
    QString why;
    if (auto store = open(backend, &why); store && *store)
        (void)(*store)->remove(secretName(host));
}

Status addHost(HostRegistry &hosts, const QString &name, const QString &url, const QByteArray &token, QString *fellBack)
{
    if (Status checked = HostRegistry(hosts).add(name, url); !checked)
        return checked;
    QString backend;
    if (!token.isEmpty()) {
        auto saved = save(name, token, fellBack);
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
