// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "rpc/Protocol.h"

#include <QJsonObject>
#include <QObject>

class QLocalSocket;

namespace airlock::rpc {

class WriteQueue;

// Frames over one local socket, for both the daemon and clients. Emits decoded messages; the first
// malformed frame emits framingFailed() and nothing is read after it.
//
// A burst (the daemon streams a flooding sandbox's output in megabytes) is handed out a few
// milliseconds at a time, the rest from a zero timer, so the receiver's timers, input and painting
// run in between. Nothing more is read while frames wait: the socket's bounded buffer fills, then
// the kernel's, and the sender's flow control holds the source (RpcServer's high-water mark).
class Connection final : public QObject {
    Q_OBJECT
public:
    // `socket` is connected (its descriptor is valid).
    explicit Connection(QLocalSocket *socket, QObject *parent = nullptr);
    ~Connection() override;

    void send(const QJsonObject &message);
    void sendFrame(const QByteArray &frame);
    // An output frame as header + data: written straight to the socket (one call) when nothing
    // is queued before it; the rest waits, not copied (WriteQueue).
    void sendOutput(const QByteArray &header, const QByteArray &data);
    // A data frame of a file transfer (at most kMaxDataChunk bytes), the same way.
    void sendData(quint32 transfer, const QByteArray &data)
    {
        sendOutput(encodeDataHeader(transfer, data.size()), data);
    }
    // The same, waiting for the socket to take all of it: for a sender with nothing else to do
    // meanwhile (cp's upload). After 10 s without room, the rest is queued as sendData would.
    void sendDataWaiting(quint32 transfer, const QByteArray &data);
    qint64 pendingBytes() const;
    // The daemon's side: stop handing out (and so reading) requests while more than `bytes` of
    // replies wait to be written; a peer that asks and never reads cannot grow them without end.
    // (Never on a client's side: both ends waiting for the other to read would be a deadlock.)
    void pauseWhileBacklogged(qint64 bytes) { m_pauseBacklog = bytes; }
    bool isOpen() const;
    // Sends a typed error (id null) and closes once it is written.
    void closeWithError(const Error &error);
    void close(); // once what is queued is written

    QLocalSocket *socket() const { return m_socket; }

Q_SIGNALS:
    void messageReceived(const QJsonObject &message);
    void outputReceived(const airlock::Event &event);
    // A data frame: `bytes` points into the connection's buffer, valid only during the call.
    void dataReceived(quint32 transfer, QByteArrayView bytes);
    void framingFailed(const airlock::Error &error);
    void bytesFlushed(qint64 pending);
    void disconnected();

private:
    void onReadyRead();
    enum class Budget { Slice, All };
    void deliver(Budget budget);
    void scheduleDelivery(); // the rest from a zero timer

    QLocalSocket *m_socket;
    WriteQueue *m_out; // everything sent goes through it, in order (never QLocalSocket::write)
    FrameReader m_reader;
    bool m_broken = false;
    bool m_resumeScheduled = false;
    qint64 m_pauseBacklog = 0; // 0: never pause
    bool m_waitingForFlush = false;
    bool m_closing = false; // close() was called: nothing more is sent
};

} // namespace airlock::rpc
