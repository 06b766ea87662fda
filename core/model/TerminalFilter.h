// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

namespace airlock {

// Reads sandbox output the way every view must (invariant 5, "output is data"): printable text and
// valid UTF-8, \n, \r and \t, SGR colour sequences (ESC [ digits;... m), and everything else (OSC 52
// clipboard writes, OSC 8 links, titles, cursor movement, queries that make a terminal answer,
// other C0/C1 controls, NUL, invalid UTF-8) as inert bytes to be shown, never obeyed. Streaming: a
// sequence split across chunks is recognised. Views implement the Sink.
class TerminalParser {
public:
    struct Sink {
        virtual ~Sink() = default;
        virtual void text(QByteArrayView utf8) = 0; // printable, valid UTF-8
        virtual void control(char c) = 0; // '\n', '\r' or '\t'
        virtual void sgr(QByteArrayView parameters) = 0; // the "1;31" of ESC [ 1;31 m
        virtual void inert(QByteArrayView bytes) = 0; // to be shown as escaped text
    };
    void feed(QByteArrayView chunk, Sink &sink);
    void finish(Sink &sink); // a sequence left incomplete at the end of the stream is inert

private:
    enum class State { Ground, Escape, Csi, String, Utf8 };
    void ground(const char *p, qsizetype i, Sink &sink);
    void flushPending(Sink &sink);

    State m_state = State::Ground;
    QByteArray m_pending; // bytes of the sequence being recognised
    int m_utf8Left = 0;
    qsizetype m_textStart = -1; // start of the printable run in the current chunk
};

// Makes output safe to write to a terminal: only colours pass as sequences; inert bytes become
// visible text such as "\x1b]52;c;..." or "\x00".
class TerminalFilter {
public:
    QByteArray filter(QByteArrayView chunk);
    QByteArray finish();

private:
    TerminalParser m_parser;
};

// The last line of some output that has something on it, as a person would see it on a
// terminal's last row: colours dropped, inert bytes shown escaped (as TerminalFilter does), a line
// rewritten with \r (a progress bar) in its last state. `tail` may start in the middle of a line
// or of a character; that fragment counts as a line. Empty when nothing printable came.
QString lastOutputLine(QByteArrayView tail);

} // namespace airlock
