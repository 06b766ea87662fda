// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QString>

#include <optional>

namespace airlock::net {

enum class ProxyProtocol { HttpConnect, HttpForward, Socks5 };
QString proxyProtocolName(ProxyProtocol protocol);

// Where a client asked to go, as it asked (not yet normalised, decided or resolved).
struct ProxyTarget {
    ProxyProtocol protocol = ProxyProtocol::HttpConnect;
    QString host; // a name, or an address as the client wrote it ("[::1]" for IPv6)
    quint16 port = 0;
    QByteArray upstreamFirst; // bytes for the destination before the relay starts (a rewritten
                              // request head, data the client sent early)
    qint64 upstreamLimit = -1; // how much more the client may send after that (-1: no limit). A
                               // forwarded request gets its declared body and nothing after it.
};

// Why a connection is refused, as the client's protocol says it.
enum class ProxyFailure { BadRequest, Denied, Unreachable, Refused, TimedOut };

// The first bytes of one proxied connection, parsed without trusting any of them: HTTP CONNECT,
// absolute-form HTTP (`GET http://host/path`) or SOCKS5 (no authentication, CONNECT, hostname and
// address forms), told apart by the first byte. Pure: the egress proxy feeds it what it reads and
// sends what it answers.
class ProxyHandshake {
public:
    static constexpr qsizetype kMaxHead = 32 * 1024;

    struct Step {
        QByteArray reply; // send to the client now (a SOCKS method choice, an error)
        std::optional<ProxyTarget> target; // the request is complete
        QString error; // set: the request is malformed; send reply, then close
    };
    Step feed(QByteArrayView data);

    // What the client gets once the destination is connected (nothing for forwarded HTTP: the
    // destination answers), or when it is not.
    QByteArray success() const;
    QByteArray failure(ProxyFailure failure, const QString &detail) const;
    std::optional<ProxyProtocol> protocol() const { return m_protocol; }

private:
    Step fail(const QString &error);
    Step parseHttp();
    Step parseSocks();
    Step parseSocksRequest(QByteArray &chosen);

    QByteArray m_buf;
    std::optional<ProxyProtocol> m_protocol;
    bool m_socksMethodChosen = false;
    bool m_done = false;
};

} // namespace airlock::net
