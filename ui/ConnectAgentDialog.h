// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "mcp/AgentConfig.h"

#include <QDialog>
#include <QJsonArray>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTabWidget;

namespace airlock::ui {

// "Connect an agent": the ready configuration for Claude Code, Codex, Cursor, VS Code or any MCP
// client, with the exact `airlockctl mcp …` for the preset, network hosts and host chosen here,
// each with a Copy button. Nothing is written anywhere: the person pastes it where it goes.
class ConnectAgentDialog final : public QDialog {
    Q_OBJECT
public:
    // `presets` as policy.presets gives them (name, policy with its description); `hosts` the
    // saved remote hosts' names.
    ConnectAgentDialog(
        const QJsonArray &presets, const QStringList &hosts, const QString &program, QWidget *parent = nullptr);

    QComboBox *presetBox() const { return m_preset; }
    QLineEdit *hostsEdit() const { return m_hosts; }
    QComboBox *hostBox() const { return m_host; }
    QString configText(mcp::AgentClient client) const;
    QString hostsError() const; // why the typed hosts are not used, or empty
    void copy(mcp::AgentClient client) const;

private:
    void update();

    QString m_program;
    QComboBox *m_preset;
    QLabel *m_presetInfo;
    QLineEdit *m_hosts;
    QLabel *m_hostsInfo;
    QComboBox *m_host;
    QTabWidget *m_tabs;
    QList<QPlainTextEdit *> m_texts;
    QList<QLabel *> m_wheres;
    QString m_hostsError;
};

} // namespace airlock::ui
