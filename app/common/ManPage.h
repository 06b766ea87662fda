// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QCommandLineOption>
#include <QList>
#include <QString>
#include <QStringList>

namespace airlock::app {

// A manual page in man(7) markup, written from the same option tables as --help (each program's
// hidden --man prints its own), so the two cannot drift apart.
class ManPage {
public:
    ManPage(QString name, QString summary);

    ManPage &synopsis(const QString &line); // "COMMAND [options]", after the name
    ManPage &paragraphs(const QString &title, const QString &text); // blank lines separate paragraphs
    ManPage &options(const QString &title, const QList<QCommandLineOption> &options, const QString &intro = {});
    ManPage &subsection(const QString &title, const QString &text, const QList<QCommandLineOption> &options = {});
    ManPage &definitions(const QString &title, const QList<std::pair<QString, QString>> &terms); // term, what it means

    QString render(const QString &version) const;

    static QString escape(const QString &text); // plain text as roff: backslashes, hyphens, leading dots

private:
    static QString optionLines(const QList<QCommandLineOption> &options);
    QString m_name, m_summary;
    QStringList m_synopsis;
    QString m_body;
};

} // namespace airlock::app
