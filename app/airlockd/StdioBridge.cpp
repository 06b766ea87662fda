// SPDX-License-Identifier: Apache-2.0
#include "StdioBridge.h"

#include "client/DaemonClient.h"

#include <QCoreApplication>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::app {

namespace {
// One direction of the relay: what was read and not yet written.
struct Pipe {
    Pipe(int source, int sink)
        : from(source)
        , to(sink)
    {
    }
    int from, to;
    char buffer[64 * 1024] = {};
    ssize_t start = 0, end = 0;
    bool eof = false;
    bool pending() const { return end > start; }
};

// Moves what can move without blocking; false when this direction has failed.
bool pump(Pipe &p, short readyIn, short readyOut)
{
    if (!p.pending() && !p.eof && (readyIn & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = ::read(p.from, p.buffer, sizeof p.buffer);
        if (n > 0) {
            p.start = 0;
            p.end = n;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            p.eof = true;
        }
    }
    if (p.pending() && (readyOut & POLLOUT)) {
        const ssize_t n = ::write(p.to, p.buffer + p.start, size_t(p.end - p.start));
        if (n > 0)
            p.start += n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            return false;
    }
    return true;
}
} // namespace

int runStdioBridge(const QString &socketPath)
{
    ConnectOptions options;
    options.socketPath = socketPath;
    auto socket = DaemonClient::openDaemonSocket(options);
    if (!socket) {
        std::fprintf(stderr, "airlockd --stdio: %s\n", qPrintable(socket.error().message));
        return 4;
    }
    const int fd = ::fcntl(int((*socket)->socketDescriptor()), F_DUPFD_CLOEXEC, 3);
    socket->reset(); // ours is the duplicate now
    if (fd < 0)
        return 4;
    // Non-blocking for the relay; stdin and stdout get their own flags back (they may be shared).
    const int stdinFlags = ::fcntl(STDIN_FILENO, F_GETFL), stdoutFlags = ::fcntl(STDOUT_FILENO, F_GETFL);
    struct Restore {
        int in, out;
        ~Restore()
        {
            ::fcntl(STDIN_FILENO, F_SETFL, in);
            ::fcntl(STDOUT_FILENO, F_SETFL, out);
        }
    } restore{stdinFlags, stdoutFlags};
    for (int f : {STDIN_FILENO, STDOUT_FILENO, fd})
        ::fcntl(f, F_SETFL, ::fcntl(f, F_GETFL) | O_NONBLOCK);
    Pipe up(STDIN_FILENO, fd), down(fd, STDOUT_FILENO);
    bool upClosed = false;
    for (;;) {
        // The client's end, then the daemon's: each side's end is passed on as a half close.
        if (up.eof && !up.pending() && !upClosed) {
            ::shutdown(fd, SHUT_WR);
            upClosed = true;
        }
        if (down.eof && !down.pending())
            return 0;
        pollfd fds[3] = {{STDIN_FILENO, short(up.eof || up.pending() ? 0 : POLLIN), 0},
            {fd, short((down.eof || down.pending() ? 0 : POLLIN) | (up.pending() ? POLLOUT : 0)), 0},
            {STDOUT_FILENO, short(down.pending() ? POLLOUT : 0), 0}};
        if (::poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (!pump(up, fds[0].revents, fds[1].revents) || !pump(down, fds[1].revents, fds[2].revents))
            return 0; // the other end is gone
        if ((fds[2].revents & (POLLERR | POLLHUP)) && !down.pending())
            return 0; // nobody reads our stdout any more
    }
}

} // namespace airlock::app
