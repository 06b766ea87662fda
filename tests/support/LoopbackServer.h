// SPDX-License-Identifier: Apache-2.0
// A real HTTP server on 127.0.0.1 on a thread of its own (the test's thread blocks in airlockctl
// calls): answers every request with "<name> <method> <target>" and keeps each request's head and
// body, so a test can check exactly what reached it (through the egress proxy, from a tool). A request for
// /bytes/N is answered with N bytes (for throughput); one for /echo with every byte that follows its
// head, as it comes, until the client shuts its side (no HTTP answer: raw bytes).
#pragma once

#include <QByteArray>
#include <QList>

#include <arpa/inet.h>
#include <atomic>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace airlock::test {

class LoopbackServer {
public:
    explicit LoopbackServer(QByteArray name)
        : m_name(std::move(name))
    {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof sa;
        if (::bind(m_fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
            qFatal("LoopbackServer: cannot bind a port on 127.0.0.1");
        ::listen(m_fd, 64);
        ::getsockname(m_fd, reinterpret_cast<sockaddr *>(&sa), &len);
        m_port = ntohs(sa.sin_port);
        m_thread = std::thread([this] { acceptLoop(); });
    }
    ~LoopbackServer()
    {
        m_stop = true;
        ::shutdown(m_fd, SHUT_RDWR);
        m_thread.join();
        ::close(m_fd);
        for (std::thread &t : m_workers)
            t.join();
    }
    quint16 port() const { return m_port; }
    QList<QByteArray> heads() const
    {
        std::lock_guard lock(m_mutex);
        return m_heads;
    }
    QList<QByteArray> bodies() const
    {
        std::lock_guard lock(m_mutex);
        return m_bodies;
    }
    int accepted() const { return m_accepted; }

private:
    void acceptLoop()
    {
        while (!m_stop) {
            const int c = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0)
                continue;
            ++m_accepted;
            m_workers.emplace_back([this, c] { serve(c); });
        }
    }
    void serve(int c)
    {
        QByteArray in;
        char buf[8192];
        while (!in.contains("\r\n\r\n") && in.size() < 65536) {
            const ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0)
                break;
            in.append(buf, n);
        }
        const QByteArray head = in.left(in.indexOf("\r\n\r\n"));
        if (head.startsWith("POST /echo ")) {
            QByteArray early = in.mid(head.size() + 4);
            for (ssize_t n = early.size(); n > 0; n = ::read(c, buf, sizeof buf)) {
                const char *from = early.isEmpty() ? buf : early.constData();
                for (ssize_t off = 0; off < n;) {
                    const ssize_t w = ::send(c, from + off, size_t(n - off), MSG_NOSIGNAL);
                    if (w <= 0)
                        break;
                    off += w;
                }
                early.clear();
            }
            ::shutdown(c, SHUT_WR);
            ::close(c);
            return;
        }
        // A body, as long as Content-Length says.
        qint64 length = 0;
        for (const QByteArray &line : head.split('\n'))
            if (line.toLower().startsWith("content-length:"))
                length = line.mid(15).trimmed().toLongLong();
        QByteArray body = in.mid(head.size() + 4);
        while (body.size() < length && body.size() < (1 << 20)) {
            const ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0)
                break;
            body.append(buf, n);
        }
        {
            std::lock_guard lock(m_mutex);
            m_heads.append(head);
            m_bodies.append(body);
        }
        const QList<QByteArray> requestLine = head.left(head.indexOf("\r\n")).split(' ');
        const QByteArray target = requestLine.value(1);
        if (target.startsWith("/bytes/")) {
            const qint64 total = target.mid(7).toLongLong();
            const QByteArray header
                = "HTTP/1.1 200 OK\r\nContent-Length: " + QByteArray::number(total) + "\r\nConnection: close\r\n\r\n";
            (void)!::write(c, header.constData(), size_t(header.size()));
            std::vector<char> block(256 * 1024, 'x');
            for (qint64 sent = 0; sent < total;) {
                const ssize_t n = ::send(
                    c, block.data(), size_t(std::min<qint64>(total - sent, qint64(block.size()))), MSG_NOSIGNAL);
                if (n <= 0)
                    break;
                sent += n;
            }
        } else {
            const QByteArray body = m_name + ' ' + requestLine.value(0) + ' ' + target + '\n';
            const QByteArray response = "HTTP/1.1 200 OK\r\nContent-Length: " + QByteArray::number(body.size())
                + "\r\nConnection: close\r\n\r\n" + body;
            (void)!::write(c, response.constData(), size_t(response.size()));
        }
        ::shutdown(c, SHUT_WR);
        while (::read(c, buf, sizeof buf) > 0) { }
        ::close(c);
    }

    QByteArray m_name;
    int m_fd = -1;
    quint16 m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_accepted{0};
    std::thread m_thread;
    std::vector<std::thread> m_workers; // joined at the end; tests make few connections
    mutable std::mutex m_mutex;
    QList<QByteArray> m_heads, m_bodies;
};

} // namespace airlock::test
