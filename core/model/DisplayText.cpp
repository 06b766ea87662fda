// SPDX-License-Identifier: Apache-2.0
#include "model/DisplayText.h"

#include <QRegularExpression>

namespace airlock::display {

QString escaped(const QString &text, int maxWidth)
{
    QString out;
    for (const QChar c : text) {
        if (c.unicode() < 0x20 || c.unicode() == 0x7f || (c.unicode() >= 0x80 && c.unicode() < 0xa0))
            out += QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QLatin1Char('0'));
        else if (c.category() == QChar::Other_Format || c.category() == QChar::Separator_Line || c.category() == QChar::Separator_Paragraph)
            out += QStringLiteral("\\u{%1}").arg(c.unicode(), 4, 16, QLatin1Char('0')); // bidi overrides and the like
        else
            out += c;
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
