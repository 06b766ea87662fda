// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "rpc/Protocol.h"

#include <QJsonObject>
#include <QObject>

class QLocalSocket;

namespace airlock::rpc {

// Frames over one local socket, for both the daemon and clients. Emits decoded messages; the first
// malformed frame emits framingFailed() and nothing is read after it.
class Connection final : public QObject {
    Q_OBJECT
public:
    explicit Connection(QLocalSocket *socket, QObject *parent = nullptr);

    void send(const QJsonObject &message);
    void sendFrame(const QByteArray &frame);
    // An output frame as header + data: written straight to the socket (one writev, no copy)
    // when nothing is queued before it, the rest through the socket's buffer.
    void sendOutput(const QByteArray &header, const QByteArray &data);
    qint64 pendingBytes() const;
    bool isOpen() const;
    // Sends a typed error (id null) and closes once it is written.
    void closeWithError(const Error &error);
    void close();
    QLocalSocket *socket() const { return m_socket; }

Q_SIGNALS:
    void messageReceived(const QJsonObject &message);
    void outputReceived(const airlock::Event &event);
    void framingFailed(const airlock::Error &error);
    void bytesFlushed(qint64 pending);
    void disconnected();

private:
    void onReadyRead();

    QLocalSocket *m_socket;
    FrameReader m_reader;
    bool m_broken = false;
};

} // namespace airlock::rpc
