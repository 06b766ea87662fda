// SPDX-License-Identifier: Apache-2.0
#include "OutputSink.h"

#include <QByteArray>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::cli {

namespace {
int fdFor(int stream)
{
    return stream == 2 ? STDERR_FILENO : STDOUT_FILENO;
}

// A pipe of 1 MiB instead of the usual 64 KiB on an output that is one (`exec … | cat`), once a
// stream has carried a flood's worth: the flood then reaches the reader in a few large writes
// instead of a wake-up every 64 KiB, which doubled the time of a stream through `| cat` here
// (issue 23). Only then: the pipe's size counts against its maker's allowance
// (pipe-user-pages-soft, 64 MiB), and a short command's output needs none of it. Best effort: a
// pipe that is larger stays, and past the allowance the kernel says no.
constexpr qint64 kWidenAfterBytes = 4 << 20;

void widenPipe(int fd)
{
    constexpr int kPipeBytes = 1 << 20;
    struct stat st { };
    if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && ::fcntl(fd, F_GETPIPE_SZ) < kPipeBytes)
        (void)::fcntl(fd, F_SETPIPE_SZ, kPipeBytes);
}
} // namespace

OutputSink OutputSink::forTerminals()
{
    OutputSink sink;
    for (int stream : {1, 2})
        if (::isatty(fdFor(stream)))
            sink.m_filters[stream].emplace();
    return sink;
}

OutputSink OutputSink::filtered(bool filter)
{
    OutputSink sink;
    if (filter)
        for (int stream : {1, 2})
            sink.m_filters[stream].emplace();
    return sink;
}

bool OutputSink::note(int stream, QByteArrayView data)
{
    qsizetype done = 0;
    while (!m_broken && done < data.size()) {
        const ssize_t n = ::write(fdFor(stream), data.data() + done, size_t(data.size() - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            m_broken = true;
        else
            done += n;
    }
    return !m_broken;
}

bool OutputSink::write(int stream, QByteArrayView data)
{
    qint64 &carried = m_carried[stream == 2 ? 2 : 1];
    if (carried < kWidenAfterBytes && (carried += data.size()) >= kWidenAfterBytes)
        widenPipe(fdFor(stream));
    auto &filter = m_filters[stream == 2 ? 2 : 1];
    return filter ? note(stream, filter->filter(data)) : note(stream, data);
}

void OutputSink::finish()
{
    for (int stream : {1, 2})
        if (m_filters[stream])
            note(stream, m_filters[stream]->finish());
}

} // namespace airlock::cli
