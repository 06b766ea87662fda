// SPDX-License-Identifier: Apache-2.0
#include "HistoryWindow.h"

#include "ExecutionReplay.h"
#include "HistoryModel.h"
#include "OutputView.h"
#include "StatusText.h"
#include "TimelineModel.h"
#include "TraceModel.h"
#include "TraceView.h"
#include "client/DaemonApi.h"
#include "history/ExportBundle.h"
#include "model/DisplayText.h"

#include <QAction>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDateTimeEdit>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressDialog>
#include <QSaveFile>
#include <QSettings>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <memory>

namespace airlock::ui {

HistoryWindow::HistoryWindow(DaemonClient &client, QWidget *parent)
    : QMainWindow(parent)
    , m_hosts{Host{tr("This computer"), &client}}
    , m_model(new HistoryModel(client, this))
    , m_timeline(new TimelineModel(client, this))
    , m_replay(new ExecutionReplay(client, this))
    , m_table(new QTableView)
    , m_timelineView(new QTableView)
    , m_trace(new TraceView)
    , m_output(new OutputView)
    , m_details(new QLabel)
    , m_search(new QLineEdit)
    , m_sandbox(new QLineEdit)
    , m_run(new QLineEdit)
    , m_agent(new QLineEdit)
    , m_host(new QComboBox)
    , m_status(new QComboBox)
    , m_when(new QComboBox)
    , m_scope(new QComboBox)
    , m_from(new QDateTimeEdit)
    , m_until(new QDateTimeEdit)
    , m_tabs(new QTabWidget)
    , m_typing(new QTimer(this))
{
    setWindowTitle(tr("History"));
    setWindowFlag(Qt::Window);
    resize(1300, 820);

    // The filter bar: typing waits a moment before asking, so a word is one query, not five.
    m_search->setPlaceholderText(tr("Search commands and output"));
    m_search->setToolTip(tr("Words in a command or anywhere in its output (full-text)"));
    m_search->setClearButtonEnabled(true);
    m_sandbox->setPlaceholderText(tr("Sandbox"));
    m_sandbox->setToolTip(tr("Only the commands of this sandbox (its name)"));
    m_sandbox->setClearButtonEnabled(true);
    m_run->setPlaceholderText(tr("Run"));
    m_run->setToolTip(tr("Only the commands of this run (an agent session, or --run NAME)"));
    m_run->setClearButtonEnabled(true);
    m_agent->setPlaceholderText(tr("Agent"));
    m_agent->setClearButtonEnabled(true);
    m_agent->setToolTip(tr("Only the commands this agent asked for (as its MCP client names itself)"));
    m_status->addItem(tr("Any status"), QString());
    for (const char *status : {"running", "succeeded", "failed", "killed", "timed_out", "interrupted"})
        m_status->addItem(QLatin1String(status), QLatin1String(status));
    // What an agent asked for and did not get: refused by a rule or a person, or nobody answered.
    m_status->addItem(tr("refused (denied or unanswered)"), QStringLiteral("refused"));
    m_status->addItem(tr("denied"), QStringLiteral("denied"));
    m_status->addItem(tr("unanswered (timed out)"), QStringLiteral("unanswered"));
    m_status->setToolTip(
        tr("Refused: the commands an agent asked for that a rule or a person denied, or that nobody answered in time"));
    m_typing->setSingleShot(true);
    m_typing->setInterval(250);
    connect(m_typing, &QTimer::timeout, this, [this] { applyFilter(); });
    for (QLineEdit *line : {m_search, m_sandbox, m_run, m_agent})
        connect(line, &QLineEdit::textChanged, m_typing, qOverload<>(&QTimer::start));
    connect(m_status, &QComboBox::currentIndexChanged, this, [this] { applyFilter(); });
    // Which host's history: one, or all connected ones merged by time (shown with several hosts).
    m_host->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_host->setToolTip(tr("Each host keeps its own history"));
    m_host->hide();
    connect(m_host, &QComboBox::currentIndexChanged, this, [this] { applyFilter(); });
    // When: a window back from now (seconds), or today since midnight (-1).
    m_when->addItem(tr("Any time"), 0);
    m_when->addItem(tr("Last hour"), 3600);
    m_when->addItem(tr("Today"), -1);
    m_when->addItem(tr("Last 7 days"), 7 * 86400);
    m_when->addItem(tr("Last 30 days"), 30 * 86400);
    m_when->addItem(tr("Between…"), -2); // two moments, in this machine's time zone
    m_when->setToolTip(tr("When the commands started"));
    const QDateTime midnight(QDate::currentDate(), QTime(0, 0));
    m_from->setDateTime(midnight.addDays(-1));
    m_until->setDateTime(midnight.addDays(1));
    for (QDateTimeEdit *edge : {m_from, m_until}) {
        edge->setCalendarPopup(true);
        edge->setDisplayFormat(QStringLiteral("yyyy-MM-dd HH:mm t"));
        edge->setVisible(false);
        connect(edge, &QDateTimeEdit::dateTimeChanged, m_typing, qOverload<>(&QTimer::start));
    }
    m_from->setToolTip(tr("Started at or after this moment"));
    m_until->setToolTip(tr("Started before this moment"));
    connect(m_when, &QComboBox::currentIndexChanged, this, [this] {
        const bool between = m_when->currentData().toInt() == -2;
        m_from->setVisible(between);
        m_until->setVisible(between);
        applyFilter();
    });
    auto *filters = new QWidget;
    auto *filterRow = new QHBoxLayout(filters);
    filterRow->setContentsMargins(4, 4, 4, 4);
    filterRow->addWidget(m_host);
    filterRow->addWidget(m_search, 3);
    filterRow->addWidget(m_sandbox, 1);
    filterRow->addWidget(m_run, 1);
    filterRow->addWidget(m_agent, 1);
    filterRow->addWidget(m_status);
    filterRow->addWidget(m_when);
    filterRow->addWidget(m_from);
    filterRow->addWidget(m_until);

    // Executions: fetched as they scroll into view, sorted by the daemon.
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(HistoryModel::Id, Qt::DescendingOrder);
    // The arrow only where the rows really are in that order: a click on a column that does not
    // sort puts it back where it was.
    connect(
        m_table->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this, [this](int column, Qt::SortOrder order) {
            if (HistoryModel::sorts(column)) {
                m_sortShown = {column, order};
                return;
            }
            QSignalBlocker quiet(m_table->horizontalHeader());
            m_table->horizontalHeader()->setSortIndicator(m_sortShown.first, m_sortShown.second);
        });
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(HistoryModel::Command, QHeaderView::Stretch);
    m_table->setColumnWidth(HistoryModel::Host, 110);
    m_table->setColumnHidden(HistoryModel::Host, true);
    // The command gets what the rest leave: at 1024 px wide still about a fifth of the row.
    const int digit = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    for (const auto &[column, chars] : {std::pair{HistoryModel::Id, 6}, {HistoryModel::Sandbox, 16},
             {HistoryModel::Run, 14}, {HistoryModel::Agent, 10}, {HistoryModel::Status, 11}, {HistoryModel::Exit, 5},
             {HistoryModel::Started, 19}, {HistoryModel::Duration, 9}, {HistoryModel::Output, 8}})
        m_table->setColumnWidth(column, chars * digit + 12);
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex &current) {
            if (current.isValid())
                openExecution(current.row());
        });
    connect(m_model, &HistoryModel::modelReset, this,
        [this] { m_table->setColumnHidden(HistoryModel::Host, m_hosts.size() < 2 || !shownHost().isEmpty()); });
    connect(m_model, &HistoryModel::loaded, this, [this](int rows) {
        const QStringList unavailable = m_model->unavailable();
        if (!unavailable.isEmpty() && !m_model->isMerged())
            return showStatus(tr("History unavailable: %1").arg(unavailable.first()), true);
        QString text = m_model->canFetchMore()
            ? tr("%1 shown, more as you scroll").arg(display::count(rows, tr("execution")))
            : display::count(rows, tr("execution"));
        if (m_model->isMerged())
            text = tr("%1 from %2")
                       .arg(text, display::count(m_model->sources().size() - unavailable.size(), tr("host")));
        QStringList away; // all hosts shown: say which are not
        for (const Host &host : std::as_const(m_hosts))
            if (shownHost().isEmpty() && !m_model->sources().contains(host))
                away.append(host.name);
        if (!away.isEmpty())
            text += tr(" · not connected: %1").arg(away.join(QStringLiteral(", ")));
        if (!unavailable.isEmpty())
            text += tr(" · unavailable: %1").arg(unavailable.join(QStringLiteral("; ")));
        showStatus(text, !unavailable.isEmpty());
    });

    // The opened execution: its stored output, replayed into the console's own view.
    m_details->setTextFormat(Qt::PlainText);
    m_details->setWordWrap(true);
    m_details->setContentsMargins(6, 4, 6, 4);
    connect(
        m_replay, &ExecutionReplay::chunk, m_output, [this](int stream, const QByteArray &data, qint64, qint64 timeMs) {
            if (m_showFromMs && m_showLine < 0 && timeMs >= m_showFromMs) // a trace's span: its output from that moment
                m_showLine = std::max<qsizetype>(0, m_output->document().lineCount() - 1);
            m_output->append(stream, data);
        });
    connect(m_replay, &ExecutionReplay::failed, this,
        [this](const QString &message) { showStatus(tr("Cannot replay: %1").arg(message), true); });
    connect(m_replay, &ExecutionReplay::finished, this, [this] {
        const QJsonObject &e = m_openedRow;
        if (e.value(QStringLiteral("status")).toString() != QLatin1String("running"))
            m_output->endExecution(qint64(e.value(QStringLiteral("exec")).toDouble()),
                e.value(QStringLiteral("status")).toString(), e.value(QStringLiteral("exitCode")));
        if (m_showFromMs)
            m_output->showLine(m_showLine >= 0 ? m_showLine : m_output->document().lineCount() - 1);
        m_showFromMs = 0;
    });
    auto *outputPage = new QWidget;
    auto *outputLayout = new QVBoxLayout(outputPage);
    outputLayout->setContentsMargins(0, 0, 0, 0);
    outputLayout->addWidget(m_details);
    outputLayout->addWidget(m_output, 1);

    // The timeline of the opened execution's run (or sandbox), with a switch per kind of event.
    m_timelineView->setModel(m_timeline);
    m_timelineView->verticalHeader()->hide();
    m_timelineView->verticalHeader()->setDefaultSectionSize(m_timelineView->fontMetrics().height() + 6);
    m_timelineView->setWordWrap(false);
    m_timelineView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_timelineView->horizontalHeader()->setSectionResizeMode(TimelineModel::Details, QHeaderView::Stretch);
    m_timelineView->setColumnWidth(TimelineModel::Time, 110);
    m_timelineView->setColumnWidth(TimelineModel::Kind, 150);
    m_scope->setToolTip(
        tr("What the timeline and trace show: the selected command's run, or everything in its sandbox"));
    m_scope->addItem(tr("This run"));
    m_scope->addItem(tr("This sandbox"));
    connect(m_scope, &QComboBox::currentIndexChanged, this, &HistoryWindow::showTimeline);
    auto *timelinePage = new QWidget;
    auto *timelineLayout = new QVBoxLayout(timelinePage);
    timelineLayout->setContentsMargins(0, 0, 0, 0);
    auto *categoryRow = new QHBoxLayout;
    categoryRow->addWidget(m_scope);
    const std::pair<TimelineModel::Category, QString> categories[] = {{TimelineModel::Executions, tr("Executions")},
        {TimelineModel::Approvals, tr("Approvals")}, {TimelineModel::Network, tr("Network")},
        {TimelineModel::Credentials, tr("Credentials")}, {TimelineModel::Tools, tr("Tools")},
        {TimelineModel::Policy, tr("Policy")}, {TimelineModel::Sandboxes, tr("Sandboxes")}};
    for (const auto &[category, label] : categories) {
        auto *box = new QCheckBox(label);
        box->setChecked(true);
        box->setProperty("category", int(category));
        connect(box, &QCheckBox::toggled, this, [this] {
            int mask = 0;
            for (QCheckBox *b : std::as_const(m_categories))
                mask |= b->isChecked() ? b->property("category").toInt() : 0;
            m_timeline->setCategories(mask);
        });
        m_categories.append(box);
        categoryRow->addWidget(box);
    }
    categoryRow->addStretch(1);
    timelineLayout->addLayout(categoryRow);
    timelineLayout->addWidget(m_timelineView, 1);
    connect(m_timeline, &TimelineModel::failed, this,
        [this](const QString &message) { showStatus(tr("Timeline unavailable: %1").arg(message), true); });

    // The run as a trace: read when its tab is shown (a run can have many events).
    connect(m_trace, &TraceView::outputRequested, this, &HistoryWindow::openOutputAt);
    m_tabs->addTab(outputPage, tr("Output"));
    m_tabs->addTab(m_trace, tr("Trace"));
    m_tabs->addTab(timelinePage, tr("Timeline"));
    m_tabs->setTabToolTip(1,
        tr("The run as nested spans: commands, the waits for a person, the programs they started, connections and tool "
           "calls"));
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int tab) {
        if (m_tabs->widget(tab) == m_trace)
            showTraceOfSelection();
    });

    auto *split = new QSplitter(Qt::Vertical);
    split->addWidget(m_table);
    split->addWidget(m_tabs);
    split->setSizes({320, 480}); // what was opened gets the room
    split->setStretchFactor(1, 1);
    auto *central = new QWidget;
    auto *layout = new QVBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(filters);
    layout->addWidget(split, 1);
    setCentralWidget(central);

    auto *tools = addToolBar(tr("History"));
    tools->setObjectName(QStringLiteral("historyToolbar"));
    QAction *search = tools->addAction(tr("Search"), this, [this] {
        m_search->setFocus();
        m_search->selectAll();
    });
    search->setShortcut(QKeySequence::Find);
    tools->addAction(tr("Refresh"), this, [this] { applyFilter(true); })->setShortcut(QKeySequence::Refresh);
    tools
        ->addAction(tr("Export run…"), this,
            [this] {
                const QString run
                    = m_model->execution(m_table->currentIndex().row()).value(QStringLiteral("run")).toString();
                const QString name = !run.isEmpty() ? run : m_model->isMerged() ? QString() : m_run->text().trimmed();
                if (name.isEmpty())
                    return showStatus(m_model->isMerged()
                            ? tr("Select an execution of the run to export: each host has its own runs")
                            : tr("Select an execution of the run to export (or filter by run)"),
                        true);
                QString suggested = name; // a run's name is an agent's choice: never a path
                suggested.replace(QLatin1Char('/'), QLatin1Char('_')).replace(QLatin1Char(':'), QLatin1Char('_'));
                const QString path
                    = QFileDialog::getSaveFileName(this, tr("Export run %1").arg(display::escaped(name, 100)),
                        suggested + QStringLiteral(".airlock.jsonl"), tr("Airlock bundles (*.jsonl)"));
                if (!path.isEmpty())
                    exportRun(name, path);
            })
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction *close = new QAction(tr("Close"), this);
    close->setShortcut(QKeySequence::Close);
    connect(close, &QAction::triggered, this, &QWidget::close);
    addAction(close);

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("history/geometry")).toByteArray());
    applyFilter();
}

