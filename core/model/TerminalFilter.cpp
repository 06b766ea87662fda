// SPDX-License-Identifier: Apache-2.0
#include "model/TerminalFilter.h"

#include <algorithm>
#include <utility>

namespace airlock {

namespace {
constexpr qsizetype kMaxCsi = 64;
constexpr qsizetype kMaxString = 4096; // an OSC/DCS/APC/PM string shown as one inert piece up to this

bool isSgrParameter(unsigned char c)
{
    return (c >= '0' && c <= '9') || c == ';' || c == ':';
}

bool isPrintableAscii(unsigned char c)
{
    return c >= 0x20 && c < 0x7f;
}

// Writes to a terminal: text, controls and colours as they are, inert bytes escaped.
class TerminalBytes final : public TerminalParser::Sink {
public:
    QByteArray out;
    void text(QByteArrayView utf8) override { out.append(utf8); }
    void control(char c) override { out.append(c); }
    void sgr(QByteArrayView parameters) override
    {
        out.append("\x1b[");
        out.append(parameters);
        out.append('m');
    }
    void inert(QByteArrayView bytes) override
    {
        static const char hex[] = "0123456789abcdef";
        for (char ch : bytes) {
            const auto c = static_cast<unsigned char>(ch);
            if (isPrintableAscii(c)) {
                out.append(ch);
            } else {
                out.append("\\x");
                out.append(hex[c >> 4]);
                out.append(hex[c & 15]);
            }
        }
    }
};
// The last line with something on it; within a line, the text after its last \r (if any).
class LastLine final : public TerminalParser::Sink {
public:
    QByteArray last, line, segment;
    void text(QByteArrayView utf8) override { segment.append(utf8); }
    void control(char c) override
    {
        if (c == '\t')
            segment.append(' ');
        else if (c == '\r')
            rewrite();
        else
            endLine();
    }
    void sgr(QByteArrayView) override { }
    void inert(QByteArrayView bytes) override
    {
        TerminalBytes escaped;
        escaped.inert(bytes);
        segment.append(escaped.out);
    }
    void rewrite()
    {
        if (!segment.trimmed().isEmpty())
            line = segment;
        segment.clear();
    }
    void endLine()
    {
        rewrite();
        if (!line.isEmpty())
            last = std::exchange(line, {});
    }
};

} // namespace

QString lastOutputLine(QByteArrayView tail)
{
    while (!tail.isEmpty() && (static_cast<unsigned char>(tail.front()) & 0xc0) == 0x80)
        tail = tail.sliced(1); // the rest of a character cut off at the start
    TerminalParser parser;
    LastLine sink;
    parser.feed(tail, sink);
    parser.finish(sink);
    sink.endLine();
    return QString::fromUtf8(sink.last.trimmed());
}

void TerminalParser::flushPending(Sink &sink)
{
    if (!m_pending.isEmpty())
        sink.inert(m_pending);
    m_pending.clear();
    m_state = State::Ground;
    m_utf8Left = 0;
}

void TerminalParser::ground(const char *p, qsizetype i, Sink &sink)
{
    const auto c = static_cast<unsigned char>(p[i]);
    if (isPrintableAscii(c)) {
        if (m_textStart < 0)
            m_textStart = i; // runs of text go to the sink whole
        return;
    }
    if (m_textStart >= 0) {
        sink.text(QByteArrayView(p + m_textStart, i - m_textStart));
        m_textStart = -1;
    }
    if (c == 0x1b) {
        m_state = State::Escape;
        m_pending.append(char(c));
    } else if (c == '\n' || c == '\r' || c == '\t') {
        sink.control(char(c));
    } else if (c >= 0xc2 && c <= 0xf4) {
        m_state = State::Utf8;
        m_utf8Left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
        m_pending.append(char(c));
    } else {
        sink.inert(QByteArrayView(p + i, 1)); // C0 controls, DEL, stray continuation bytes, invalid lead bytes
    }
}

void TerminalParser::feed(QByteArrayView chunk, Sink &sink)
{
    const char *p = chunk.data();
    m_textStart = -1;
    for (qsizetype i = 0; i < chunk.size(); ++i) {
        const auto c = static_cast<unsigned char>(p[i]);
        switch (m_state) {
        case State::Ground:
            if (isPrintableAscii(c)) {
                // The common case, a run of plain text: found in a tight loop, handed over whole.
                if (m_textStart < 0)
                    m_textStart = i;
                while (i + 1 < chunk.size() && isPrintableAscii(static_cast<unsigned char>(p[i + 1])))
                    ++i;
                break;
            }
            ground(p, i, sink);
            break;
        case State::Escape:
            if (c == '[') {
                m_state = State::Csi;
                m_pending.append(char(c));
            } else if (c == ']' || c == 'P' || c == '_' || c == '^') {
                // OSC (clipboard, titles, links), DCS, APC, PM: a string up to BEL or ESC \,
                // shown whole as what it is.
                m_state = State::String;
                m_pending.append(char(c));
            } else {
                flushPending(sink); // ESC followed by anything else: shown, then c on its own
                ground(p, i, sink);
            }
            break;
        case State::Csi:
            if (c == 'm' && m_pending.size() >= 2 && std::all_of(m_pending.cbegin() + 2, m_pending.cend(), [](char ch) {
                    return isSgrParameter(static_cast<unsigned char>(ch));
                })) {
                sink.sgr(QByteArrayView(m_pending).sliced(2)); // a colour: the one sequence that acts
                m_pending.clear();
                m_state = State::Ground;
            } else if (c >= 0x20 && c <= 0x3f && m_pending.size() < kMaxCsi) {
                m_pending.append(char(c)); // parameters and intermediates
            } else if (c >= 0x40 && c <= 0x7e) {
                m_pending.append(char(c)); // the final byte: cursor moves, erases, queries... shown whole
                flushPending(sink);
            } else {
                flushPending(sink);
                ground(p, i, sink);
            }
            break;
        case State::String:
            if (c == 0x07 || (c == '\\' && m_pending.endsWith('\x1b'))) {
                m_pending.append(char(c));
                flushPending(sink);
            } else if (c == 0x1b || (c >= 0x20 && m_pending.size() < kMaxString)) {
                m_pending.append(char(c));
            } else {
                flushPending(sink); // a control in the middle (or too long): what came so far, then this
                ground(p, i, sink);
            }
            break;
        case State::Utf8: {
            const auto lead = static_cast<unsigned char>(m_pending.at(0));
            const bool second = m_pending.size() == 1;
            bool valid = c >= 0x80 && c <= 0xbf;
            // Overlongs, surrogates, values above U+10FFFF and the C1 controls (U+0080..U+009F,
            // which some terminals obey like ESC) do not pass as text.
            if (second && lead == 0xc2 && c <= 0x9f)
                valid = false;
            if (second && lead == 0xe0 && c < 0xa0)
                valid = false;
            if (second && lead == 0xed && c > 0x9f)
                valid = false;
            if (second && lead == 0xf0 && c < 0x90)
                valid = false;
            if (second && lead == 0xf4 && c > 0x8f)
                valid = false;
            if (!valid) {
                flushPending(sink);
                ground(p, i, sink);
                break;
            }
            m_pending.append(char(c));
            if (--m_utf8Left == 0) {
                sink.text(m_pending);
                m_pending.clear();
                m_state = State::Ground;
            }
            break;
        }
        }
    }
    if (m_textStart >= 0)
        sink.text(QByteArrayView(p + m_textStart, chunk.size() - m_textStart));
    m_textStart = -1;
}

void TerminalParser::finish(Sink &sink)
{
    flushPending(sink);
}

QByteArray TerminalFilter::filter(QByteArrayView chunk)
{
    TerminalBytes bytes;
    bytes.out.reserve(chunk.size() + chunk.size() / 8);
    m_parser.feed(chunk, bytes);
    return bytes.out;
}

QByteArray TerminalFilter::finish()
{
    TerminalBytes bytes;
    m_parser.finish(bytes);
    return bytes.out;
}

} // namespace airlock
