// SPDX-License-Identifier: Apache-2.0
#include "CommandHistory.h"

#include <QSettings>

namespace airlock::ui {

CommandHistory::CommandHistory(QString settingsKey)
    : m_key(std::move(settingsKey))
{
    if (!m_key.isEmpty())
        m_entries = QSettings().value(m_key).toStringList().mid(0, kMaxEntries);
    m_position = m_entries.size();
}

void CommandHistory::add(const QString &command)
{
    if (!command.trimmed().isEmpty() && (m_entries.isEmpty() || m_entries.last() != command))
        m_entries.append(command);
    while (m_entries.size() > kMaxEntries)
        m_entries.removeFirst();
    m_position = m_entries.size();
    m_typing.clear();
    if (!m_key.isEmpty())
        QSettings().setValue(m_key, m_entries);
}

QString CommandHistory::previous(const QString &current)
{
    if (m_position == m_entries.size())
        m_typing = current;
    if (m_position == 0)
        return m_entries.isEmpty() ? current : m_entries.first();
    return m_entries.at(--m_position);
}

QString CommandHistory::next()
{
    if (m_position >= m_entries.size())
        return m_typing;
    ++m_position;
    return m_position == m_entries.size() ? m_typing : m_entries.at(m_position);
}

} // namespace airlock::ui