void HistoryWindow::closeEvent(QCloseEvent *event)
{
    QSettings().setValue(QStringLiteral("history/geometry"), saveGeometry());
    QMainWindow::closeEvent(event);
}

void HistoryWindow::setFilter(const QString &sandbox, const QString &run, const QString &status, const QString &text)
{
    const QSignalBlocker a(m_sandbox), b(m_run), c(m_search), d(m_status);
    m_sandbox->setText(sandbox);
    m_run->setText(run);
    m_search->setText(text);
    m_status->setCurrentIndex(std::max(0, m_status->findData(status)));
    applyFilter();
}

void HistoryWindow::setHosts(const QList<Host> &hosts)
{
    const QString shown = shownHost();
    m_hosts = hosts;
    {
        const QSignalBlocker quiet(m_host);
        m_host->clear();
        m_host->addItem(tr("All connected hosts"), QString());
        for (const Host &host : hosts)
            m_host->addItem(
                host.client && host.client->isConnected() ? host.name : tr("%1 (not connected)").arg(host.name),
                host.name);
        m_host->setCurrentIndex(std::max(0, m_host->findData(shown)));
        if (!shown.isEmpty() && m_host->findData(shown) < 0)
            m_host->setCurrentIndex(1); // the one shown is gone: this computer
    }
    m_host->setVisible(hosts.size() > 1);
    // All connected hosts: one that came or went changes what "all" is.
    if (shownHost().isEmpty() && shownHosts() != m_model->sources())
        applyFilter();
}

