// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QObject>
#include <QPointer>

class QAbstractSocket;
class QLocalSocket;
class QWebSocket;

namespace airlock::remote {

// Carries the protocol's byte stream between a WebSocket and one end of a local socketpair, so
// that both the daemon and its clients keep speaking over a QLocalSocket whatever the transport.
// Bytes go as binary messages; the receiving pipe acknowledges what its local side has taken
// ("ack N" text messages), and a sender keeps at most kWindow bytes unacknowledged. So a slow
// reader at either end holds the writer at the other (the daemon's flow control reaches across
// the network) and neither pipe buffers more than the window. A peer that sends past the window
// breaks the protocol and is closed.
//
// Acknowledgements are the peer's word, so the sender also watches its own transport: nothing
// more is sent while a message's worth waits to be written, and a peer that stops reading (or
// makes the socket queue pongs) is closed once kMaxBacklog waits.
class WebSocketPipe final : public QObject {
    Q_OBJECT
public:
    static constexpr qint64 kWindow = 8 * 1024 * 1024;
    static constexpr qint64 kMaxMessage = 1024 * 1024;
    static constexpr qint64 kMaxBacklog = 16 * 1024 * 1024;

    // Takes the WebSocket and the local socket; closing either side closes the other. transport
    // is the socket under the WebSocket (a QSslSocket for wss://), for its write backlog.
    WebSocketPipe(QWebSocket *socket, QLocalSocket *local, QAbstractSocket *transport, QObject *parent = nullptr);
    ~WebSocketPipe() override;

    QWebSocket *webSocket() const { return m_ws; }
    void close(const QString &why) { shut(why); }

Q_SIGNALS:
    void closed(const QString &why);

private:
    void pumpUp(); // local → WebSocket, within the window
    void onMessage(const QByteArray &message);
    void onAck(const QString &text);
    void onLocalWritten(qint64 bytes);
    void shut(const QString &why);
    qint64 backlog() const; // written to the transport, not yet to the network

    QWebSocket *m_ws;
    QLocalSocket *m_local;
    QPointer<QAbstractSocket> m_transport;
    qint64 m_unacked = 0; // sent, not yet acknowledged by the peer
    qint64 m_inFlight = 0; // received, not yet taken by our local side
    qint64 m_toAck = 0; // taken by our local side, not yet acknowledged
    bool m_shut = false;
};

} // namespace airlock::remote
