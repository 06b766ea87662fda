// SPDX-License-Identifier: Apache-2.0
#include "secrets/Redactor.h"

#include <QJsonArray>
#include <QVarLengthArray>

#include <algorithm>
#include <utility>

namespace airlock {

namespace {
// Forms shorter than this are left alone: they would match ordinary text.
constexpr qsizetype kMinPattern = 8;

// The part of base64(prefix + value) that depends on the value alone, for a value that starts
// `shift` bytes into a 3-byte group: what shows whatever surrounds the value.
QByteArray base64Core(const QByteArray &value, int shift, QByteArray::Base64Options options)
{
    const QByteArray encoded = QByteArray(QByteArray(shift, 0) + value).toBase64(options | QByteArray::OmitTrailingEquals);
    // Characters touched by the prefix: shift 1 -> first 2, shift 2 -> first 3. At the end, the
    // last character depends on what follows unless the value ends on a group boundary.
    const qsizetype skipHead = shift == 0 ? 0 : shift + 1;
    const qsizetype total = shift + value.size();
    const qsizetype skipTail = total % 3 == 0 ? 0 : 1;
    if (encoded.size() <= skipHead + skipTail)
        return {};
    return encoded.mid(skipHead, encoded.size() - skipHead - skipTail);
}

bool isSpace(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Data as a wrapped form is searched: each run of at most kMaxGap whitespace characters dropped,
// a longer run kept as one (no form that may be wrapped contains it, so it ends any match).
class Unwrapped {
public:
    explicit Unwrapped(const QByteArray &data)
    {
        const char *in = data.constData();
        const qsizetype n = data.size();
        qsizetype i = 0;
        while (i < n && !isSpace(in[i]))
            ++i;
        if (i == n) {
            m_text = data; // nothing to drop: shared, not copied
            return;
        }
        m_text.resize(n);
        char *out = m_text.data();
        std::copy(in, in + i, out);
        qsizetype o = i, dropped = 0;
        while (i < n) {
            if (!isSpace(in[i])) {
                out[o++] = in[i++];
                continue;
            }
            qsizetype run = i;
            while (run < n && isSpace(in[run]))
                ++run;
            qsizetype length = run - i;
            if (length > Redactor::kMaxGap) {
                out[o++] = in[i];
                --length;
            }
            dropped += length;
            m_jumps.append({o, dropped});
            i = run;
        }
        m_text.truncate(o);
    }
    const QByteArray &text() const { return m_text; }
    // Where the character at `at` of text() is in the data.
    qsizetype toData(qsizetype at) const
    {
        const auto it = std::upper_bound(m_jumps.cbegin(), m_jumps.cend(), at, [](qsizetype a, const Jump &j) { return a < j.from; });
        return at + std::prev(it)->dropped;
    }
    // The first character of text() that is at `at` of the data or after it.
    qsizetype fromData(qsizetype at) const
    {
        // The last stretch that starts at `at` or before it; past its end, the next one's start.
        const auto it = std::upper_bound(m_jumps.cbegin(), m_jumps.cend(), at, [](qsizetype a, const Jump &j) { return a < j.from + j.dropped; });
        const qsizetype inText = at - std::prev(it)->dropped;
        return std::min(it == m_jumps.cend() ? m_text.size() : it->from, inText);
    }

private:
    struct Jump {
        qsizetype from;    // from this character of text() on,
        qsizetype dropped; // this many characters of the data were left out before it
    };
    QByteArray m_text;
    QList<Jump> m_jumps{{0, 0}};
};
} // namespace

void Redactor::Hits::merge(const Hits &other)
{
    count += other.count;
    for (const QString &s : other.secrets)
        if (!secrets.contains(s))
            secrets.append(s);
}

QByteArray Redactor::mask(qsizetype length)
{
    static const QByteArray marker = "[REDACTED";
    if (length < marker.size() + 2)
        return QByteArray(length, '*');
    return marker + QByteArray(length - marker.size() - 1, '*') + ']';
}

void Redactor::add(const QString &name, const QByteArray &value)
{
    QList<QByteArray> forms = {value, value.toHex(), value.toHex().toUpper()};
    for (int shift = 0; shift < 3; ++shift)
        for (auto options : {QByteArray::Base64Encoding, QByteArray::Base64UrlEncoding})
            forms.append(base64Core(value, shift, options));
    for (const QByteArray &f : std::as_const(forms)) {
        if (f.size() < kMinPattern)
            continue;
        if (std::any_of(m_patterns.cbegin(), m_patterns.cend(), [&](const Pattern &p) { return p.bytes == f; }))
            continue;
        // KMP failure function: the longest proper prefix of f[0..i] that is also its suffix.
        QList<qsizetype> failure(f.size(), 0);
        for (qsizetype i = 1, k = 0; i < f.size(); ++i) {
            while (k > 0 && f.at(i) != f.at(k))
                k = failure[k - 1];
            if (f.at(i) == f.at(k))
                ++k;
            failure[i] = k;
        }
        m_patterns.append({f, name, failure, std::none_of(f.cbegin(), f.cend(), isSpace)});
    }
    std::stable_sort(m_patterns.begin(), m_patterns.end(), [](const Pattern &a, const Pattern &b) { return a.bytes.size() > b.bytes.size(); });
}

Redactor::Hits Redactor::redactInPlace(QByteArray &data) const
{
    Hits hits;
    if (m_patterns.isEmpty())
        return hits;
    // Taken before anything is masked: a mask changes only what the scan has passed.
    const Unwrapped unwrapped(data);
    // Left to right: at each step the earliest match (the longest where two start together).
    // Each pattern's next match is remembered and searched again only once the scan has passed
    // it, so a chunk full of secrets costs one pass per pattern, not one per match.
    QVarLengthArray<qsizetype, 16> next(m_patterns.size()), end(m_patterns.size());
    const auto find = [&](qsizetype i, qsizetype from) {
        const Pattern &p = m_patterns[i];
        const qsizetype at = unwrapped.text().indexOf(p.bytes, unwrapped.fromData(from));
        next[i] = at < 0 ? -1 : unwrapped.toData(at);
        end[i] = at < 0 ? -1 : unwrapped.toData(at + p.bytes.size() - 1) + 1;
    };
    const auto findPlain = [&](qsizetype i, qsizetype from) {
        next[i] = data.indexOf(m_patterns[i].bytes, from);
        end[i] = next[i] + m_patterns[i].bytes.size();
    };
    for (qsizetype i = 0; i < m_patterns.size(); ++i)
        m_patterns[i].wrapped ? find(i, 0) : findPlain(i, 0);
    for (qsizetype from = 0;;) {
        qsizetype which = -1;
        for (qsizetype i = 0; i < m_patterns.size(); ++i) {
            if (next[i] >= 0 && next[i] < from)
                m_patterns[i].wrapped ? find(i, from) : findPlain(i, from);
            if (next[i] >= 0 && (which < 0 || next[i] < next[which]))
                which = i; // longest first in m_patterns: ties keep the longer one
        }
        if (which < 0)
            return hits;
        const Pattern &p = m_patterns[which];
        const qsizetype at = next[which];
        // Same length, other positions hold; a wrapped form keeps its line breaks.
        const QByteArray masked = mask(p.bytes.size());
        if (end[which] - at == p.bytes.size()) {
            data.replace(at, masked.size(), masked);
        } else {
            char *d = data.data();
            for (qsizetype k = at, j = 0; j < masked.size(); ++k)
                if (!isSpace(d[k]))
                    d[k] = masked.at(j++);
        }
        ++hits.count;
        if (!hits.secrets.contains(p.name))
            hits.secrets.append(p.name);
        from = end[which];
    }
}

qsizetype Redactor::partialSuffix(QByteArrayView data) const
{
    // The longest end of data that begins a pattern: its KMP automaton run over the last bytes,
    // linear in the pattern's length whatever the data. A wrapped form skips whitespace, up to
    // kMaxGap at a time, so it looks back (1 + kMaxGap) times as far.
    qsizetype hold = 0;
    for (const Pattern &p : m_patterns) {
        const qsizetype reach = (p.bytes.size() - 1) * (p.wrapped ? 1 + kMaxGap : 1);
        const QByteArrayView tail = data.last(std::min(reach, data.size()));
        qsizetype state = 0, gap = 0;
        for (char c : tail) {
            if (p.wrapped && isSpace(c)) {
                if (++gap > kMaxGap)
                    state = 0;
                continue;
            }
            gap = 0;
            while (state > 0 && p.bytes.at(state) != c)
                state = p.failure[state - 1];
            if (p.bytes.at(state) == c)
                ++state;
            if (state == p.bytes.size())
                state = p.failure[state - 1];
        }
        // Held from the first character of the partial match on.
        qsizetype from = data.size();
        for (qsizetype matched = 0; matched < state;) {
            --from;
            if (!p.wrapped || !isSpace(data.at(from)))
                ++matched;
        }
        hold = std::max(hold, data.size() - from);
    }
    return hold;
}

QString Redactor::redactString(const QString &s, Hits *hits) const
{
    QByteArray utf8 = s.toUtf8();
    const Hits h = redactInPlace(utf8);
    if (!h)
        return s;
    hits->merge(h);
    return QString::fromUtf8(utf8);
}

QJsonValue Redactor::redactValue(const QJsonValue &value, Hits *hits) const
{
    if (value.isString())
        return redactString(value.toString(), hits);
    if (value.isArray()) {
        QJsonArray out;
        for (const QJsonValue &v : value.toArray())
            out.append(redactValue(v, hits));
        return out;
    }
    if (value.isObject())
        return redactJson(value.toObject(), hits);
    return value;
}

QJsonObject Redactor::redactJson(const QJsonObject &object, Hits *hits) const
{
    QJsonObject out;
    for (auto it = object.begin(); it != object.end(); ++it)
        out.insert(redactString(it.key(), hits), redactValue(it.value(), hits));
    return out;
}

} // namespace airlock
