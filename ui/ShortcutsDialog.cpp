// SPDX-License-Identifier: Apache-2.0
#include "ShortcutsDialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

ShortcutsDialog::ShortcutsDialog(const QList<QAction *> &actions, QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Keyboard shortcuts"));
    resize(560, 600);
    auto *list = new QTreeWidget;
    list->setObjectName(QStringLiteral("shortcutList"));
    list->setHeaderLabels({tr("Key"), tr("Does")});
    list->setRootIsDecorated(false);
    for (const QAction *a : actions)
        if (!a->shortcut().isEmpty() && !a->text().isEmpty())
            list->addTopLevelItem(new QTreeWidgetItem(
                {a->shortcut().toString(QKeySequence::NativeText), QString(a->text()).remove(QLatin1Char('&'))}));
    const std::pair<const char *, const char *> places[] = {
        {QT_TR_NOOP("Del"), QT_TR_NOOP("Delete the selected sandboxes (in the fleet)")},
        {QT_TR_NOOP("Ctrl+Shift+F"), QT_TR_NOOP("Filter the fleet")},
        {QT_TR_NOOP("Ctrl+Home, Ctrl+End"), QT_TR_NOOP("The start or the end of the output")},
        {QT_TR_NOOP("Up, Down"), QT_TR_NOOP("Earlier commands (in the command line); the next request (on a card)")},
        {QT_TR_NOOP("1, 2, 3, Esc"), QT_TR_NOOP("On a request's card: allow once, always allow, deny")},
        {QT_TR_NOOP("Tab"), QT_TR_NOOP("On a request's card: type a reason for a denial")},
    };
    for (const auto &[key, does] : places)
        list->addTopLevelItem(new QTreeWidgetItem({tr(key), tr(does)}));
    list->resizeColumnToContents(0);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(list);
    layout->addWidget(buttons);
}

} // namespace airlock::ui
