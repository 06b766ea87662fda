// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStringList>
#include <QTextStream>

namespace airlock::cli {

// Left-aligned columns separated by two spaces, the way `docker ps` prints.
class Table {
public:
    explicit Table(QStringList header)
        : m_rows{std::move(header)}
    {
    }
    void add(QStringList row) { m_rows.append(std::move(row)); }
    void print(QTextStream &out) const
    {
        QList<qsizetype> widths;
        for (const QStringList &row : m_rows)
            for (qsizetype i = 0; i < row.size(); ++i) {
                if (widths.size() <= i)
                    widths.append(0);
                widths[i] = std::max(widths[i], row[i].size());
            }
        for (const QStringList &row : m_rows) {
            QString line;
            for (qsizetype i = 0; i < row.size(); ++i)
                line += i + 1 < row.size() ? row[i].leftJustified(widths[i] + 2) : row[i];
            out << line << '\n';
        }
        out.flush();
    }

private:
    QList<QStringList> m_rows;
};

} // namespace airlock::cli
