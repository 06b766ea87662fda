// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>
#include <QStringList>

namespace airlock::ui {

// The commands typed on the console's command line, newest last, recalled with Up and Down as in
// a shell: Up from a half-typed line keeps it to come back to; a repeat of the last entry is not
// stored twice. Bounded; saved in the settings between runs.
class CommandHistory {
public:
    static constexpr int kMaxEntries = 500;

    explicit CommandHistory(QString settingsKey = {}); // empty: not saved
    void add(const QString &command);
    QString previous(const QString &current); // the older entry, or `current` at the oldest
    QString next(); // the newer entry, then the line being typed
    QStringList entries() const { return m_entries; }

private:
    QString m_key;
    QStringList m_entries;
    qsizetype m_position = 0; // == size(): at the line being typed
    QString m_typing;
};

} // namespace airlock::ui
