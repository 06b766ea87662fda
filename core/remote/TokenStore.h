// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/ConstantTime.h"
#include "util/Result.h"

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QStringList>

#include <memory>

class QLockFile;

namespace airlock::remote {

// What a token lets its holder do. Read-only: look (lists, policies, history, live output), never
// change or run anything. Sandboxes: only those named, and of those only the ones the token may
// stand for: the sandbox that had the name when the token was made (bound by its id), and those
// created through the token itself (with the default policy: no mounts, network or preset). A
// sandbox a person makes later under the same name is a different id, and outside the token.
// Nothing daemon-wide (secrets, defaults, other sandboxes' history).
struct Grant {
    QString tokenId, tokenName;
    bool readOnly = false;
    QStringList sandboxes; // names; empty: every sandbox
    QHash<QString, QString> boundIds; // name → id of the sandbox that had it when the token was made

    // Whether the token reaches sandbox `id` named `name`, created through the token with id
    // `createdThrough` (empty: by a local client). Empty when it does; else why not.
    QString outside(const QString &id, const QString &name, const QString &createdThrough) const;
    bool coversSandbox(const QString &id, const QString &name, const QString &createdThrough) const
    {
        return outside(id, name, createdThrough).isEmpty();
    }
    // Whether the token may create a sandbox of this name.
    bool mayCreate(const QString &name) const { return sandboxes.isEmpty() || sandboxes.contains(name); }
    // "full", "read-only", "sandboxes a, b", "read-only; sandboxes a (id 3f9a…)"
    QString describe() const;
    // Parses --scope values: "full", "read-only", "sandbox:NAME" (repeatable, combinable). A name
    // in `existing` (name → id of a sandbox that has it now) is bound to that sandbox's id.
    static Result<Grant> fromScopes(const QStringList &scopes, const QHash<QString, QString> &existing = {});
};

// The bearer tokens of one daemon, in a 0600 JSON file: each token's name, scope and the SHA-256 of
// its secret (the secret itself is shown once, at creation, and never stored). A token is
// "alk_<id>_<secret>": the id finds the entry, the secret's hash is compared in constant time.
// The file is read again whenever it changes, so `airlockd token revoke` takes effect in a
// running daemon.
class TokenStore {
public:
    struct Entry {
        Grant grant;
        QByteArray hash; // hex
        QDateTime created;
        QDateTime revoked; // valid: kept so that its holder is told it was revoked
    };
    explicit TokenStore(QString path)
        : m_path(std::move(path))
    {
    }

    struct Created {
        QString token;
        Grant grant;
    };
    // `existing`: the daemon's sandboxes now (name → id), to which sandbox:NAME scopes are bound.
    Result<Created> create(
        const QString &name, const QStringList &scopes, const QHash<QString, QString> &existing = {});
    Status revoke(const QString &name);
    Result<QList<Entry>> entries(); // revoked ones too
    // Whether a token id still grants (for closing the connections of a revoked token).
    bool isLive(const QString &tokenId);
    // The grant of a presented token, or Denied with the reason (malformed, unknown, wrong secret
    // or revoked).
    Result<Grant> verify(const QByteArray &token);
    QString path() const { return m_path; }

private:
    // Changes are read, made and written under an exclusive lock on PATH.lock: concurrent token
    // commands never lose each other's changes (a revocation above all).
    Result<std::unique_ptr<QLockFile>> lockFile() const;
    Status reload();
    Status save() const;

    QString m_path;
    QList<Entry> m_entries;
    QDateTime m_loadedModified;
    qint64 m_loadedSize = -1;
    bool m_loaded = false;
};

// "alk_<12 hex>_<43 base64url>": what 'airlockd token create' prints.
bool isTokenShaped(const QByteArray &token);

using airlock::constantTimeEquals;

} // namespace airlock::remote
