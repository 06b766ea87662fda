// SPDX-License-Identifier: Apache-2.0
#include "MainWindow.h"

#include "AddHostDialog.h"
#include "ApprovalsDock.h"
#include "ConnectAgentDialog.h"
#include "CreateSandboxDialog.h"
#include "EndedSandboxesBar.h"
#include "FleetView.h"
#include "HistoryWindow.h"
#include "LogView.h"
#include "OutputView.h"
#include "PolicyEditor.h"
#include "RemoteHosts.h"
#include "RunningStrip.h"
#include "SandboxConsole.h"
#include "SandboxModel.h"
#include "SecretsDialog.h"
#include "ShortcutsDialog.h"
#include "StatusText.h"
#include "Theme.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QTimer>
#include <QToolBar>
#include <QTreeView>
#include <QUrl>
#include <QVBoxLayout>

#include <csignal>
#include <memory>

namespace airlock::ui {

MainWindow::MainWindow(DaemonClient &client, QWidget *parent)
    : QMainWindow(parent)
    , m_client(client)
    , m_model(new SandboxModel(client, this))
    , m_fleet(new FleetView(*m_model))
    , m_header(new QLabel)
    , m_strip(new RunningStrip)
    , m_output(new OutputView)
    , m_command(new QLineEdit)
    , m_find(new QLineEdit)
    , m_approvals(new ApprovalsDock(client, this))
    , m_console(consoleFor(client))
    , m_banner(new QFrame)
    , m_bannerText(new QLabel)
    , m_retryTimer(new QTimer(this))
{
    setWindowTitle(QString()); // the platform shows the application's name
    // The first window fits the screen it opens on (a 1280x800 laptop's too); then where it was left.
    const QSize wanted(1400, 760);
    const QScreen *screen = QGuiApplication::primaryScreen();
    resize(screen ? wanted.boundedTo(screen->availableGeometry().size() * 0.95) : wanted);

    connect(m_fleet, &FleetView::currentChanged, this, &MainWindow::onSelectionChanged);
    connect(m_strip, &RunningStrip::signalRequested, this, [this](uint32_t exec, int signo) {
        DaemonApi(currentClient())
            .signalExec(m_current, exec, signo)
            .then([self = QPointer<MainWindow>(this), exec](Result<QJsonObject> r) {
                if (self && !r)
                    self->showStatus(tr("#%1 not signalled: %2").arg(exec).arg(r.error().message), true);
            });
    });

    m_header->setTextFormat(Qt::PlainText);
    m_header->setContentsMargins(6, 4, 6, 4);
    QFont bold = m_header->font();
    bold.setBold(true);
    m_header->setFont(bold);
    m_command->setPlaceholderText(tr("Command to run in the sandbox (sh -c), Enter to run"));
    m_command->setToolTip(tr("Runs in the selected sandbox as your own command (no approval asked; recorded as yours). "
                             "Up and Down go through "
                             "earlier commands; Ctrl+C interrupts what runs"));
    m_command->setClearButtonEnabled(true);
    m_command->setEnabled(false);
    connect(m_command, &QLineEdit::returnPressed, this, &MainWindow::runCommand);
    m_command->installEventFilter(this); // Ctrl-C: copy a selection, else interrupt

    // Find in the output (Ctrl+F; Enter for the next match); Copy all (Ctrl+Shift+C).
    m_find->setPlaceholderText(tr("Find in output (Ctrl+F)"));
    m_find->setToolTip(tr("Finds text in this sandbox's output; Enter for the next match"));
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
    connect(copyAll, &QAction::triggered, this,
        [this] { QGuiApplication::clipboard()->setText(m_output->document().plainText()); });
    addAction(copyAll);

    auto *console = new QWidget;
    auto *layout = new QVBoxLayout(console);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto *headRow = new QHBoxLayout;
    headRow->addWidget(m_header, 1);
    headRow->addWidget(m_find);
    layout->addLayout(headRow);
    layout->addWidget(m_strip);
    layout->addWidget(m_output, 1);
    layout->addWidget(m_command);

    // The fleet across the top, the selected sandbox's console below: a table of many columns
    // wants the width, the console the height.
    auto *split = new QSplitter(Qt::Vertical);
    split->setObjectName(QStringLiteral("fleetSplit"));
    split->addWidget(m_fleet);
    split->addWidget(console);
    split->setStretchFactor(1, 3);
    split->setSizes({260, 500});
    // When the daemon cannot be reached: a banner that says why, with Retry (which starts it).
    m_banner->setObjectName(QStringLiteral("daemonBanner"));
    m_banner->setStyleSheet(QStringLiteral(
        "#daemonBanner { background: #fbe3e3; border: 1px solid #d03030; } #daemonBanner QLabel { color: #801818; }"));
    auto *bannerRow = new QHBoxLayout(m_banner);
    bannerRow->setContentsMargins(8, 4, 8, 4);
    m_bannerText->setTextFormat(Qt::PlainText);
    m_bannerText->setWordWrap(true);
    bannerRow->addWidget(m_bannerText, 1);
    auto *retry = new QPushButton(tr("&Retry"));
    connect(retry, &QPushButton::clicked, this, [this] { retryConnection(true); });
    bannerRow->addWidget(retry);
    m_banner->hide();
    auto *central = new QWidget;
    auto *centralLayout = new QVBoxLayout(central);
    centralLayout->setContentsMargins(0, 0, 0, 0);
    centralLayout->setSpacing(0);
    centralLayout->addWidget(m_banner);
    m_ended
        = new EndedSandboxesBar(client, [this](const CreateSandboxRequest &request, std::function<void(Status)> done) {
              createSandbox(request, &m_client, std::move(done));
          });
    centralLayout->addWidget(m_ended);
    centralLayout->addWidget(split, 1);
    setCentralWidget(central);

    addDockWidget(Qt::RightDockWidgetArea, m_approvals);
    // The count of what waits for a person, where it is seen from anywhere: the window title.
    // A tray icon says the same and, when the window is not in front, a new request is announced.
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        m_tray = new QSystemTrayIcon(
            windowIcon().isNull() ? style()->standardIcon(QStyle::SP_MessageBoxQuestion) : windowIcon(), this);
        m_tray->setToolTip(tr("Airlock"));
        m_tray->show();
        connect(m_tray, &QSystemTrayIcon::activated, this, [this] {
            showNormal();
            raise();
            activateWindow();
        });
    }
    connect(m_approvals, &ApprovalsDock::pendingCountChanged, this, [this](int count) {
        // The platform adds the application's name ("… — Airlock"): the title says only what waits.
        setWindowTitle(count > 0 ? tr("%1 waiting for you").arg(count) : QString());
        if (m_tray) {
            m_tray->setToolTip(count > 0 ? tr("Airlock: %1 waiting for you").arg(count) : tr("Airlock"));
            if (count > m_waiting && !isActiveWindow())
                m_tray->showMessage(
                    tr("Airlock"), tr("A sandbox is waiting for your decision"), QSystemTrayIcon::Information, 10000);
        }
        m_waiting = count;
    });

