// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: bytes from a hostile airlock-guest arriving on the daemon's GuestChannel.
// Must end in a protocol violation, a clean close or valid messages; never a crash or a hang.
#include "sandbox/GuestChannel.h"

#include "FuzzApplication.h"

#include <QCoreApplication>
#include <QEventLoop>

#include <sys/socket.h>
#include <unistd.h>

using namespace airlock;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::ensureApplication();
    if (size > 200000)
        return 0;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    const int buf = 1 << 20;
    ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    {
        GuestChannel channel(sv[0]);
        channel.setKnownExec(1, true);
        bool finished = false;
        QObject::connect(&channel, &GuestChannel::protocolViolated, &channel, [&] { finished = true; });
        QObject::connect(&channel, &GuestChannel::fatalReported, &channel, [&] { finished = true; });
        QObject::connect(&channel, &GuestChannel::closed, &channel, [&] { finished = true; });
        (void)!::write(sv[1], data, size);
        ::close(sv[1]);
        for (int i = 0; i < 1000 && !finished; ++i)
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return 0;
}
