// SPDX-License-Identifier: Apache-2.0
#include "RunAgentDialog.h"

#include "StatusText.h"
#include "mcp/AgentConfig.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRandomGenerator>
#include <QRegularExpression>

namespace airlock::ui {

using agents::AgentProfile;

RunAgentDialog::RunAgentDialog(QStringList secrets, QWidget *parent)
    : QDialog(parent)
    , m_secrets(std::move(secrets))
    , m_agent(new QComboBox)
    , m_about(new QLabel)
    , m_project(new QLineEdit)
    , m_writable(new QCheckBox(tr("The agent writes to it directly (read-write)")))
    , m_allow(new QLineEdit)
    , m_task(new QPlainTextEdit)
    , m_problem(new QLabel)
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel))
{
    setWindowTitle(tr("Run an agent"));
    for (const QString &name : agents::builtinAgentNames())
        if (auto p = agents::builtinAgent(name)) {
            m_profiles.append(*p);
            m_agent->addItem(QStringLiteral("%1 (%2)").arg(p->title, p->name), p->name);
        }
    m_agent->setToolTip(tr("The agent CLI, installed on this computer, that runs its whole loop in the sandbox"));
    for (QLabel *label : {m_about, m_problem}) {
        label->setWordWrap(true);
        label->setTextFormat(Qt::PlainText);
    }
    m_about->setStyleSheet(QStringLiteral("color: palette(mid)"));
    m_project->setPlaceholderText(tr("optional: the folder the agent works on"));
    auto *browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("The project"), m_project->text());
        if (!dir.isEmpty())
            m_project->setText(dir);
    });
    auto *projectRow = new QHBoxLayout;
    projectRow->addWidget(m_project, 1);
    projectRow->addWidget(browse);
    m_writable->setToolTip(
        tr("Unticked, the agent edits a copy-on-write view of the folder: its changes wait in its "
           "sandbox until you apply them (airlockctl agent diff, agent apply). Ticked, its edits land "
           "in the folder as it makes them"));
    m_allow->setPlaceholderText(tr("more hosts it may reach: api.github.com, *.example.com"));
    m_allow->setToolTip(tr("Beyond its API and its package registries, which its profile allows"));
    m_task->setPlaceholderText(tr("What should the agent do?"));
    m_task->setTabChangesFocus(true);
    m_problem->setStyleSheet(statusStyle(true));
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Run"));

    auto *form = new QFormLayout;
    form->addRow(tr("Agent:"), m_agent);
    form->addRow(QString(), m_about);
    form->addRow(tr("Project:"), projectRow);
    form->addRow(QString(), m_writable);
    form->addRow(tr("Also allow:"), m_allow);
    form->addRow(tr("Task:"), m_task);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_problem);
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_agent, &QComboBox::currentIndexChanged, this, [this] {
        locate();
        update();
    });
    for (QLineEdit *edit : {m_project, m_allow})
        connect(edit, &QLineEdit::textChanged, this, &RunAgentDialog::update);
    connect(m_writable, &QCheckBox::toggled, this, &RunAgentDialog::update);
    connect(m_task, &QPlainTextEdit::textChanged, this, &RunAgentDialog::update);
    setMinimumWidth(560);
    locate();
    update();
}

void RunAgentDialog::locate()
{
    const AgentProfile *p = profile();
    m_program = p ? agents::locateProgram(*p)
                  : Result<agents::AgentProgram>(makeError(ErrorCode::NotFound, tr("No agent profile in this build")));
}

const AgentProfile *RunAgentDialog::profile() const
{
    const int i = m_agent->currentIndex();
    return i >= 0 && i < m_profiles.size() ? &m_profiles[i] : nullptr;
}

Result<agents::AgentRun> RunAgentDialog::plan() const
{
    const AgentProfile *p = profile();
    if (!p || !m_program)
        return m_program.error();
    if (!p->api.host.isEmpty() && !m_secrets.contains(p->api.secret))
        return makeError(ErrorCode::NotFound,
            tr("%1 needs its API key as the secret '%2': add it under Secrets… (it stays outside the sandbox)")
                .arg(p->title, p->api.secret));
    CreateSandboxRequest base;
    const auto allowed = mcp::parseAllowedHosts(m_allow->text());
    if (!allowed)
        return makeError(ErrorCode::InvalidArgument, tr("Also allow: %1").arg(allowed.error().message));
    if (!allowed->isEmpty())
        base.allowHosts(*allowed);
    const QString task = m_task->toPlainText().trimmed();
    if (task.isEmpty())
        return makeError(ErrorCode::InvalidArgument, tr("Say what the agent should do"));
    if (task.startsWith(QLatin1Char('-'))) // the agent would read it as one of its options
        return makeError(ErrorCode::InvalidArgument, tr("Start the task with a word, not '-'"));
    agents::AgentRunOptions options{m_project->text().trimmed(), m_writable->isChecked(), p->task + QStringList{task}};
    return agents::planAgentRun(*p, *m_program, options, base);
}

QString RunAgentDialog::problem() const
{
    auto run = plan();
    return run ? QString() : run.error().message;
}

void RunAgentDialog::update()
{
    if (const AgentProfile *p = profile()) {
        QString about = p->api.host.isEmpty()
            ? tr("Nothing brokered.")
            : tr("Its key for %1 is the secret '%2', put in the %3 header by Airlock's proxy: the sandbox holds only a "
                 "placeholder.")
                  .arg(p->api.host, p->api.secret, p->api.header);
        about += QLatin1Char(' ')
            + (m_program ? tr("Runs %1 from this computer, read-only.").arg(m_program->hostPath)
                         : tr("Not installed here: %1").arg(p->install));
        m_about->setText(about);
    }
    const QString why = problem();
    m_problem->setText(why);
    m_problem->setVisible(!why.isEmpty());
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(why.isEmpty());
    // The wrapped lines' height follows their text (a form does not ask again by itself).
    layout()->activate();
    setMinimumHeight(sizeHint().height());
}

} // namespace airlock::ui
