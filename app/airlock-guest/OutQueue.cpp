// SPDX-License-Identifier: Apache-2.0
#include "OutQueue.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <sys/uio.h>

namespace airlock::guest {
namespace {
constexpr size_t kMaxPooled = 16; // enough to cover the backpressure high-water mark
constexpr int kMaxIov = 64;

long long monotonicMs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
} // namespace

OutQueue::Buffer OutQueue::acquire()
{
    if (!m_pool.empty()) {
        Buffer b = std::move(m_pool.back());
        m_pool.pop_back();
        b.len = 0;
        b.off = 0;
        return b;
    }
    Buffer b;
    // Not value-initialised: the buffer is about to be overwritten by read().
    b.data.reset(new char[m_standardCapacity]);
    b.capacity = m_standardCapacity;
    return b;
}

void OutQueue::release(Buffer buf)
{
    if (buf.capacity == m_standardCapacity && m_pool.size() < kMaxPooled)
        m_pool.push_back(std::move(buf));
}

void OutQueue::push(Buffer buf)
{
    if (buf.len == 0) {
        release(std::move(buf));
        return;
    }
    m_bytes += buf.len;
    m_queue.push_back(std::move(buf));
}

void OutQueue::pushCopy(std::string_view frame)
{
    Buffer b;
    if (frame.size() <= m_standardCapacity) {
        b = acquire();
    } else {
        b.data.reset(new char[frame.size()]);
        b.capacity = frame.size();
    }
    std::memcpy(b.data.get(), frame.data(), frame.size());
    b.len = frame.size();
    push(std::move(b));
}

void OutQueue::clear()
{
    for (Buffer &b : m_queue)
        release(std::move(b));
    m_queue.clear();
    m_bytes = 0;
}

bool OutQueue::flush(int fd)
{
    while (!m_queue.empty()) {
        iovec iov[kMaxIov];
        int n = 0;
        size_t want = 0;
        for (auto it = m_queue.begin(); it != m_queue.end() && n < kMaxIov; ++it, ++n) {
            iov[n].iov_base = it->data.get() + it->off;
            iov[n].iov_len = it->len - it->off;
            want += iov[n].iov_len;
        }
        const ssize_t written = writev(fd, iov, n);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        auto left = static_cast<size_t>(written);
        m_bytes -= left;
        while (left > 0) {
            Buffer &front = m_queue.front();
            const size_t chunk = front.len - front.off;
            if (left < chunk) {
                front.off += left;
                break;
            }
            left -= chunk;
            release(std::move(front));
            m_queue.pop_front();
        }
        // A short write means the socket buffer is full; poll() will tell us when to continue.
        if (static_cast<size_t>(written) < want)
            return true;
    }
    return true;
}

void OutQueue::flushBlocking(int fd, int timeoutMs)
{
    const long long deadline = monotonicMs() + timeoutMs;
    while (!m_queue.empty()) {
        if (!flush(fd))
            return;
        if (m_queue.empty())
            return;
        const long long left = deadline - monotonicMs();
        if (left <= 0)
            return;
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR)
            return;
    }
}

} // namespace airlock::guest
