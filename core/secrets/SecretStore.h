// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QList>
#include <QString>

#include <memory>

namespace airlock {

struct SecretInfo {
    QString name;
    QDateTime updated;
    qsizetype size = 0;
};

// Where the daemon keeps secret values. Policies name secrets; only the daemon reads values, to
// inject them into sandboxes and to redact them from everything it records.
class SecretStore {
public:
    static constexpr qsizetype kMinValue = 8; // shorter values cannot be redacted reliably
    static constexpr qsizetype kMaxValue = 64 * 1024;

    virtual ~SecretStore() = default;
    virtual QString backend() const = 0;
    // The file store is weaker than a keyring: anyone who can read the user's files can read it.
    virtual bool weaker() const = 0;
    virtual Status set(const QString &name, const QByteArray &value) = 0;
    virtual Result<QByteArray> get(const QString &name) const = 0;
    virtual Status remove(const QString &name) = 0;
    virtual Result<QList<SecretInfo>> list() const = 0;

    static Status validateName(const QString &name);
    static Status validateValue(const QByteArray &value);
};

// Secrets in one JSON file, 0600 in a 0700 directory, replaced atomically on every change. Read
// once and again only when the file changes, so an execution that needs a secret costs no parse.
class FileSecretStore final : public SecretStore {
public:
    explicit FileSecretStore(QString path);
    QString backend() const override;
    bool weaker() const override { return true; }
    Status set(const QString &name, const QByteArray &value) override;
    Result<QByteArray> get(const QString &name) const override;
    Status remove(const QString &name) override;
    Result<QList<SecretInfo>> list() const override;
    const QString &path() const { return m_path; }

private:
    struct Entry {
        QByteArray value;
        QDateTime updated;
    };
    Status load() const;
    Status save(const QHash<QString, Entry> &entries);

    QString m_path;
    mutable QHash<QString, Entry> m_entries;
    mutable QDateTime m_loadedMtime;
    mutable qint64 m_loadedSize = -1;
};

} // namespace airlock
