// SPDX-License-Identifier: Apache-2.0
#include "remote/WebSocketPipe.h"

#include <QLocalSocket>
#include <QSslSocket>
#include <QTimer>
#include <QWebSocket>

namespace airlock::remote {

WebSocketPipe::WebSocketPipe(QWebSocket *socket, QLocalSocket *local, QAbstractSocket *transport, QObject *parent)
    : QObject(parent)
    , m_ws(socket)
    , m_local(local)
    , m_transport(transport)
{
    m_ws->setParent(this);
    m_local->setParent(this);
    m_ws->setMaxAllowedIncomingMessageSize(kMaxMessage);
    m_ws->setMaxAllowedIncomingFrameSize(kMaxMessage);
    // The local side's buffer stays small: the rest waits in the kernel, where the writer's flow
    // control sees it.
    m_local->setReadBufferSize(256 * 1024);
    connect(m_local, &QLocalSocket::readyRead, this, &WebSocketPipe::pumpUp);
    connect(m_local, &QLocalSocket::bytesWritten, this, &WebSocketPipe::onLocalWritten);
    connect(m_local, &QLocalSocket::disconnected, this, [this] { shut(QStringLiteral("the local side closed")); });
    connect(m_ws, &QWebSocket::binaryMessageReceived, this, &WebSocketPipe::onMessage);
    connect(m_ws, &QWebSocket::textMessageReceived, this, &WebSocketPipe::onAck);
    connect(m_ws, &QWebSocket::disconnected, this, [this] {
        shut(m_ws->closeReason().isEmpty() ? QStringLiteral("the connection closed") : m_ws->closeReason());
    });
    if (auto *ssl = qobject_cast<QSslSocket *>(transport))
        connect(ssl, &QSslSocket::encryptedBytesWritten, this, &WebSocketPipe::pumpUp);
    else if (transport)
        connect(transport, &QAbstractSocket::bytesWritten, this, &WebSocketPipe::pumpUp);
    auto *watch = new QTimer(this);
    connect(watch, &QTimer::timeout, this, [this] {
        if (backlog() > kMaxBacklog)
            shut(QStringLiteral("the peer stopped reading"));
    });
    watch->start(500);
    pumpUp();
}

WebSocketPipe::~WebSocketPipe() = default;

qint64 WebSocketPipe::backlog() const
{
    if (!m_transport)
        return 0;
    const auto *ssl = qobject_cast<const QSslSocket *>(m_transport.data());
    return m_transport->bytesToWrite() + (ssl ? ssl->encryptedBytesToWrite() : 0);
}

void WebSocketPipe::pumpUp()
{
    while (!m_shut && m_unacked < kWindow && backlog() < kMaxMessage && m_local->bytesAvailable() > 0) {
        const QByteArray chunk = m_local->read(std::min(kMaxMessage, kWindow - m_unacked));
        if (chunk.isEmpty())
            break;
        m_unacked += chunk.size();
        m_ws->sendBinaryMessage(chunk);
    }
}

void WebSocketPipe::onMessage(const QByteArray &message)
{
    if (m_shut)
        return;
    m_inFlight += message.size();
    if (m_inFlight > kWindow)
        return shut(QStringLiteral("the peer sent past the flow-control window"));
    m_local->write(message);
}

void WebSocketPipe::onLocalWritten(qint64 bytes)
{
    m_inFlight -= bytes;
    m_toAck += bytes;
    // Acknowledged in quarters of the window (and whenever the pipe drains): few messages, and
    // the sender never stalls for long.
    if (m_toAck >= kWindow / 4 || m_inFlight == 0) {
        m_ws->sendTextMessage(QStringLiteral("ack %1").arg(m_toAck));
        m_toAck = 0;
    }
}

void WebSocketPipe::onAck(const QString &text)
{
    bool ok = false;
    const qint64 n = text.startsWith(QLatin1String("ack ")) ? text.mid(4).toLongLong(&ok) : 0;
    if (!ok || n <= 0 || n > m_unacked)
        return shut(QStringLiteral("the peer broke the pipe's protocol"));
    m_unacked -= n;
    pumpUp();
}

void WebSocketPipe::shut(const QString &why)
{
    if (m_shut)
        return;
    m_shut = true;
    if (m_local->state() == QLocalSocket::ConnectedState) {
        m_local->flush();
        m_local->disconnectFromServer();
    }
    if (m_ws->state() == QAbstractSocket::ConnectedState)
        m_ws->close(QWebSocketProtocol::CloseCodeNormal, why.left(120));
    Q_EMIT closed(why);
}

} // namespace airlock::remote
