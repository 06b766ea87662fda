// SPDX-License-Identifier: Apache-2.0
// MainWindow, the fleet's actions: what acts on the selected sandboxes (signal, delete, duplicate)
// and what makes new ones. The rest of the window is in MainWindow.cpp.
#include "MainWindow.h"

#include "CreateSandboxDialog.h"
#include "FleetView.h"
#include "SandboxModel.h"
#include "StatusText.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"

#include <QJsonArray>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>

#include <csignal>
#include <memory>

namespace airlock::ui {

QList<QJsonObject> MainWindow::selectedSandboxes() const
{
    QList<QJsonObject> selected;
    for (const QModelIndex &index : m_fleet->selectedSandboxes())
        if (const QJsonObject s = m_model->sandbox(index); !s.isEmpty())
            selected.append(s);
    return selected;
}

void MainWindow::signalSelected(int signo)
{
    // Each selected sandbox, on its own host; the status line adds up what each answered.
    auto total = std::make_shared<std::pair<int, int>>(0, 0); // executions signalled, answers left
    const QString verb = signo == SIGKILL ? tr("Killed") : tr("Stopped");
    for (const QModelIndex &index : m_fleet->selectedSandboxes()) {
        DaemonClient *client = m_model->hostClient(index);
        const QJsonObject s = m_model->sandbox(index);
        if (!client || s.isEmpty())
            continue;
        ++total->second;
        DaemonApi(*client)
            .killSandbox(s.value(QStringLiteral("id")).toString(), signo)
            .then([self = QPointer<MainWindow>(this), total, verb, name = s.value(QStringLiteral("name")).toString()](
                      Result<QJsonObject> r) {
                if (!self)
                    return;
                if (!r)
                    return self->showStatus(
                        tr("%1 not signalled: %2").arg(display::escaped(name, 60), r.error().message), true);
                total->first += r->value(QStringLiteral("executions")).toInt();
                if (--total->second == 0)
                    self->showStatus(tr("%1 %2").arg(verb, display::count(total->first, tr("execution"))));
            });
    }
}

QList<MainWindow::SandboxRef> MainWindow::selectedRefs() const
{
    QList<SandboxRef> refs;
    for (const QModelIndex &index : m_fleet->selectedSandboxes()) {
        const QJsonObject s = m_model->sandbox(index);
        if (DaemonClient *client = m_model->hostClient(index); client && !s.isEmpty())
            refs.append({client, s.value(QStringLiteral("id")).toString(), s.value(QStringLiteral("name")).toString(),
                m_model->data(index.siblingAtColumn(SandboxModel::Running), SandboxModel::SortRole).toInt(),
                m_model->runningCommands(index)});
    }
    return refs;
}

bool MainWindow::confirmDelete()
{
    return confirmDelete(selectedRefs());
}

bool MainWindow::confirmDelete(const QList<SandboxRef> &targets)
{
    // Says what is lost (what still runs, by name), and Cancel is what Enter does.
    if (targets.isEmpty())
        return false;
    QStringList names, running;
    for (const SandboxRef &t : targets) {
        const QString name = display::escaped(t.name, 60);
        names.append(name);
        if (t.running > 0)
            running.append(tr("%1: %n running", nullptr, t.running).arg(name)
                + (t.commands.isEmpty() ? QString() : QStringLiteral(" — ") + t.commands.join(QStringLiteral("; "))));
    }
    QMessageBox box(QMessageBox::Warning, tr("Delete sandboxes", nullptr, int(names.size())),
        tr("Delete %1?", nullptr, int(names.size()))
            .arg(names.mid(0, 10).join(QStringLiteral(", "))
                + (names.size() > 10 ? tr(" and %n more", nullptr, int(names.size()) - 10) : QString())),
        QMessageBox::Cancel, this);
    box.setObjectName(QStringLiteral("confirmDelete"));
    box.setInformativeText(running.isEmpty()
            ? tr("Nothing is running in them. Their workspaces are removed.")
            : tr("Still running, and killed if you delete:\n%1\nTheir workspaces are removed.")
                  .arg(running.mid(0, 10).join(QLatin1Char('\n'))));
    QPushButton *yes = box.addButton(tr("&Delete", nullptr, int(names.size())), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    return box.clickedButton() == yes;
}

void MainWindow::duplicateCurrent()
{
    // A new sandbox with this one's preset and own policy layer (network, mounts, limits, grants,
    // rules): the same boundary, a fresh workspace.
    const QJsonObject s = m_model->sandbox(m_fleet->current());
    const QString name = s.value(QStringLiteral("name")).toString();
    if (name.isEmpty())
        return;
    QString copy;
    for (int n = 2; copy.isEmpty() || m_model->sandboxIndex(copy).isValid(); ++n)
        copy = QStringLiteral("%1-%2").arg(name.left(60)).arg(n);
    DaemonApi(currentClient())
        .policy(s.value(QStringLiteral("id")).toString())
        .then([self = QPointer<MainWindow>(this), copy](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r)
                return self->showStatus(tr("Not duplicated: %1").arg(r.error().message), true);
            CreateSandboxRequest request;
            request.name = copy;
            if (const QJsonValue layer = r->value(QStringLiteral("policy")); layer.isObject())
                request.policy = layer.toObject();
            request.preset = r->value(QStringLiteral("preset")).toString();
            self->createSandbox(request);
        });
}

void MainWindow::newSandbox()
{
    // On the host of what is selected, unless the person picks another.
    DaemonClient &current = currentClient();
    QStringList hosts;
    QList<int> rows; // the dialog's hosts by their rows in the fleet (this computer first; removed ones left out)
    int currentHost = 0;
    for (int i = 0; i < m_model->hostCount(); ++i) {
        if (m_model->isRetired(i))
            continue;
        if (m_model->hostClient(m_model->index(i, 0)) == &current)
            currentHost = int(rows.size());
        hosts.append(m_model->hostName(i));
        rows.append(i);
    }
    auto presets = DaemonApi(current).policyPresets().wait();
    const auto presetsOf = [this, rows](int host) {
        DaemonClient *client = m_model->hostClient(m_model->index(rows.value(host), 0));
        auto listed = client && client->isConnected() ? DaemonApi(*client).policyPresets().wait(5000)
                                                      : Result<QJsonObject>(QJsonObject());
        return listed ? listed->value(QStringLiteral("presets")).toArray() : QJsonArray();
    };
    CreateSandboxDialog dialog(
        presets ? presets->value(QStringLiteral("presets")).toArray() : QJsonArray(), hosts, currentHost, this);
    dialog.setPresetSource(presetsOf);
    if (dialog.exec() != QDialog::Accepted)
        return;
    DaemonClient *target = m_model->hostClient(m_model->index(rows.value(dialog.host()), 0));
    createSandbox(dialog.request(), target ? target : &current);
}

void MainWindow::createSandbox(const CreateSandboxRequest &request, DaemonClient *on, std::function<void(Status)> done)
{
    // Creating can take a while (a large mount, a slow disk): a busy bar until the daemon answers.
    showStatus(tr("Creating a sandbox…"));
    if (!m_busy) {
        m_busy = new QProgressBar;
        m_busy->setRange(0, 0);
        m_busy->setMaximumWidth(140);
        statusBar()->addPermanentWidget(m_busy);
    }
    m_busy->setVisible(++m_pendingCreates > 0);
    // On the host of what is selected (a host row, or a sandbox under it); this computer otherwise.
    DaemonApi(on ? *on : currentClient())
        .createSandbox(request)
        .then([self = QPointer<MainWindow>(this), done](Result<CreatedSandbox> r) {
            if (done)
                done(r ? Status(Ok{}) : Status(r.error()));
            if (!self)
                return;
            self->m_busy->setVisible(--self->m_pendingCreates > 0);
            if (!r)
                return self->showStatus(tr("Not created: %1").arg(r.error().message), true);
            const QString name = r->name;
            self->showStatus(tr("Created %1").arg(name));
            self->m_model->refresh();
            QPointer<MainWindow> window = self;
            QObject::connect(
                self->m_model, &SandboxModel::refreshed, self,
                [window, name] {
                    if (window)
                        window->selectSandbox(name);
                },
                Qt::SingleShotConnection);
        });
}

void MainWindow::deleteSelected()
{
    deleteSandboxes(selectedRefs());
}

void MainWindow::deleteSandboxes(const QList<SandboxRef> &targets)
{
    // By id on its own host: a sandbox of the same name made since is not this one.
    for (const SandboxRef &t : targets) {
        QPointer<DaemonClient> client = t.client;
        if (!client)
            continue;
        DaemonApi(*client).deleteSandbox(t.id).then(
            [self = QPointer<MainWindow>(this), name = t.name](Result<QJsonObject> r) {
                if (self)
                    self->showStatus(r ? tr("Deleted %1").arg(name) : tr("Not deleted: %1").arg(r.error().message), !r);
            });
    }
}

} // namespace airlock::ui
