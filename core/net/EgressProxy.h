// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "net/BrokeredConnection.h"
#include "net/ProxyHandshake.h"
#include "policy/NetworkRules.h"
#include "util/Result.h"

#include <QElapsedTimer>
#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>

namespace airlock {
class Sandbox;
}

namespace airlock::net {

class Relay;

// A destination a sandbox's process asked for that no rule decides: a person is asked.
struct EgressQuestion {
    QString host; // normalised
    quint16 port = 0;
    ProxyProtocol protocol = ProxyProtocol::HttpConnect;
    policy::NetworkVerdict verdict; // decision Ask, with the rule and reason
};

// The daemon's egress proxy: the only way out of an `allowlist` sandbox. The guest hands over each
// connection made to 127.0.0.1:<port> inside the sandbox (see Sandbox::egressConnection); the proxy
// reads HTTP CONNECT, absolute-form HTTP or SOCKS5, decides on the destination by the sandbox's
// *current* network rules (a policy change applies to the next connection), asks a person when the
// rules say ask, resolves the name only once allowed, re-checks every address it would connect to
// (no rebinding into loopback or the LAN), connects, and hands both sockets to a relay thread.
// Every connection is an event of its sandbox: network.denied, or network.opened then
// network.closed (bytes each way, duration, error).
// DNS is a channel out of its own: a name allowed only by a wildcard rule could be made up to
// carry data to whoever serves the zone. Such a name is looked up only when the policy lists the
// wildcard in network.resolveWildcards, each lookup is a network.lookup event, and a sandbox gets
// a few new names a minute (Options::newWildcardNamesPerMinute); past that, and without the
// opt-in, the connection is refused with the rule.
class EgressProxy final : public QObject {
    Q_OBJECT
public:
    struct Options {
        // Names answered by the daemon's own table instead of DNS (airlockd --resolve). The operator
        // vouches for these answers, so they are not re-checked against the refused ranges: this is
        // how tests reach servers on loopback, and how a site pins an internal host.
        QHash<QString, QList<QHostAddress>> hosts;
        int handshakeTimeoutMs = 30000;
        int connectTimeoutMs = 15000;
        int maxConnectionsPerSandbox = 64; // each relayed one holds up to 512 KiB (the relay's two buffers)
        // Distinct names under wildcard rules that one sandbox may have looked up in a minute
        // (a name looked up again within the minute is no new one).
        int newWildcardNamesPerMinute = 20;
        // Certificates (PEM) trusted for brokered hosts besides the host's trust store (airlockd
        // --upstream-ca): an operator's own authority, or a test's.
        QByteArray upstreamTrust;
        BrokeredConnection::Options broker;
    };
    // The credential brokered for a sandbox's connections to host:port, if its policy names one
    // there; an error (a secret the store cannot give) refuses the connection.
    using Broker = std::function<Result<std::optional<BrokeredRoute>>(Sandbox *, const QString &host, quint16 port)>;
    using Answer = std::function<void(bool allowed, const QString &why)>;
    using Ask = std::function<void(Sandbox *, const EgressQuestion &, Answer)>;

    explicit EgressProxy(Options options, Ask ask, QObject *parent = nullptr);
    void setBroker(Broker broker) { m_broker = std::move(broker); }
    ~EgressProxy() override;

    // Takes ownership of a connected stream socket from a sandbox.
    void handle(Sandbox *sandbox, int fd);
    // Ends every connection of a sandbox that is going away, pending and relayed.
    void dropSandbox(Sandbox *sandbox);
    // Ends a sandbox's brokered connections (its brokered credentials changed): the next ones are
    // made by its policy as it is now.
    void endBrokered(Sandbox *sandbox, const QString &why);
    int openConnections() const;

private:
    class Session;
    friend class Session;
    void sessionEnded(const QString &sandboxId);
    // Counts a wildcard name the sandbox is about to have looked up: how many distinct ones it has
    // in the last minute with this one, or 0 when this one would be over the limit.
    int admitLookup(const QString &sandboxId, const QString &host);
    quint64 tagOf(const QString &sandboxId); // groups a sandbox's relayed connections
    // The broker's TLS settings, made at the first brokered connection.
    Result<std::shared_ptr<const TlsContexts>> tls();

    Options m_options;
    Ask m_ask;
    Broker m_broker;
    std::shared_ptr<const TlsContexts> m_tls;
    std::unique_ptr<Relay> m_relay;
    QHash<QString, int> m_open; // sandbox id -> connections, in hand-shake or relayed
    QHash<QString, quint64> m_tags; // sandbox id -> relay tag
    QHash<QString, QHash<QString, qint64>>
        m_lookups; // sandbox id -> wildcard name -> when first looked up (last minute)
    QElapsedTimer m_clock;
    quint64 m_nextConnection = 1, m_nextTag = 1;
};

} // namespace airlock::net