    m_remoteHosts = new RemoteHosts(*this, this);
    // A remote host that drops: the gap is shown while it is away (what runs there keeps running);
    // when it is back the selected sandbox is shown again from its history, then live, so nothing
    // is missing and nothing repeats.
    connect(m_remoteHosts, &RemoteHosts::hostLost, this, [this](DaemonClient *client, const QString &why) {
        if (client != m_selected || m_current.isEmpty() || m_waitingForHost)
            return;
        m_waitingForHost = true;
        m_output->document().endLine();
        m_output->append(1,
            tr("\x1b[2m[the connection to this host was lost (%1); waiting for it — what runs there keeps "
               "running]\x1b[0m\n")
                .arg(display::escaped(why, 200))
                .toUtf8());
    });
    connect(m_remoteHosts, &RemoteHosts::hostLost, this, &MainWindow::updateHistoryHosts);
    connect(m_remoteHosts, &RemoteHosts::hostConnected, this, &MainWindow::updateHistoryHosts);
    connect(m_remoteHosts, &RemoteHosts::hostConnected, this, [this](DaemonClient *client) {
        if (client != m_selected || !std::exchange(m_waitingForHost, false) || m_current.isEmpty())
            return;
        m_running.clear();
        m_console->show(m_current);
    });
    createActions();