void HistoryWindow::showHost(const QString &name)
{
    m_host->setCurrentIndex(std::max(0, m_host->findData(name)));
}

QString HistoryWindow::shownHost() const
{
    return m_host->count() ? m_host->currentData().toString() : m_hosts.value(0).name;
}

QList<HistoryWindow::Host> HistoryWindow::shownHosts() const
{
    const QString name = shownHost();
    QList<Host> shown;
    for (const Host &host : m_hosts)
        if (name.isEmpty() ? host.client && host.client->isConnected() : host.name == name)
            shown.append(host);
    return shown;
}

HistoryWindow::Host HistoryWindow::hostOf(int row) const
{
    const Host host = m_model->sourceOf(row);
    return host.client ? host : m_model->sources().value(0);
}

void HistoryWindow::applyFilter(bool force)
{
    m_typing->stop();
    showStatus(tr("Searching…"));
    const int when = m_when->currentData().toInt();
    const qint64 since = when > 0 ? QDateTime::currentMSecsSinceEpoch() - qint64(when) * 1000
        : when < 0                ? QDateTime(QDate::currentDate(), QTime(0, 0)).toMSecsSinceEpoch()
                                  : 0;
    const QList<Host> hosts = shownHosts();
    const QString host = shownHost();
    setWindowTitle(m_hosts.size() < 2 ? tr("History")
            : host.isEmpty()          ? tr("History — all connected hosts")
                                      : tr("History — %1").arg(display::escaped(host, 64)));
    const bool between = when == -2;
    const HistoryModel::Filter filter{m_sandbox->text(), m_run->text(), m_status->currentData().toString(),
        m_search->text(), m_agent->text(), between ? m_from->dateTime().toMSecsSinceEpoch() : since,
        between ? m_until->dateTime().toMSecsSinceEpoch() : 0};
    if (force && hosts == m_model->sources() && filter == m_model->filter())
        return m_model->reload();
    m_model->setQuery(hosts, filter);
}

