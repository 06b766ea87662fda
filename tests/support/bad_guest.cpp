// SPDX-License-Identifier: Apache-2.0
// airlock-bad-guest: stands in for airlock-guest (airlockd --guest) and breaks the wire protocol
// in the way the sandbox's hostname (= its name) asks, so tests can check that the daemon treats
// the guest as untrusted: a typed failure, the sandbox killed, the daemon alive.
#include "sandbox/GuestWire.h"

#include <cstdlib>
#include <cstring>
#include <string>
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
} // namespace

int main()
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
    }
    ::pause();
    return 0;
}
