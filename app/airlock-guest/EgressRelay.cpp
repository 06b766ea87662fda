// SPDX-License-Identifier: Apache-2.0
#include "EgressRelay.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace airlock::guest {

namespace {
constexpr size_t kBufferBytes = 64 * 1024;
// Above the proxy's own limit per sandbox (which refuses, and records why): this one only bounds
// what the relay's buffers may hold (2 × 64 KiB a connection).
constexpr size_t kMaxPairs = 256;
} // namespace

EgressRelay::EgressRelay(std::string socketPath)
    : m_socketPath(std::move(socketPath))
{
}

EgressRelay::~EgressRelay()
{
    while (!m_pairs.empty())
        close(m_pairs.begin());
}

std::string EgressRelay::add(int insideFd)
{
    std::string error;
    int outside = -1;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (m_pairs.size() >= kMaxPairs) {
        error = std::to_string(kMaxPairs) + " connections are relayed already";
    } else if (m_socketPath.size() >= sizeof addr.sun_path) {
        error = "the egress socket's path is too long";
    } else {
        std::memcpy(addr.sun_path, m_socketPath.c_str(), m_socketPath.size() + 1);
        outside = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        // Under gVisor a connect to a host socket waits while the daemon's backlog is full, even
        // non-blocking; the daemon listens with a backlog no sandbox can fill in one go (the
        // proxy refuses all but 64 connections a sandbox at once, and records why).
        if (outside < 0 || ::connect(outside, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0)
            error = std::string("cannot reach the egress proxy at ") + m_socketPath + ": " + std::strerror(errno);
    }
    if (!error.empty()) {
        if (outside >= 0)
            ::close(outside);
        ::close(insideFd);
        return error;
    }
    Pair &p = m_pairs[insideFd];
    p.up.from = p.down.to = insideFd;
    p.up.to = p.down.from = outside;
    return {};
}

short EgressRelay::eventsFor(int fd, const Pair &p)
{
    short events = 0;
    for (const Direction *d : {&p.up, &p.down}) {
        if (d->from == fd && !d->pending() && !d->eof)
            events |= POLLIN;
        if (d->to == fd && d->pending())
            events |= POLLOUT;
    }
    return events;
}

void EgressRelay::addPollFds(std::vector<pollfd> &fds)
{
    m_polled.clear();
    for (const auto &[inside, p] : m_pairs) {
        for (int fd : {inside, p.up.to}) {
            const short events = eventsFor(fd, p);
            const bool hungUp = fd == inside ? p.insideHungUp : p.outsideHungUp;
            fds.push_back({events == 0 && hungUp ? -1 : fd, events, 0});
            m_polled.push_back(inside);
        }
    }
}

bool EgressRelay::pump(Direction &d)
{
    // A few buffers at a time, so that one fast connection does not hold up the rest of the loop.
    for (int round = 0; round < 8 && !d.eof; ++round) {
        if (!d.pending()) {
            if (!d.buf)
                d.buf = std::make_unique<char[]>(kBufferBytes);
            const ssize_t n = ::recv(d.from, d.buf.get(), kBufferBytes, MSG_DONTWAIT);
            if (n < 0)
                return errno == EAGAIN || errno == EINTR;
            d.off = 0;
            d.len = size_t(n);
            d.eof = n == 0;
        }
        while (d.pending()) {
            const ssize_t n = ::send(d.to, d.buf.get() + d.off, d.len - d.off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0)
                return errno == EAGAIN || errno == EINTR;
            d.off += size_t(n);
        }
    }
    // Flushed after the end of its stream: the other side sees the end too (a half-close).
    if (d.eof && !d.pending() && !d.shut) {
        ::shutdown(d.to, SHUT_WR);
        d.shut = true;
    }
    return true;
}

void EgressRelay::handle(const pollfd *fds, size_t count)
{
    for (size_t i = 0; i < count && i < m_polled.size(); ++i) {
        if (!fds[i].revents)
            continue;
        const auto it = m_pairs.find(m_polled[i]);
        if (it == m_pairs.end())
            continue; // closed by its other descriptor's events
        Pair &p = it->second;
        // An error (a reset, above all) ends the pair at once, as the proxy would end it were the
        // socket its own: closing the other side tells the other end.
        if (fds[i].revents & POLLERR) {
            close(it);
            continue;
        }
        if (fds[i].revents & POLLHUP)
            (fds[i].fd == it->first ? p.insideHungUp : p.outsideHungUp) = true;
        if (!pump(p.up) || !pump(p.down) || (p.up.shut && p.down.shut))
            close(it);
    }
}

void EgressRelay::close(std::map<int, Pair>::iterator it)
{
    ::close(it->second.up.from);
    ::close(it->second.up.to);
    m_pairs.erase(it);
}

} // namespace airlock::guest