    connect(&m_client, &DaemonClient::eventReceived, this, &MainWindow::onEvent);
    connect(&m_client, &DaemonClient::disconnected, this, &MainWindow::showDisconnected);
    m_retryTimer->setSingleShot(true);
    connect(m_retryTimer, &QTimer::timeout, this, [this] { retryConnection(false); });
    onSelectionChanged();
    if (m_client.isConnected())
        onConnected();
    // Where the person left things.
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

void MainWindow::createActions()
{
    // Every frequent action has a key; the menus list them all, the toolbar the everyday ones.
    auto action = [this](const QString &text, const QKeySequence &key, auto slot) {
        auto *a = new QAction(text, this);
        a->setShortcut(key);
        connect(a, &QAction::triggered, this, slot);
        addAction(a);
        return a;
    };
    QAction *create = action(tr("&New sandbox…"), QKeySequence::New, [this] { newSandbox(); });
    QAction *agent = action(tr("Run an &agent…"), QKeySequence(), [this] { runAgent(); });
    agent->setToolTip(tr("Claude Code, Codex or Gemini CLI in a sandbox made for it, its API key kept outside"));
    QAction *duplicate
        = action(tr("D&uplicate as new"), QKeySequence(Qt::CTRL | Qt::Key_D), [this] { duplicateCurrent(); });
    // Deleting kills everything inside and removes the workspace: asked first, and the Delete key
    // means it only where the sandboxes are listed (never while typing a command).
    QAction *remove = new QAction(tr("&Delete…"), this);
    remove->setShortcut(QKeySequence::Delete);
    remove->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    remove->setToolTip(tr("Delete the selected sandboxes: what runs in them is killed, their workspaces removed"));
    connect(remove, &QAction::triggered, this, [this] {
        // What the box names is what goes, whatever the selection becomes while it is open.
        const QList<SandboxRef> targets = selectedRefs();
        if (confirmDelete(targets))
            deleteSandboxes(targets);
    });
    m_fleet->tree()->addAction(remove);
    QAction *kill = action(tr("&Kill everything running"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K),
        [this] { signalSelected(SIGKILL); });
    kill->setToolTip(tr("SIGKILL to every command running in the selected sandboxes; the sandboxes stay"));
    QAction *stop = action(tr("&Stop commands"), QKeySequence(), [this] { signalSelected(SIGTERM); });
    stop->setToolTip(tr("SIGTERM to every command running in the selected sandboxes, to let them end cleanly"));
    QAction *openConsole = action(tr("&Open console"), QKeySequence(), [this] { m_command->setFocus(); });
    QAction *policy = action(tr("&Policy…"), QKeySequence(Qt::CTRL | Qt::Key_P), [this] {
        if (m_current.isEmpty())
            return;
        auto *editor = new PolicyEditor(currentClient(), m_current, this);
        editor->setAttribute(Qt::WA_DeleteOnClose);
        editor->show();
    });
    QAction *defaults = action(tr("Your &defaults for new sandboxes…"), QKeySequence(), [this] {
        auto *editor = new PolicyEditor(m_client, QString(), this);
        editor->setAttribute(Qt::WA_DeleteOnClose);
        editor->show();
    });
    QAction *history = action(tr("&History…"), QKeySequence(Qt::CTRL | Qt::Key_H), [this] { openHistory(); });
    QAction *timeline = action(tr("&Trace…"), QKeySequence(Qt::CTRL | Qt::Key_T), [this] { openTrace(); });
    QAction *refresh = action(tr("&Refresh"), QKeySequence::Refresh, [this] { m_model->refresh(); });
    QAction *review = action(tr("Re&view changes…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), [this] {
        if (!m_current.isEmpty() && m_selected == &m_client)
            openReview(m_current, localName(m_current));
        else if (!m_current.isEmpty())
            showStatus(tr("Review changes reads and writes this computer's folders: only for sandboxes here"), true);
    });
    review->setToolTip(tr("What the selected sandbox changed in the folders it sees copy-on-write (an agent's "
                          "project): each diff, then apply or discard (Ctrl+Shift+R)"));
    // The one way from the keyboard to a decision: the newest request takes the focus, and there
    // 1, 2, 3 or Esc decide (see ApprovalCard).
    QAction *decideAction = action(tr("&Decide on requests"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A),
        [this] { m_approvals->focusNewest(); });
    QAction *command = action(tr("Run a &command"), QKeySequence(Qt::CTRL | Qt::Key_L), [this] {
        m_command->setFocus();
        m_command->selectAll();
    });
    QAction *secrets = action(tr("&Secrets…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), [this] {
        auto *dialog = new SecretsDialog(m_client, this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
    });
    QAction *quit = action(tr("&Quit"), QKeySequence::Quit, [this] { close(); });
    QAction *log = action(tr("Application &log"), QKeySequence(), [this] {
        auto *view = new LogView(this);
        view->setAttribute(Qt::WA_DeleteOnClose);
        view->show();
    });
    QAction *about = action(tr("&About Airlock"), QKeySequence(), [this] { showAbout(); });
    QAction *addHostAction = action(tr("Add a &remote host…"), QKeySequence(), [this] {
        AddHostDialog dialog(this);
        if (dialog.exec() == QDialog::Accepted) {
            const Status added = m_remoteHosts->add(dialog.entry());
            const QString notice
                = dialog.tokenNotice().isEmpty() ? QString() : QStringLiteral(". ") + dialog.tokenNotice();
            // The token was saved either way: where it went is said plainly.
            showStatus(
                (added ? tr("Added %1").arg(dialog.entry().name) : tr("Not added: %1").arg(added.error().message))
                    + notice,
                !added);
        }
    });

    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->addActions({create, agent, addHostAction, history, secrets, defaults});
    file->addSeparator();
    file->addAction(quit);
    QMenu *sandbox = menuBar()->addMenu(tr("&Sandbox"));
    sandbox->addActions({command, stop, kill, duplicate, remove});
    sandbox->addSeparator();
    sandbox->addActions({policy, timeline, review, refresh});
    QMenu *view = menuBar()->addMenu(tr("&View"));
    QAction *wrap = view->addAction(tr("&Wrap long lines"));
    wrap->setCheckable(true);
    wrap->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Z));
    addAction(wrap);
    connect(wrap, &QAction::toggled, m_output, &OutputView::setWrap);
    connect(m_output, &OutputView::wrapChanged, wrap, &QAction::setChecked);
    connect(m_output, &OutputView::wrapChanged, this,
        [](bool on) { QSettings().setValue(QStringLiteral("view/wrap"), on); });
    wrap->setChecked(QSettings().value(QStringLiteral("view/wrap"), false).toBool());
    // F6 and Shift+F6: the fleet, the output, the command line, the newest request, and round.
    QAction *nextPane = action(tr("Next &pane"), QKeySequence(Qt::Key_F6), [this] { cyclePanes(1); });
    QAction *previousPane
        = action(tr("Pre&vious pane"), QKeySequence(Qt::SHIFT | Qt::Key_F6), [this] { cyclePanes(-1); });
    view->addActions({nextPane, previousPane});
    view->addAction(m_approvals->toggleViewAction());
    view->addAction(decideAction);
    view->addAction(log);
    // Light or dark: the system's unless chosen here, and remembered.
    QMenu *theme = view->addMenu(tr("&Theme"));
    auto *themes = new QActionGroup(this);
    const Theme current = themeFromName(QSettings().value(QStringLiteral("view/theme")).toString());
    for (const auto &[choice, label] :
        {std::pair{Theme::System, tr("Follow the system")}, {Theme::Light, tr("Light")}, {Theme::Dark, tr("Dark")}}) {
        QAction *a = theme->addAction(label);
        a->setCheckable(true);
        a->setChecked(choice == current);
        themes->addAction(a);
        connect(a, &QAction::triggered, this, [chosen = choice] { // clang 14 cannot capture a binding
            QSettings().setValue(QStringLiteral("view/theme"), themeName(chosen));
            applyTheme(chosen);
        });
    }
    QAction *connectAgentAction = action(tr("&Connect an agent…"), QKeySequence(), [this] { connectAgent(); });
    connectAgentAction->setToolTip(tr("The configuration for Claude Code, Codex, Cursor, VS Code or any MCP client"));
    QAction *shortcuts
        = action(tr("&Keyboard shortcuts"), QKeySequence(Qt::CTRL | Qt::Key_Slash), [this] { showShortcuts(); });
    QAction *docs = action(tr("&Documentation"), QKeySequence::HelpContents, [this] { openDocumentation(); });
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addActions({connectAgentAction, shortcuts, docs});
    help->addSeparator();
    help->addAction(about);
    connect(m_fleet, &FleetView::newSandboxRequested, this, &MainWindow::newSandbox);
    connect(m_fleet, &FleetView::connectAgentRequested, this, &MainWindow::connectAgent);

