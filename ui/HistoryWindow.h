// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonObject>
#include <QMainWindow>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QTabWidget;
class QTableView;
class QTimer;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

class ExecutionReplay;
class HistoryModel;
class OutputView;
class TimelineModel;

// The history: every execution the daemon recorded, filtered by sandbox, run, status and a
// full-text search over commands and output; opening one replays its stored output in the same
// view as live output; beside it, the timeline of its run or sandbox; a run exports as the same
// bundle `airlockctl export` writes.
class HistoryWindow final : public QMainWindow {
    Q_OBJECT
public:
    explicit HistoryWindow(DaemonClient &client, QWidget *parent = nullptr);

    HistoryModel *model() const { return m_model; }
    TimelineModel *timeline() const { return m_timeline; }
    ExecutionReplay *replay() const { return m_replay; }
    OutputView *outputView() const { return m_output; }
    QTableView *table() const { return m_table; }
    QLineEdit *searchLine() const { return m_search; }
    QTabWidget *tabs() const { return m_tabs; } // Output, Timeline

    // Filters as typed in the bar (applied at once, without the typing delay).
    void setFilter(const QString &sandbox, const QString &run = {}, const QString &status = {}, const QString &text = {});
    QComboBox *timeFilter() const { return m_when; } // any time, the last hour, today, …
    void openExecution(int row);
    qint64 openedExecution() const { return m_opened; }
    // Writes the run to a bundle file, with progress; done(ok, message) when finished.
    void exportRun(const QString &run, const QString &path, std::function<void(bool, QString)> done = {});

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void applyFilter();
    void showTimeline();
    void showStatus(const QString &text, bool error = false);

    DaemonClient &m_client;
    HistoryModel *m_model;
    TimelineModel *m_timeline;
    ExecutionReplay *m_replay;
    QTableView *m_table;
    QTableView *m_timelineView;
    OutputView *m_output;
    QLabel *m_details;
    QLineEdit *m_search, *m_sandbox, *m_run;
    QComboBox *m_status, *m_when, *m_scope;
    QList<QCheckBox *> m_categories;
    QTabWidget *m_tabs;
    QTimer *m_typing;
    qint64 m_opened = 0;
    QJsonObject m_openedRow; // as listed: how it ended, for the replay's last line
};

} // namespace airlock::ui
