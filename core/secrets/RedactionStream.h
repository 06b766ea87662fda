// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "secrets/Redactor.h"

#include <vector>

namespace airlock {

// One output stream (an execution's stdout, say) masked as it is written. Every byte is looked at
// once, whatever the sizes of the writes: each form's match so far is remembered between writes,
// and what it covers is held back until a later write (or the end) shows whether it completes.
// Between two characters of a match may stand what Redactor describes (a wrap, an indent, escape
// sequences); a longer run ends the match, which bounds what is held back.
class RedactionStream {
public:
    // What can go out now: what was held back and data, masked, but for the possible start of a
    // secret at the end. Each write takes the same redactor (it may have gained secrets since).
    QByteArray write(const Redactor &redactor, QByteArrayView data, Redactor::Hits *hits);
    // The end of the stream: what was held back is no secret after all.
    QByteArray finish();
    qsizetype held() const { return m_buffer.size() - m_sent; }

private:
    enum class Kind { Character, Space, Escape, Break };

    // Escape sequences (ESC [ parameters final, as colours and erases are written; ESC,
    // intermediates and a final byte, as tput sgr0's "\e(B"), told apart byte by byte: they are
    // stepped over. Anything else ends a match (Break), and the byte is then looked at on its own.
    class Escapes {
    public:
        Kind classify(char c);
        bool idle() const { return m_state == State::Idle; }

    private:
        enum class State { Idle, Started, Csi, Intermediate };
        State m_state = State::Idle;
        int m_length = 0;
    };

    // What stands between two characters of a match, and whether it still may.
    class Gap {
    public:
        // True when this byte makes the gap too long (once).
        bool addSpace(char c);
        bool addEscapeByte();

    private:
        bool broke();
        qint16 m_spaces = 0, m_breaks = 0, m_beforeBreak = 0, m_indent = 0, m_escapeBytes = 0;
        bool m_indentOnly = true, m_broken = false;
    };

    // Where the last characters a match counts were, in the stream.
    class Positions {
    public:
        void reset(qsizetype capacity);
        void push(qint64 at) { m_slots[size_t(m_count++) & (m_slots.size() - 1)] = at; }
        // n = 1: the last.
        qint64 last(qsizetype n) const { return m_slots[size_t(m_count - n) & (m_slots.size() - 1)]; }

    private:
        std::vector<qint64> m_slots = {0}; // a power of two of them
        qint64 m_count = 0;
    };

    void sync(const Redactor &redactor);
    void scan(const Redactor &redactor, Redactor::Hits *hits);
    void step(const Redactor &redactor, char c, bool space, Redactor::Hits *hits);
    void forget(const Redactor &redactor, bool wrapped);
    bool advance(const Redactor::Pattern &p, qsizetype &matched, char c, Redactor::Hits *hits);
    void mask(const Redactor::Pattern &p, Redactor::Hits *hits);

    QByteArray m_buffer; // held back (and, before m_sent, already handed out)
    qint64 m_base = 0; // where m_buffer starts in the stream
    qsizetype m_sent = 0; // bytes of m_buffer handed out
    qsizetype m_scanned = 0; // bytes of m_buffer the matches have seen
    std::vector<qsizetype> m_matched; // by pattern: how many of its characters match so far
    std::vector<qsizetype> m_active; // the patterns with a match so far
    Escapes m_escapes;
    Gap m_wrappedGap, m_plainGap; // since the last character of a wrapped, a plain form
    Positions m_wrappedAt, m_plainAt; // wrapped forms skip spaces, plain ones count them
};

} // namespace airlock
