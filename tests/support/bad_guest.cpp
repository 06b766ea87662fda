// SPDX-License-Identifier: Apache-2.0
// airlock-bad-guest: stands in for airlock-guest (airlockd --guest) and breaks the wire protocol
// in the way the sandbox's hostname (= its name) asks, so tests can check that the daemon treats
// the guest as untrusted: a typed failure, the sandbox killed, the daemon alive.
#include "FdPassing.h"
#include "sandbox/GuestWire.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
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

// Every execution it is given "ends" at once, killed, and is said to be the guest's timeout,
// whether the daemon gave it a deadline or not.
void falseTimeouts()
{
    for (;;) {
        char header[wire::kHeaderSize];
        if (!readAll(header, sizeof header))
            return;
        uint32_t len = 0;
        std::memcpy(&len, header, 4);
        std::string payload(len, '\0');
        if (len > wire::kMaxPayload || !readAll(payload.data(), len))
            return;
        if (static_cast<wire::Type>(header[4]) != wire::Type::Spawn || len < 4)
            continue;
        uint32_t id = 0;
        std::memcpy(&id, payload.data(), 4);
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
        else if (mode == "bg-blocking-egress")
            blockingEgress(argumentAfter(argc, argv, "--proxy-fd"));
    }
    ::pause();
    return 0;
}
