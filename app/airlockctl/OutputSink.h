// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/TerminalFilter.h"

#include <QByteArrayView>

#include <optional>

namespace airlock::cli {

// Where sandbox output goes on this side: stream 1 to our stdout, 2 to our stderr, each through a
// TerminalFilter when asked (only colours reach the terminal; other control sequences show as
// inert text), written fully or not at all once the reader is gone. A stream that floods a pipe
// gets a larger one.
class OutputSink {
public:
    // Filters the streams that are terminals (what `exec` does).
    static OutputSink forTerminals();
    // Filters both streams, or neither (raw: the exact bytes).
    static OutputSink filtered(bool filter);

    // False once nobody reads our output any more (EPIPE): stop producing it.
    bool write(int stream, QByteArrayView data);
    // Our own words in the stream (gap markers): not filtered.
    bool note(int stream, QByteArrayView text);
    // Flushes a sequence a filter holds at the end of the stream.
    void finish();
    bool broken() const { return m_broken; }

private:
    std::optional<TerminalFilter> m_filters[3];
    qint64 m_carried[3] = {}; // bytes of each stream so far (a flood's widens its pipe)
    bool m_broken = false;
};

} // namespace airlock::cli