    create->setToolTip(tr("A new sandbox: a preset, network, limits and a name (Ctrl+N)"));
    policy->setToolTip(
        tr("What the selected sandbox may reach: network, credentials, tools, commands, files, limits (Ctrl+P)"));
    history->setToolTip(tr("Every execution on this host, searchable, with its output (Ctrl+H)"));
    timeline->setToolTip(tr("The selected sandbox's current run as a trace: its commands, the waits for a person, the "
                            "programs they started, "
                            "connections and tool calls (Ctrl+T)"));
    refresh->setToolTip(tr("Ask every host for its sandboxes again (F5)"));
    auto *tools = addToolBar(tr("Sandboxes"));
    tools->setObjectName(QStringLiteral("sandboxToolbar"));
    tools->addActions({create, remove, policy, history, timeline, refresh});
    for (QAction *perSandbox : {duplicate, remove, kill, stop, openConsole, policy, timeline, review, command})
        m_perSandbox.append(perSandbox);
    m_fleet->setContextActions({openConsole, stop, kill, policy, timeline, duplicate, remove});
    // A remote host's row: change where it is (or its token), or take it out of the console.
    const auto hostRow = [this] {
        const QModelIndex at = m_fleet->current();
        return at.isValid() && !at.parent().isValid() ? at.row() : -1;
    };
    QAction *editHostAction = action(tr("&Edit host…"), QKeySequence(), [this, hostRow] { editHost(hostRow()); });
    QAction *removeHostAction = action(tr("Re&move host…"), QKeySequence(), [this, hostRow] { removeHost(hostRow()); });
    editHostAction->setToolTip(tr("Change this host's name, address or token (tested before it is saved)"));
    removeHostAction->setToolTip(
        tr("Take this host out of the console and forget its token; its sandboxes keep running there"));
    m_fleet->setHostContextActions({editHostAction, removeHostAction});
}

