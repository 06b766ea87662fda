// SPDX-License-Identifier: Apache-2.0
#include "OutputSink.h"

#include <QByteArray>

#include <cerrno>
#include <unistd.h>

namespace airlock::cli {

namespace {
int fdFor(int stream)
{
    return stream == 2 ? STDERR_FILENO : STDOUT_FILENO;
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
