// SPDX-License-Identifier: Apache-2.0
// The desktop console against a real daemon, on Qt's offscreen platform: output rendered from raw
// bytes (colours applied, every other control sequence shown inert, the clipboard untouched,
// memory bounded), the sandbox tree following the daemon (QAbstractItemModelTester watching), and
// a command typed in the window running in the sandbox with its output in the view.
#include "ApprovalsDock.h"
#include "CreateSandboxDialog.h"
#include "LoopbackServer.h"
#include "PolicyEditor.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "SandboxModel.h"
#include "TestHelpers.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QTreeView>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsole final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

    static QString spanText(const StyledLine &line, int span) { return line.text.mid(line.spans[span].start, line.spans[span].length); }

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
        m_client = m_daemon->connect();
        QVERIFY(m_client);
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    void coloursApplyAndEverythingElseIsShownInert()
    {
        QApplication::clipboard()->setText(QStringLiteral("mine"));
        OutputDocument doc;
        doc.append(1, "plain \x1b[1;31mred\x1b[0m ok\n");
        doc.append(1, "copy\x1b]52;c;ZXZpbA==\x07 done\n");
        doc.append(2, QByteArray("nul\0 bad\xff utf8 \xc3\xa9\n", 21));
        doc.finish();
        QCOMPARE(doc.line(0).text, QStringLiteral("plain red ok"));
        QCOMPARE(spanText(doc.line(0), 1), QStringLiteral("red"));
        QVERIFY(doc.line(0).spans[1].style.bold);
        QCOMPARE(doc.line(0).spans[1].style.fg, 1);
        QVERIFY(!doc.line(0).spans[2].style.bold);
        // OSC 52 (a clipboard write) is text on screen, boxed as inert, and the clipboard is unchanged.
        QCOMPARE(doc.line(1).text, QStringLiteral("copy\\x1b]52;c;ZXZpbA==\\x07 done"));
        QCOMPARE(doc.line(1).spans.size(), 3);
        QVERIFY(doc.line(1).spans[1].style.inert); // the whole sequence, as one piece
        QCOMPARE(spanText(doc.line(1), 1), QStringLiteral("\\x1b]52;c;ZXZpbA==\\x07"));
        OutputDocument moves;
        moves.append(1, "a\x1b[2J\x1b[?25lb");
        QCOMPARE(moves.line(0).spans.size(), 3);
        QCOMPARE(spanText(moves.line(0), 1), QStringLiteral("\\x1b[2J\\x1b[?25l"));
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("mine"));
        // NUL and invalid UTF-8 are visible; stderr is marked.
        QCOMPARE(doc.line(2).text, QStringLiteral("nul\\x00 bad\\xff utf8 \u00e9"));
        QVERIFY(doc.line(2).spans.first().style.stderrStream);
        // A carriage return hides nothing: what it would overwrite stays visible.
        OutputDocument cr;
        cr.append(1, "rm -rf /\rls\n");
        QCOMPARE(cr.plainText(), QStringLiteral("rm -rf /\nls\n"));
    }

    void findMovesToEachMatch()
    {
        OutputView view;
        view.resize(600, 200);
        view.show();
        for (int i = 0; i < 500; ++i)
            view.append(1, i == 100 || i == 400 ? QByteArray("the NEEDLE is here\n") : QByteArray(QByteArray::number(i) + "\n"));
        QTest::qWait(50);
        QVERIFY(view.followsTail());
        view.setSearch(QStringLiteral("needle"));
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 100); // from the top of the view, wrapping around
        QVERIFY(!view.followsTail());
        QVERIFY(view.firstVisibleLine() <= 100 && view.firstVisibleLine() + 5 > 90);
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 400);
        QVERIFY(view.findNext());
        QCOMPARE(view.currentMatchLine(), 100);
        view.setSearch(QStringLiteral("absent"));
        QVERIFY(!view.findNext());
    }

    void memoryStaysBounded()
    {
        OutputDocument doc(10000);
        for (int i = 0; i < 5000; ++i)
            doc.append(1, QByteArray(QByteArray::number(i) + " some output line\n"));
        QVERIFY(doc.chars() <= 10000);
        QVERIFY(doc.droppedLines() > 4000);
        QVERIFY(doc.line(doc.lineCount() - 2).text.startsWith(QLatin1String("4999 ")));
    }

    void theTreeFollowsTheDaemon()
    {
        SandboxModel model(*m_client);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        connect(m_client.get(), &DaemonClient::eventReceived, &model, &SandboxModel::onEvent);
        QVERIFY(m_client->call(QStringLiteral("events.subscribe")));
        model.refresh();
        QCOMPARE(m_daemon->create(args("--name", "gui-a")), QStringLiteral("gui-a"));
        QCOMPARE(m_daemon->create(args("--name", "gui-b", "--preset", "open")), QStringLiteral("gui-b"));
        QVERIFY(QTest::qWaitFor([&] { return model.sandboxIndex(QStringLiteral("gui-b")).isValid(); }, 5000));
        const QModelIndex b = model.sandboxIndex(QStringLiteral("gui-b"));
        QCOMPARE(model.data(b.siblingAtColumn(SandboxModel::Network)).toString(), QStringLiteral("FULL (host network)"));
        QCOMPARE(model.data(b.siblingAtColumn(SandboxModel::Network), Qt::ForegroundRole).value<QColor>(), SandboxModel::networkColor(QStringLiteral("full")));
        QCOMPARE(m_daemon->ctl(args("rm", "gui-b")).exitCode, 0);
        QVERIFY(QTest::qWaitFor([&] { return !model.sandboxIndex(QStringLiteral("gui-b")).isValid(); }, 5000));
        QVERIFY(model.sandboxIndex(QStringLiteral("gui-a")).isValid());
    }

    void aSandboxMadeInTheDialogAppearsInTheTree()
    {
        CreateSandboxDialog dialog({QStringLiteral("locked"), QStringLiteral("open")});
        QTest::keyClicks(dialog.nameEdit(), QStringLiteral("Bad Name"));
        QVERIFY(dialog.problem().startsWith(QLatin1String("invalid sandbox name 'Bad Name'")));
        dialog.nameEdit()->setText(QStringLiteral("from-dialog"));
        dialog.allowEdit()->setText(QStringLiteral("not a host"));
        QVERIFY(dialog.problem().startsWith(QLatin1String("Allowed hosts:")));
        dialog.allowEdit()->setText(QStringLiteral("Example.COM:443"));
        QCOMPARE(dialog.problem(), QString());
        MainWindow window(*m_client);
        window.createSandbox(dialog.parameters());
        QVERIFY(QTest::qWaitFor([&] { return window.currentSandboxId() == window.sandboxModel()->sandbox(window.sandboxModel()->sandboxIndex(QStringLiteral("from-dialog"))).value(QStringLiteral("id")).toString()
                                             && !window.currentSandboxId().isEmpty(); }, 10000));
        const QJsonObject info = jsonObject(m_daemon->ctl(args("policy", "show", "from-dialog", "--effective", "--json")).out);
        QCOMPARE(info.value(QStringLiteral("policy")).toObject().value(QStringLiteral("network")).toObject().value(QStringLiteral("mode")).toString(), QStringLiteral("allowlist"));
        QCOMPARE(info.value(QStringLiteral("policy")).toObject().value(QStringLiteral("network")).toObject().value(QStringLiteral("allow")).toArray(),
                 QJsonArray{QStringLiteral("example.com:443")});
        window.deleteSelected();
        QVERIFY(QTest::qWaitFor([&] { return !window.sandboxModel()->sandboxIndex(QStringLiteral("from-dialog")).isValid(); }, 10000));
    }

    void editingTheNetworkListChangesWhatTheSandboxCanReach()
    {
        LoopbackServer web("web");
        TestDaemon daemon(args("--resolve", "site.test=127.0.0.1"));
        QVERIFY(daemon.start());
        auto client = daemon.connect();
        QCOMPARE(daemon.create(args("--name", "net", "--network", "allowlist")), QStringLiteral("net"));
        const QString fetch = QStringLiteral("curl -sS -m 10 -o /dev/null -w '%{http_code}' http://site.test:%1/").arg(web.port());
        QCOMPARE(execIn(daemon, QStringLiteral("net"), args("sh", "-c", fetch)).out, QByteArray("403"));

        PolicyEditor editor(*client, QStringLiteral("net"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 5000));
        QVERIFY(!editor.applyButton()->isEnabled()); // nothing changed yet
        QTest::keyClicks(editor.allowList()->input(), QStringLiteral("not a host"));
        QVERIFY(!editor.allowList()->addButton()->isEnabled()); // checked as typed
        editor.allowList()->input()->clear();
        QTest::keyClicks(editor.allowList()->input(), QStringLiteral("Site.Test."));
        QTest::mouseClick(editor.allowList()->addButton(), Qt::LeftButton);
        QCOMPARE(editor.allowList()->hosts(), QStringList{QStringLiteral("site.test")});
        QCOMPARE(editor.diffText(), QStringLiteral("+ allow site.test"));
        // What would happen, asked as it is typed (before applying: still denied).
        QTest::keyClicks(editor.tryInput(), QStringLiteral("http://site.test/x"));
        QVERIFY(QTest::qWaitFor([&] { return editor.tryAnswer().startsWith(QLatin1String("deny: no rule names site.test:80")); }, 5000));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            editor.show();
            QTest::qWait(100);
            QVERIFY(editor.grab().save(dir + QStringLiteral("/policy.png")));
        }
        QSignalSpy applied(&editor, &PolicyEditor::applied);
        QTest::mouseClick(editor.applyButton(), Qt::LeftButton);
        QVERIFY(applied.wait(5000));
        QVERIFY(applied.at(0).at(0).toBool());
        QCOMPARE(editor.diffText(), QStringLiteral("(no changes)"));
        QCOMPARE(execIn(daemon, QStringLiteral("net"), args("sh", "-c", fetch)).out, QByteArray("200"));
    }

    void aCommandTypedInTheWindowRunsInTheSandbox()
    {
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("gui-a")); }, 5000));
        QVERIFY(window.commandLine()->isEnabled());
        QTest::keyClicks(window.commandLine(), QStringLiteral("printf 'hello from %s\\n' $(hostname); printf '\\033]52;c;ZXZpbA==\\007' >&2"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        const OutputDocument &doc = window.outputView()->document();
        QVERIFY(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("[#1 exit 0]")); }, 10000));
        QVERIFY2(doc.plainText().contains(QLatin1String("hello from gui-a\n")), qPrintable(doc.plainText()));
        QVERIFY2(doc.plainText().contains(QLatin1String("\\x1b]52;c;ZXZpbA==\\x07")), qPrintable(doc.plainText()));
        // Ctrl-C on the command line interrupts what it started.
        QTest::keyClicks(window.commandLine(), QStringLiteral("trap 'echo got INT; exit 130' INT; echo ready; while :; do sleep 0.1; done"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("ready\n")) && !window.runningExecutions().isEmpty(); }, 10000));
        QTest::keyClick(window.commandLine(), Qt::Key_C, Qt::ControlModifier);
        QVERIFY2(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("got INT\n")); }, 10000), qPrintable(doc.plainText()));
        QVERIFY(QTest::qWaitFor([&] { return window.runningExecutions().isEmpty(); }, 10000));

        // An agent's command that asks appears as a card; Allow here runs it in the daemon.
        auto agent = std::make_unique<QProcess>();
        agent->setProcessEnvironment(m_daemon->environment());
        agent->start(binDir() + QStringLiteral("/airlockctl"),
                     args("--no-autostart", "--agent", "bot", "exec", "gui-a", "-n", "--", "sh", "-c", "echo approved-run > /workspace/flag; cat /workspace/flag"));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().size() == 1; }, 10000));
        ApprovalCard *card = window.approvals()->cards().first();
        QVERIFY(window.windowTitle().contains(QLatin1String("1 waiting")));
        QVERIFY2(card->findChildren<QLabel *>().size() > 2, "no details");
        QTest::mouseClick(card->allowButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return agent->state() == QProcess::NotRunning; }, 10000)); // the event loop runs: the decision goes out
        QCOMPARE(agent->exitCode(), 0);
        QCOMPARE(agent->readAllStandardOutput(), QByteArray("approved-run\n"));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().isEmpty(); }, 5000));
        // A long argument is folded, and Allow waits until it has been shown.
        agent->start(binDir() + QStringLiteral("/airlockctl"),
                     args("--no-autostart", "--agent", "bot", "exec", "gui-a", "-n", "--", "deploy-tool", QString(300, QLatin1Char('x')) + QStringLiteral("; rm -rf ~")));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().size() == 1; }, 10000));
        card = window.approvals()->cards().first();
        QVERIFY(!card->allowButton()->isEnabled());
        QVERIFY(card->expandButton());
        card->reasonEdit()->setText(QStringLiteral("looks odd"));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            QTest::qWait(100); // laid out and shown
            QVERIFY(window.grab().save(dir + QStringLiteral("/approval.png")));
        }
        QTest::mouseClick(card->expandButton(), Qt::LeftButton);
        QVERIFY(card->allowButton()->isEnabled());
        QTest::mouseClick(card->denyButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return agent->state() == QProcess::NotRunning; }, 10000)); // the event loop runs: the decision goes out
        QCOMPARE(agent->exitCode(), 6);
        QVERIFY(agent->readAllStandardError().endsWith(": looks odd\n"));

        // A picture of it, for people to look at (AIRLOCK_SCREENSHOT_DIR, when set).
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            QTest::qWait(50);
            QVERIFY(window.grab().save(dir + QStringLiteral("/console.png")));
        }
    }
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