void MainWindow::setReconnect(std::function<Status(bool autostart)> reconnect)
{
    m_reconnect = std::move(reconnect);
}

void MainWindow::onConnected()
{
    m_banner->hide();
    m_retryDelayMs = 1000;
    updateHistoryHosts();
    const DaemonApi api(m_client);
    api.subscribe().then([self = QPointer<MainWindow>(this)](Result<QJsonObject> r) {
        if (self && !r)
            self->showStatus(tr("Cannot follow the daemon's events: %1").arg(r.error().message), true);
    });
    if (m_ended->remembers()) // back after it went away: what ended with it, from this daemon's own list
        api.listSandboxes().then([self = QPointer<MainWindow>(this)](Result<QJsonArray> r) {
            if (!self || !r)
                return;
            QList<EndedSandboxesBar::Seen> now;
            for (const QJsonValue &v : std::as_const(*r))
                now.append({v.toObject().value(QStringLiteral("id")).toString(),
                    v.toObject().value(QStringLiteral("name")).toString()});
            self->m_ended->check(now);
        });
    m_model->refresh();
    m_approvals->refresh();
}

QList<EndedSandboxesBar::Seen> MainWindow::localSandboxes() const
{
    QList<EndedSandboxesBar::Seen> seen;
    const QModelIndex host = m_model->index(0, 0);
    for (int row = 0; row < m_model->rowCount(host); ++row) {
        const QJsonObject s = m_model->sandbox(m_model->index(row, 0, host));
        seen.append({s.value(QStringLiteral("id")).toString(), s.value(QStringLiteral("name")).toString()});
    }
    return seen;
}

