// SPDX-License-Identifier: Apache-2.0
#include "secrets/Redactor.h"

#include "secrets/RedactionStream.h"

#include <QJsonArray>

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
    const QByteArray encoded
        = QByteArray(QByteArray(shift, 0) + value).toBase64(options | QByteArray::OmitTrailingEquals);
    // Characters touched by the prefix: shift 1 -> first 2, shift 2 -> first 3. At the end, the
    // last character depends on what follows unless the value ends on a group boundary.
    const qsizetype skipHead = shift == 0 ? 0 : shift + 1;
    const qsizetype total = shift + value.size();
    const qsizetype skipTail = total % 3 == 0 ? 0 : 1;
    if (encoded.size() <= skipHead + skipTail)
        return {};
    return encoded.mid(skipHead, encoded.size() - skipHead - skipTail);
}
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
    // A value with whitespace of its own (a PEM key, a passphrase) is also found with other
    // whitespace in its place: indented, folded, or with a terminal's "\r\n" for its "\n".
    for (qsizetype i = 0, n = forms.size(); i < n; ++i) {
        QByteArray bare = forms.at(i);
        bare.removeIf(isSpace);
        if (bare.size() != forms.at(i).size())
            forms.append(bare);
    }
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
    std::stable_sort(m_patterns.begin(), m_patterns.end(),
        [](const Pattern &a, const Pattern &b) { return a.bytes.size() > b.bytes.size(); });
    for (QList<qsizetype> &starting : m_startingWith)
        starting.clear();
    for (qsizetype i = 0; i < m_patterns.size(); ++i)
        m_startingWith[static_cast<unsigned char>(m_patterns[i].bytes.front())].append(i);
}

Redactor::Hits Redactor::redactInPlace(QByteArray &data) const
{
    Hits hits;
    if (m_patterns.isEmpty())
        return hits;
    RedactionStream stream;
    data = stream.write(*this, data, &hits);
    data += stream.finish();
    return hits;
}

qsizetype Redactor::partialSuffix(QByteArrayView data) const
{
    RedactionStream stream;
    Hits ignored;
    stream.write(*this, data, &ignored);
    return stream.held();
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
