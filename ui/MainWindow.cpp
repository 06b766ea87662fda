// SPDX-License-Identifier: Apache-2.0
#include "MainWindow.h"

#include "ApprovalsDock.h"
#include "CreateSandboxDialog.h"
#include "HistoryWindow.h"
#include "PolicyEditor.h"
#include "OutputView.h"
#include "SandboxModel.h"
#include "client/DaemonClient.h"

#include <QAction>
#include <QClipboard>
#include <QCloseEvent>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QSettings>
#include <QKeyEvent>
#include <QMessageBox>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QSplitter>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeView>
#include <QVBoxLayout>

namespace airlock::ui {

MainWindow::MainWindow(DaemonClient &client, QWidget *parent)
    : QMainWindow(parent), m_client(client), m_model(new SandboxModel(client, this)), m_tree(new QTreeView), m_header(new QLabel),
      m_output(new OutputView), m_command(new QLineEdit), m_find(new QLineEdit), m_approvals(new ApprovalsDock(client, this))
{
    setWindowTitle(tr("Airlock"));
    resize(1400, 760);

    m_tree->setModel(m_model);
    m_tree->setRootIsDecorated(true);
    m_tree->setUniformRowHeights(true);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(SandboxModel::Name, QHeaderView::Stretch);
    for (int column : {SandboxModel::State, SandboxModel::Network, SandboxModel::Created})
        m_tree->header()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    m_tree->expandAll();
    connect(m_model, &QAbstractItemModel::rowsInserted, m_tree, [this] { m_tree->expandAll(); });
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this, &MainWindow::onSelectionChanged);

    m_header->setTextFormat(Qt::PlainText);
    m_header->setContentsMargins(6, 4, 6, 4);
    QFont bold = m_header->font();
    bold.setBold(true);
    m_header->setFont(bold);
    m_command->setPlaceholderText(tr("Command to run in the sandbox (sh -c), Enter to run"));
    m_command->setClearButtonEnabled(true);
    m_command->setEnabled(false);
    connect(m_command, &QLineEdit::returnPressed, this, &MainWindow::runCommand);
    m_command->installEventFilter(this); // Ctrl-C: copy a selection, else interrupt

    // Find in the output (Ctrl+F; Enter for the next match); Copy all (Ctrl+Shift+C).
    m_find->setPlaceholderText(tr("Find in output (Ctrl+F)"));
    m_find->setClearButtonEnabled(true);
    m_find->setMaximumWidth(260);
    connect(m_find, &QLineEdit::textChanged, m_output, &OutputView::setSearch);
    connect(m_find, &QLineEdit::returnPressed, m_output, [this] {
        if (!m_output->findNext())
            showStatus(tr("Not found: %1").arg(m_find->text()));
    });
    auto *findShortcut = new QAction(this);
    findShortcut->setShortcut(QKeySequence::Find);
    connect(findShortcut, &QAction::triggered, m_find, [this] {
        m_find->setFocus();
        m_find->selectAll();
    });
    addAction(findShortcut);
    auto *copyAll = new QAction(tr("Copy all output"), this);
    copyAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    connect(copyAll, &QAction::triggered, this, [this] { QGuiApplication::clipboard()->setText(m_output->document().plainText()); });
    addAction(copyAll);

    auto *console = new QWidget;
    auto *layout = new QVBoxLayout(console);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto *headRow = new QHBoxLayout;
    headRow->addWidget(m_header, 1);
    headRow->addWidget(m_find);
    layout->addLayout(headRow);
    layout->addWidget(m_output, 1);
    layout->addWidget(m_command);

    auto *split = new QSplitter;
    split->addWidget(m_tree);
    split->addWidget(console);
    split->setStretchFactor(1, 3);
    split->setSizes({420, 680});
    setCentralWidget(split);

