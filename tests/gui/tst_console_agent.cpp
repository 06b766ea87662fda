// SPDX-License-Identifier: Apache-2.0
// Run an agent… in the console (issue 24): the dialog says what is missing (the agent, its key,
// the task, how the project is given) in words, and what it plans runs: the real Claude Code
// (tests/agents) in a sandbox of its own on this computer's daemon, its key brokered to the model
// stub, its output in the console like any command's.
#include "GuiTestSettings.h"
#include "HistoryWindow.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "ReviewWindow.h"
#include "RunAgentDialog.h"
#include "StubHttps.h"
#include "TestHelpers.h"
#include "Theme.h"
#include "TraceModel.h"
#include "TraceView.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsoleAgent final : public QObject {
    Q_OBJECT
    StubHttps m_stub;
    QTemporaryDir m_dir;
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;
    const QByteArray m_key = "sk-console-" + QByteArray::number(QRandomGenerator::global()->generate64(), 16);

private Q_SLOTS:
    void initTestCase()
    {
        isolateSettings();
        // The agent as if installed here: on PATH.
        qputenv("PATH", AIRLOCK_SOURCE_DIR "/tests/agents/node_modules/.bin:" + qgetenv("PATH"));
        // One step: an edit of the project (or of the workspace, without one), then the answer.
        QVERIFY(writeFile(m_dir.filePath(QStringLiteral("script.json")),
            R"({"steps": [{"anthropic": {"name": "Bash", "input": {"command": "printf 'edited by the agent\n' >> README.md && echo edited", "description": "edit"}}}], "final": "All done."})"));
        QVERIFY2(m_stub.start({QStringLiteral("api.anthropic.com")}, m_dir.filePath(QStringLiteral("script.json"))),
            qPrintable(m_stub.error()));
        m_daemon = std::make_unique<TestDaemon>(args("--secret-store", "file", "--resolve",
            QStringLiteral("api.anthropic.com=") + m_stub.address(), "--upstream-ca", m_stub.authorityPath()));
        QVERIFY(m_daemon->start());
        m_client = m_daemon->connect();
        QVERIFY(m_client);
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    // What keeps it from running is said, in the dialog's words, until nothing does.
    void theDialogSaysWhatIsMissing()
    {
        RunAgentDialog missingKey({});
        QCOMPARE(missingKey.agentBox()->currentData().toString(), QStringLiteral("claude"));
        QVERIFY2(missingKey.problem().contains(QLatin1String("'anthropic-api-key'"))
                && missingKey.problem().contains(QStringLiteral("Secrets…")),
            qPrintable(missingKey.problem()));
        QVERIFY2(missingKey.aboutLabel()->text().contains(QLatin1String("api.anthropic.com"))
                && missingKey.aboutLabel()->text().contains(QLatin1String("placeholder")),
            qPrintable(missingKey.aboutLabel()->text()));

        RunAgentDialog dialog({QStringLiteral("anthropic-api-key")});
        QVERIFY2(
            dialog.problem().contains(QLatin1String("Say what the agent should do")), qPrintable(dialog.problem()));
        dialog.taskEdit()->setPlainText(QStringLiteral("-cmodel_providers.x.base_url=https://evil.example"));
        QVERIFY2(dialog.problem().contains(QLatin1String("not '-'")), qPrintable(dialog.problem()));
        dialog.taskEdit()->setPlainText(QStringLiteral("fix the test"));
        QCOMPARE(dialog.problem(), QString());
        // A project is copy-on-write unless ticked read-write.
        dialog.projectEdit()->setText(m_dir.path());
        QCOMPARE(dialog.problem(), QString());
        QVERIFY(dialog.plan()->sandbox.mounts.last().copyOnWrite);
        dialog.writableBox()->setChecked(true);
        QCOMPARE(dialog.problem(), QString());
        QVERIFY(!dialog.plan()->sandbox.mounts.last().copyOnWrite);
        dialog.allowEdit()->setText(QStringLiteral("api.github.com, [::1"));
        QVERIFY2(dialog.problem().startsWith(QLatin1String("Also allow:")), qPrintable(dialog.problem()));
        dialog.allowEdit()->setText(QStringLiteral("api.github.com"));
        const auto plan = dialog.plan();
        QVERIFY(plan);
        QCOMPARE(plan->exec.argv.mid(1),
            (QStringList{QStringLiteral("--dangerously-skip-permissions"), QStringLiteral("-p"),
                QStringLiteral("fix the test")}));
        QCOMPARE(plan->exec.forAgent, QStringLiteral("claude"));
        QVERIFY(
            plan->sandbox.name.startsWith(QStringLiteral("claude-") + QFileInfo(m_dir.path()).fileName().toLower()));
        QVERIFY(plan->sandbox.policy->value(QStringLiteral("network"))
                    .toObject()
                    .value(QStringLiteral("allow"))
                    .toArray()
                    .contains(QStringLiteral("api.github.com")));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            dialog.show();
            for (const auto &[theme, file] :
                {std::pair{Theme::Light, "run-agent.png"}, {Theme::Dark, "run-agent-dark.png"}}) {
                applyTheme(theme);
                QTest::qWait(100);
                QVERIFY(dialog.grab().save(dir + QLatin1Char('/') + QLatin1String(file)));
            }
            applyTheme(Theme::Light);
        }
    }

    // What the dialog plans runs: the agent's sandbox is made and selected, its output shows, and
    // the model got the real key.
    void anAgentRunsFromTheConsole()
    {
        QVERIFY(m_daemon->ctl(args("secret", "set", "anthropic-api-key"), m_key + '\n').exitCode == 0);
        MainWindow window(*m_client);
        window.show();
        RunAgentDialog dialog({QStringLiteral("anthropic-api-key")});
        dialog.taskEdit()->setPlainText(QStringLiteral("say done"));
        const auto plan = dialog.plan();
        QVERIFY2(plan, qPrintable(dialog.problem()));
        const qsizetype before = m_stub.requests().size();
        window.startAgent(*plan);
        const OutputDocument &doc = window.outputView()->document();
        QVERIFY2(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("All done.")); }, 60000),
            qPrintable(doc.plainText()));
        QVERIFY(window.sandboxHeader()->text().contains(plan->sandbox.name));
        const QJsonObject got = m_stub.next(before);
        QCOMPARE(StubHttps::header(got, QStringLiteral("x-api-key")).toLatin1(), m_key);
        // Its trace: the agent's command, its brokered connection with each request inside.
        window.openTrace();
        HistoryWindow *history = window.openHistory();
        TraceView *view = history->traceView();
        const auto spanWith = [&](trace::SpanKind kind, const QString &start) {
            const QList<trace::Span> &spans = view->model()->trace().spans;
            for (int i = 0; i < spans.size(); ++i)
                if (spans[i].kind == kind && spans[i].label.startsWith(start))
                    return i;
            return -1;
        };
        QVERIFY(QTest::qWaitFor(
            [&] { return spanWith(trace::SpanKind::Request, QStringLiteral("POST /v1/messages")) >= 0; }, 10000));
        const int request
            = spanWith(trace::SpanKind::Request, QStringLiteral("POST /v1/messages?beta=true → 200 · key put in"));
        QVERIFY(request >= 0);
        const trace::Span &connection = view->model()->trace().spans[view->model()->trace().spans[request].parent];
        QCOMPARE(connection.kind, trace::SpanKind::Connection);
        QVERIFY2(connection.label.contains(QStringLiteral("key brokered (anthropic-api-key)")),
            qPrintable(connection.label));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            // At 1024x700, light and dark, the request in view.
            window.resize(1024, 700);
            history->resize(1024, 700);
            view->tree()->expandAll();
            view->tree()->setCurrentIndex(view->model()->indexOf(request));
            view->tree()->scrollTo(view->model()->indexOf(request), QAbstractItemView::PositionAtCenter);
            for (const auto &[theme, suffix] : {std::pair{Theme::Light, ""}, {Theme::Dark, "-dark"}}) {
                applyTheme(theme);
                QTest::qWait(100);
                QVERIFY(window.grab().save(dir + QStringLiteral("/agent-run%1.png").arg(QLatin1String(suffix))));
                QVERIFY(history->grab().save(dir + QStringLiteral("/agent-trace%1.png").arg(QLatin1String(suffix))));
            }
            applyTheme(Theme::Light);
        }
    }

    // With a project (copy-on-write, the default), the agent's end opens the review: its edit is
    // listed and shown as a diff, the project has none of it until applied; a path changed in the
    // project meanwhile is said and applied over only when asked; the rest is discarded with the
    // sandbox.
    void anAgentsEditsAreReviewedWhenItEnds()
    {
        const QString project = m_dir.filePath(QStringLiteral("project"));
        QDir().mkpath(project);
        QFile::setPermissions(project, QFileDevice::Permissions(0x7777));
        QVERIFY(writeFile(project + QStringLiteral("/README.md"), "a project\n"));
        QVERIFY(writeFile(project + QStringLiteral("/NOTES.md"), "notes\n"));
        QFile::setPermissions(project + QStringLiteral("/README.md"), QFileDevice::Permissions(0x6666));
        QFile::setPermissions(project + QStringLiteral("/NOTES.md"), QFileDevice::Permissions(0x6666));
        QVERIFY(m_daemon->ctl(args("secret", "set", "anthropic-api-key"), m_key + '\n').exitCode == 0);
        MainWindow window(*m_client);
        window.show();
        RunAgentDialog dialog({QStringLiteral("anthropic-api-key")});
        dialog.taskEdit()->setPlainText(QStringLiteral("edit the readme"));
        dialog.projectEdit()->setText(project);
        const auto plan = dialog.plan();
        QVERIFY2(plan, qPrintable(dialog.problem()));
        window.startAgent(*plan);
        QVERIFY(QTest::qWaitFor([&] { return window.reviewWindow() != nullptr; }, 60000));
        ReviewWindow *review = window.reviewWindow();
        QTreeWidget *list = review->list();
        QVERIFY2(list->topLevelItemCount() == 1,
            qPrintable(review->statusLabel()->text() + QLatin1Char('|') + window.outputView()->document().plainText()));
        QCOMPARE(list->topLevelItem(0)->text(0), QStringLiteral("README.md"));
        QCOMPARE(list->topLevelItem(0)->text(1), QStringLiteral("modified"));
        QVERIFY(!review->overwriteButton()->isVisibleTo(review));
        QVERIFY2(review->diffView()->toPlainText().contains(QLatin1String("\n a project\n+edited by the agent")),
            qPrintable(review->diffView()->toPlainText()));
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\n"));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            review->resize(1024, 700);
            for (const auto &[theme, suffix] : {std::pair{Theme::Light, ""}, {Theme::Dark, "-dark"}}) {
                applyTheme(theme);
                QTest::qWait(100);
                QVERIFY(review->grab().save(dir + QStringLiteral("/agent-review%1.png").arg(QLatin1String(suffix))));
            }
            applyTheme(Theme::Light);
        }
        // The person edits the same file meanwhile: applying would lose it, so nothing is applied
        // until they say to apply over it.
        QVERIFY(writeFile(project + QStringLiteral("/README.md"), "a project, edited by its person\n"));
        list->topLevelItem(0)->setCheckState(0, Qt::Checked);
        review->applyChosen();
        QVERIFY2(review->statusLabel()->text().startsWith(QLatin1String("Nothing applied"))
                && review->statusLabel()->text().contains(project + QStringLiteral("/README.md: changed here at")),
            qPrintable(review->statusLabel()->text()));
        QVERIFY(review->overwriteButton()->isVisibleTo(review));
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project, edited by its person\n"));
        review->overwriteButton()->click();
        QCOMPARE(readFile(project + QStringLiteral("/README.md")), QByteArray("a project\nedited by the agent\n"));
        QVERIFY2(review->statusLabel()->text().startsWith(QLatin1String("Applied 1 change")),
            qPrintable(review->statusLabel()->text()));
        QCOMPARE(list->topLevelItemCount(), 0);
        // Discarded (the question answered yes), the sandbox goes.
        QTimer::singleShot(0, this, [] {
            if (auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget()))
                box->button(QMessageBox::Yes)->click();
        });
        QVERIFY(review->discard());
        QVERIFY(QTest::qWaitFor(
            [&] { return !m_daemon->ctl(args("ls")).out.contains(plan->sandbox.name.toUtf8()); }, 10000));
        QCOMPARE(readFile(project + QStringLiteral("/NOTES.md")), QByteArray("notes\n"));
    }
};

QTEST_MAIN(TestConsoleAgent)
#include "tst_console_agent.moc"
