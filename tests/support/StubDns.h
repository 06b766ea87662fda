// SPDX-License-Identifier: Apache-2.0
// A DNS server for tests on a loopback address of its own (127.53.X.Y, port 53, from the pid): it
// answers every A query with one address (AAAA with no records) and remembers every name it was
// asked, so a test can tell what a daemon looked up. A daemon started through launcher() has it as
// its only resolver: a mount namespace of its own with /etc/resolv.conf bound over. Needs root.
#pragma once

#include <QByteArray>
#include <QHostAddress>
#include <QStringList>
#include <QTemporaryFile>

#include <arpa/inet.h>
#include <atomic>
#include <mutex>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

namespace airlock::test {

class StubDns {
public:
    explicit StubDns(const QHostAddress &answer)
        : m_answer(answer.toIPv4Address())
        , m_address(QStringLiteral("127.53.%1.%2").arg((::getpid() / 250) % 250).arg(::getpid() % 250 + 1))
    {
    }
    ~StubDns()
    {
        m_stop = true;
        if (m_thread.joinable())
            m_thread.join();
        if (m_fd >= 0)
            ::close(m_fd);
    }
    StubDns(const StubDns &) = delete;
    StubDns &operator=(const StubDns &) = delete;

    bool start()
    {
        m_fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        const timeval poll{0, 100'000}; // how soon the thread sees m_stop
        ::setsockopt(m_fd, SOL_SOCKET, SO_RCVTIMEO, &poll, sizeof poll);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(53);
        ::inet_pton(AF_INET, m_address.toLatin1().constData(), &sa.sin_addr);
        if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || !m_conf.open())
            return false;
        // A search domain and Kubernetes' ndots:5, as a corporate or cloud host may have: a name
        // the daemon looks up must be asked for as it is, never with the host's domain after it.
        m_conf.write(
            "nameserver " + m_address.toLatin1() + "\nsearch corp.internal\noptions timeout:2 attempts:1 ndots:5\n");
        m_conf.flush();
        m_thread = std::thread([this] { serve(); });
        return true;
    }
    // The command prefix that runs a program with this server as its resolver.
    QStringList launcher() const
    {
        return {QStringLiteral("unshare"), QStringLiteral("--mount"), QStringLiteral("--propagation"),
            QStringLiteral("private"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("mount --bind \"$0\" /etc/resolv.conf && exec \"$@\""), m_conf.fileName()};
    }
    // Every name asked so far, lower-case, in order (A and AAAA each).
    QStringList asked() const
    {
        std::lock_guard lock(m_mutex);
        return m_asked;
    }

private:
    void serve()
    {
        unsigned char query[512];
        while (!m_stop) {
            sockaddr_in from{};
            socklen_t fromLength = sizeof from;
            const ssize_t n
                = ::recvfrom(m_fd, query, sizeof query, 0, reinterpret_cast<sockaddr *>(&from), &fromLength);
            if (n < 12)
                continue;
            // The question: labels, then type and class.
            ssize_t at = 12;
            QStringList labels;
            while (at < n && query[at] != 0 && query[at] < 64 && at + 1 + query[at] < n) {
                labels.append(QString::fromLatin1(reinterpret_cast<const char *>(query) + at + 1, query[at]).toLower());
                at += 1 + query[at];
            }
            if (at + 5 > n || query[at] != 0)
                continue;
            const bool typeA = query[at + 1] == 0 && query[at + 2] == 1;
            {
                std::lock_guard lock(m_mutex);
                m_asked.append(labels.join(QLatin1Char('.')));
            }
            QByteArray reply(reinterpret_cast<const char *>(query), at + 5);
            reply[2] = char(0x84 | (query[2] & 0x01)); // a response, authoritative, recursion as asked
            reply[3] = char(0x80);
            reply.replace(4, 8, QByteArray("\x00\x01\x00\x00\x00\x00\x00\x00", 8));
            if (typeA) {
                reply[7] = 1;
                reply += QByteArray(
                    "\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04", 12); // the question's name, A, IN, TTL 0
                const quint32 address = htonl(m_answer);
                reply += QByteArray(reinterpret_cast<const char *>(&address), 4);
            }
            ::sendto(m_fd, reply.constData(), size_t(reply.size()), 0, reinterpret_cast<sockaddr *>(&from), fromLength);
        }
    }

    quint32 m_answer;
    QString m_address;
    QTemporaryFile m_conf;
    int m_fd = -1;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    mutable std::mutex m_mutex;
    QStringList m_asked;
};

} // namespace airlock::test
