// SPDX-License-Identifier: Apache-2.0
#include "rpc/Connection.h"
#include "rpc/WriteQueue.h"

#include <QElapsedTimer>
#include <QLocalSocket>
#include <QPointer>
#include <QTimer>

namespace airlock::rpc {

namespace {
// Frames are handed out for about this long per event-loop turn (a person notices 50 ms).
constexpr qint64 kSliceMs = 4;
// What the socket reads ahead of the frames handed out; past it, the peer is made to wait.
constexpr qint64 kReadAhead = 1024 * 1024;
} // namespace

Connection::Connection(QLocalSocket *socket, QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_out(new WriteQueue(int(socket->socketDescriptor()), this))
{
    m_socket->setParent(this);
    m_socket->setReadBufferSize(kReadAhead);
    connect(m_socket, &QLocalSocket::readyRead, this, &Connection::onReadyRead);
    connect(m_socket, &QLocalSocket::disconnected, this, [this] {
        m_out->abandon(); // nothing more is written, nor reported as written
        // What arrived before the end comes before it (a closing error reply explains the close).
        QPointer<Connection> self(this);
        deliver(Budget::All);
        if (self)
            Q_EMIT disconnected();
    });
    connect(m_out, &WriteQueue::written, this, [this](qint64 pending) {
        if (m_waitingForFlush && pending <= m_pauseBacklog / 2) {
            m_waitingForFlush = false;
            scheduleDelivery();
        }
        Q_EMIT bytesFlushed(pending);
    });
}

Connection::~Connection()
{
    // The queue's own descriptor is closed now, before the socket's: the peer sees the end at once,
    // whatever order the children go in (an ssh transport waits for it in its socket's destroyed()).
    m_out->abandon();
}

void Connection::send(const QJsonObject &message)
{
    sendFrame(encodeJson(message));
}

void Connection::sendFrame(const QByteArray &frame)
{
    sendOutput(frame, QByteArray()); // at once, when nothing waits before it (not at the loop's next turn)
}

void Connection::sendOutput(const QByteArray &header, const QByteArray &data)
{
    if (m_socket->state() == QLocalSocket::ConnectedState && !m_closing)
        m_out->append(header, data);
}

void Connection::sendDataWaiting(quint32 transfer, const QByteArray &data)
{
    if (m_socket->state() == QLocalSocket::ConnectedState && !m_closing)
        m_out->appendWaiting(encodeDataHeader(transfer, data.size()), data, 10000);
}

qint64 Connection::pendingBytes() const
{
    return m_out->pending();
}

bool Connection::isOpen() const
{
    return m_socket->state() == QLocalSocket::ConnectedState && !m_broken;
}

void Connection::closeWithError(const Error &error)
{
    m_broken = true;
    send(makeErrorReply(QJsonValue(), error));
    close();
}

void Connection::close()
{
    m_closing = true; // nothing more is queued; what is goes first
    m_out->whenEmpty([this] { m_socket->disconnectFromServer(); });
}

void Connection::onReadyRead()
{
    if (m_broken) {
        m_socket->readAll();
        return;
    }
    if (!m_resumeScheduled && !m_waitingForFlush) // else frames are waiting, and these bytes come after them
        deliver(Budget::Slice);
}

void Connection::scheduleDelivery()
{
    m_resumeScheduled = true;
    QTimer::singleShot(0, this, [this] {
        if (m_resumeScheduled)
            deliver(Budget::Slice);
    });
}

void Connection::deliver(Budget budget)
{
    m_resumeScheduled = false;
    QPointer<Connection> self(this);
    QElapsedTimer spent;
    spent.start();
    while (self && !m_broken) {
        if (budget == Budget::Slice && m_pauseBacklog > 0 && m_out->pending() > m_pauseBacklog) {
            m_waitingForFlush = true; // resumed from bytesWritten
            return;
        }
        auto next = m_reader.next();
        if (!next) {
            m_broken = true;
            Q_EMIT framingFailed(next.error());
            return;
        }
        if (!next->has_value()) {
            if (m_socket->bytesAvailable() == 0)
                return;
            m_reader.fill(*m_socket, m_socket->bytesAvailable()); // only once what was read before is handed out
            continue;
        }
        const Frame &f = **next;
        if (f.kind == kJsonFrame) {
            auto msg = decodeJson(f.payload);
            if (!msg) {
                m_broken = true;
                Q_EMIT framingFailed(msg.error());
                return;
            }
            Q_EMIT messageReceived(*msg);
        } else if (f.kind == kDataFrame) {
            auto chunk = decodeData(f.payload);
            if (!chunk) {
                m_broken = true;
                Q_EMIT framingFailed(chunk.error());
                return;
            }
            Q_EMIT dataReceived(chunk->transfer, chunk->bytes);
        } else {
            auto ev = decodeOutput(f.payload);
            if (!ev) {
                m_broken = true;
                Q_EMIT framingFailed(ev.error());
                return;
            }
            Q_EMIT outputReceived(*ev);
        }
        if (!self)
            return;
        if (budget == Budget::Slice && spent.elapsed() >= kSliceMs)
            return scheduleDelivery();
    }
}

} // namespace airlock::rpc
