// SPDX-License-Identifier: Apache-2.0
#include "ManPage.h"

#include <QDate>

namespace airlock::app {

ManPage::ManPage(QString name, QString summary)
    : m_name(std::move(name))
    , m_summary(std::move(summary))
{
}

QString ManPage::escape(const QString &text)
{
    QString out;
    out.reserve(text.size() + 16);
    for (const QChar c : text) {
        if (c == QLatin1Char('\\'))
            out += QStringLiteral("\\e");
        else if (c == QLatin1Char('-'))
            out += QStringLiteral("\\-");
        else
            out += c;
    }
    // A line that starts with a dot or a quote would be read as a request.
    QStringList lines = out.split(QLatin1Char('\n'));
    for (QString &line : lines)
        if (line.startsWith(QLatin1Char('.')) || line.startsWith(QLatin1Char('\'')))
            line.prepend(QStringLiteral("\\&"));
    return lines.join(QLatin1Char('\n'));
}

ManPage &ManPage::synopsis(const QString &line)
{
    m_synopsis.append(line);
    return *this;
}

ManPage &ManPage::paragraphs(const QString &title, const QString &text)
{
    m_body += QStringLiteral(".SH ") + title.toUpper() + QLatin1Char('\n');
    const QStringList parts = text.split(QStringLiteral("\n\n"));
    for (qsizetype i = 0; i < parts.size(); ++i) {
        if (i > 0)
            m_body += QStringLiteral(".PP\n");
        m_body += escape(parts.at(i).trimmed()) + QLatin1Char('\n');
    }
    return *this;
}

QString ManPage::optionLines(const QList<QCommandLineOption> &options)
{
    QString out;
    for (const QCommandLineOption &o : options) {
        if (o.flags() & QCommandLineOption::HiddenFromHelp)
            continue;
        QStringList names;
        for (const QString &n : o.names())
            names.append(QStringLiteral("\\fB")
                + escape(n.size() == 1 ? QStringLiteral("-") + n : QStringLiteral("--") + n) + QStringLiteral("\\fR"));
        QString term = names.join(QStringLiteral(", "));
        if (!o.valueName().isEmpty())
            term += QStringLiteral(" \\fI") + escape(o.valueName()) + QStringLiteral("\\fR");
        out += QStringLiteral(".TP\n") + term + QLatin1Char('\n') + escape(o.description()) + QLatin1Char('\n');
    }
    return out;
}

ManPage &ManPage::options(const QString &title, const QList<QCommandLineOption> &options, const QString &intro)
{
    m_body += QStringLiteral(".SH ") + title.toUpper() + QLatin1Char('\n');
    if (!intro.isEmpty())
        m_body += escape(intro) + QLatin1Char('\n');
    m_body += optionLines(options);
    return *this;
}

ManPage &ManPage::subsection(const QString &title, const QString &text, const QList<QCommandLineOption> &options)
{
    m_body += QStringLiteral(".SS ") + escape(title) + QLatin1Char('\n') + escape(text) + QLatin1Char('\n');
    if (!options.isEmpty())
        m_body += QStringLiteral(".RS\n") + optionLines(options) + QStringLiteral(".RE\n");
    return *this;
}

ManPage &ManPage::definitions(const QString &title, const QList<std::pair<QString, QString>> &terms)
{
    m_body += QStringLiteral(".SH ") + title.toUpper() + QLatin1Char('\n');
    for (const auto &[term, meaning] : terms)
        m_body += QStringLiteral(".TP\n\\fB") + escape(term) + QStringLiteral("\\fR\n") + escape(meaning)
            + QLatin1Char('\n');
    return *this;
}

QString ManPage::render(const QString &version) const
{
    QString out
        = QStringLiteral(".\\\" Written by '%1 \\-\\-man' from its option tables; edit those, not this.\n").arg(m_name);
    out += QStringLiteral(".TH %1 1 \"\" \"Airlock %2\" \"Airlock Manual\"\n").arg(m_name.toUpper(), escape(version));
    out += QStringLiteral(".SH NAME\n%1 \\- %2\n").arg(m_name, escape(m_summary));
    out += QStringLiteral(".SH SYNOPSIS\n");
    for (qsizetype i = 0; i < m_synopsis.size(); ++i)
        out += (i ? QStringLiteral(".br\n") : QString())
            + QStringLiteral("\\fB%1\\fR %2\n").arg(m_name, escape(m_synopsis.at(i)));
    return out + m_body;
}

} // namespace airlock::app
