// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "secrets/KeychainModule.h"
#include "secrets/SecretStore.h"

#include <QHash>
#include <QThread>

#include <functional>
#include <memory>

namespace airlock {

// Secrets in the freedesktop Secret Service (GNOME Keyring, KWallet, KeePassXC) through QtKeychain,
// service "airlock", never falling back to a plain file. QtKeychain is in airlock-keychain.so, loaded
// on the first open (KeychainModule.h). The keyring has no listing, so names,
// sizes and times (never values) are kept in an index file next to the user's policy. Keyring calls
// run on a thread of their own, each bounded by a timeout: a keyring that does not answer fails the
// call, closed.
class KeychainSecretStore final : public SecretStore {
public:
    // The store when a Secret Service answers on the session bus. Null, with why, when none does (a
    // caller may choose the file store then). An error when one may, but this program cannot speak
    // to it (its module is missing, not trusted or not this build's): a broken install, never a
    // reason to put secrets in a file instead.
    static Result<std::unique_ptr<KeychainSecretStore>> open(const QString &indexPath, QString *why);
    ~KeychainSecretStore() override;

    QString backend() const override;
    bool weaker() const override { return false; }
    Status set(const QString &name, const QByteArray &value) override;
    Result<QByteArray> get(const QString &name) const override;
    Status remove(const QString &name) override;
    Result<QList<SecretInfo>> list() const override;

private:
    KeychainSecretStore(QString indexPath, keychain::StartFunction start);
    using Op = keychain::Op;
    struct Outcome {
        int outcome = -1; // keychain::Outcome; -1: no answer in time
        QString message;
        QByteArray data;
    };
    Outcome run(Op op, const QString &key, const QByteArray &data = {}) const;
    Status loadIndex() const;
    Status saveIndex() const;

    QString m_indexPath;
    keychain::StartFunction m_start;
    mutable QHash<QString, SecretInfo> m_index;
    mutable QHash<QString, QByteArray> m_cache; // values read or written by this daemon
    mutable bool m_indexLoaded = false;
    QThread m_thread;
    QObject *m_worker = nullptr; // lives on m_thread; the keyring jobs' parent
};

} // namespace airlock
