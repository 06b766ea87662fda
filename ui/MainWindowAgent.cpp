// SPDX-License-Identifier: Apache-2.0
// MainWindow, Run an agent…: the dialog, then the agent's own sandbox on this computer, selected,
// and the agent's execution in it, whose output, programs and approvals show as any other's.
#include "MainWindow.h"

#include "ReviewWindow.h"
#include "RunAgentDialog.h"
#include "SandboxModel.h"
#include "client/DaemonApi.h"
#include "model/FileChange.h"

#include <QJsonArray>
#include <QPointer>
#include <QTimer>

#include <algorithm>
#include <csignal>

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
    const bool reviewed = std::any_of(
        run.sandbox.mounts.cbegin(), run.sandbox.mounts.cend(), [](const Mount &m) { return m.copyOnWrite; });
    createSandbox(
        run.sandbox, &m_client, [self = QPointer<MainWindow>(this), name, exec = run.exec, reviewed](Status made) {
            if (!self || !made)
                return;
            DaemonApi(self->m_client).startExec(name, exec).then([self, name, reviewed](Result<ExecStarted> r) {
                if (!self)
                    return;
                if (!r)
                    return self->showStatus(tr("The agent did not start: %1").arg(r.error().message), true);
                self->showStatus(reviewed
                        ? tr("The agent runs in %1; its changes to the project wait for your review").arg(name)
                        : tr("The agent runs in %1").arg(name));
                if (reviewed)
                    self->m_agentRuns.insert(r->sandbox, r->exec);
                if (self->selectSandbox(name) && self->m_current == r->sandbox)
                    self->m_running.append(r->exec);
            });
        });
}

void MainWindow::agentEnded(const QString &sandbox)
{
    m_agentRuns.remove(sandbox);
    // What the agent left running stops with it: what the person reviews stays what they apply.
    // Asked without waiting: this runs in the client's event delivery, which a wait would hold up.
    DaemonApi(m_client).killSandbox(sandbox, SIGKILL).then([self = QPointer<MainWindow>(this), sandbox](auto) {
        if (!self)
            return;
        DaemonApi(self->m_client).sandboxChanges(sandbox).then([self, sandbox](Result<QJsonObject> answer) {
            if (!self)
                return;
            const auto changes
                = answer ? cow::SandboxChanges::fromJson(*answer) : Result<cow::SandboxChanges>(answer.error());
            const bool none = changes
                && std::all_of(changes->mounts.cbegin(), changes->mounts.cend(),
                    [](const cow::MountChanges &m) { return m.changes.isEmpty(); });
            if (none)
                return self->showStatus(
                    tr("The agent in %1 changed nothing in the project").arg(self->localName(sandbox)));
            // The window asks the daemon as it opens: after this delivery has returned.
            QTimer::singleShot(0, self, [self, sandbox] {
                if (self)
                    self->openReview(sandbox, self->localName(sandbox));
            });
        });
    });
}

ReviewWindow *MainWindow::reviewWindow() const
{
    return m_review;
}

QString MainWindow::localName(const QString &sandbox) const
{
    return m_model->sandbox(m_model->sandboxIndex(sandbox, 0)).value(QStringLiteral("name")).toString(sandbox);
}

ReviewWindow *MainWindow::openReview(const QString &sandbox, const QString &name)
{
    if (m_review)
        m_review->close();
    m_review = new ReviewWindow(m_client, sandbox, name, this);
    m_review->setAttribute(Qt::WA_DeleteOnClose);
    m_review->show();
    m_review->raise();
    return m_review;
}

} // namespace airlock::ui