void HistoryWindow::openExecution(int row)
{
    const QJsonObject e = m_model->execution(row);
    if (e.isEmpty())
        return;
    m_showFromMs = 0;
    openRecord(e, hostOf(row));
    showTimeline();
    if (m_tabs->currentWidget() == m_trace)
        showTraceOfSelection();
}

void HistoryWindow::openRecord(const QJsonObject &e, const Host &host)
{
    m_openedRow = e;
    m_opened = qint64(e.value(QStringLiteral("id")).toDouble());
    m_showLine = -1;
    const QString sandbox = e.value(QStringLiteral("sandboxName")).toString();
    const bool ran = e.value(QStringLiteral("exec")).isDouble(); // a refused command did not
    QStringList facts{ran ? tr("Execution %1 — %2:%3")
                                .arg(m_opened)
                                .arg(display::escaped(sandbox, 80))
                                .arg(e.value(QStringLiteral("exec")).toInt())
                          : tr("Not run — %1").arg(display::escaped(sandbox, 80))};
    if (const QString agent = e.value(QStringLiteral("agent")).toString(); !agent.isEmpty())
        facts.append(tr("asked by %1").arg(display::escaped(agent, 60)));
    if (const QString decided = e.value(QStringLiteral("decidedBy")).toString(); !decided.isEmpty())
        facts.append(display::escaped(decided, 300));
    if (m_model->isMerged())
        facts.prepend(host.name);
    if (const QString run = e.value(QStringLiteral("run")).toString(); !run.isEmpty())
        facts.append(tr("run %1").arg(display::escaped(run, 80)));
    facts.append(tr("in %1").arg(display::escaped(e.value(QStringLiteral("cwd")).toString(), 120)));
    facts.append(display::timestamp(qint64(e.value(QStringLiteral("startedMs")).toDouble())));
    if (e.value(QStringLiteral("outputPruned")).toBool())
        facts.append(tr("output pruned from the history"));
    else if (e.value(QStringLiteral("truncated")).toBool())
        facts.append(tr("output truncated at the store's cap (%1 bytes kept)")
                         .arg(qint64(e.value(QStringLiteral("storedBytes")).toDouble())));
    m_details->setText(facts.join(QStringLiteral(" · ")));
    m_output->clear();
    m_replay->cancel();
    if (ran) {
        m_output->beginExecution(
            e.value(QStringLiteral("argv")).toArray(), qint64(e.value(QStringLiteral("exec")).toDouble()));
        if (host.client)
            m_replay->start(*host.client, m_opened);
    }
}

