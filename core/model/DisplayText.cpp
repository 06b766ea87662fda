// SPDX-License-Identifier: Apache-2.0
#include "model/DisplayText.h"

#include <QRegularExpression>

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
        || (c >= 0xfe00 && c <= 0xfe0f) || (c >= 0xe0100 && c <= 0xe01ef))
        return true;
    switch (QChar::category(c)) {
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
    QString out;
    out.reserve(text.size());
    // By code point: a tag character is two UTF-16 units, neither of which is a format character.
    for (const char32_t c : QStringView(text).toUcs4()) {
        if (c < 0x100 && invisible(c))
            out += QStringLiteral("\\x%1").arg(uint(c), 2, 16, QLatin1Char('0'));
        else if (invisible(c))
            out += QStringLiteral("\\u{%1}").arg(uint(c), 4, 16, QLatin1Char('0'));
        else
            out += QString::fromUcs4(&c, 1);
    }
    if (maxWidth > 1 && out.size() > maxWidth)
        out = out.left(maxWidth - 1) + QChar(0x2026);
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

} // namespace airlock::display
