// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

namespace airlock::guest {

// Frames waiting to be written to the daemon socket. Output frames are built in place in a
// Buffer (header space reserved in front of the read) and moved in, so bulk output is never copied
// in user space; buffers of the standard size are recycled to avoid an allocation per read.
class OutQueue {
public:
    struct Buffer {
        std::unique_ptr<char[]> data;
        size_t capacity = 0;
        size_t len = 0; // bytes of frame data
        size_t off = 0; // bytes already written to the socket
    };

    explicit OutQueue(size_t standardCapacity)
        : m_standardCapacity(standardCapacity)
    {
    }

    // A buffer with at least the standard capacity, recycled when possible.
    Buffer acquire();
    // Returns an unused buffer to the pool.
    void release(Buffer buf);
    void push(Buffer buf);
    void pushCopy(std::string_view frame);
    // Drops every frame (the daemon they were for is gone).
    void clear();

    size_t bytes() const { return m_bytes; }
    bool empty() const { return m_queue.empty(); }

    // Writes as much as the socket accepts right now. Returns false if the peer is gone.
    bool flush(int fd);
    // Used only on the way out (Fatal): waits up to timeoutMs for the queue to drain.
    void flushBlocking(int fd, int timeoutMs);

private:
    std::deque<Buffer> m_queue;
    std::vector<Buffer> m_pool;
    size_t m_bytes = 0;
    size_t m_standardCapacity;
};

} // namespace airlock::guest
