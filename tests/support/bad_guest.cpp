// SPDX-License-Identifier: Apache-2.0
// airlock-bad-guest: stands in for airlock-guest (airlockd --guest) and breaks the wire protocol
// in the way the sandbox's hostname (= its name) asks, so tests can check that the daemon treats
// the guest as untrusted: a typed failure, the sandbox killed, the daemon alive.
#include "FdPassing.h"
#include "sandbox/GuestWire.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace airlock;

namespace {
void put(const std::string &frame)
{
    (void)!::write(3, frame.data(), frame.size());
}

std::string hello(uint32_t version = wire::kProtocolVersion)
{
    return wire::Writer(wire::Type::Hello).u32(version).i32(7).u32(1).take();
}
bool readAll(char *dst, size_t size)
{
    for (size_t done = 0; done < size;) {
        const ssize_t n = ::read(3, dst + done, size - done);
        if (n <= 0)
            return false;
        done += size_t(n);
    }
    return true;
}

// The id of the next execution the daemon asks for (frames of other types are skipped); false
// once the channel is closed.
bool nextSpawn(uint32_t *id)
{
    for (;;) {
        char header[wire::kHeaderSize];
        if (!readAll(header, sizeof header))
            return false;
        uint32_t len = 0;
        std::memcpy(&len, header, 4);
        std::string payload(len, '\0');
        if (len > wire::kMaxPayload || !readAll(payload.data(), len))
            return false;
        if (static_cast<wire::Type>(header[4]) != wire::Type::Spawn || len < 4)
            continue;
        std::memcpy(id, payload.data(), 4);
        return true;
    }
}

// Every execution it is given "ends" at once, killed, and is said to be the guest's timeout,
// whether the daemon gave it a deadline or not.
void falseTimeouts()
{
    for (uint32_t id = 0; nextSpawn(&id);) {
        put(wire::Writer(wire::Type::Started).u32(id).i32(42).take());
        put(wire::Writer(wire::Type::Exited)
                .u32(id)
                .u8(wire::ExitedBySignal)
                .i32(9)
                .u64(1000)
                .u64(0)
                .u64(0)
                .u64(0)
                .u8(wire::ExitTimedOut)
                .take());
    }
}
// Output for the first execution it is given until the daemon stops reading it (its client does
// not read), then the channel closed while the guest lives on. A daemon that is not reading does
// not see the close; its next frame to the guest fails with EPIPE, and one that waits to write the
// rest when the socket says it can (it always says so now) spins on it.
void floodThenClose()
{
    uint32_t id = 0;
    if (!nextSpawn(&id))
        return;
    put(wire::Writer(wire::Type::Started).u32(id).i32(42).take());
    ::fcntl(3, F_SETFL, ::fcntl(3, F_GETFL) | O_NONBLOCK);
    const std::string frame
        = wire::Writer(wire::Type::Output).u32(id).u8(1).u64(0).bytes(std::string(64 * 1024, 'x')).take();
    size_t off = 0;
    for (int stalledMs = 0; stalledMs < 1000;) {
        const ssize_t n = ::write(3, frame.data() + off, frame.size() - off);
        if (n > 0) {
            off = (off + size_t(n)) % frame.size();
            stalledMs = 0;
            continue;
        }
        ::usleep(10 * 1000);
        stalledMs += 10;
    }
    ::close(3);
}

// Hands the daemon an egress connection as the guest does (SCM_RIGHTS on --proxy-fd), but keeps
// it: the same open file, so it makes it blocking again once the daemon made it non-blocking. Then
// the sandbox's side sends one byte out of band: the socket polls readable, yet an ordinary read
// finds nothing. A daemon that reads it with a plain read() waits there for good (and with it every
// sandbox); one that reads without waiting must not spin on it either.
void blockingEgress(int proxyFd)
{
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return;
    const char byte = 'c';
    if (!guest::sendFd(proxyFd, &byte, 1, pair[0], 0))
        return;
    ::usleep(200 * 1000); // the daemon has made it non-blocking by now
    ::fcntl(pair[0], F_SETFL, ::fcntl(pair[0], F_GETFL) & ~O_NONBLOCK);
    (void)!::send(pair[1], "C", 1, MSG_OOB);
    // Both ends stay open: a daemon that waits in read() is never woken.
}

// A TCP connection on the sandbox's own loopback, as a program in the sandbox makes one to the
// proxy: {the accepted side (what the guest hands over), the program's side}; {-1, -1} on failure.
// `stingy`: the program's side receives into a buffer as small as it gets, and reads nothing.
std::pair<int, int> loopbackConnection(bool stingy = false)
{
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(listener, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || ::listen(listener, 1) != 0
        || ::getsockname(listener, reinterpret_cast<sockaddr *>(&sa), &len) != 0)
        return {-1, -1};
    const int program = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (stingy)
        ::setsockopt(program, SOL_SOCKET, SO_RCVBUF, &one, sizeof one);
    if (::connect(program, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
        return {-1, -1};
    const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    ::close(listener);
    return {accepted, program};
}

// Then a CONNECT to relay.test:PORT (the test's server) through the proxy, and its answer. The
// accepted side is handed over on --proxy-fd and kept. False if any step failed.
bool connectThrough(int proxyFd, int accepted, int program, const std::string &port)
{
    const char byte = 'c';
    if (accepted < 0 || !guest::sendFd(proxyFd, &byte, 1, accepted, 0))
        return false;
    const std::string connect = "CONNECT relay.test:" + port + " HTTP/1.1\r\nHost: relay.test:" + port + "\r\n\r\n";
    (void)!::write(program, connect.data(), connect.size());
    std::string reply;
    char c = 0;
    while (reply.find("\r\n\r\n") == std::string::npos && reply.size() < 4096 && ::read(program, &c, 1) == 1)
        reply += c;
    return reply.rfind("HTTP/1.1 200", 0) == 0;
}

std::pair<int, int> tunnel(int proxyFd, const std::string &port)
{
    const auto [accepted, program] = loopbackConnection();
    if (!connectThrough(proxyFd, accepted, program, port))
        return {-1, -1};
    return {accepted, program};
}

// A socket whose close() lingers: its send queue full towards a program that reads nothing
// through the smallest buffer, and SO_LINGER on for an hour. Linux then waits in the last close()
// whatever O_NONBLOCK says; once the guest has closed its copy, that close is the daemon's.
void makeLinger(int accepted)
{
    static char junk[65536];
    for (int i = 0; i < 4096 && ::send(accepted, junk, sizeof junk, MSG_DONTWAIT | MSG_NOSIGNAL) > 0; ++i) { }
    const linger hour{1, 3600};
    ::setsockopt(accepted, SOL_SOCKET, SO_LINGER, &hour, sizeof hour);
}

// Where the daemon closes a socket the guest handed over, made to linger: `where` is "session"
// (the proxy ends a connection that closed before its request, on the daemon's main thread),
// "channel" (attached to a byte on the wire channel, which has no use for descriptors) or
// "tunnel-PORT" (a tunnel that ends, on the relay's thread).
void lingerAt(const std::string &where, int proxyFd)
{
    const auto [accepted, program] = loopbackConnection(true);
    if (accepted < 0)
        return;
    const char byte = 'c';
    if (where == "channel") {
        makeLinger(accepted);
        guest::sendFd(3, &byte, 1, accepted, 0);
        ::close(accepted);
    } else if (where == "session") {
        makeLinger(accepted);
        guest::sendFd(proxyFd, &byte, 1, accepted, 0);
        ::close(accepted);
        ::usleep(200 * 1000);
        ::shutdown(program, SHUT_WR); // no request: the proxy ends the connection
    } else if (where.rfind("tunnel-", 0) == 0) {
        if (!connectThrough(proxyFd, accepted, program, where.substr(7)))
            return;
        makeLinger(accepted);
        ::close(accepted);
        const std::string get = "GET /linger HTTP/1.1\r\nHost: relay.test\r\n\r\n";
        (void)!::write(program, get.data(), get.size());
        ::shutdown(program, SHUT_WR); // the server answers and closes: the pair ends
    }
    // The program's side stays open and reads nothing.
}

// A tunnel through the proxy, then the socket the guest kept made blocking again, then a request
// through it. The relay copies the request and reads for more: a relay that can wait on a
// client's socket waits there for good, and every other tunnel of every sandbox with it.
void blockingTunnel(int proxyFd, const std::string &port)
{
    const auto [kept, program] = tunnel(proxyFd, port);
    if (kept < 0)
        return;
    ::fcntl(kept, F_SETFL, ::fcntl(kept, F_GETFL) & ~O_NONBLOCK);
    const std::string get = "GET /blocked HTTP/1.1\r\nHost: relay.test\r\n\r\n";
    (void)!::write(program, get.data(), get.size());
    // Both ends stay open, and nothing more is sent.
}

// An ordinary tunnel and request, for the test to see that the relay still serves.
void plainTunnel(int proxyFd, const std::string &port)
{
    const auto [kept, program] = tunnel(proxyFd, port);
    if (kept < 0)
        return;
    ::close(kept);
    const std::string get = "GET /served HTTP/1.1\r\nHost: relay.test\r\n\r\n";
    (void)!::write(program, get.data(), get.size());
}

int argumentAfter(int argc, char **argv, const char *flag)
{
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0)
            return std::atoi(argv[i + 1]);
    return -1;
}
} // namespace

int main(int argc, char **argv)
{
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string mode = host;
    if (mode == "bg-exit")
        return 3;
    if (mode == "bg-fatal") {
        put(wire::Writer(wire::Type::Fatal).str("landlock_restrict_self failed: test").take());
    } else if (mode == "bg-bad-version") {
        put(hello(99));
    } else if (mode == "bg-no-hello") {
        put(wire::Writer(wire::Type::Started).u32(1).i32(2).take());
    } else if (mode == "bg-oversize") {
        char header[wire::kHeaderSize];
        wire::writeHeader(header, wire::Type::Output, wire::kMaxPayload + 1);
        (void)!::write(3, header, sizeof header);
    } else {
        put(hello());
        ::usleep(300 * 1000); // let create() succeed first: these violations hit a running sandbox
        if (mode == "bg-unknown-type")
            put(wire::Writer(static_cast<wire::Type>(0x77)).u32(1).take());
        else if (mode == "bg-unknown-exec")
            put(wire::Writer(wire::Type::Output).u32(999).u8(1).u64(0).bytes("boo").take());
        else if (mode == "bg-truncated")
            put(wire::Writer(wire::Type::Exited).u8(1).u8(2).take());
        else if (mode == "bg-second-hello")
            put(hello());
        else if (mode == "bg-false-timeout")
            falseTimeouts();
        else if (mode == "bg-flood-then-close")
            floodThenClose();
        else if (mode == "bg-blocking-egress")
            blockingEgress(argumentAfter(argc, argv, "--proxy-fd"));
        else if (mode.rfind("bg-blocking-tunnel-", 0) == 0) // the name ends with the server's port
            blockingTunnel(argumentAfter(argc, argv, "--proxy-fd"), mode.substr(mode.rfind('-') + 1));
        else if (mode.rfind("bg-linger-", 0) == 0)
            lingerAt(mode.substr(10), argumentAfter(argc, argv, "--proxy-fd"));
        else if (mode.rfind("bg-tunnel-", 0) == 0)
            plainTunnel(argumentAfter(argc, argv, "--proxy-fd"), mode.substr(mode.rfind('-') + 1));
    }
    ::pause();
    return 0;
}
