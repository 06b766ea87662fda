// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "CommandHistory.h"
#include "EndedSandboxesBar.h"
#include "agents/AgentProfile.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonObject>
#include <QMainWindow>
#include <QPointer>

#include <functional>

class QFrame;
class QProgressBar;
class QLabel;
class QTimer;
class QSystemTrayIcon;
class QLineEdit;
class QTreeView;

namespace airlock {
class DaemonClient;
struct Event;
} // namespace airlock

namespace airlock::ui {

class ApprovalsDock;
class FleetView;
class RemoteHosts;
class RunningStrip;
class HistoryWindow;
class OutputView;
class ReviewWindow;
class SandboxConsole;
class SandboxModel;

// The console's main window: hosts and sandboxes on the left; on the right the selected sandbox's
// live output and a command line that runs a command in it (as the person at the keyboard: the
// sandbox is the boundary, no prompt). Everything goes through the daemon.
class MainWindow final : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(DaemonClient &client, QWidget *parent = nullptr);

    SandboxModel *sandboxModel() const { return m_model; }
    // Another daemon's sandboxes in the tree and its requests in the approvals dock; every
    // per-sandbox action then goes to the host of the selection. Returns its row in the tree.
    int addHost(const QString &name, DaemonClient &client);
    // The fleet's and the approvals' part of taking a host out of the console (RemoteHosts::remove).
    void retireHost(int row);
    // File → Edit host… and Remove host… on a host's row: the saved entry changed or gone (hosts.json).
    void editHost(int row);
    bool removeHost(int row, bool ask = true);
    // The daemon of the selected row (a host or a sandbox under it); this computer's otherwise.
    DaemonClient &currentClient() const;
    // The saved hosts (hosts.json): the composition root adds them; Add host… adds more.
    RemoteHosts *remoteHosts() const { return m_remoteHosts; }
    OutputView *outputView() const { return m_output; }
    QLineEdit *commandLine() const { return m_command; }
    QLineEdit *findLine() const { return m_find; }
    QTreeView *sandboxTree() const;
    FleetView *fleet() const { return m_fleet; }
    ApprovalsDock *approvals() const { return m_approvals; }
    SandboxConsole *console() const { return m_console; }
    RunningStrip *runningStrip() const { return m_strip; }
    // Selects a sandbox by name or id (as a click would); false when there is none.
    bool selectSandbox(const QString &nameOrId);
    QString currentSandboxId() const { return m_current; }
    // The line above the selected sandbox's console: its name, runtime, network and state.
    QLabel *sandboxHeader() const { return m_header; }
    // Creates a sandbox as a dialog asked (what "New sandbox…" does after the dialog).
    // On `on`, or the host of what is selected (this computer otherwise).
    // `done`: the daemon's answer, besides what the window says of it.
    void createSandbox(
        const CreateSandboxRequest &request, DaemonClient *on = nullptr, std::function<void(Status)> done = {});
    void deleteSelected();
    // Ctrl-C on the command line: SIGINT to what this window started in the sandbox.
    void interruptRunning();
    QList<uint32_t> runningExecutions() const { return m_running; }
    // How to reach the daemon again after it went away (the composition root knows where it is);
    // autostart: start it when nothing answers (the Retry button does; the timer only looks).
    void setReconnect(std::function<Status(bool autostart)> reconnect);
    void showDisconnected(const Error &why);
    bool retryConnection(bool autostart);
    QFrame *daemonBanner() const { return m_banner; }
    EndedSandboxesBar *endedBar() const { return m_ended; }
    // Every running execution in the selected sandboxes gets the signal; the sandboxes stay.
    void signalSelected(int signo);
    // Asks before the selected sandboxes are deleted, naming what still runs in them; Cancel is
    // the default. True when the person chose Delete.
    bool confirmDelete();
    // A sandbox as it was when picked: where it lives, its id, and what ran in it then.
    struct SandboxRef {
        QPointer<DaemonClient> client;
        QString id, name;
        int running = 0;
        QStringList commands;
    };
    QList<SandboxRef> selectedRefs() const;
    bool confirmDelete(const QList<SandboxRef> &targets);
    void deleteSandboxes(const QList<SandboxRef> &targets);
    // Help → Connect an agent… (and the empty fleet's button): the dialog, with this host's presets.
    void connectAgent();
    // File → Run an agent…: the dialog, then the agent's sandbox on this computer and its run in it
    // (MainWindowAgent.cpp).
    void runAgent();
    // The sandbox and the agent's execution the dialog planned: made, selected, started. With a
    // copy-on-write project, its end stops what it left running and opens the review of its changes.
    void startAgent(const agents::AgentRun &run);
    // The agent's execution in `sandbox` ended (its project copy-on-write): the review opens.
    void agentEnded(const QString &sandbox);
    // Sandbox → Review changes…: what the sandbox changed in the folders it sees copy-on-write.
    ReviewWindow *openReview(const QString &sandbox, const QString &name);
    ReviewWindow *reviewWindow() const;
    QString localName(const QString &sandbox) const; // this computer's sandbox's name (its id if unknown)
    // F6 / Shift+F6: the next (or previous) pane takes the focus, skipping what is disabled.
    void cyclePanes(int step);
    // A new sandbox with the current one's preset and policy layer, named NAME-2, NAME-3, …
    void duplicateCurrent();
    QList<QJsonObject> selectedSandboxes() const;
    // The history window (one per main window), filtered to a sandbox when one is named.
    HistoryWindow *openHistory(const QString &sandbox = {});
    void openTrace(); // Ctrl+T

protected:
    void closeEvent(QCloseEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void createActions();
    void onConnected();
    QList<EndedSandboxesBar::Seen> localSandboxes() const; // this computer's, as the fleet shows them
    void showAbout();
    void onEvent(const Event &event);
    void onHostEvent(DaemonClient &client, const Event &event);
    void updateHistoryHosts(); // the history window's hosts, as connected now
    SandboxConsole *consoleFor(DaemonClient &client);
    void onSelectionChanged();
    void runCommand();
    void newSandbox();
    void showShortcuts();
    void openDocumentation();
    void showStatus(const QString &text, bool error = false);

    DaemonClient &m_client;
    SandboxModel *m_model;
    FleetView *m_fleet;
    QLabel *m_header;
    RunningStrip *m_strip;
    OutputView *m_output;
    QLineEdit *m_command;
    QLineEdit *m_find;
    ApprovalsDock *m_approvals;
    QHash<DaemonClient *, SandboxConsole *> m_consoles; // before m_console: it is made from it
    SandboxConsole *m_console; // the selected host's
    DaemonClient *m_selected = nullptr; // the host of the selection
    bool m_waitingForHost = false; // its connection dropped; the gap is shown
    QString m_current; // sandbox id
    QList<uint32_t> m_running; // started from this window, in the current sandbox
    CommandHistory m_commands{QStringLiteral("console/commands")};
    QSystemTrayIcon *m_tray = nullptr;
    QPointer<HistoryWindow> m_history;
    QPointer<ReviewWindow> m_review;
    QHash<QString, uint32_t> m_agentRuns; // an agent's execution in its sandbox (id), reviewed when it ends
    RemoteHosts *m_remoteHosts = nullptr;
    QFrame *m_banner;
    QLabel *m_bannerText;
    EndedSandboxesBar *m_ended;
    QTimer *m_retryTimer;
    int m_retryDelayMs = 1000;
    std::function<Status(bool)> m_reconnect;
    QList<QAction *> m_perSandbox; // enabled while a sandbox is selected
    QProgressBar *m_busy = nullptr;
    int m_pendingCreates = 0;
    int m_waiting = 0;
};

} // namespace airlock::ui
