// SPDX-License-Identifier: Apache-2.0
#include "secrets/RedactionStream.h"

#include <algorithm>
#include <bit>

namespace airlock {

namespace {
// One escape sequence is at most this long; a longer one is no sequence a terminal writes.
constexpr int kMaxEscapeLength = int(Redactor::kMaxEscapeBytes);
// Handed-out bytes are dropped from the buffer once they are this many and half of it: a write
// copies what is held back only now and then, not every time.
constexpr qsizetype kCompactAt = 4096;
} // namespace

RedactionStream::Kind RedactionStream::Escapes::classify(char c)
{
    const auto u = static_cast<unsigned char>(c);
    if (m_state == State::Idle) {
        if (u != 0x1b)
            return Redactor::isSpace(c) ? Kind::Space : Kind::Character;
        m_state = State::Started;
        m_length = 1;
        return Kind::Escape;
    }
    if (++m_length <= kMaxEscapeLength) {
        switch (m_state) {
        case State::Started:
            if (u == '[') {
                m_state = State::Csi;
                return Kind::Escape;
            }
            if (u >= 0x20 && u <= 0x2f) {
                m_state = State::Intermediate;
                return Kind::Escape;
            }
            break; // ESC and a letter or digit: the letter could be a secret's first character
        case State::Intermediate:
            if (u >= 0x20 && u <= 0x2f)
                return Kind::Escape;
            if (u >= 0x30 && u <= 0x7e) {
                m_state = State::Idle; // the final byte
                return Kind::Escape;
            }
            break;
        case State::Csi:
            if (u >= 0x20 && u <= 0x3f)
                return Kind::Escape; // parameters and intermediates
            if (u >= 0x40 && u <= 0x7e) {
                m_state = State::Idle;
                return Kind::Escape;
            }
            break;
        case State::Idle:
            break;
        }
    }
    // Not a sequence after all (or too long for one): whatever match it was in ends here, and c
    // is to be looked at on its own.
    m_state = State::Idle;
    return Kind::Break;
}

bool RedactionStream::Gap::addSpace(char c)
{
    if (m_broken)
        return false;
    ++m_spaces;
    if (c == '\n') {
        if (++m_breaks == 1)
            m_beforeBreak = m_spaces - 1;
    } else if (m_breaks > 0) {
        if (c == ' ' || c == '\t')
            ++m_indent;
        else
            m_indentOnly = false;
    }
    return broke();
}

bool RedactionStream::Gap::addEscapeByte()
{
    if (m_broken)
        return false;
    ++m_escapeBytes;
    return broke();
}

bool RedactionStream::Gap::broke()
{
    // A wrap ("\n", "\r\n", od's "\n "), or a line break and an indent (with up to two bytes
    // before it: "\r", a space, or the "\r\r" of a "\r\n" through a terminal).
    const bool fits = m_spaces <= Redactor::kMaxGap
        || (m_breaks == 1 && m_beforeBreak <= Redactor::kMaxGap && m_indentOnly && m_indent <= Redactor::kMaxIndent);
    m_broken = !fits || m_escapeBytes > Redactor::kMaxEscapeBytes;
    return m_broken;
}

void RedactionStream::Positions::reset(qsizetype capacity)
{
    m_slots.assign(std::bit_ceil(size_t(std::max<qsizetype>(capacity, 1))), 0);
    m_count = 0;
}

QByteArray RedactionStream::write(const Redactor &redactor, QByteArrayView data, Redactor::Hits *hits)
{
    sync(redactor);
    m_buffer.append(data);
    scan(redactor, hits);
    // Everything before the first character of the earliest match so far can go.
    qint64 keep = m_base + m_buffer.size();
    for (qsizetype i : m_active)
        keep = std::min(keep, (redactor.m_patterns[i].wrapped ? m_wrappedAt : m_plainAt).last(m_matched[size_t(i)]));
    const qsizetype ready = qsizetype(keep - m_base) - m_sent;
    QByteArray out = m_buffer.mid(m_sent, ready);
    m_sent += ready;
    if (m_sent >= kCompactAt && m_sent * 2 >= m_buffer.size()) {
        m_buffer.remove(0, m_sent);
        m_base += m_sent;
        m_scanned -= m_sent;
        m_sent = 0;
    }
    return out;
}

QByteArray RedactionStream::finish()
{
    QByteArray out = m_buffer.mid(m_sent);
    *this = RedactionStream();
    return out;
}

// Matches so far are kept for the patterns they were made for: a secret added since (a grant on a
// running sandbox) starts them over from what is held back.
void RedactionStream::sync(const Redactor &redactor)
{
    if (m_matched.size() == size_t(redactor.m_patterns.size()))
        return;
    m_matched.assign(size_t(redactor.m_patterns.size()), 0);
    m_active.clear();
    qsizetype wrapped = 0, plain = 0;
    for (const Redactor::Pattern &p : redactor.m_patterns) {
        qsizetype &longest = p.wrapped ? wrapped : plain;
        longest = std::max(longest, p.bytes.size());
    }
    m_wrappedAt.reset(wrapped);
    m_plainAt.reset(plain);
    m_escapes = {};
    m_wrappedGap = m_plainGap = {};
    m_scanned = m_sent;
}

void RedactionStream::scan(const Redactor &redactor, Redactor::Hits *hits)
{
    char *d = m_buffer.data();
    const qsizetype n = m_buffer.size();
    for (qsizetype i = m_scanned; i < n; ++i) {
        if (m_active.empty() && m_escapes.idle()) {
            // Nothing under way: only a pattern's first byte can change that.
            while (i < n && redactor.m_startingWith[static_cast<unsigned char>(d[i])].isEmpty())
                ++i;
            if (i == n)
                break;
        }
        const qint64 at = m_base + i;
        // An escape sequence counts only between two characters of a match under way: before
        // one, its bytes could be the value's first ("\e[" then the value would hide it).
        Kind kind = m_active.empty() && m_escapes.idle() ? (Redactor::isSpace(d[i]) ? Kind::Space : Kind::Character)
                                                         : m_escapes.classify(d[i]);
        if (kind == Kind::Break) {
            forget(redactor, true);
            forget(redactor, false);
            kind = m_escapes.classify(d[i]);
        }
        switch (kind) {
        case Kind::Character:
            m_wrappedGap = m_plainGap = {};
            m_wrappedAt.push(at);
            m_plainAt.push(at);
            step(redactor, d[i], false, hits);
            break;
        case Kind::Space:
            m_plainGap = {};
            m_plainAt.push(at);
            step(redactor, d[i], true, hits);
            if (m_wrappedGap.addSpace(d[i]))
                forget(redactor, true);
            break;
        case Kind::Escape:
            if (m_wrappedGap.addEscapeByte())
                forget(redactor, true);
            if (m_plainGap.addEscapeByte())
                forget(redactor, false);
            break;
        case Kind::Break: // (looked at again above)
            break;
        }
    }
    m_scanned = n;
}

// Each pattern's KMP automaton one character on, linear in the characters whatever they are;
// only those under way and those that start with c are looked at.
void RedactionStream::step(const Redactor &redactor, char c, bool space, Redactor::Hits *hits)
{
    const size_t wereActive = m_active.size();
    for (qsizetype i : redactor.m_startingWith[static_cast<unsigned char>(c)]) {
        if (m_matched[size_t(i)] == 0) { // (under way, it goes on below)
            m_matched[size_t(i)] = 1;
            m_active.push_back(i);
        }
    }
    size_t kept = 0;
    for (size_t j = 0; j < wereActive; ++j) {
        const qsizetype i = m_active[j];
        const Redactor::Pattern &p = redactor.m_patterns[i];
        // A wrapped form steps over whitespace.
        if ((space && p.wrapped) || advance(p, m_matched[size_t(i)], c, hits))
            m_active[kept++] = i;
    }
    m_active.erase(m_active.begin() + qsizetype(kept), m_active.begin() + qsizetype(wereActive));
}

// False when p's match so far ends here: c does not continue it, or completes it (the next one
// starts after it).
bool RedactionStream::advance(const Redactor::Pattern &p, qsizetype &matched, char c, Redactor::Hits *hits)
{
    while (matched > 0 && p.bytes.at(matched) != c)
        matched = p.failure[matched - 1];
    if (p.bytes.at(matched) == c)
        ++matched;
    if (matched == p.bytes.size()) {
        mask(p, hits);
        matched = 0;
    }
    return matched > 0;
}

void RedactionStream::forget(const Redactor &redactor, bool wrapped)
{
    std::erase_if(m_active, [&](qsizetype i) {
        if (redactor.m_patterns[i].wrapped != wrapped)
            return false;
        m_matched[size_t(i)] = 0;
        return true;
    });
}

// The form's own characters, wherever they are: what stands between them stays.
void RedactionStream::mask(const Redactor::Pattern &p, Redactor::Hits *hits)
{
    const QByteArray masked = Redactor::mask(p.bytes.size());
    const Positions &at = p.wrapped ? m_wrappedAt : m_plainAt;
    char *d = m_buffer.data();
    for (qsizetype j = 0; j < masked.size(); ++j)
        d[at.last(masked.size() - j) - m_base] = masked.at(j);
    ++hits->count;
    if (!hits->secrets.contains(p.name))
        hits->secrets.append(p.name);
}

} // namespace airlock
