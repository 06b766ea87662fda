// SPDX-License-Identifier: Apache-2.0
#include "model/TerminalFilter.h"

namespace airlock {

namespace {
constexpr qsizetype kMaxCsi = 64;

bool isSgrParameter(unsigned char c)
{
    return (c >= '0' && c <= '9') || c == ';' || c == ':';
}
} // namespace

void TerminalFilter::escaped(unsigned char c, QByteArray &out)
{
    static const char hex[] = "0123456789abcdef";
    out.append("\\x");
    out.append(hex[c >> 4]);
    out.append(hex[c & 15]);
}

void TerminalFilter::flushPending(QByteArray &out)
{
    for (char ch : std::as_const(m_pending)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x7f)
            escaped(c, out);
        else
            out.append(ch);
    }
    m_pending.clear();
    m_state = State::Ground;
    m_utf8Left = 0;
}

void TerminalFilter::ground(unsigned char c, QByteArray &out)
{
    if (c == 0x1b) {
        m_state = State::Escape;
        m_pending.append(char(c));
    } else if (c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
        out.append(char(c));
    } else if (c >= 0xc2 && c <= 0xf4) {
        m_state = State::Utf8;
        m_utf8Left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
        m_pending.append(char(c));
    } else {
        escaped(c, out); // C0 controls, DEL, stray continuation bytes, invalid lead bytes
    }
}

QByteArray TerminalFilter::filter(QByteArrayView chunk)
{
    QByteArray out;
    out.reserve(chunk.size() + chunk.size() / 8);
    for (qsizetype i = 0; i < chunk.size(); ++i) {
        const auto c = static_cast<unsigned char>(chunk[i]);
        switch (m_state) {
        case State::Ground:
            ground(c, out);
            break;
        case State::Escape:
            if (c == '[') {
                m_state = State::Csi;
                m_pending.append(char(c));
            } else {
                flushPending(out); // ESC followed by anything else: shown, then c on its own
                ground(c, out);
            }
            break;
        case State::Csi:
            if (c == 'm') {
                m_pending.append(char(c));
                out.append(m_pending); // a colour: the one sequence that may reach the terminal
                m_pending.clear();
                m_state = State::Ground;
            } else if (isSgrParameter(c) && m_pending.size() < kMaxCsi) {
                m_pending.append(char(c));
            } else {
                flushPending(out);
                ground(c, out);
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
                flushPending(out);
                ground(c, out);
                break;
            }
            m_pending.append(char(c));
            if (--m_utf8Left == 0) {
                out.append(m_pending);
                m_pending.clear();
                m_state = State::Ground;
            }
            break;
        }
        }
    }
    return out;
}

QByteArray TerminalFilter::finish()
{
    QByteArray out;
    flushPending(out);
    return out;
}

} // namespace airlock
