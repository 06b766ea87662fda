// SPDX-License-Identifier: Apache-2.0
// MainWindow, the remote hosts: adding one to the fleet, editing and removing a saved one, and
// retiring one whose connection is gone. The rest of the window is in MainWindow.cpp.
#include "MainWindow.h"

#include "AddHostDialog.h"
#include "ApprovalsDock.h"
#include "RemoteHosts.h"
#include "SandboxModel.h"
#include "client/DaemonClient.h"
#include "client/HostTokens.h"
#include "client/Hosts.h"
#include "model/DisplayText.h"

#include <QMessageBox>
#include <QPushButton>

namespace airlock::ui {

void MainWindow::retireHost(int row)
{
    m_model->retireHost(row);
    m_approvals->retireHost(row);
    updateHistoryHosts();
}

void MainWindow::editHost(int row)
{
    const auto entry = m_remoteHosts->entry(row);
    if (!entry)
        return;
    AddHostDialog dialog(this, *entry);
    if (dialog.exec() != QDialog::Accepted)
        return;
    // hosts.json changed: the console follows it (the old entry goes, the new one connects).
    auto hosts = HostRegistry::load();
    const QStringList problems = hosts ? m_remoteHosts->sync(hosts->entries()) : QStringList{hosts.error().message};
    const QString notice = dialog.tokenNotice().isEmpty() ? QString() : QStringLiteral(". ") + dialog.tokenNotice();
    showStatus((problems.isEmpty() ? tr("Saved %1").arg(display::escaped(dialog.entry().name, 64))
                                   : problems.join(QLatin1Char('\n')))
            + notice,
        !problems.isEmpty());
}

bool MainWindow::removeHost(int row, bool ask)
{
    const auto entry = m_remoteHosts->entry(row);
    if (!entry)
        return false;
    if (ask) {
        QMessageBox box(QMessageBox::Question, tr("Remove host"),
            tr("Remove %1 from this console and from your saved hosts?").arg(display::escaped(entry->name, 64)),
            QMessageBox::Cancel, this);
        box.setInformativeText(tr("Its sandboxes keep running on that machine; its token is forgotten here."));
        QPushButton *remove = box.addButton(tr("Remove"), QMessageBox::DestructiveRole);
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        if (box.clickedButton() != remove)
            return false;
    }
    auto hosts = HostRegistry::load();
    Status removed = hosts ? hosttokens::removeHost(*hosts, entry->name) : Status(hosts.error());
    if (removed)
        removed = hosts->save();
    if (!removed) {
        showStatus(tr("Not removed: %1").arg(removed.error().message), true);
        return false;
    }
    m_remoteHosts->remove(entry->name);
    showStatus(tr("Removed %1").arg(display::escaped(entry->name, 64)));
    return true;
}

int MainWindow::addHost(const QString &name, DaemonClient &client)
{
    const int row = m_model->addHost(name, client);
    m_approvals->addHost(name, client);
    connect(&client, &DaemonClient::eventReceived, this,
        [this, &client](const Event &event) { onHostEvent(client, event); });
    return row;
}

} // namespace airlock::ui
