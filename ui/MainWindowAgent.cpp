// SPDX-License-Identifier: Apache-2.0
// MainWindow, Run an agent…: the dialog, then the agent's own sandbox on this computer, selected,
// and the agent's execution in it, whose output, programs and approvals show as any other's.
#include "MainWindow.h"

#include "RunAgentDialog.h"
#include "client/DaemonApi.h"

#include <QJsonArray>
#include <QPointer>

namespace airlock::ui {

void MainWindow::runAgent()
{
    // The agent and its project are this computer's: its daemon runs it.
    QStringList secrets;
    if (auto listed = DaemonApi(m_client).listSecrets().wait(5000))
        for (const QJsonValue &s : listed->value(QStringLiteral("secrets")).toArray())
            secrets.append(s.toObject().value(QStringLiteral("name")).toString());
    RunAgentDialog dialog(secrets, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    auto run = dialog.plan();
    if (!run)
        return showStatus(tr("Not run: %1").arg(run.error().message), true);
    startAgent(*run);
}

void MainWindow::startAgent(const agents::AgentRun &run)
{
    const QString name = run.sandbox.name;
    createSandbox(run.sandbox, &m_client, [self = QPointer<MainWindow>(this), name, exec = run.exec](Status made) {
        if (!self || !made)
            return;
        DaemonApi(self->m_client).startExec(name, exec).then([self, name](Result<ExecStarted> r) {
            if (!self)
                return;
            if (!r)
                return self->showStatus(tr("The agent did not start: %1").arg(r.error().message), true);
            self->showStatus(tr("The agent runs in %1").arg(name));
            if (self->selectSandbox(name) && self->m_current == r->sandbox)
                self->m_running.append(r->exec);
        });
    });
}

} // namespace airlock::ui
