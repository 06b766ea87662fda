// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "HistoryModel.h"
#include "PagedModel.h"

#include <QJsonObject>
#include <QMainWindow>

class QCheckBox;
class QComboBox;
class QDateTimeEdit;
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
class TraceView;

// The history: every execution the daemon recorded, filtered by sandbox, run, status and a
// full-text search over commands and output; opening one replays its stored output in the same
// view as live output; beside it, the timeline of its run or sandbox; a run exports as the same
// bundle `airlockctl export` writes. Each host's daemon keeps its own history: the window shows
// one host's, or every connected host's merged by time, each row asking its own host for its
// output, timeline and export.
class HistoryWindow final : public QMainWindow {
    Q_OBJECT
public:
    using Host = PagedModel::Source;

    explicit HistoryWindow(DaemonClient &client, QWidget *parent = nullptr); // this computer's

    // The hosts there are (the first is this computer); a host without a connected client is
    // listed but not asked. Keeps the host shown if it is still there.
    void setHosts(const QList<Host> &hosts);
    void showHost(const QString &name); // empty: all connected hosts, merged by time
    QString shownHost() const; // empty: all
    QComboBox *hostChooser() const { return m_host; }

    HistoryModel *model() const { return m_model; }
    TimelineModel *timeline() const { return m_timeline; }
    ExecutionReplay *replay() const { return m_replay; }
    OutputView *outputView() const { return m_output; }
    QTableView *table() const { return m_table; }
    QLineEdit *searchLine() const { return m_search; }
    QLineEdit *agentLine() const { return m_agent; }
    QComboBox *statusChooser() const { return m_status; }
    QTabWidget *tabs() const { return m_tabs; } // Output, Timeline

    // Filters as typed in the bar (applied at once, without the typing delay).
    void setFilter(
        const QString &sandbox, const QString &run = {}, const QString &status = {}, const QString &text = {});
    QComboBox *timeFilter() const { return m_when; } // any time, the last hour, today, …, between two moments
    QDateTimeEdit *fromEdit() const { return m_from; } // "Between…": started at or after
    QDateTimeEdit *untilEdit() const { return m_until; } // and before
    void openExecution(int row);
    // The trace of a run (or of a sandbox, without a run) on that host, in the Trace tab.
    void showTrace(const Host &host, const QString &sandbox, const QString &run, const QString &sandboxName);
    TraceView *traceView() const { return m_trace; }
    qint64 openedExecution() const { return m_opened; }
    // Writes the run to a bundle file, with progress; done(ok, message) when finished. The run is
    // the selected execution's host's (the one shown when nothing is selected).
    void exportRun(const QString &run, const QString &path, std::function<void(bool, QString)> done = {});

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void applyFilter(bool force = false);
    QList<Host> shownHosts() const;
    Host hostOf(int row) const; // the row's host; the one shown when not merged
    void showTimeline();
    void showTraceOfSelection();
    void openRecord(const QJsonObject &execution, const Host &host);
    void openOutputAt(const QString &sandbox, uint exec, qint64 atMs);
    QHash<QString, QString> sandboxNames(const Host &host) const;
    void showStatus(const QString &text, bool error = false);

    QList<Host> m_hosts;
    HistoryModel *m_model;
    std::pair<int, Qt::SortOrder> m_sortShown{HistoryModel::Id, Qt::DescendingOrder};
    TimelineModel *m_timeline;
    ExecutionReplay *m_replay;
    QTableView *m_table;
    QTableView *m_timelineView;
    TraceView *m_trace;
    Host m_traceHost;
    std::pair<QString, QString> m_traced; // sandbox, run
    qint64 m_showFromMs = 0; // the output opened from a span: shown from this moment
    qsizetype m_showLine = -1;
    OutputView *m_output;
    QLabel *m_details;
    QLineEdit *m_search, *m_sandbox, *m_run, *m_agent;
    QComboBox *m_host, *m_status, *m_when, *m_scope;
    QDateTimeEdit *m_from, *m_until;
    QList<QCheckBox *> m_categories;
    QTabWidget *m_tabs;
    QTimer *m_typing;
    qint64 m_opened = 0;
    QJsonObject m_openedRow; // as listed: how it ended, for the replay's last line
};

} // namespace airlock::ui