void HistoryWindow::showTrace(const Host &host, const QString &sandbox, const QString &run, const QString &sandboxName)
{
    m_traceHost = host;
    m_traced = {sandbox, run};
    {
        const QSignalBlocker quiet(m_tabs); // this trace, not the selected row's
        m_tabs->setCurrentWidget(m_trace);
    }
    if (host.client)
        m_trace->showTrace(*host.client, sandbox, run,
            run.isEmpty() ? tr("sandbox %1").arg(sandboxName) : tr("run %1").arg(run), sandboxNames(host));
}

void HistoryWindow::showTraceOfSelection()
{
    const int row = m_table->currentIndex().row();
    const QJsonObject e = m_model->execution(row);
    if (e.isEmpty())
        return;
    const Host host = hostOf(row);
    const QString run = e.value(QStringLiteral("run")).toString(),
                  sandbox = e.value(QStringLiteral("sandbox")).toString();
    const std::pair<QString, QString> wanted{run.isEmpty() ? sandbox : QString(), run};
    if (wanted == m_traced && host == m_traceHost && !m_trace->model()->isLoading()
        && !m_trace->model()->trace().spans.isEmpty())
        return; // already shown
    showTrace(host, wanted.first, run, e.value(QStringLiteral("sandboxName")).toString());
}

