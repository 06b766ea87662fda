// SPDX-License-Identifier: Apache-2.0
#include "model/DisplayText.h"

#include <QDateTime>

#include <QList>
#include <QRegularExpression>

#include <algorithm>

namespace airlock::display {

namespace {
// A code point a person cannot see, or could take for another: controls, format characters (bidi
// overrides, zero-width ones, the tag characters U+E0000 to U+E007F that can smuggle text),
// line and paragraph separators, spaces other than U+0020, variation selectors, fillers that
// render as nothing, lone surrogates and unassigned code points.
bool invisible(char32_t c)
{
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0))
        return true;
    if (c == 0x115f || c == 0x1160 || c == 0x3164 || c == 0xffa0 || c == 0x2800 || (c >= 0x180b && c <= 0x180f)
        || (c >= 0xfe00 && c <= 0xfe0f) || (c >= 0xe0100 && c <= 0xe01ef) || c == 0x034f || c == 0x17b4 || c == 0x17b5
        || c == 0x16fe4 || c == 0xfffc || c == 0xfffd) // U+FFFD: what bytes that are not UTF-8 became
        return true;
    // Right-to-left letters reorder the operators and numbers around them when shown (`cat א > ב`
    // reads as a redirect the other way round): shown by code point too.
    switch (QChar::direction(c)) {
    case QChar::DirR:
    case QChar::DirAL:
        return true;
    default:
        break;
    }
    switch (QChar::category(c)) {
    case QChar::Other_PrivateUse:
    case QChar::Other_Format:
    case QChar::Other_Surrogate:
    case QChar::Other_NotAssigned:
    case QChar::Separator_Line:
    case QChar::Separator_Paragraph:
        return true;
    case QChar::Separator_Space:
        return c != 0x20;
    default:
        return false;
    }
}
} // namespace

QString escaped(const QString &text, int maxWidth)
{
    // Printable ASCII (most of what is shown) is itself: one unit per code point, nothing to escape.
    if (std::all_of(text.cbegin(), text.cend(), [](QChar c) { return c.unicode() >= 0x20 && c.unicode() < 0x7f; }))
        return maxWidth > 1 && text.size() > maxWidth ? text.left(maxWidth - 1) + QChar(0x2026) : text;
    QString out;
    out.reserve(text.size());
    QList<qsizetype> ends; // where each code point's text ends: elided between them, never inside
    // By code point: a tag character is two UTF-16 units, neither of which is a format character.
    for (const char32_t c : QStringView(text).toUcs4()) {
        if (c < 0x100 && invisible(c))
            out += QStringLiteral("\\x%1").arg(uint(c), 2, 16, QLatin1Char('0'));
        else if (invisible(c))
            out += QStringLiteral("\\u{%1}").arg(uint(c), 4, 16, QLatin1Char('0'));
        else if (QChar::requiresSurrogates(c)) {
            out += QChar(QChar::highSurrogate(c));
            out += QChar(QChar::lowSurrogate(c));
        } else {
            out += QChar(char16_t(c));
        }
        if (maxWidth > 1)
            ends.append(out.size());
    }
    if (maxWidth > 1 && out.size() > maxWidth) {
        qsizetype cut = 0;
        for (qsizetype end : std::as_const(ends))
            if (end <= maxWidth - 1)
                cut = end;
        out = out.left(cut) + QChar(0x2026);
    }
    return out;
}

QString commandLine(const QJsonArray &argv, int maxWidth)
{
    static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    QStringList words;
    for (const QJsonValue &v : argv) {
        QString word = escaped(v.toString());
        if (word.isEmpty() || !plain.match(word).hasMatch())
            word = QLatin1Char('\'') + word.replace(QLatin1Char('\''), QStringLiteral("'\\''")) + QLatin1Char('\'');
        words.append(word);
    }
    QString line = words.join(QLatin1Char(' '));
    if (maxWidth > 1 && line.size() > maxWidth)
        line = line.left(maxWidth - 1) + QChar(0x2026);
    return line;
}

QString count(qint64 n, const QString &one, const QString &many)
{
    return QString::number(n) + QLatin1Char(' ') + (n == 1 ? one : many.isEmpty() ? one + QLatin1Char('s') : many);
}

QString timestamp(qint64 msSinceEpoch, bool milliseconds)
{
    return QDateTime::fromMSecsSinceEpoch(msSinceEpoch)
        .toString(milliseconds ? QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz t") : QStringLiteral("yyyy-MM-dd HH:mm:ss t"));
}

QString duration(qint64 ms)
{
    ms = std::max<qint64>(ms, 0);
    if (ms < 1000)
        return QStringLiteral("%1 ms").arg(ms);
    if (ms < 10'000)
        return QStringLiteral("%1 s").arg(double(ms) / 1000, 0, 'f', 1);
    if (ms < 60'000)
        return QStringLiteral("%1 s").arg(ms / 1000);
    if (ms < 3'600'000)
        return QStringLiteral("%1 min %2 s").arg(ms / 60'000).arg(ms / 1000 % 60);
    return QStringLiteral("%1 h %2 min").arg(ms / 3'600'000).arg(ms / 60'000 % 60);
}

} // namespace airlock::display
