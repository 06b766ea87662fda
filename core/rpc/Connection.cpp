// SPDX-License-Identifier: Apache-2.0
#include "rpc/Connection.h"

#include <QElapsedTimer>
#include <QLocalSocket>
#include <QPointer>
#include <QTimer>

#include <cerrno>
#include <poll.h>
#include <sys/uio.h>

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
{
    m_socket->setParent(this);
    m_socket->setReadBufferSize(kReadAhead);
    connect(m_socket, &QLocalSocket::readyRead, this, &Connection::onReadyRead);
    connect(m_socket, &QLocalSocket::disconnected, this, [this] {
        // What arrived before the end comes before it (a closing error reply explains the close).
        QPointer<Connection> self(this);
        deliver(Budget::All);
        if (self)
            Q_EMIT disconnected();
    });
    connect(m_socket, &QLocalSocket::bytesWritten, this, [this] {
        if (m_waitingForFlush && m_socket->bytesToWrite() <= m_pauseBacklog / 2) {
            m_waitingForFlush = false;
            scheduleDelivery();
        }
        Q_EMIT bytesFlushed(m_socket->bytesToWrite());
    });
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
    if (m_socket->state() != QLocalSocket::ConnectedState)
        return;
    qint64 written = 0;
    if (m_socket->bytesToWrite() == 0) {
        iovec iov[2] = {{const_cast<char *>(header.constData()), size_t(header.size())},
            {const_cast<char *>(data.constData()), size_t(data.size())}};
        const ssize_t n = ::writev(int(m_socket->socketDescriptor()), iov, 2);
        written = n > 0 ? n : 0; // EAGAIN and errors: the buffered path below (and Qt) handle them
    }
    if (written < header.size()) {
        m_socket->write(header.constData() + written, header.size() - written);
        m_socket->write(data);
    } else if (written < header.size() + data.size()) {
        m_socket->write(data.constData() + (written - header.size()), data.size() - (written - header.size()));
    }
}

void Connection::sendDataWaiting(quint32 transfer, const QByteArray &data)
{
    const QByteArray header = encodeDataHeader(transfer, data.size());
    if (m_socket->state() != QLocalSocket::ConnectedState || m_socket->bytesToWrite() > 0)
        return sendOutput(header, data);
    const int fd = int(m_socket->socketDescriptor());
    const qsizetype total = header.size() + data.size();
    qsizetype done = 0;
    while (done < total) {
        iovec iov[2];
        int count = 0;
        if (done < header.size())
            iov[count++] = {const_cast<char *>(header.constData()) + done, size_t(header.size() - done)};
        const qsizetype inData = std::max<qsizetype>(0, done - header.size());
        iov[count++] = {const_cast<char *>(data.constData()) + inData, size_t(data.size() - inData)};
        const ssize_t n = ::writev(fd, iov, count);
        if (n > 0) {
            done += n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        pollfd room{fd, POLLOUT, 0};
        if (n < 0 && errno == EAGAIN && ::poll(&room, 1, 10000) > 0 && !(room.revents & (POLLERR | POLLHUP)))
            continue;
        break; // an error, or no room for long: the rest through the socket, which reports it
    }
    if (done < header.size()) {
        m_socket->write(header.constData() + done, header.size() - done);
        m_socket->write(data);
    } else if (done < total) {
        m_socket->write(data.constData() + (done - header.size()), total - done);
    }
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
        if (budget == Budget::Slice && m_pauseBacklog > 0 && m_socket->bytesToWrite() > m_pauseBacklog) {
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
