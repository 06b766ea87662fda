// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the first bytes of a connection to the egress proxy (HTTP CONNECT,
// absolute-form HTTP, SOCKS5), as a process in a sandbox sends them, in pieces of any size.
// Must end in a target, an error with its reply, or a wish for more bytes; never a crash.
#include "net/ProxyHandshake.h"

#include <QString>

using namespace airlock::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    // The first byte picks how the rest arrives: in pieces of 1 to 256 bytes (a slow client, a
    // request split across reads), so that every place the parser stops to wait is reached.
    const qsizetype piece = qsizetype(data[0]) + 1;
    const QByteArrayView bytes(reinterpret_cast<const char *>(data + 1), qsizetype(size - 1));
    ProxyHandshake handshake;
    for (qsizetype at = 0; at < bytes.size(); at += piece) {
        const ProxyHandshake::Step step = handshake.feed(bytes.sliced(at, std::min(piece, bytes.size() - at)));
        if (step.target) {
            (void)handshake.success();
            (void)handshake.failure(ProxyFailure::Denied, step.target->host);
            break;
        }
        if (!step.error.isEmpty())
            break;
    }
    return 0;
}
