// SPDX-License-Identifier: Apache-2.0
#include "rpc/Connection.h"

#include <QLocalSocket>
#include <QPointer>

namespace airlock::rpc {

Connection::Connection(QLocalSocket *socket, QObject *parent) : QObject(parent), m_socket(socket)
{
    m_socket->setParent(this);
    m_socket->setReadBufferSize(0);
    connect(m_socket, &QLocalSocket::readyRead, this, &Connection::onReadyRead);
    connect(m_socket, &QLocalSocket::disconnected, this, &Connection::disconnected);
    connect(m_socket, &QLocalSocket::bytesWritten, this, [this] { Q_EMIT bytesFlushed(m_socket->bytesToWrite()); });
}

void Connection::send(const QJsonObject &message)
{
    sendFrame(encodeJson(message));
}

void Connection::sendFrame(const QByteArray &frame)
{
    if (m_socket->state() == QLocalSocket::ConnectedState)
        m_socket->write(frame);
}

qint64 Connection::pendingBytes() const
{
    return m_socket->bytesToWrite();
}

bool Connection::isOpen() const
{
    return m_socket->state() == QLocalSocket::ConnectedState && !m_broken;
}

void Connection::closeWithError(const Error &error)
{
    m_broken = true;
    send(makeErrorReply(QJsonValue(), error));
    m_socket->disconnectFromServer(); // flushes pending writes first
}

void Connection::close()
{
    m_socket->disconnectFromServer();
}

void Connection::onReadyRead()
{
    if (m_broken) {
        m_socket->readAll();
        return;
    }
    m_reader.append(m_socket->readAll());
    QPointer<Connection> self(this);
    while (self && !m_broken) {
        auto next = m_reader.next();
        if (!next) {
            m_broken = true;
            Q_EMIT framingFailed(next.error());
            return;
        }
        if (!next->has_value())
            return;
        const Frame &f = **next;
        if (f.kind == kJsonFrame) {
            auto msg = decodeJson(f.payload);
            if (!msg) {
                m_broken = true;
                Q_EMIT framingFailed(msg.error());
                return;
            }
            Q_EMIT messageReceived(*msg);
        } else {
            auto ev = decodeOutput(f.payload);
            if (!ev) {
                m_broken = true;
                Q_EMIT framingFailed(ev.error());
                return;
            }
            Q_EMIT outputReceived(*ev);
        }
    }
}

} // namespace airlock::rpc