QHash<QString, QString> HistoryWindow::sandboxNames(const Host &host) const
{
    QHash<QString, QString> names;
    for (int row = 0; row < m_model->rowCount(); ++row) {
        if (hostOf(row) != host)
            continue;
        const QJsonObject o = m_model->execution(row);
        names.insert(o.value(QStringLiteral("sandbox")).toString(), o.value(QStringLiteral("sandboxName")).toString());
    }
    return names;
}

void HistoryWindow::openOutputAt(const QString &sandbox, uint exec, qint64 atMs)
{
    const Host host = m_traceHost;
    if (!host.client)
        return showStatus(tr("The trace's host is not connected"), true);
    DaemonApi(*host.client)
        .historyShow(QStringLiteral("%1:%2").arg(sandbox).arg(exec))
        .then([self = QPointer<HistoryWindow>(this), host, atMs](Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r)
                return self->showStatus(tr("Cannot open that output: %1").arg(r.error().message), true);
            self->m_tabs->setCurrentIndex(0);
            self->openRecord(*r, host);
            self->m_showFromMs = atMs; // after openRecord: the replay places the view there when done
        });
}

void HistoryWindow::showTimeline()
{
    const int row = m_table->currentIndex().row();
    const QJsonObject e = m_model->execution(row);
    if (e.isEmpty())
        return;
    const Host host = hostOf(row);
    const QString run = e.value(QStringLiteral("run")).toString();
    const bool byRun = m_scope->currentIndex() == 0 && !run.isEmpty();
    int mask = 0;
    for (QCheckBox *b : std::as_const(m_categories))
        mask |= b->isChecked() ? b->property("category").toInt() : 0;
    m_timeline->setSandboxNames(sandboxNames(host));
    m_timeline->show(
        host, byRun ? QString() : e.value(QStringLiteral("sandbox")).toString(), byRun ? run : QString(), mask);
}

