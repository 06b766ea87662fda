// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "agents/AgentProfile.h"

#include <QDialog>
#include <QStringList>

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace airlock::ui {

// Run an agent: which agent CLI (the shipped profiles), the project it works on, the hosts it may
// reach beyond its API and registries, and the task. It says where the agent's key goes (and that
// the sandbox holds only a placeholder), whether the agent is installed here and whether its key
// is in the store; what it builds is `agent run`'s plan, for this computer's daemon.
class RunAgentDialog final : public QDialog {
    Q_OBJECT
public:
    // `secrets`: the names in the daemon's store.
    explicit RunAgentDialog(QStringList secrets, QWidget *parent = nullptr);
    // The sandbox and the agent's execution, or what is wrong.
    Result<agents::AgentRun> plan() const;
    QString problem() const; // empty when the form can be sent
    QComboBox *agentBox() const { return m_agent; }
    QLineEdit *projectEdit() const { return m_project; }
    QCheckBox *writableBox() const { return m_writable; }
    QLineEdit *allowEdit() const { return m_allow; }
    QPlainTextEdit *taskEdit() const { return m_task; }
    QLabel *aboutLabel() const { return m_about; }

private:
    void locate(); // the chosen agent's program, found once per choice
    void update();
    const agents::AgentProfile *profile() const;

    QStringList m_secrets;
    QList<agents::AgentProfile> m_profiles;
    Result<agents::AgentProgram> m_program = makeError(ErrorCode::NotFound, QString());
    QComboBox *m_agent;
    QLabel *m_about;
    QLineEdit *m_project;
    QCheckBox *m_writable;
    QLineEdit *m_allow;
    QPlainTextEdit *m_task;
    QLabel *m_problem;
    QDialogButtonBox *m_buttons;
};

} // namespace airlock::ui
