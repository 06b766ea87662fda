// SPDX-License-Identifier: Apache-2.0
// The fleet view against a real daemon: what each sandbox is doing (running commands, CPU and
// memory sampled from its processes, its last line of output, the agent of its newest command),
// sorting and filtering over it, bulk actions that follow the selection, and a delete confirmation
// that names what would be killed and does nothing unless Delete is chosen.
#include "ConnectAgentDialog.h"
#include "FleetFilter.h"
#include "FleetSampler.h"
#include "FleetView.h"
#include "GuiScreenshots.h"
#include "GuiTestSettings.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "RunningStrip.h"
#include "SandboxConsole.h"
#include "SandboxModel.h"
#include "TestHelpers.h"
#include "Theme.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QTextDocumentFragment>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QTreeWidget>

#include <csignal>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsoleFleet final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

    std::unique_ptr<QProcess> startIn(
        const char *sandbox, const QStringList &command, const QStringList &options = {}) const
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart") + options + args("exec", sandbox, "--") + command);
        return p;
    }
    static QVariant cell(MainWindow &window, const char *sandbox, int column, int role = Qt::DisplayRole)
    {
        return window.sandboxModel()->sandboxIndex(QLatin1String(sandbox)).siblingAtColumn(column).data(role);
    }
    // The sandboxes under this computer's row, in the order the view shows them.
    static QStringList shownOrder(MainWindow &window)
    {
        QAbstractItemModel *shown = window.sandboxTree()->model();
        const QModelIndex host = shown->index(0, 0);
        QStringList names;
        for (int row = 0; row < shown->rowCount(host); ++row)
            names.append(shown->index(row, SandboxModel::Name, host).data().toString());
        return names;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(startConsoleTest(m_daemon, m_client));
        for (const char *name : {"fleet-busy", "fleet-idle", "fleet-c"})
            QCOMPARE(m_daemon->create(args("--name", name)), QLatin1String(name));
    }
    // Whatever a test left running (a failed one may) ends before the next.
    void init()
    {
        for (const char *name : {"fleet-busy", "fleet-idle", "fleet-c"})
            QVERIFY(m_client->call(QStringLiteral("sandbox.kill"), {{QStringLiteral("sandbox"), QLatin1String(name)}}));
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    void theFleetShowsWhatEachSandboxIsDoing()
    {
        MainWindow window(*m_client);
        QAbstractItemModelTester source(window.sandboxModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester shown(
            window.fleet()->filter(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        window.resize(1600, 1000);
        window.show();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-busy")).isValid(); }, 5000));
        QVERIFY(window.fleet()->sampler()->isActive());

        // A command that prints a line and then keeps a core busy.
        auto busy
            = startIn("fleet-busy", args("sh", "-c", "printf 'warming \\033[1;32mup\\033[0m\\n'; while :; do :; done"));
        QVERIFY2(
            QTest::qWaitFor(
                [&] { return cell(window, "fleet-busy", SandboxModel::Cpu, SandboxModel::SortRole).toDouble() > 50; },
                10000),
            qPrintable(cell(window, "fleet-busy", SandboxModel::Cpu).toString()));
        QCOMPARE(cell(window, "fleet-busy", SandboxModel::Running).toInt(), 1);
        QString running = QTextDocumentFragment::fromHtml(
            cell(window, "fleet-busy", SandboxModel::Running, Qt::ToolTipRole).toString())
                              .toPlainText();
        QVERIFY2(running.replace(QChar::Nbsp, QLatin1Char(' ')).startsWith(QLatin1String("execution 1: sh -c 'printf")),
            qPrintable(running));
        QCOMPARE(cell(window, "fleet-busy", SandboxModel::LastOutput).toString(),
            QStringLiteral("warming up")); // colours dropped
        QVERIFY(cell(window, "fleet-busy", SandboxModel::Memory, SandboxModel::SortRole).toLongLong() > 1024 * 1024);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return cell(window, "fleet-busy", SandboxModel::Cpu, SandboxModel::SparklineRole)
                           .value<QList<float>>()
                           .size()
                    >= 2;
            },
            5000));
        QVERIFY(cell(window, "fleet-busy", SandboxModel::Cpu, SandboxModel::SparklineRole).value<QList<float>>().last()
            > 0.5f); // of 100 %
        QCOMPARE(cell(window, "fleet-busy", SandboxModel::Agent).toString(), QString()); // a person's own command
        // The idle one: its guest only, nothing running, no CPU to speak of.
        QVERIFY(cell(window, "fleet-idle", SandboxModel::Cpu, SandboxModel::SortRole).toDouble() < 10);
        QCOMPARE(cell(window, "fleet-idle", SandboxModel::Running).toString(), QString());
        QVERIFY(cell(window, "fleet-idle", SandboxModel::Memory, SandboxModel::SortRole).toLongLong() > 0);

        // An agent's command names its agent.
        QCOMPARE(
            m_daemon->ctl(args("--agent", "fleet-bot", "exec", "fleet-idle", "--", "echo", "from the bot")).exitCode,
            0);
        QVERIFY(QTest::qWaitFor(
            [&] { return cell(window, "fleet-idle", SandboxModel::Agent).toString() == QLatin1String("fleet-bot"); },
            5000));
        QCOMPARE(cell(window, "fleet-idle", SandboxModel::LastOutput).toString(), QStringLiteral("from the bot"));

        // Sorted by CPU, the busy one comes first; by name again, alphabetical.
        window.sandboxTree()->sortByColumn(SandboxModel::Cpu, Qt::DescendingOrder);
        QCOMPARE(shownOrder(window).value(0), QStringLiteral("fleet-busy"));
        window.sandboxTree()->sortByColumn(SandboxModel::Name, Qt::DescendingOrder);
        QCOMPARE(shownOrder(window),
            QStringList({QStringLiteral("fleet-idle"), QStringLiteral("fleet-c"), QStringLiteral("fleet-busy")}));
        // The filter finds text in any column (here: the agent); the host row stays.
        window.fleet()->filterLine()->setText(QStringLiteral("FLEET-BOT"));
        QCOMPARE(shownOrder(window), QStringList({QStringLiteral("fleet-idle")}));
        QCOMPARE(window.sandboxTree()->model()->rowCount(), 1);
        // Selecting a sandbox the filter hides shows it again.
        QVERIFY(window.selectSandbox(QStringLiteral("fleet-busy")));
        QCOMPARE(window.fleet()->filterLine()->text(), QString());
        QCOMPARE(window.currentSandboxId(),
            cell(window, "fleet-busy", SandboxModel::Name, SandboxModel::SandboxIdRole).toString());
        window.sandboxTree()->sortByColumn(SandboxModel::Name, Qt::AscendingOrder);

        if (qEnvironmentVariableIsSet("AIRLOCK_SCREENSHOT_DIR"))
            QTest::qWait(2500); // a few samples on the sparkline
        QVERIFY(saveScreenshots(window, QStringLiteral("fleet")));
        window.selectSandbox(QStringLiteral("fleet-busy"));
        window.signalSelected(SIGKILL);
        QVERIFY(QTest::qWaitFor([&] { return busy->state() == QProcess::NotRunning; }, 10000));
        QVERIFY(QTest::qWaitFor(
            [&] { return cell(window, "fleet-busy", SandboxModel::Cpu, SandboxModel::SortRole).toDouble() < 10; },
            5000));

        // Hidden, the window asks nothing.
        window.hide();
        QVERIFY(!window.fleet()->sampler()->isActive());
    }

    void bulkActionsFollowTheSelection()
    {
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-c")).isValid(); }, 5000));
        std::map<std::string, std::unique_ptr<QProcess>> sleepers;
        for (const char *name : {"fleet-busy", "fleet-idle", "fleet-c"})
            sleepers[name] = startIn(name, args("sleep", "600"));
        QVERIFY(QTest::qWaitFor(
            [&] {
                return std::all_of(sleepers.begin(), sleepers.end(),
                    [&](const auto &s) { return cell(window, s.first.c_str(), SandboxModel::Running).toInt() == 1; });
            },
            10000));
        // Kill acts on every selected sandbox, and on no other.
        window.fleet()->select({window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-busy")),
            window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-idle"))});
        QCOMPARE(window.selectedSandboxes().size(), 2);
        window.signalSelected(SIGKILL);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return sleepers["fleet-busy"]->state() == QProcess::NotRunning
                    && sleepers["fleet-idle"]->state() == QProcess::NotRunning;
            },
            10000));
        QCOMPARE(sleepers["fleet-busy"]->exitCode(), 128 + SIGKILL);
        QCOMPARE(sleepers["fleet-idle"]->exitCode(), 128 + SIGKILL);
        QTest::qWait(300);
        QCOMPARE(sleepers["fleet-c"]->state(), QProcess::Running);
        // Stop is a SIGTERM, to let a command end cleanly.
        window.fleet()->select({window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-c"))});
        window.signalSelected(SIGTERM);
        QVERIFY(QTest::qWaitFor([&] { return sleepers["fleet-c"]->state() == QProcess::NotRunning; }, 10000));
        QCOMPARE(sleepers["fleet-c"]->exitCode(), 128 + SIGTERM);
    }

    void deletingNamesWhatIsLostAndDefaultsToCancel()
    {
        QCOMPARE(m_daemon->create(args("--name", "fleet-del")), QStringLiteral("fleet-del"));
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("fleet-del")); }, 5000));
        auto sleeper = startIn("fleet-del", args("sleep", "600"));
        QVERIFY(QTest::qWaitFor([&] { return cell(window, "fleet-del", SandboxModel::Running).toInt() == 1; }, 10000));

        // What the box says, and what Enter does there: nothing.
        QString informative;
        bool cancelIsDefault = false;
        auto answer = [&](bool pressEnter) {
            QTimer::singleShot(0, &window, [&, pressEnter] {
                QVERIFY(QTest::qWaitFor(
                    [] { return qobject_cast<QMessageBox *>(QApplication::activeModalWidget()); }, 5000));
                auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
                QCOMPARE(box->objectName(), QStringLiteral("confirmDelete"));
                informative = box->informativeText();
                cancelIsDefault = box->defaultButton() == box->button(QMessageBox::Cancel);
                if (pressEnter) {
                    QTest::keyClick(box, Qt::Key_Return);
                } else {
                    for (QAbstractButton *b : box->buttons())
                        if (box->buttonRole(b) == QMessageBox::DestructiveRole)
                            b->click();
                }
            });
        };
        answer(true);
        QVERIFY(!window.confirmDelete());
        QVERIFY(cancelIsDefault);
        QVERIFY2(informative.contains(QStringLiteral("fleet-del: 1 running — execution 1: sleep 600")),
            qPrintable(informative));
        QTest::qWait(300);
        QCOMPARE(sleeper->state(), QProcess::Running);
        QVERIFY(window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-del")).isValid());

        // Delete, chosen: the sandbox and what ran in it are gone.
        answer(false);
        QVERIFY(window.confirmDelete());
        window.deleteSelected();
        QVERIFY(QTest::qWaitFor(
            [&] { return !window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-del")).isValid(); }, 10000));
        QVERIFY(QTest::qWaitFor([&] { return sleeper->state() == QProcess::NotRunning; }, 10000));
    }

    // The red team's case: the sandbox the box names goes away while the box is open (an agent
    // deleted it). Delete then deletes nothing else: not the row the selection moved to.
    void deleteActsOnWhatTheBoxNamedAndNothingElse()
    {
        for (const char *name : {"del-w", "del-x", "del-y"})
            QCOMPARE(m_daemon->create(args("--name", name)), QLatin1String(name));
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("del-x")); }, 5000));
        QAction *remove = nullptr;
        for (QAction *a : window.sandboxTree()->actions())
            if (a->text() == QStringLiteral("&Delete…"))
                remove = a;
        QVERIFY(remove);
        bool answered = false;
        QTimer::singleShot(0, &window, [&] {
            QVERIFY(
                QTest::qWaitFor([] { return qobject_cast<QMessageBox *>(QApplication::activeModalWidget()); }, 5000));
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            QCOMPARE(box->text(), QStringLiteral("Delete del-x?"));
            QCOMPARE(m_daemon->ctl(args("rm", "del-x")).exitCode, 0);
            QVERIFY(QTest::qWaitFor(
                [&] { return !window.sandboxModel()->sandboxIndex(QStringLiteral("del-x")).isValid(); }, 5000));
            // Nothing is current now: the console did not move to a neighbour.
            QCOMPARE(window.currentSandboxId(), QString());
            QVERIFY(window.selectedSandboxes().isEmpty());
            for (QAbstractButton *b : box->buttons())
                if (box->buttonRole(b) == QMessageBox::DestructiveRole)
                    b->click();
            answered = true;
        });
        remove->trigger();
        QVERIFY(answered);
        QTest::qWait(500);
        QVERIFY(window.sandboxModel()->sandboxIndex(QStringLiteral("del-w")).isValid());
        QVERIFY(window.sandboxModel()->sandboxIndex(QStringLiteral("del-y")).isValid());
        QCOMPARE(sandboxInfo(*m_daemon, QStringLiteral("del-w")).value(QStringLiteral("state")).toString(),
            QStringLiteral("running"));
        // A filter that hides the current sandbox leaves nothing current either.
        QVERIFY(window.selectSandbox(QStringLiteral("del-w")));
        window.fleet()->filterLine()->setText(QStringLiteral("del-y"));
        QCOMPARE(window.currentSandboxId(), QString());
        window.signalSelected(SIGKILL); // acts on nothing
        window.fleet()->filterLine()->clear();
        QCOMPARE(m_daemon->ctl(args("rm", "del-w", "del-y")).exitCode, 0);
    }

    void eachRunningCommandHasItsTimeAndAStopOfItsOwn()
    {
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("fleet-c")); }, 5000));
        RunningStrip *strip = window.runningStrip();
        QVERIFY(QTest::qWaitFor([&] { return !window.console()->isLoading(); }, 5000));
        QVERIFY(strip->isHidden());
        // Two commands: one ends on SIGTERM, the other ignores it (and so do its children).
        auto runTyped = [&](const char *command) {
            QTest::keyClicks(window.commandLine(), QLatin1String(command));
            QTest::keyClick(window.commandLine(), Qt::Key_Return);
        };
        runTyped("sleep 600");
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().size() == 1; }, 5000));
        runTyped("trap '' TERM; echo ignoring; while :; do sleep 0.2; done");
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().size() == 2; }, 5000));
        QVERIFY(strip->isVisible());
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            window.resize(1024, 700);
            QTest::qWait(1200);
            QVERIFY(window.grab().save(dir + QStringLiteral("/running-strip.png")));
        }
        QList<uint32_t> execs = strip->executions();
        std::sort(execs.begin(), execs.end());
        const uint32_t sleeper = execs[0], stubborn = execs[1];
        // It ticks: from 0s to a second or more (on a loaded machine the second command may have
        // taken more than a second to start, and then the first shows 2s, not 1s).
        QCOMPARE(strip->elapsedText(sleeper).isEmpty(), false);
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         const QString shown = strip->elapsedText(sleeper);
                         return !shown.isEmpty() && shown != QLatin1String("0s");
                     },
                     3000),
            qPrintable(strip->elapsedText(sleeper)));
        // Stop: SIGTERM to that command alone.
        strip->stopButton(sleeper)->click();
        QVERIFY(QTest::qWaitFor([&] { return !strip->executions().contains(sleeper); }, 5000));
        QVERIFY(strip->executions().contains(stubborn));
        strip->stopButton(stubborn)->click();
        QCOMPARE(strip->stopButton(stubborn)->text(), QStringLiteral("Stopping…"));
        QVERIFY(!strip->stopButton(stubborn)->isEnabled());
        // Still running after the grace period: the same button kills it.
        QVERIFY(QTest::qWaitFor(
            [&] { return strip->stopButton(stubborn)->isEnabled(); }, RunningStrip::kStopGraceMs + 2000));
        QCOMPARE(strip->stopButton(stubborn)->text(), QStringLiteral("Kill"));
        QVERIFY(strip->executions().contains(stubborn));
        strip->stopButton(stubborn)->click();
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().isEmpty() && strip->isHidden(); }, 5000));
        const QJsonArray killed = jsonObject(m_daemon->ctl(args("history", "--sandbox", "fleet-c", "--json")).out)
                                      .value(QStringLiteral("executions"))
                                      .toArray();
        QHash<int, QString> statusOf;
        for (const QJsonValue &e : killed)
            statusOf.insert(e.toObject().value(QStringLiteral("exec")).toInt(),
                e.toObject().value(QStringLiteral("status")).toString());
        QCOMPARE(statusOf.value(int(sleeper)), QStringLiteral("killed"));
        QCOMPARE(statusOf.value(int(stubborn)), QStringLiteral("killed"));
        QVERIFY(window.outputView()->document().plainText().contains(QLatin1String("ignoring\n")));

        // A command that runs when the sandbox is selected is in the strip from its history.
        auto outside = startIn("fleet-c", args("sleep", "600"));
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().size() == 1; }, 5000));
        QVERIFY(window.selectSandbox(QStringLiteral("fleet-idle")));
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().isEmpty(); }, 5000));
        QVERIFY(window.selectSandbox(QStringLiteral("fleet-c")));
        QVERIFY(QTest::qWaitFor([&] { return strip->executions().size() == 1; }, 5000));
    }

    void scrolledUpTheConsoleSaysNewOutputCameBelow()
    {
        OutputView view;
        view.resize(500, 200);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (int i = 0; i < 300; ++i)
            view.append(1, QByteArray(QByteArray::number(i) + '\n'));
        QTest::qWait(40);
        QVERIFY(view.followsTail());
        QTest::keyClick(&view, Qt::Key_Home, Qt::ControlModifier);
        QCOMPARE(view.firstVisibleLine(), 0);
        QVERIFY(!view.followsTail());
        QVERIFY(!view.hasNewOutputBelow());
        view.append(1, "more\n");
        QTest::qWait(40);
        view.viewport()->repaint();
        QVERIFY(view.hasNewOutputBelow());
        QVERIFY(!view.newOutputMarker().isEmpty());
        QCOMPARE(view.firstVisibleLine(), 0); // it does not move the view
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(view.grab().save(dir + QStringLiteral("/new-output-below.png")));
        QTest::mouseClick(view.viewport(), Qt::LeftButton, {}, view.newOutputMarker().center());
        QVERIFY(view.followsTail());
        QVERIFY(!view.hasNewOutputBelow());
        QTest::qWait(40);
        QVERIFY(view.firstVisibleLine() > 250);
        // Ctrl+End, from anywhere above, is the same.
        QTest::keyClick(&view, Qt::Key_Home, Qt::ControlModifier);
        view.append(1, "again\n");
        QVERIFY(view.hasNewOutputBelow());
        QTest::keyClick(&view, Qt::Key_End, Qt::ControlModifier);
        QVERIFY(view.followsTail());
        QVERIFY(!view.hasNewOutputBelow());
    }

    // A first start: an empty fleet says what to do, and Connect an agent gives each client's text.
    void aFirstStartLeadsSomewhere()
    {
        TestDaemon fresh;
        QVERIFY(fresh.start());
        auto client = fresh.connect();
        QVERIFY(client);
        MainWindow window(*client);
        window.resize(1024, 700);
        window.show();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->hostCount() == 1 && !window.fleet()->emptyState()->isHidden(); },
            5000));
        QTest::qWait(300);
        QVERIFY(window.fleet()->emptyState()->isVisible());
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(window.grab().save(dir + QStringLiteral("/first-start.png")));
        QPushButton *connectButton = nullptr;
        for (QPushButton *b : window.fleet()->emptyState()->findChildren<QPushButton *>())
            if (b->text() == QStringLiteral("Connect an agent…"))
                connectButton = b;
        QVERIFY(connectButton);
        connectButton->click();
        auto *dialog = window.findChild<ConnectAgentDialog *>();
        QVERIFY(dialog);
        QVERIFY(
            dialog->configText(mcp::AgentClient::ClaudeCode)
                .startsWith(QLatin1String("claude mcp add airlock -- ") + binDir() + QLatin1String("/airlockctl mcp")));
        dialog->presetBox()->setCurrentIndex(dialog->presetBox()->findData(QStringLiteral("package-install")));
        dialog->hostsEdit()->setText(QStringLiteral("https://files.pythonhosted.org/packages/x.whl not_a host!"));
        QVERIFY(!dialog->hostsError().isEmpty());
        QVERIFY(!dialog->configText(mcp::AgentClient::Codex).contains(QLatin1String("--allow")));
        dialog->hostsEdit()->setText(QStringLiteral("https://files.pythonhosted.org/packages/x.whl, pypi.org"));
        QCOMPARE(dialog->hostsError(), QString());
        QCOMPARE(dialog->configText(mcp::AgentClient::Codex),
            QStringLiteral("[mcp_servers.airlock]\ncommand = \"%1/airlockctl\"\nargs = [\"mcp\", \"--preset\", "
                           "\"package-install\", \"--allow\", "
                           "\"files.pythonhosted.org:443\", \"--allow\", \"pypi.org\"]")
                .arg(binDir()));
        dialog->copy(mcp::AgentClient::Cursor);
        QCOMPARE(QApplication::clipboard()->text(), dialog->configText(mcp::AgentClient::Cursor));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(dialog->grab().save(dir + QStringLiteral("/connect-agent.png")));
        dialog->close();
        // The first sandbox: the table takes the place.
        QCOMPARE(fresh.create(args("--name", "first")), QStringLiteral("first"));
        QVERIFY(QTest::qWaitFor([&] { return window.fleet()->emptyState()->isHidden(); }, 5000));
        // Help → Keyboard shortcuts lists the window's keys.
        QAction *shortcuts = nullptr;
        for (QAction *a : window.actions())
            if (a->text() == QLatin1String("&Keyboard shortcuts"))
                shortcuts = a;
        QVERIFY(shortcuts);
        shortcuts->trigger();
        auto *list = window.findChild<QTreeWidget *>(QStringLiteral("shortcutList"));
        QVERIFY(list);
        QStringList rows;
        for (int i = 0; i < list->topLevelItemCount(); ++i)
            rows.append(list->topLevelItem(i)->text(0) + QLatin1Char('=') + list->topLevelItem(i)->text(1));
        QVERIFY2(rows.contains(QStringLiteral("Ctrl+N=New sandbox…"))
                && rows.contains(QStringLiteral("Ctrl+Shift+A=Decide on requests")),
            qPrintable(rows.join(QLatin1Char('|'))));
    }

    void f6GoesRoundThePanes()
    {
        MainWindow window(*m_client);
        window.show();
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("fleet-c")); }, 5000));
        window.sandboxTree()->setFocus();
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_F6);
        QCOMPARE(QApplication::focusWidget(), window.outputView());
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_F6);
        QCOMPARE(QApplication::focusWidget(), window.commandLine());
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_F6); // no request waits: round to the fleet
        QCOMPARE(QApplication::focusWidget(), window.sandboxTree());
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_F6, Qt::ShiftModifier);
        QCOMPARE(QApplication::focusWidget(), window.commandLine());
    }

    void aSandboxsTimeIsItsProcessesNotTheHosts()
    {
        // A host process burning CPU is nobody's sandbox: no sandbox's column moves.
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("fleet-c")).isValid(); }, 5000));
        QProcess hostBurner;
        hostBurner.start(QStringLiteral("sh"), args("-c", "while :; do :; done"));
        QVERIFY(hostBurner.waitForStarted());
        QSignalSpy sampled(window.fleet()->sampler(), &FleetSampler::sampled);
        QVERIFY(QTest::qWaitFor([&] { return sampled.size() >= 3; }, 10000));
        for (const char *name : {"fleet-busy", "fleet-idle", "fleet-c"})
            QVERIFY2(cell(window, name, SandboxModel::Cpu, SandboxModel::SortRole).toDouble() < 10, name);
        hostBurner.kill();
        hostBurner.waitForFinished();
    }
};

QTEST_MAIN(TestConsoleFleet)
#include "tst_console_fleet.moc"
