// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QList>

#include <QString>
#include <optional>

namespace airlock {

// Where a daemon is: unix://PATH on this machine, ssh://[user@]host[:port] (airlockd --stdio over
// the system ssh), wss://host:port#sha256=FINGERPRINT (airlockd --listen; the fingerprint is the
// pinned certificate and is required), or ws://host:port on a loopback address only (tests).
struct HostAddress {
    enum class Scheme { Unix, Ssh, Wss, Ws };
    Scheme scheme = Scheme::Unix;
    QString path; // unix: the socket
    QString user, host; // ssh, wss
    int port = 0; // 0: the scheme's default
    QString fingerprint; // wss: SHA-256 of the daemon's certificate, 64 lowercase hex digits
    QString text; // as given, normalised
};
Result<HostAddress> parseHostAddress(const QString &url);

// The hosts a person named (`airlockctl hosts add NAME URL`) and which one is in use, kept in
// $XDG_CONFIG_HOME/airlock/hosts.json (0600). "local" always means this machine's own daemon.
class HostRegistry {
public:
    struct Entry {
        QString name, url;
        QString token; // where its token is kept (hosttokens backend); empty: none saved
    };
    static QString defaultPath();
    static Result<HostRegistry> load(const QString &path = defaultPath());

    QList<Entry> entries() const { return m_entries; }
    QString current() const { return m_current; } // empty: local
    Status add(const QString &name, const QString &url, const QString &tokenBackend = {});
    Status remove(const QString &name);
    Status use(const QString &name); // "local": back to this machine's daemon
    Status save() const;
    // A saved name or a URL, as the entry to connect to (a URL alone has no name or token); an
    // empty URL for local.
    Result<Entry> resolve(const QString &nameOrUrl) const;
    std::optional<Entry> find(const QString &name) const;

private:
    QString m_path;
    QList<Entry> m_entries;
    QString m_current;
};

} // namespace airlock