    addDockWidget(Qt::RightDockWidgetArea, m_approvals);
    // The count of what waits for a person, where it is seen from anywhere: the window title.
    // A tray icon says the same and, when the window is not in front, a new request is announced.
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        m_tray = new QSystemTrayIcon(windowIcon().isNull() ? style()->standardIcon(QStyle::SP_MessageBoxQuestion) : windowIcon(), this);
        m_tray->setToolTip(tr("Airlock"));
        m_tray->show();
        connect(m_tray, &QSystemTrayIcon::activated, this, [this] {
            showNormal();
            raise();
            activateWindow();
        });
    }
    connect(m_approvals, &ApprovalsDock::pendingCountChanged, this, [this](int count) {
        setWindowTitle(count > 0 ? tr("Airlock (%n waiting)", nullptr, count) : tr("Airlock"));
        if (m_tray) {
            m_tray->setToolTip(windowTitle());
            if (count > m_waiting && !isActiveWindow())
                m_tray->showMessage(tr("Airlock"), tr("A sandbox is waiting for your decision"), QSystemTrayIcon::Information, 10000);
        }
        m_waiting = count;
    });

    auto *tools = addToolBar(tr("Sandboxes"));
    tools->setObjectName(QStringLiteral("sandboxToolbar"));
    QAction *create = tools->addAction(tr("New sandbox…"), this, &MainWindow::newSandbox);
    create->setShortcut(QKeySequence::New);
    // Deleting kills everything inside and removes the workspace: asked first, and the Delete key
    // means it only where the sandboxes are listed (never while typing a command).
    QAction *remove = tools->addAction(tr("Delete…"), this, [this] {
        const QString name = m_model->sandbox(m_tree->currentIndex()).value(QStringLiteral("name")).toString();
        if (!name.isEmpty()
            && QMessageBox::question(this, tr("Delete sandbox"),
                                     tr("Delete %1? Everything running in it is killed and its workspace removed.").arg(name))
                   == QMessageBox::Yes)
            deleteSelected();
    });
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_tree->addAction(remove);
    tools->addAction(tr("Policy…"), this, [this] {
        if (m_current.isEmpty())
            return;
        auto *editor = new PolicyEditor(m_client, m_current, this);
        editor->setAttribute(Qt::WA_DeleteOnClose);
        editor->show();
    })->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    tools->addAction(tr("History…"), this, [this] { openHistory(); })->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_H));
    tools->addAction(tr("Timeline…"), this, [this] {
        if (!m_current.isEmpty())
            openHistory(m_current);
    })->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
    tools->addAction(tr("Refresh"), m_model, &SandboxModel::refresh)->setShortcut(QKeySequence::Refresh);

    connect(&m_client, &DaemonClient::eventReceived, this, &MainWindow::onEvent);
    connect(&m_client, &DaemonClient::disconnected, this, [this](const Error &why) {
        showStatus(tr("The daemon went away: %1").arg(why.message), true);
    });
    m_client.callAsync(QStringLiteral("events.subscribe"), {}, [self = QPointer<MainWindow>(this)](Result<QJsonValue> r) {
        if (self && !r)
            self->showStatus(tr("Cannot follow the daemon's events: %1").arg(r.error().message), true);
    });
    m_model->refresh();
    onSelectionChanged();
    // Where the person left things.
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