void HistoryWindow::exportRun(const QString &run, const QString &path, std::function<void(bool, QString)> done)
{
    // Written as pages arrive, committed only when whole: a failed or cancelled export leaves no
    // partial bundle behind.
    auto file = std::make_shared<QSaveFile>(path);
    if (!file->open(QIODevice::WriteOnly)) {
        const QString message = tr("Cannot write %1: %2").arg(path, file->errorString());
        showStatus(message, true);
        if (done)
            done(false, message);
        return;
    }
    auto bundle = std::make_shared<ExportBundle>(run, ExportBundle::Format::Jsonl);
    auto *progress = new QProgressDialog(tr("Exporting run %1…").arg(run), tr("Cancel"), 0, 0, this);
    progress->setAttribute(Qt::WA_DeleteOnClose);
    progress->setMinimumDuration(400);
    QPointer<QProgressDialog> bar = progress;
    auto finish = [this, bar, done, path](bool ok, const QString &message) {
        if (bar)
            bar->close();
        showStatus(message, !ok);
        if (done)
            done(ok, message);
    };
    auto page = std::make_shared<std::function<void(QJsonValue)>>();
    const QPointer<DaemonClient> client = hostOf(m_table->currentIndex().row()).client;
    *page = [self = QPointer<HistoryWindow>(this), client, run, file, bundle, bar, finish, page, path](
                const QJsonValue &cursor) {
        if (!self)
            return;
        if (!client) {
            file->cancelWriting();
            *page = nullptr;
            return finish(false, tr("Not exported: the host's connection is gone"));
        }
        DaemonApi(*client)
            .historyExport(run, cursor)
            .then([self, file, bundle, bar, finish, page, path, run](Result<QJsonObject> r) {
                if (!self)
                    return;
                if (!r) {
                    file->cancelWriting();
                    *page = nullptr; // breaks the cycle
                    return finish(false, tr("Not exported: %1").arg(r.error().message));
                }
                if (bar && bar->wasCanceled()) {
                    file->cancelWriting();
                    *page = nullptr;
                    return finish(false, tr("Export of %1 cancelled").arg(run));
                }
                const QJsonObject &reply = *r;
                for (const QJsonValue &record : reply.value(QStringLiteral("records")).toArray())
                    bundle->add(record.toObject());
                file->write(bundle->take());
                if (bar)
                    bar->setLabelText(
                        tr("Exporting run %1… %2").arg(run, display::count(bundle->records(), tr("record"))));
                const QJsonValue next = reply.value(QStringLiteral("cursor"));
                if (next.isObject())
                    return (*page)(next);
                file->write(bundle->finish());
                const bool ok = file->commit();
                *page = nullptr;
                finish(ok,
                    ok ? tr("Exported %1 to %2 (%n record(s), sha256 %3)", nullptr, int(bundle->records()))
                             .arg(run, path, bundle->digest())
                       : tr("Cannot write %1: %2").arg(path, file->errorString()));
            });
    };
    (*page)(QJsonObject{});
}

void HistoryWindow::showStatus(const QString &text, bool error)
{
    ui::showStatus(statusBar(), text, error);
}

} // namespace airlock::ui