void MainWindow::showDisconnected(const Error &why)
{
    // Said where it is seen, in plain words, with the way out; meanwhile the window retries on
    // its own, less often the longer the daemon stays away.
    if (m_banner->isHidden())
        m_ended->remember(localSandboxes()); // as last seen: compared with what is there when it is back
    m_bannerText->setText(
        tr("The Airlock daemon is unreachable: %1. Its sandboxes are shown as last seen. Trying again in %2 s; "
           "Retry starts the daemon.")
            .arg(display::escaped(why.message, 300))
            .arg((m_retryDelayMs + 999) / 1000));
    m_banner->show();
    statusBar()->clearMessage();
    m_running.clear();
    if (m_reconnect)
        m_retryTimer->start(m_retryDelayMs);
}

bool MainWindow::retryConnection(bool autostart)
{
    if (m_client.isConnected() || !m_reconnect)
        return m_client.isConnected();
    if (Status connected = m_reconnect(autostart); !connected) {
        m_retryDelayMs = std::min(m_retryDelayMs * 2, 30000);
        showDisconnected(connected.error());
        return false;
    }
    showStatus(tr("Connected to the daemon again"));
    onConnected();
    return true;
}

void MainWindow::showAbout()
{
    QString daemon = tr("not connected");
    if (auto info = DaemonApi(m_client).daemonInfo().wait(3000))
        daemon = tr("%1 (pid %2) on %3, kernel %4")
                     .arg(info->value(QStringLiteral("version")).toString(),
                         QString::number(info->value(QStringLiteral("pid")).toInt()),
                         display::escaped(info->value(QStringLiteral("host")).toString(), 80),
                         display::escaped(info->value(QStringLiteral("kernel")).toString(), 80));
    QMessageBox::about(this, tr("About Airlock"),
        tr("<h3>Airlock %1</h3><p>The execution boundary for code that AI agents run on your behalf: sandboxes "
           "with scoped network, credentials and tools, approvals, and a history of every run.</p>"
           "<p>Console %1, Qt %2 (built with %3)<br>Daemon %4</p><p>Licensed under the Apache License 2.0.</p>")
            .arg(QApplication::applicationVersion().toHtmlEscaped(), QString::fromLatin1(qVersion()),
                QStringLiteral(QT_VERSION_STR), daemon.toHtmlEscaped()));
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
        // Up and Down recall earlier commands, as in a shell.
        if (event->type() == QEvent::KeyPress && key->modifiers() == Qt::NoModifier
            && (key->key() == Qt::Key_Up || key->key() == Qt::Key_Down)) {
            m_command->setText(key->key() == Qt::Key_Up ? m_commands.previous(m_command->text()) : m_commands.next());
            return true;
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
        DaemonApi(currentClient()).signalExec(m_current, exec, 2).send();
    if (!m_running.isEmpty())
        showStatus(tr("Interrupted (SIGINT)"));
}

HistoryWindow *MainWindow::openHistory(const QString &sandbox)
{
    // One window for every host's history (each daemon keeps its own): it opens on the selected
    // host, and stays on all hosts if the person chose that.
    const QModelIndex current = m_fleet->current();
    const QString host
        = m_model->hostName(current.parent().isValid() ? current.parent().row() : std::max(0, current.row()));
    const bool created = !m_history;
    if (created) {
        m_history = new HistoryWindow(m_client, this);
        m_history->setAttribute(Qt::WA_DeleteOnClose);
    }
    updateHistoryHosts();
    if (created || !sandbox.isEmpty() || !m_history->shownHost().isEmpty())
        m_history->showHost(host);
    if (!sandbox.isEmpty())
        m_history->setFilter(sandbox);
    m_history->show();
    m_history->raise();
    m_history->activateWindow();
    return m_history;
}

void MainWindow::openTrace()
{
    // The selected sandbox's current run (its newest command's), or the sandbox itself before
    // anything ran: never an empty pane.
    const QModelIndex current = m_fleet->current();
    const QJsonObject sandbox = m_model->sandbox(current);
    if (m_current.isEmpty() || sandbox.isEmpty())
        return showStatus(tr("Select a sandbox to see its run as a trace"));
    HistoryWindow *history = openHistory(m_current);
    const QString host = m_model->hostName(current.parent().isValid() ? current.parent().row() : 0);
    history->showTrace({host, m_model->hostClient(current)}, m_current, sandbox.value(QStringLiteral("run")).toString(),
        sandbox.value(QStringLiteral("name")).toString());
}

void MainWindow::updateHistoryHosts()
{
    if (!m_history)
        return;
    QList<HistoryWindow::Host> hosts;
    for (int row = 0; row < m_model->hostCount(); ++row)
        if (!m_model->isRetired(row))
            hosts.append({m_model->hostName(row), m_model->hostClient(m_model->index(row, 0))});
    m_history->setHosts(hosts);
}

QTreeView *MainWindow::sandboxTree() const
{
    return m_fleet->tree();
}

bool MainWindow::selectSandbox(const QString &nameOrId)
{
    const QModelIndex i = m_model->sandboxIndex(nameOrId);
    if (!i.isValid())
        return false;
    m_fleet->setCurrent(i);
    return true;
}

void MainWindow::onSelectionChanged()
{
    const QJsonObject s = m_model->sandbox(m_fleet->current());
    const QString id = s.value(QStringLiteral("id")).toString();
    if (id == m_current && !id.isEmpty())
        return;
    m_current = id;
    m_running.clear();
    // Each host has its own console (its client, its events); the one of the selected host draws.
    DaemonClient *client = m_model->hostClient(m_fleet->current());
    m_selected = client ? client : &m_client;
    for (auto it = m_consoles.begin(); it != m_consoles.end(); ++it)
        if (it.key() != m_selected)
            (*it)->show({});
    m_console = consoleFor(*m_selected);
    m_waitingForHost = false;
    m_console->show(id); // what ran before, from the history, then live
    m_command->setEnabled(!id.isEmpty());
    for (QAction *action : std::as_const(m_perSandbox))
        action->setEnabled(!id.isEmpty());
    if (id.isEmpty()) {
        m_header->setText(tr("Select a sandbox"));
        return;
    }
    // What holds it (decision 6): the runtime by name, and in its own words on hover.
    const QJsonObject isolation = s.value(QStringLiteral("isolation")).toObject();
    const QString runtime = isolation.value(QStringLiteral("runtime")).toString(QStringLiteral("namespaces"));
    m_header->setText(
        tr("%1 — %2, network %3, %4")
            .arg(s.value(QStringLiteral("name")).toString(),
                runtime == QLatin1String("gvisor") ? tr("gVisor") : runtime,
                s.value(QStringLiteral("network")).toString(), s.value(QStringLiteral("state")).toString()));
    QStringList words{isolation.value(QStringLiteral("enforcedBy")).toString(),
        isolation.value(QStringLiteral("identity")).toString(), isolation.value(QStringLiteral("filters")).toString()};
    words.removeAll(QString()); // an older daemon says less
    m_header->setToolTip(words.join(QLatin1Char('\n')));
    m_command->setFocus();
}

void MainWindow::onEvent(const Event &event)
{
    m_approvals->onEvent(event);
    onHostEvent(m_client, event);
}

void MainWindow::onHostEvent(DaemonClient &client, const Event &event)
{
    if (SandboxConsole *console = m_consoles.value(&client))
        console->onEvent(event);
    if (&client == m_selected && event.sandbox == m_current && event.kind == event::ExecExited)
        m_running.removeAll(event.exec);
    if (&client == &m_client && event.kind == event::ExecExited && m_agentRuns.contains(event.sandbox)
        && m_agentRuns.value(event.sandbox) == event.exec)
        agentEnded(event.sandbox);
}

SandboxConsole *MainWindow::consoleFor(DaemonClient &client)
{
    SandboxConsole *&console = m_consoles[&client];
    if (!console) {
        console = new SandboxConsole(client, *m_output, this);
        // The strip follows the console that draws (the selected host's).
        SandboxConsole *self = console;
        connect(console, &SandboxConsole::cleared, m_strip, [this, self] {
            if (self == m_console)
                m_strip->clear();
        });
        connect(console, &SandboxConsole::executionRunning, m_strip,
            [this, self](uint32_t exec, const QJsonArray &argv, qint64 startedMs) {
                if (self == m_console)
                    m_strip->add(exec, argv, startedMs);
            });
        connect(console, &SandboxConsole::executionEnded, m_strip, [this, self](uint32_t exec) {
            if (self == m_console)
                m_strip->remove(exec);
        });
    }
    return console;
}

DaemonClient &MainWindow::currentClient() const
{
    DaemonClient *client = m_model->hostClient(m_fleet->current());
    return client ? *client : m_client;
}

void MainWindow::runCommand()
{
    const QString text = m_command->text().trimmed();
    if (text.isEmpty() || m_current.isEmpty())
        return;
    ExecRequest request;
    request.argv = {QStringLiteral("sh"), QStringLiteral("-c"), text};
    DaemonApi(currentClient())
        .startExec(m_current, request)
        .then([self = QPointer<MainWindow>(this), sandbox = m_current](Result<ExecStarted> r) {
            if (!self)
                return;
            if (!r)
                return self->showStatus(tr("Not run: %1").arg(r.error().message), true);
            if (sandbox == self->m_current)
                self->m_running.append(r->exec);
        });
    m_commands.add(text);
    m_command->clear();
}

void MainWindow::cyclePanes(int step)
{
    QList<QWidget *> panes{m_fleet->tree(), m_output, m_command};
    if (!m_approvals->cards().isEmpty())
        panes.append(m_approvals);
    QWidget *focus = QApplication::focusWidget();
    qsizetype at = -1;
    for (qsizetype i = 0; i < panes.size(); ++i)
        if (focus && (focus == panes[i] || panes[i]->isAncestorOf(focus)))
            at = i;
    for (qsizetype tried = 1; tried <= panes.size(); ++tried) {
        QWidget *next = panes[((at < 0 ? (step > 0 ? -1 : 0) : at) + step * tried + panes.size() * 2) % panes.size()];
        if (!next->isEnabled() || !next->isVisible())
            continue;
        if (next == m_approvals)
            m_approvals->focusNewest();
        else
            next->setFocus(Qt::ShortcutFocusReason);
        return;
    }
}

void MainWindow::connectAgent()
{
    auto presets = DaemonApi(currentClient()).policyPresets().wait(5000);
    QStringList hosts;
    for (int row = 1; row < m_model->hostCount(); ++row)
        hosts.append(m_model->hostName(row));
    // The airlockctl beside this console, by its full path: an agent's environment may lack PATH.
    const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/airlockctl");
    auto *dialog = new ConnectAgentDialog(presets ? presets->value(QStringLiteral("presets")).toArray() : QJsonArray(),
        hosts, QFileInfo(beside).isExecutable() ? beside : QStringLiteral("airlockctl"), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
}

void MainWindow::showShortcuts()
{
    auto *dialog = new ShortcutsDialog(actions(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
}

void MainWindow::openDocumentation()
{
    for (const QString &readme :
        {QStringLiteral("/usr/share/doc/airlock/README.md"), QStringLiteral(AIRLOCK_SOURCE_README)})
        if (QFileInfo::exists(readme) && QDesktopServices::openUrl(QUrl::fromLocalFile(readme)))
            return;
    showStatus(tr("No README here to open: it is in the source tree, README.md"), true);
}

void MainWindow::showStatus(const QString &text, bool error)
{
    ui::showStatus(statusBar(), text, error);
}

} // namespace airlock::ui
