// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QObject>

#include <deque>
#include <functional>

class QSocketNotifier;
struct iovec;

namespace airlock::rpc {

// What one socket sends, in order and without a copy (issue 23: a copy of every byte of a stream
// into the socket's buffer was a tenth of the daemon's work; Qt 6.4's QIODevice::write copies).
// Bytes are written straight to the socket while it takes them; the rest waits as the QByteArrays
// it was given (shared, not copied) until the socket has room, which a write notifier on the
// event loop reports. A peer that is gone gets nothing more: what waits is dropped, and the
// socket's reading side reports the end.
class WriteQueue final : public QObject {
    Q_OBJECT
public:
    // Writes to a descriptor of its own (a duplicate of fd): a number the socket's owner closes
    // and the system gives to a new socket never receives what waits here.
    WriteQueue(int fd, QObject *parent);
    ~WriteQueue() override;

    // Appends `first` then `second` (either may be empty), written with one call when nothing
    // waits before them.
    void append(const QByteArray &first, const QByteArray &second = {});
    // The same, waiting up to timeoutMs at a time for the socket to take all of it (no queue):
    // for a sender with nothing else to do meanwhile. After a wait without room, the rest waits
    // in the queue as append() leaves it.
    void appendWaiting(const QByteArray &first, const QByteArray &second, int timeoutMs);
    qint64 pending() const { return m_pending; }
    // Called once everything queued is written (at once when nothing waits).
    void whenEmpty(std::function<void()> then);
    // The connection ended: what waits is dropped, and nothing more is sent or reported.
    void abandon();

Q_SIGNALS:
    // Some of what waited was written; `pending` bytes still wait.
    void written(qint64 pending);

private:
    struct Piece {
        QByteArray bytes;
        qsizetype from = 0;
        bool own = false; // small rests copied together (see keep())
    };
    // One sendmsg; bytes written, 0 for none (EAGAIN), -1 once the peer is gone (then nothing
    // waits any more).
    qint64 send(const iovec *iov, int count);
    void keep(const QByteArray &bytes, qsizetype from);
    void keepRest(const QByteArray &first, const QByteArray &second, qint64 written);
    void writeSome(); // the notifier: the socket has room
    void dropWritten(qint64 n);
    void finishIfEmpty();

    int m_fd;
    QSocketNotifier *m_room = nullptr;
    std::deque<Piece> m_queue;
    qint64 m_pending = 0;
    bool m_gone = false;
    std::function<void()> m_whenEmpty;
};

} // namespace airlock::rpc
