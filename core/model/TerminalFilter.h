// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QByteArrayView>

namespace airlock {

// Makes sandbox output safe to show on a terminal (invariant 5, "output is data"): SGR colour
// sequences (ESC [ digits;... m), printable text, valid UTF-8, \n, \r and \t pass; every other
// control sequence (OSC 52 clipboard writes, OSC 8 links, titles, cursor movement, queries that
// make the terminal answer), other C0/C1 controls, NUL and invalid UTF-8 become visible inert
// text such as "\x1b]52;c;..." or "\x00". Streaming: a sequence split across chunks is handled.
class TerminalFilter {
public:
    QByteArray filter(QByteArrayView chunk);
    QByteArray finish(); // flushes a sequence left incomplete at the end of the stream

private:
    enum class State { Ground, Escape, Csi, Utf8 };
    void ground(unsigned char c, QByteArray &out);
    static void escaped(unsigned char c, QByteArray &out);
    void flushPending(QByteArray &out); // shows m_pending as inert text

    State m_state = State::Ground;
    QByteArray m_pending; // bytes of the sequence being recognised
    int m_utf8Left = 0;
};

} // namespace airlock
