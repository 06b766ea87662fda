// SPDX-License-Identifier: Apache-2.0
#include "rpc/WriteQueue.h"
#include "log/Log.h"

#include <QPointer>
#include <QSocketNotifier>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace airlock::rpc {

namespace {
constexpr int kMaxPieces = 64; // per sendmsg (IOV_MAX is 1024)
// Smaller rests are copied into one buffer of the queue's own (up to kCoalesce), so that what
// waits costs about the bytes it counts, not a QByteArray and a queue entry each.
constexpr qsizetype kSmall = 4096;
constexpr qsizetype kCoalesce = 64 * 1024;

iovec rest(const QByteArray &bytes, qsizetype from)
{
    return {const_cast<char *>(bytes.constData()) + from, size_t(bytes.size() - from)};
}
} // namespace

WriteQueue::WriteQueue(int fd, QObject *parent)
    : QObject(parent)
    , m_fd(fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1) // (never a standard stream's number)
{
    Q_ASSERT(fd >= 0); // a connected socket's
    if (m_fd < 0) { // no descriptor to spare: the connection ends, it does not go on unable to send
        log::get("core.rpc")
            ->warn("closing a connection: no descriptor to spare for writing to it ({})", std::strerror(errno));
        if (fd >= 0)
            ::shutdown(fd, SHUT_RDWR);
        m_gone = true;
        return;
    }
    m_room = new QSocketNotifier(qintptr(m_fd), QSocketNotifier::Write, this);
    m_room->setEnabled(false);
    connect(m_room, &QSocketNotifier::activated, this, &WriteQueue::writeSome);
}

WriteQueue::~WriteQueue()
{
    abandon();
}

void WriteQueue::abandon()
{
    m_gone = true;
    m_queue.clear();
    m_pending = 0;
    m_whenEmpty = {};
    delete std::exchange(m_room, nullptr); // before the descriptor it watches is closed
    if (m_fd >= 0)
        ::close(std::exchange(m_fd, -1));
}

qint64 WriteQueue::send(const iovec *iov, int count)
{
    if (count == 0)
        return 0;
    msghdr msg{};
    msg.msg_iov = const_cast<iovec *>(iov);
    msg.msg_iovlen = size_t(count);
    for (;;) {
        const ssize_t n = ::sendmsg(m_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        // The peer is gone (EPIPE, ECONNRESET) or the socket failed: nothing more goes, and the
        // connection ends (shut down both ways, so that reading reports it even to a peer that
        // only stopped reading).
        ::shutdown(m_fd, SHUT_RDWR);
        m_gone = true;
        m_queue.clear();
        m_pending = 0;
        m_room->setEnabled(false);
        return -1;
    }
}

void WriteQueue::keep(const QByteArray &bytes, qsizetype from)
{
    const qsizetype size = bytes.size() - from;
    if (size <= 0)
        return;
    m_pending += size;
    if (size >= kSmall) {
        m_queue.push_back({bytes, from, false});
        return;
    }
    if (m_queue.empty() || !m_queue.back().own || m_queue.back().bytes.size() + size > kCoalesce)
        m_queue.push_back({QByteArray(), 0, true});
    m_queue.back().bytes.append(bytes.constData() + from, size);
}

void WriteQueue::keepRest(const QByteArray &first, const QByteArray &second, qint64 written)
{
    if (written < first.size()) {
        keep(first, qsizetype(written));
        keep(second, 0);
    } else {
        keep(second, qsizetype(written - first.size()));
    }
    if (!m_queue.empty() && m_room)
        m_room->setEnabled(true);
}

void WriteQueue::append(const QByteArray &first, const QByteArray &second)
{
    if (m_gone)
        return;
    qint64 written = 0;
    if (m_queue.empty()) {
        iovec iov[2];
        int n = 0;
        for (const QByteArray *b : {&first, &second})
            if (!b->isEmpty())
                iov[n++] = rest(*b, 0);
        written = send(iov, n);
        if (written < 0)
            return finishIfEmpty();
    }
    keepRest(first, second, written);
}

void WriteQueue::appendWaiting(const QByteArray &first, const QByteArray &second, int timeoutMs)
{
    if (m_gone)
        return;
    if (!m_queue.empty())
        return append(first, second);
    const qint64 total = first.size() + second.size();
    qint64 done = 0;
    while (done < total) {
        iovec iov[2];
        int n = 0;
        if (done < first.size())
            iov[n++] = rest(first, qsizetype(done));
        if (!second.isEmpty())
            iov[n++] = rest(second, qsizetype(std::max<qint64>(0, done - first.size())));
        const qint64 w = send(iov, n);
        if (w < 0)
            return finishIfEmpty();
        done += w;
        if (w > 0)
            continue;
        pollfd room{m_fd, POLLOUT, 0};
        if (::poll(&room, 1, timeoutMs) <= 0 || (room.revents & POLLERR))
            break; // no room for long: the rest waits in the queue
    }
    keepRest(first, second, done);
}

void WriteQueue::writeSome()
{
    while (!m_queue.empty()) {
        iovec iov[kMaxPieces];
        int n = 0;
        qint64 offered = 0;
        for (auto it = m_queue.begin(); it != m_queue.end() && n < kMaxPieces; ++it, ++n) {
            iov[n] = rest(it->bytes, it->from);
            offered += qint64(iov[n].iov_len);
        }
        const qint64 w = send(iov, n);
        if (w < 0)
            break;
        dropWritten(w);
        if (w < offered)
            break; // the socket is full
    }
    if (m_room)
        m_room->setEnabled(!m_queue.empty());
    QPointer<WriteQueue> self(this);
    Q_EMIT written(m_pending);
    if (self) // (a handler may end the connection, and this with it)
        finishIfEmpty();
}

void WriteQueue::dropWritten(qint64 n)
{
    m_pending -= n;
    while (n > 0) {
        Piece &front = m_queue.front();
        const qint64 left = front.bytes.size() - front.from;
        if (n < left) {
            front.from += qsizetype(n);
            return;
        }
        n -= left;
        m_queue.pop_front();
    }
}

void WriteQueue::whenEmpty(std::function<void()> then)
{
    m_whenEmpty = std::move(then);
    finishIfEmpty();
}

void WriteQueue::finishIfEmpty()
{
    if (m_queue.empty() && m_whenEmpty)
        std::exchange(m_whenEmpty, {})();
}

} // namespace airlock::rpc
