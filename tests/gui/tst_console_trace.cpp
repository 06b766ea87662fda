// SPDX-License-Identifier: Apache-2.0
// A run as a trace, against a real daemon, offscreen: an agent's command that waited for a
// person, the programs it started (the exec check's records) and its connection through the
// egress proxy to a real server on loopback, nested and timed as they happened; activating the
// connection opens the command's output at that moment; Ctrl+T in the console lands on the
// selected sandbox's current run, and on a sandbox where nothing ran yet says so.
#include "ExecutionReplay.h"
#include "FleetView.h"
#include "GuiScreenshots.h"
#include "GuiTestSettings.h"
#include "HistoryWindow.h"
#include "LoopbackServer.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "TestHelpers.h"
#include "TraceModel.h"
#include "TraceView.h"
#include "model/DisplayText.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QLabel>
#include <QProcess>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QTreeView>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;
using trace::Span;
using trace::SpanKind;

class TestConsoleTrace final : public QObject {
    Q_OBJECT
    std::unique_ptr<LoopbackServer> m_web;
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;
    QString m_sandboxId;
    qint64 m_approvedAfterMs = 0;

    static int childOf(const trace::Trace &t, int parent, SpanKind kind, const QString &labelStart)
    {
        for (const int c : t.spans[parent].children)
            if (t.spans[c].kind == kind && t.spans[c].label.startsWith(labelStart))
                return c;
        return -1;
    }
    static QString describe(const trace::Trace &t, int span = 0)
    {
        QString out = QString(t.depth(span) * 2, QLatin1Char(' ')) + t.spans[span].label
            + QStringLiteral(" [%1 ms]\n").arg(t.spans[span].durationMs());
        for (const int c : t.spans[span].children)
            out += describe(t, c);
        return out;
    }
    static bool loads(TraceModel *model)
    {
        return QTest::qWaitFor([&] { return !model->isLoading() && !model->trace().spans.isEmpty(); }, 10000);
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_web = std::make_unique<LoopbackServer>("web");
        QVERIFY(
            startConsoleTest(m_daemon, m_client, args("--resolve", "web.test=127.0.0.1", "--approval-timeout", "60s")));
        const QString allow = QStringLiteral("web.test:%1").arg(m_web->port());
        QCOMPARE(m_daemon->create(args("--name", "traced", "--network", "allowlist", "--allow") << allow),
            QStringLiteral("traced"));
        QCOMPARE(m_daemon->create(args("--name", "fresh")), QStringLiteral("fresh"));
        m_sandboxId
            = jsonObject(m_daemon->ctl(args("info", "traced", "--json")).out).value(QStringLiteral("id")).toString();
        QVERIFY(!m_sandboxId.isEmpty());

        // The agent's command asks (a shell loop cannot be checked); a person allows it after a
        // while. It prints 200 lines, pauses, reaches the server, prints 200 more.
        QProcess agent;
        agent.setProcessEnvironment(m_daemon->environment());
        const QString script = QStringLiteral(
            "for i in $(seq 1 200); do echo line$i; done; sleep 0.6; curl -s http://web.test:%1/hello; "
            "for i in $(seq 1 200); do echo after$i; done")
                                   .arg(m_web->port());
        agent.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "--run", "tr-run", "exec", "traced", "-n", "--", "sh", "-c")
                << script);
        QJsonArray pending;
        QVERIFY(QTest::qWaitFor(
            [&] {
                pending = pendingApprovals(*m_daemon);
                return pending.size() == 1;
            },
            10000));
        QElapsedTimer asked;
        asked.start();
        QTest::qWait(500);
        QCOMPARE(m_daemon->ctl(args("approve") << pending.first().toObject().value(QStringLiteral("id")).toString())
                     .exitCode,
            0);
        m_approvedAfterMs = asked.elapsed();
        QVERIFY(agent.waitForFinished(20000));
        const QByteArray out = agent.readAllStandardOutput();
        QVERIFY2(
            agent.exitCode() == 0 && out.contains("line200\nweb GET /hello\nafter1\n"), out.right(300).constData());
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
        m_web.reset();
    }

    void aRunIsNestedSpansAndASpanOpensItsOutputThere()
    {
        HistoryWindow history(*m_client);
        history.resize(1600, 1000);
        TraceModel *model = history.traceView()->model();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        history.show();
        QSignalSpy loaded(model, &TraceModel::loaded);
        history.showTrace({QStringLiteral("this computer"), m_client.get()}, QString(), QStringLiteral("tr-run"),
            QStringLiteral("traced"));
        QCOMPARE(history.tabs()->currentWidget(), history.traceView());
        QVERIFY(loaded.wait(10000));
        const trace::Trace &t = model->trace();
        const QString tree = describe(t);

        // run tr-run > sandbox traced > the command, with the wait for a person inside it.
        QCOMPARE(t.spans[0].label, QStringLiteral("run tr-run"));
        const int box = childOf(t, 0, SpanKind::Sandbox, QStringLiteral("sandbox traced"));
        QVERIFY2(box > 0, qPrintable(tree));
        const int command = childOf(t, box, SpanKind::Execution, QStringLiteral("$ sh -c 'for i in"));
        QVERIFY2(command > 0, qPrintable(tree));
        const Span &exec = t.spans[command];
        QVERIFY2(exec.label.endsWith(QStringLiteral(" · succeeded, exit 0")), qPrintable(exec.label));
        QCOMPARE(exec.sandbox, m_sandboxId);
        QVERIFY(exec.exec > 0);
        const int waited
            = childOf(t, command, SpanKind::Wait, QStringLiteral("bot asked · allowed by airlockctl after "));
        QVERIFY2(waited > 0, qPrintable(tree));
        const Span &wait = t.spans[waited];
        QCOMPARE(wait.startMs, exec.startMs); // the command's bar begins with its request
        QVERIFY2(wait.durationMs() >= 500 && wait.durationMs() <= m_approvedAfterMs + 2000,
            qPrintable(QString::number(wait.durationMs())));
        QVERIFY(wait.label.endsWith(display::duration(wait.durationMs())));

        // The programs it started, by parent process: sh (covered by the approval) > curl.
        const int shell = childOf(t, command, SpanKind::Program, QStringLiteral("sh -c 'for i in"));
        QVERIFY2(shell > 0, qPrintable(tree));
        QVERIFY2(t.spans[shell].detail.contains(QLatin1String("allow by ")), qPrintable(t.spans[shell].detail));
        const int curl = childOf(t, shell, SpanKind::Program, QStringLiteral("curl -s http://web.test:"));
        QVERIFY2(curl > 0, qPrintable(tree));
        QVERIFY(t.spans[curl].instant);
        QVERIFY(t.spans[curl].startMs >= wait.endMs + 500); // after the pause

        // Its connection, in the command, from after curl started to before the command ended.
        const QString destination = QStringLiteral("→ web.test:%1 · allowed by rule 'web.test:%1'").arg(m_web->port());
        const int connection = childOf(t, command, SpanKind::Connection, destination);
        QVERIFY2(connection > 0, qPrintable(tree));
        const Span &c = t.spans[connection];
        QVERIFY(c.startMs >= t.spans[curl].startMs && c.endMs <= exec.endMs && !c.open);
        QVERIFY2(c.detail.contains(QLatin1String(" up, ")), qPrintable(c.detail));
        QCOMPARE(c.exec, exec.exec);
        // Every span lies in its parent's; children are in start order.
        for (int i = 1; i < t.spans.size(); ++i) {
            const Span &s = t.spans[i], &p = t.spans[s.parent];
            QVERIFY2(s.startMs >= p.startMs && s.endMs <= p.endMs, qPrintable(s.label));
            for (qsizetype k = 1; k < s.children.size(); ++k)
                QVERIFY(t.spans[s.children[k - 1]].startMs <= t.spans[s.children[k]].startMs);
        }
        // In the tree: the same nesting, with the duration and the waterfall's range.
        const QModelIndex execRow = model->indexOf(command);
        QCOMPARE(execRow.parent(), model->indexOf(box));
        QCOMPARE(model->indexOf(waited).parent(), execRow);
        QCOMPARE(model->indexOf(connection, TraceModel::Duration).data().toString(), display::duration(c.durationMs()));
        const QPointF range = model->indexOf(connection, TraceModel::Waterfall).data(TraceModel::RangeRole).toPointF();
        QVERIFY(range.x() > 0.0 && range.x() <= range.y() && range.y() <= 1.0);
        const QString summary = history.traceView()->summary()->text();
        QVERIFY2(summary.startsWith(QStringLiteral("run tr-run · "))
                && summary.contains(QStringLiteral(" · 1 command · 1 wait for a person · ")),
            qPrintable(summary));

        history.traceView()->tree()->expandAll();
        QVERIFY(saveScreenshots(history, QStringLiteral("trace")));

        // The connection opens the command's output where it was: the last line before the
        // pause at the top, curl's answer under it.
        QSignalSpy shown(history.replay(), &ExecutionReplay::finished);
        history.traceView()->activateSpan(connection);
        QVERIFY(shown.wait(10000));
        QCOMPARE(history.tabs()->currentWidget(), history.outputView()->parentWidget());
        OutputView *view = history.outputView();
        const qsizetype top = view->verticalScrollBar()->value();
        QCOMPARE(view->document().lineText(top).toString(), QStringLiteral("line200"));
        QCOMPARE(view->document().lineText(top + 1).toString(), QStringLiteral("web GET /hello"));
    }

    void ctrlTLandsOnTheSelectedSandboxsCurrentRun()
    {
        MainWindow window(*m_client);
        window.resize(1024, 700);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("traced")); }, 5000));
        QTest::keyClick(&window, Qt::Key_T, Qt::ControlModifier);
        HistoryWindow *history = window.openHistory();
        QCOMPARE(history->tabs()->currentWidget(), history->traceView());
        QVERIFY(loads(history->traceView()->model()));
        QCOMPARE(history->traceView()->model()->run(), QStringLiteral("tr-run"));
        QVERIFY(
            history->traceView()->model()->rowCount() == 1 && history->traceView()->model()->trace().spans.size() > 5);

        // Where nothing ran: the sandbox's own trace, and the summary says there is nothing yet.
        QVERIFY(window.selectSandbox(QStringLiteral("fresh")));
        QApplication::setActiveWindow(&window); // the history window took it; Ctrl+T is the console's
        QVERIFY(QTest::qWaitFor([&] { return QApplication::activeWindow() == &window; }, 3000));
        QTest::keyClick(&window, Qt::Key_T, Qt::ControlModifier);
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         return history->traceView()->summary()->text().endsWith(
                             QStringLiteral(" · nothing has run here yet"));
                     },
                     10000),
            qPrintable(history->traceView()->summary()->text()));
        // Its current run is the one it was created in (airlockctl names one when nobody did).
        const QString run = history->traceView()->model()->run();
        QVERIFY2(run.startsWith(QLatin1String("airlockctl-")), qPrintable(run));
        const trace::Trace &t = history->traceView()->model()->trace();
        QCOMPARE(t.spans.value(1).kind, SpanKind::Sandbox);
        QCOMPARE(t.spans.value(1).label, QStringLiteral("sandbox fresh"));
    }
};

QTEST_MAIN(TestConsoleTrace)
#include "tst_console_trace.moc"