bool MainWindow::eventFilter(QObject *watched, QEvent *event)
{
    // The line edit claims Ctrl-C for copying; without a selection it interrupts, as in a terminal.
    if (watched == m_command && (event->type() == QEvent::ShortcutOverride || event->type() == QEvent::KeyPress)) {
        auto *key = static_cast<QKeyEvent *>(event);
        if (key->key() == Qt::Key_C && key->modifiers() == Qt::ControlModifier && !m_command->hasSelectedText()) {
            if (event->type() == QEvent::KeyPress)
                interruptRunning();
            event->accept();
            return event->type() == QEvent::KeyPress;
        }
    }
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

void MainWindow::interruptRunning()
{
    for (uint32_t exec : std::as_const(m_running))
        m_client.notify(QStringLiteral("exec.signal"), {{QStringLiteral("sandbox"), m_current}, {QStringLiteral("exec"), double(exec)}, {QStringLiteral("signal"), 2}});
    if (!m_running.isEmpty())
        showStatus(tr("Interrupted (SIGINT)"));
}

HistoryWindow *MainWindow::openHistory(const QString &sandbox)
{
    if (!m_history) {
        m_history = new HistoryWindow(m_client, this);
        m_history->setAttribute(Qt::WA_DeleteOnClose);
    }
    if (!sandbox.isEmpty())
        m_history->setFilter(sandbox);
    m_history->show();
    m_history->raise();
    m_history->activateWindow();
    return m_history;
}

bool MainWindow::selectSandbox(const QString &nameOrId)
{
    const QModelIndex i = m_model->sandboxIndex(nameOrId);
    if (!i.isValid())
        return false;
    m_tree->setCurrentIndex(i);
    return true;
}

void MainWindow::onSelectionChanged()
{
    const QJsonObject s = m_model->sandbox(m_tree->currentIndex());
    const QString id = s.value(QStringLiteral("id")).toString();
    if (id == m_current && !id.isEmpty())
        return;
    m_current = id;
    m_running.clear();
    m_output->clear();
    m_command->setEnabled(!id.isEmpty());
    if (id.isEmpty()) {
        m_header->setText(tr("Select a sandbox"));
        return;
    }
    m_header->setText(tr("%1 — network %2, %3").arg(s.value(QStringLiteral("name")).toString(), s.value(QStringLiteral("network")).toString(),
                                                   s.value(QStringLiteral("state")).toString()));
    m_command->setFocus();
}

void MainWindow::onEvent(const Event &event)
{
    m_model->onEvent(event);
    m_approvals->onEvent(event);
    if (event.sandbox != m_current)
        return;
    if (event.isOutput()) {
        m_output->append(event.stream, event.data);
    } else if (event.kind == QLatin1String("exec.started")) {
        m_output->beginExecution(event.payload.value(QStringLiteral("argv")).toArray(), event.exec);
    } else if (event.kind == QLatin1String("exec.exited")) {
        m_running.removeAll(event.exec);
        m_output->endExecution(event.exec, event.payload.value(QStringLiteral("status")).toString(), event.payload.value(QStringLiteral("exitCode")));
    }
}

void MainWindow::runCommand()
{
    const QString text = m_command->text().trimmed();
    if (text.isEmpty() || m_current.isEmpty())
        return;
    m_client.callAsync(QStringLiteral("exec.start"),
                       {{QStringLiteral("sandbox"), m_current}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"), text}}},
                       [self = QPointer<MainWindow>(this), sandbox = m_current](Result<QJsonValue> r) {
                           if (!self)
                               return;
                           if (!r)
                               return self->showStatus(tr("Not run: %1").arg(r.error().message), true);
                           if (sandbox == self->m_current)
                               self->m_running.append(uint32_t(r->toObject().value(QStringLiteral("exec")).toDouble()));
                       });
    m_command->clear();
}

void MainWindow::newSandbox()
{
    auto presets = m_client.call(QStringLiteral("policy.presets"));
    QStringList names;
    for (const QJsonValue &p : presets ? presets->value(QStringLiteral("presets")).toArray() : QJsonArray())
        names.append(p.toObject().value(QStringLiteral("name")).toString());
    CreateSandboxDialog dialog(names, this);
    if (dialog.exec() == QDialog::Accepted)
        createSandbox(dialog.parameters());
}

void MainWindow::createSandbox(const QJsonObject &parameters)
{
    showStatus(tr("Creating a sandbox…"));
    m_client.callAsync(QStringLiteral("sandbox.create"), parameters, [self = QPointer<MainWindow>(this)](Result<QJsonValue> r) {
        if (!self)
            return;
        if (!r)
            return self->showStatus(tr("Not created: %1").arg(r.error().message), true);
        const QString name = r->toObject().value(QStringLiteral("name")).toString();
        self->showStatus(tr("Created %1").arg(name));
        self->m_model->refresh();
        QPointer<MainWindow> window = self;
        QObject::connect(self->m_model, &SandboxModel::refreshed, self, [window, name] {
            if (window)
                window->selectSandbox(name);
        }, Qt::SingleShotConnection);
    });
}

void MainWindow::deleteSelected()
{
    const QJsonObject s = m_model->sandbox(m_tree->currentIndex());
    if (s.isEmpty())
        return;
    const QString name = s.value(QStringLiteral("name")).toString();
    m_client.callAsync(QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), s.value(QStringLiteral("id"))}},
                       [self = QPointer<MainWindow>(this), name](Result<QJsonValue> r) {
                           if (self)
                               self->showStatus(r ? tr("Deleted %1").arg(name) : tr("Not deleted: %1").arg(r.error().message), !r);
                       });
}

void MainWindow::showStatus(const QString &text, bool error)
{
    statusBar()->setStyleSheet(error ? QStringLiteral("color: #d03030") : QString());
    statusBar()->showMessage(text);
}

} // namespace airlock::ui
