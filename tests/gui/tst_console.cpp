// SPDX-License-Identifier: Apache-2.0
// The desktop console against a real daemon, on Qt's offscreen platform: the sandbox tree following
// the daemon (QAbstractItemModelTester watching), and a command typed in the window running in the
// sandbox with its output in the view. The output view alone is tst_output_view.
#include "AddHostDialog.h"
#include "ApprovalsDock.h"
#include "CommandHistory.h"
#include "ConnectAgentDialog.h"
#include "CreateSandboxDialog.h"
#include "EndedSandboxesBar.h"
#include "ExecutionReplay.h"
#include "FleetFilter.h"
#include "FleetSampler.h"
#include "FleetView.h"
#include "GuiTestSettings.h"
#include "HistoryModel.h"
#include "HistoryWindow.h"
#include "LogView.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "PolicyEditor.h"
#include "SandboxConsole.h"
#include "SandboxModel.h"
#include "SecretsDialog.h"
#include "ShortcutsDialog.h"
#include "TestHelpers.h"
#include "Theme.h"
#include "TimelineModel.h"
#include "rpc/Protocol.h"

#include <QAbstractItemModelTester>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QLocalSocket>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>
#include <QTreeView>
#include <QTreeWidget>

#include <csignal>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsole final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

private Q_SLOTS:
    void initTestCase()
    {
        QApplication::setApplicationDisplayName(QStringLiteral("Airlock")); // as the airlock program sets it
        isolateSettings();
        QVERIFY2(!QSettings().fileName().startsWith(QDir::homePath()),
            qPrintable(QSettings().fileName())); // the user's are untouched
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

    void theTreeFollowsTheDaemon()
    {
        SandboxModel model(*m_client);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(m_client->call(QStringLiteral("events.subscribe")));
        model.refresh();
        QCOMPARE(m_daemon->create(args("--name", "gui-a")), QStringLiteral("gui-a"));
        QCOMPARE(m_daemon->create(args("--name", "gui-b", "--preset", "open")), QStringLiteral("gui-b"));
        QVERIFY(QTest::qWaitFor([&] { return model.sandboxIndex(QStringLiteral("gui-b")).isValid(); }, 5000));
        const QModelIndex b = model.sandboxIndex(QStringLiteral("gui-b"));
        QCOMPARE(
            model.data(b.siblingAtColumn(SandboxModel::Network)).toString(), QStringLiteral("FULL (host network)"));
        QCOMPARE(model.data(b.siblingAtColumn(SandboxModel::Network), Qt::ForegroundRole).value<QColor>(),
            SandboxModel::networkColor(QStringLiteral("full")));
        QCOMPARE(m_daemon->ctl(args("rm", "gui-b")).exitCode, 0);
        QVERIFY(QTest::qWaitFor([&] { return !model.sandboxIndex(QStringLiteral("gui-b")).isValid(); }, 5000));
        QVERIFY(model.sandboxIndex(QStringLiteral("gui-a")).isValid());
    }

    void theTreeHoldsSeveralHosts()
    {
        // A second daemon as a second host: each host's sandboxes under it, each list from its own daemon.
        TestDaemon other;
        QVERIFY(other.start());
        auto otherClient = other.connect();
        QVERIFY(otherClient && otherClient->call(QStringLiteral("events.subscribe")));
        QVERIFY(m_client->call(QStringLiteral("events.subscribe")));
        SandboxModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.addHost(QStringLiteral("This computer"), *m_client), 0);
        QCOMPARE(model.addHost(QStringLiteral("build box"), *otherClient), 1);
        QCOMPARE(other.create(args("--name", "on-other")), QStringLiteral("on-other"));
        model.refresh();
        QVERIFY(QTest::qWaitFor([&] { return model.sandboxIndex(QStringLiteral("on-other")).isValid(); }, 5000));
        const QModelIndex remote = model.sandboxIndex(QStringLiteral("on-other"));
        QCOMPARE(remote.parent().row(), 1);
        QCOMPARE(model.data(remote.parent()).toString(), QStringLiteral("build box"));
        QCOMPARE(model.hostClient(remote), otherClient.get());
        QVERIFY(!model.sandboxIndex(QStringLiteral("on-other"), 0).isValid()); // not on this computer
        QVERIFY(model.sandboxIndex(QStringLiteral("gui-a"), 0).isValid());
        QCOMPARE(model.hostClient(model.sandboxIndex(QStringLiteral("gui-a"))), m_client.get());
        // An event on one host refreshes that host's list only.
        QCOMPARE(other.ctl(args("rm", "on-other")).exitCode, 0);
        QVERIFY(QTest::qWaitFor([&] { return !model.sandboxIndex(QStringLiteral("on-other")).isValid(); }, 5000));
        QCOMPARE(model.rowCount(model.index(1, 0)), 0);
        QVERIFY(model.sandboxIndex(QStringLiteral("gui-a")).isValid());
        // A host that goes away says so on its row.
        other.stop();
        QVERIFY(QTest::qWaitFor(
            [&] {
                return model.data(model.index(1, SandboxModel::State)).toString() == QLatin1String("not connected");
            },
            5000));
        QCOMPARE(model.data(model.index(0, SandboxModel::State)).toString(), QStringLiteral("connected"));
    }

    void aSandboxMadeInTheDialogAppearsInTheTree()
    {
        auto presets = m_client->call(QStringLiteral("policy.presets"));
        QVERIFY(presets);
        CreateSandboxDialog dialog(
            presets->value(QStringLiteral("presets")).toArray(), {QStringLiteral("this computer")});
        // Presets explained; the allowlist says what it adds to; limits step in the sizes people pick.
        QVERIFY2(dialog.presetAbout()->text().startsWith(QLatin1String("The default: no network")),
            qPrintable(dialog.presetAbout()->text()));
        QCOMPARE(dialog.allowAbout()->text(), QStringLiteral("No network: typing hosts here makes it an allowlist."));
        dialog.presetBox()->setCurrentText(QStringLiteral("package-install"));
        QVERIFY(dialog.presetAbout()->text().startsWith(QLatin1String("Package installs:")));
        QCOMPARE(dialog.allowAbout()->text(),
            QStringLiteral("Added to the 14 hosts the preset package-install already lets through."));
        dialog.presetBox()->setCurrentText(QStringLiteral("open"));
        QCOMPARE(
            dialog.allowAbout()->text(), QStringLiteral("Full network: every host is reachable; nothing to list."));
        dialog.presetBox()->setCurrentText(QStringLiteral("locked"));
        QCOMPARE(dialog.memoryBox()->singleStep(), 256);
        QCOMPARE(dialog.pidsBox()->singleStep(), 64);
        QVERIFY(dialog.hostBox()->isHidden()); // one host: nothing to choose
        CreateSandboxDialog twoHosts(presets->value(QStringLiteral("presets")).toArray(),
            {QStringLiteral("here"), QStringLiteral("build-box")}, 1);
        QVERIFY(!twoHosts.hostBox()->isHidden());
        QCOMPARE(twoHosts.host(), 1);
        QTest::keyClicks(dialog.nameEdit(), QStringLiteral("Bad Name"));
        QVERIFY(dialog.problem().startsWith(QLatin1String("invalid sandbox name 'Bad Name'")));
        dialog.nameEdit()->setText(QStringLiteral("from-dialog"));
        dialog.allowEdit()->setText(QStringLiteral("bad!host"));
        QVERIFY(dialog.problem().startsWith(QLatin1String("Allowed hosts:")));
        dialog.allowEdit()->setText(
            QStringLiteral("https://Example.COM/some/page")); // a pasted URL is its host and port
        QCOMPARE(dialog.problem(), QString());
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            dialog.presetBox()->setCurrentIndex(dialog.presetBox()->findData(QStringLiteral("package-install")));
            dialog.show();
            QTest::qWait(100);
            QVERIFY(dialog.grab().save(dir + QStringLiteral("/new-sandbox.png")));
            dialog.presetBox()->setCurrentIndex(dialog.presetBox()->findData(QStringLiteral("locked")));
        }
        // Host folders: checked as typed by the daemon's own rules, mounted read-only unless :rw.
        QTemporaryDir shared;
        dialog.mountsEdit()->setText(QStringLiteral("relative/dir:/data"));
        QVERIFY2(dialog.problem().startsWith(QLatin1String("Mounts: ")), qPrintable(dialog.problem()));
        dialog.mountsEdit()->setText(shared.path() + QStringLiteral(":/data"));
        QCOMPARE(dialog.problem(), QString());
        dialog.diskBox()->setValue(0.5); // GiB: the workspace's size
        MainWindow window(*m_client);
        window.createSandbox(dialog.request());
        QVERIFY(QTest::qWaitFor(
            [&] {
                return window.currentSandboxId()
                    == window.sandboxModel()
                           ->sandbox(window.sandboxModel()->sandboxIndex(QStringLiteral("from-dialog")))
                           .value(QStringLiteral("id"))
                           .toString()
                    && !window.currentSandboxId().isEmpty();
            },
            10000));
        const QJsonObject info
            = jsonObject(m_daemon->ctl(args("policy", "show", "from-dialog", "--effective", "--json")).out);
        QCOMPARE(info.value(QStringLiteral("policy"))
                     .toObject()
                     .value(QStringLiteral("network"))
                     .toObject()
                     .value(QStringLiteral("mode"))
                     .toString(),
            QStringLiteral("allowlist"));
        QCOMPARE(info.value(QStringLiteral("policy"))
                     .toObject()
                     .value(QStringLiteral("network"))
                     .toObject()
                     .value(QStringLiteral("allow"))
                     .toArray(),
            QJsonArray{QStringLiteral("example.com:443")});
        const QJsonArray mounts
            = sandboxInfo(*m_daemon, QStringLiteral("from-dialog")).value(QStringLiteral("mounts")).toArray();
        QCOMPARE(mounts.size(), 1);
        QCOMPARE(mounts.first().toObject().value(QStringLiteral("path")).toString(), QStringLiteral("/data"));
        QCOMPARE(mounts.first().toObject().value(QStringLiteral("writable")).toBool(), false);
        QCOMPARE(sandboxInfo(*m_daemon, QStringLiteral("from-dialog"))
                     .value(QStringLiteral("limits"))
                     .toObject()
                     .value(QStringLiteral("diskBytes"))
                     .toObject()
                     .value(QStringLiteral("value"))
                     .toDouble(),
            512.0 * 1024 * 1024);
        window.deleteSelected();
        QVERIFY(QTest::qWaitFor(
            [&] { return !window.sandboxModel()->sandboxIndex(QStringLiteral("from-dialog")).isValid(); }, 10000));
    }

    // Asked for in the dialog, the sandbox is gVisor's, and the line above its console says so; the
    // runtime's own words are on hover.
    void aGvisorSandboxSaysSoAboveItsConsole()
    {
        auto presets = m_client->call(QStringLiteral("policy.presets"));
        QVERIFY(presets);
        CreateSandboxDialog dialog(
            presets->value(QStringLiteral("presets")).toArray(), {QStringLiteral("this computer")});
        dialog.nameEdit()->setText(QStringLiteral("strong"));
        dialog.isolationBox()->setCurrentIndex(dialog.isolationBox()->findData(QStringLiteral("gvisor")));
        MainWindow window(*m_client);
        window.createSandbox(dialog.request());
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxHeader()->text() == QStringLiteral("strong — gVisor, network none, running"); },
            10000));
        QVERIFY2(window.sandboxHeader()->toolTip().startsWith(
                     QLatin1String("gVisor: a user-space kernel between the sandbox and the host's")),
            qPrintable(window.sandboxHeader()->toolTip()));
        // The fleet says so too, beside the network, in the network's colour.
        const QModelIndex row = window.sandboxModel()->sandboxIndex(QStringLiteral("strong"));
        QCOMPARE(row.siblingAtColumn(SandboxModel::Network).data().toString(), QStringLiteral("none · gVisor"));
        QVERIFY(row.siblingAtColumn(SandboxModel::Network)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .endsWith(QLatin1String("\nHeld by gVisor: a user-space kernel between the sandbox and the host's, "
                                            "rootless, seccomp inside")));
        QCOMPARE(execIn(*m_daemon, QStringLiteral("strong"), args("uname", "-r")).out, QByteArray("4.4.0\n"));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            window.resize(1024, 700);
            window.show();
            for (const Theme theme : {Theme::Light, Theme::Dark}) {
                applyTheme(theme);
                QTest::qWait(200);
                QVERIFY(window.grab().save(dir + QStringLiteral("/gvisor-sandbox-%1.png").arg(themeName(theme))));
            }
            applyTheme(Theme::System);
        }
        QVERIFY(window.selectSandbox(QStringLiteral("strong")));
        window.deleteSelected();
        QVERIFY(QTest::qWaitFor(
            [&] { return !window.sandboxModel()->sandboxIndex(QStringLiteral("strong")).isValid(); }, 10000));
    }

    void lightAndDarkThemes()
    {
        for (const char *name : {"system", "light", "dark"})
            QCOMPARE(themeName(themeFromName(QLatin1String(name))), QLatin1String(name));
        QCOMPARE(themeFromName(QStringLiteral("neon")), Theme::System);
        applyTheme(Theme::Dark);
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
        QVERIFY(QApplication::palette().color(QPalette::WindowText).lightness() > 180);
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            MainWindow window(*m_client);
            window.show();
            QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("gui-a")); }, 5000));
            QTest::qWait(100);
            QVERIFY(window.grab().save(dir + QStringLiteral("/console-dark.png")));
        }
        applyTheme(Theme::Light);
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 180);
        qputenv("GTK_THEME", "Adwaita:dark");
        QVERIFY(systemPrefersDark());
        qunsetenv("GTK_THEME");
    }

    void secretsAreSetUnseenListedAndRemoved()
    {
        SecretsDialog dialog(*m_client);
        QSignalSpy refreshed(&dialog, &SecretsDialog::refreshed);
        QVERIFY(refreshed.wait(5000));
        QVERIFY(!dialog.setButton()->isEnabled());
        QTest::keyClicks(dialog.nameEdit(), QStringLiteral("GUI_TOKEN"));
        QTest::keyClicks(dialog.valueEdit(), QStringLiteral("s3cr3t-from-the-gui"));
        QCOMPARE(dialog.valueEdit()->echoMode(), QLineEdit::Password); // typed unseen
        QSignalSpy done(&dialog, &SecretsDialog::changeFinished);
        QTest::mouseClick(dialog.setButton(), Qt::LeftButton);
        QVERIFY(dialog.valueEdit()->text().isEmpty()); // not kept in the window once sent
        QVERIFY(done.wait(5000));
        QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
        QVERIFY(QTest::qWaitFor([&] { return dialog.list()->topLevelItemCount() == 1; }, 5000));
        QCOMPARE(dialog.list()->topLevelItem(0)->text(0), QStringLiteral("GUI_TOKEN"));
        for (int c = 0; c < dialog.list()->columnCount(); ++c)
            QVERIFY(!dialog.list()->topLevelItem(0)->text(c).contains(QLatin1String("s3cr3t")));
        QVERIFY(!dialog.backendLabel()->text().isEmpty());
        // The daemon has exactly those bytes: a sandbox granted it sees the same value.
        QTemporaryDir dir;
        QFile policy(dir.filePath(QStringLiteral("grant.json")));
        QVERIFY(policy.open(QIODevice::WriteOnly));
        policy.write(R"({"credentials": {"grants": [{"secret": "GUI_TOKEN", "env": "TOKEN"}]}})");
        policy.close();
        QVERIFY(
            m_daemon->create(args("--name", "granted", "--policy", policy.fileName())) == QStringLiteral("granted"));
        SandboxModel tree(*m_client); // its badge: the name of what it was given, never the value
        tree.refresh();
        QVERIFY(QTest::qWaitFor([&] { return tree.sandboxIndex(QStringLiteral("granted")).isValid(); }, 5000));
        const QModelIndex badge
            = tree.sandboxIndex(QStringLiteral("granted")).siblingAtColumn(SandboxModel::Credentials);
        QCOMPARE(tree.data(badge).toString(), QStringLiteral("GUI_TOKEN"));
        QVERIFY(tree.data(badge, Qt::ToolTipRole)
                    .toString()
                    .replace(QChar::Nbsp, QLatin1Char(' '))
                    .contains(QLatin1String("GUI_TOKEN as the variable TOKEN")));
        QCOMPARE(execIn(*m_daemon, QStringLiteral("granted"),
                     args("sh", "-c", "test \"$TOKEN\" = s3cr3t-from-the-gui && echo same"))
                     .out,
            QByteArray("same\n"));
        QCOMPARE(m_daemon->ctl(args("rm", "granted")).exitCode, 0);
        // Removed: gone from the list; removing again says it is not there.
        dialog.remove(QStringLiteral("GUI_TOKEN"));
        QVERIFY(done.wait(5000));
        QVERIFY(done.last().at(0).toBool());
        QVERIFY(QTest::qWaitFor([&] { return dialog.list()->topLevelItemCount() == 0; }, 5000));
        dialog.remove(QStringLiteral("GUI_TOKEN"));
        QVERIFY(done.wait(5000));
        QVERIFY(!done.last().at(0).toBool());
        QVERIFY2(done.last().at(1).toString().startsWith(QLatin1String("Not removed: ")),
            qPrintable(done.last().at(1).toString()));
    }

    void aCommandTypedInTheWindowRunsInTheSandbox()
    {
        MainWindow window(*m_client);
        window.show();
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("gui-a")); }, 5000));
        QVERIFY(window.commandLine()->isEnabled());
        QTest::keyClicks(window.commandLine(),
            QStringLiteral("printf 'hello from %s\\n' $(hostname); printf '\\033]52;c;ZXZpbA==\\007' >&2"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        const OutputDocument &doc = window.outputView()->document();
        QVERIFY(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("[#1 exit 0]")); }, 10000));
        QVERIFY2(doc.plainText().contains(QLatin1String("hello from gui-a\n")), qPrintable(doc.plainText()));
        QVERIFY2(doc.plainText().contains(QLatin1String("\\x1b]52;c;ZXZpbA==\\x07")), qPrintable(doc.plainText()));
        // Ctrl-C on the command line interrupts what it started.
        QTest::keyClicks(window.commandLine(),
            QStringLiteral("trap 'echo got INT; exit 130' INT; echo ready; while :; do sleep 0.1; done"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY(QTest::qWaitFor(
            [&] { return doc.plainText().contains(QLatin1String("ready\n")) && !window.runningExecutions().isEmpty(); },
            10000));
        QTest::keyClick(window.commandLine(), Qt::Key_C, Qt::ControlModifier);
        QVERIFY2(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("got INT\n")); }, 10000),
            qPrintable(doc.plainText()));
        QVERIFY(QTest::qWaitFor([&] { return window.runningExecutions().isEmpty(); }, 10000));

        // An agent's command that asks appears as a card; Allow here runs it in the daemon.
        auto agent = std::make_unique<QProcess>();
        agent->setProcessEnvironment(m_daemon->environment());
        agent->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "gui-a", "-n", "--", "sh", "-c",
                "echo approved-run > /workspace/flag; cat /workspace/flag"));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().size() == 1; }, 10000));
        ApprovalCard *card = window.approvals()->cards().first();
        QVERIFY(window.windowTitle().contains(QLatin1String("1 waiting")));
        QVERIFY2(card->findChildren<QLabel *>().size() > 2, "no details");
        QVERIFY(QTest::qWaitFor([&] { return card->settled(); }, 3000)); // a card that just came ignores clicks
        QTest::mouseClick(card->allowButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return agent->state() == QProcess::NotRunning; },
            10000)); // the event loop runs: the decision goes out
        QCOMPARE(agent->exitCode(), 0);
        QCOMPARE(agent->readAllStandardOutput(), QByteArray("approved-run\n"));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().isEmpty(); }, 5000));
        // A long argument is folded, and Allow waits until it has been shown.
        agent->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "gui-a", "-n", "--", "deploy-tool",
                QString(300, QLatin1Char('x')) + QStringLiteral("; rm -rf ~")));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().size() == 1; }, 10000));
        card = window.approvals()->cards().first();
        QVERIFY(!card->allowButton()->isEnabled());
        QVERIFY(card->expandButton());
        card->reasonEdit()->setText(QStringLiteral("looks odd"));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            QTest::qWait(100); // laid out and shown
            QVERIFY(window.grab().save(dir + QStringLiteral("/approval.png")));
        }
        QVERIFY(QTest::qWaitFor([&] { return card->settled(); }, 3000));
        QTest::mouseClick(card->expandButton(), Qt::LeftButton);
        QVERIFY(card->allowButton()->isEnabled());
        QTest::mouseClick(card->denyButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return agent->state() == QProcess::NotRunning; },
            10000)); // the event loop runs: the decision goes out
        QCOMPARE(agent->exitCode(), 6);
        QVERIFY(agent->readAllStandardError().endsWith(": looks odd\n"));

        // A picture of it, for people to look at (AIRLOCK_SCREENSHOT_DIR, when set).
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            QTest::qWait(50);
            QVERIFY(window.grab().save(dir + QStringLiteral("/console.png")));
        }
    }

    void selectingASandboxShowsWhatRanBeforeThenLiveWithoutGapsOrRepeats()
    {
        QVERIFY(m_daemon->create(args("--name", "before")) == QStringLiteral("before"));
        QCOMPARE(
            execIn(*m_daemon, QStringLiteral("before"), args("sh", "-c", "echo earlier-output; exit 3")).exitCode, 3);
        // One that is still printing when the window looks: stored part, then live, each line once.
        auto running = std::make_unique<QProcess>();
        running->setProcessEnvironment(m_daemon->environment());
        running->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", "before", "--", "sh", "-c",
                "for i in $(seq 1 60); do echo tick-$i; sleep 0.05; done"));
        QVERIFY(QTest::qWaitFor([&] { return running->readAllStandardOutput().contains("tick-10"); }, 10000));
        MainWindow window(*m_client);
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("before")); }, 5000));
        QVERIFY(QTest::qWaitFor([&] { return !window.console()->isLoading(); }, 10000));
        QVERIFY(QTest::qWaitFor([&] { return running->state() == QProcess::NotRunning; }, 20000));
        const OutputDocument &doc = window.outputView()->document();
        QVERIFY(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("[#2 exit 0]")); }, 10000));
        const QString text = doc.plainText();
        QVERIFY2(text.startsWith(QLatin1String(
                     "$ sh -c 'echo earlier-output; exit 3' (#1)\nearlier-output\n[#1 exit 3]\n$ sh -c ")),
            qPrintable(text.left(300)));
        for (int i = 1; i <= 60; ++i)
            QVERIFY2(text.count(QStringLiteral("tick-%1\n").arg(i)) == 1,
                qPrintable(QStringLiteral("tick-%1 in:\n%2").arg(i).arg(text)));
        QVERIFY(text.indexOf(QLatin1String("tick-59\n")) < text.indexOf(QLatin1String("tick-60\n")));
        QCOMPARE(text.count(QLatin1String("(#2)")), 1);
        QCOMPARE(text.count(QLatin1String("[#2 exit 0]")), 1);
        QCOMPARE(m_daemon->ctl(args("rm", "before")).exitCode, 0);
    }

    void theCommandLineRecallsEarlierCommands()
    {
        CommandHistory history; // not saved
        QCOMPARE(history.previous(QStringLiteral("typed")), QStringLiteral("typed")); // nothing earlier
        for (const char *c : {"ls", "make", "make", "make test"})
            history.add(QLatin1String(c));
        QCOMPARE(history.entries(),
            QStringList({QStringLiteral("ls"), QStringLiteral("make"), QStringLiteral("make test")}));
        QCOMPARE(history.previous(QStringLiteral("half")), QStringLiteral("make test"));
        QCOMPARE(history.previous(QStringLiteral("make test")), QStringLiteral("make"));
        QCOMPARE(history.previous(QStringLiteral("make")), QStringLiteral("ls"));
        QCOMPARE(history.previous(QStringLiteral("ls")), QStringLiteral("ls")); // the oldest stays
        QCOMPARE(history.next(), QStringLiteral("make"));
        QCOMPARE(history.next(), QStringLiteral("make test"));
        QCOMPARE(history.next(), QStringLiteral("half")); // back to what was being typed
        // In the window: Up on the command line.
        MainWindow window(*m_client);
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("gui-a")); }, 5000));
        QTest::keyClicks(window.commandLine(), QStringLiteral("echo recalled"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY(window.commandLine()->text().isEmpty());
        QTest::keyClick(window.commandLine(), Qt::Key_Up);
        QCOMPARE(window.commandLine()->text(), QStringLiteral("echo recalled"));
        QTest::keyClick(window.commandLine(), Qt::Key_Down);
        QCOMPARE(window.commandLine()->text(), QString());
    }

    void killDuplicateAndDeleteSeveral()
    {
        MainWindow window(*m_client);
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("gui-a")); }, 5000));
        // Kill: everything running in the sandbox gets SIGKILL, and the sandbox stays.
        auto sleeper = std::make_unique<QProcess>();
        sleeper->setProcessEnvironment(m_daemon->environment());
        sleeper->start(
            binDir() + QStringLiteral("/airlockctl"), args("--no-autostart", "exec", "gui-a", "--", "sleep", "600"));
        QVERIFY(QTest::qWaitFor(
            [&] {
                return sandboxInfo(*m_daemon, QStringLiteral("gui-a")).value(QStringLiteral("executions")).toInt() == 1;
            },
            10000));
        window.signalSelected(SIGKILL);
        QVERIFY(QTest::qWaitFor([&] { return sleeper->state() == QProcess::NotRunning; }, 10000));
        QCOMPARE(sleeper->exitCode(), 128 + 9);
        const QJsonArray killed
            = jsonObject(m_daemon->ctl(args("history", "--sandbox", "gui-a", "--status", "killed", "--json")).out)
                  .value(QStringLiteral("executions"))
                  .toArray();
        QVERIFY(!killed.isEmpty());
        QCOMPARE(killed.first().toObject().value(QStringLiteral("argv")).toArray(),
            QJsonArray({QStringLiteral("sleep"), QStringLiteral("600")}));
        QVERIFY(window.sandboxModel()->sandboxIndex(QStringLiteral("gui-a")).isValid());
        // An agent cannot kill what it did not start.
        DaemonClient agent;
        ConnectOptions asAgent;
        asAgent.socketPath = m_daemon->socketPath();
        asAgent.autostart = false;
        asAgent.agent = QStringLiteral("bot");
        QVERIFY(agent.connectToDaemon(asAgent));
        auto refused
            = agent.call(QStringLiteral("sandbox.kill"), {{QStringLiteral("sandbox"), QStringLiteral("gui-a")}});
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::Denied);

        // Duplicate as new: the same preset and policy layer, a new name.
        QVERIFY(m_daemon->create(
                    args("--name", "dup-src", "--network", "allowlist", "--allow", "pypi.org:443", "--pids", "77"))
            == QStringLiteral("dup-src"));
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("dup-src")); }, 5000));
        window.duplicateCurrent();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("dup-src-2")).isValid(); }, 10000));
        auto effective = [&](const char *name) {
            return jsonObject(m_daemon->ctl(args("policy", "show", name, "--effective", "--json")).out)
                .value(QStringLiteral("policy"))
                .toObject();
        };
        QCOMPARE(effective("dup-src-2").value(QStringLiteral("network")),
            effective("dup-src").value(QStringLiteral("network")));
        QCOMPARE(
            effective("dup-src-2").value(QStringLiteral("limits")).toObject().value(QStringLiteral("pids")).toInt(),
            77);

        // Several selected, one confirmation, all deleted.
        window.fleet()->select({window.sandboxModel()->sandboxIndex(QStringLiteral("dup-src")),
            window.sandboxModel()->sandboxIndex(QStringLiteral("dup-src-2"))});
        QCOMPARE(window.selectedSandboxes().size(), 2);
        window.deleteSelected();
        QVERIFY(QTest::qWaitFor(
            [&] {
                return !window.sandboxModel()->sandboxIndex(QStringLiteral("dup-src")).isValid()
                    && !window.sandboxModel()->sandboxIndex(QStringLiteral("dup-src-2")).isValid();
            },
            10000));
        QVERIFY(window.sandboxModel()->sandboxIndex(QStringLiteral("gui-a")).isValid());
    }

    void theLogViewShowsTheTailOfTheAppsLog()
    {
        QTemporaryDir dir;
        QFile log(dir.filePath(QStringLiteral("airlock.log")));
        QVERIFY(log.open(QIODevice::WriteOnly));
        log.write(QByteArray(600 * 1024, 'x') + "\nfirst whole line\nlast line\n");
        log.close();
        LogView view(nullptr, log.fileName());
        QVERIFY(view.text().startsWith(QLatin1String("first whole line\n"))); // the last 512 KiB, from a line start
        QVERIFY(view.text().endsWith(QLatin1String("last line\n")));
        LogView missing(nullptr, dir.filePath(QStringLiteral("none.log")));
        QVERIFY(missing.text().isEmpty());
    }

    void losingTheDaemonShowsABannerAndRetryReconnects()
    {
        // Its own daemon, stopped and started again under the window.
        TestDaemon daemon;
        QVERIFY(daemon.start());
        auto client = daemon.connect();
        QVERIFY(client);
        MainWindow window(*client);
        ConnectOptions options;
        options.socketPath = daemon.socketPath();
        options.autostart = false;
        int attempts = 0;
        window.setReconnect([&](bool) {
            ++attempts;
            return client->connectToDaemon(options);
        });
        QCOMPARE(daemon.create(args("--name", "before-stop", "--preset", "package-install", "--memory", "512M")),
            QStringLiteral("before-stop"));
        // Its own layer changed after it was made: what is made again is the policy it had last.
        QTemporaryDir policyDir;
        QFile layer(policyDir.filePath(QStringLiteral("layer.json")));
        QVERIFY(layer.open(QIODevice::WriteOnly));
        layer.write(
            R"({"commands": {"rules": [{"decision": "deny", "command": "wget"}]}, "limits": {"memoryBytes": 536870912}})");
        layer.close();
        QVERIFY(daemon.ctl(args("policy", "set", "before-stop", layer.fileName())).exitCode == 0);
        const QJsonObject ownBefore = jsonObject(daemon.ctl(args("policy", "show", "before-stop", "--json")).out)
                                          .value(QStringLiteral("policy"))
                                          .toObject();
        QVERIFY(ownBefore.contains(QStringLiteral("commands")));
        window.show();
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("before-stop")).isValid(); }, 5000));
        QVERIFY(!window.sandboxModel()->sandboxIndex(QStringLiteral("before-stop")).data(Qt::ForegroundRole).isValid());
        QVERIFY(!window.daemonBanner()->isVisible());
        daemon.stop();
        QVERIFY(QTest::qWaitFor([&] { return window.daemonBanner()->isVisible(); }, 10000));
        const QString said = window.daemonBanner()->findChild<QLabel *>()->text();
        // Its sandboxes' rows are as last seen, and look it.
        const QModelIndex last = window.sandboxModel()->sandboxIndex(QStringLiteral("before-stop"));
        QVERIFY(last.isValid());
        QCOMPARE(last.data(Qt::ForegroundRole).value<QColor>(), QColor(0x99, 0x99, 0x99));
        QCOMPARE(last.data(Qt::ToolTipRole).toString(), QStringLiteral("As last seen: its host is not connected"));
        QVERIFY2(said.startsWith(QLatin1String("The Airlock daemon is unreachable: the daemon closed the connection. "
                                               "Its sandboxes are shown as last seen.")),
            qPrintable(said));
        // Retry while it is still down: still down, and the reason is the connection's.
        QVERIFY(!window.retryConnection(true));
        QVERIFY(window.daemonBanner()->isVisible());
        // In plain words: no Qt error names.
        const QString down = window.daemonBanner()->findChild<QLabel *>()->text();
        QVERIFY2(down.contains(QStringLiteral("no daemon is running at ") + daemon.socketPath())
                && !down.contains(QLatin1String("QLocalSocket")),
            qPrintable(down));
        // Back: the window retries on its own, subscribes again and lists what is there.
        QVERIFY(daemon.start());
        QVERIFY(daemon.create(args("--name", "after-restart")) == QStringLiteral("after-restart"));
        QVERIFY(QTest::qWaitFor([&] { return !window.daemonBanner()->isVisible(); }, 15000));
        QVERIFY(attempts >= 2);
        // What ended with it is said, and made again on request: same name, preset and own layer.
        QVERIFY(QTest::qWaitFor([&] { return window.endedBar()->isVisible(); }, 10000));
        QCOMPARE(window.endedBar()->ended().size(), 1);
        QVERIFY2(window.endedBar()->text()->text().startsWith(
                     QLatin1String("1 sandbox ended when the daemon stopped: before-stop.")),
            qPrintable(window.endedBar()->text()->text()));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(window.grab().save(dir + QStringLiteral("/ended.png")));
        QSignalSpy recreated(window.endedBar(), &EndedSandboxesBar::recreated);
        // Its name taken meanwhile: the daemon's refusal is said on the bar, which stays to try again.
        QCOMPARE(daemon.create(args("--name", "before-stop")), QStringLiteral("before-stop"));
        QTest::mouseClick(window.endedBar()->recreateButton(), Qt::LeftButton);
        QVERIFY(recreated.wait(5000));
        QCOMPARE(recreated.at(0).at(0).toInt(), 0);
        QCOMPARE(recreated.at(0).at(1).toInt(), 1);
        QVERIFY2(window.endedBar()->text()->text().startsWith(QLatin1String("Not made again: before-stop: ")),
            qPrintable(window.endedBar()->text()->text()));
        QVERIFY(window.endedBar()->isVisible() && window.endedBar()->recreateButton()->isEnabled());
        QCOMPARE(daemon.ctl(args("rm", "before-stop")).exitCode, 0);
        QTest::mouseClick(window.endedBar()->recreateButton(), Qt::LeftButton);
        QVERIFY(recreated.wait(5000));
        QCOMPARE(recreated.at(1).at(0).toInt(), 1);
        QVERIFY(!window.endedBar()->isVisible());
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->sandboxIndex(QStringLiteral("before-stop")).isValid(); }, 10000));
        const QJsonObject again = jsonObject(daemon.ctl(args("policy", "show", "before-stop", "--json")).out);
        QCOMPARE(again.value(QStringLiteral("policy")).toObject(), ownBefore);
        QCOMPARE(again.value(QStringLiteral("preset")).toString(), QStringLiteral("package-install"));
        QCOMPARE(jsonObject(daemon.ctl(args("policy", "check", "before-stop", "--json", "--", "wget", "x")).out)
                     .value(QStringLiteral("decision"))
                     .toString(),
            QStringLiteral("deny"));
        QCOMPARE(sandboxInfo(daemon, QStringLiteral("before-stop"))
                     .value(QStringLiteral("limits"))
                     .toObject()
                     .value(QStringLiteral("memoryBytes"))
                     .toObject()
                     .value(QStringLiteral("value"))
                     .toDouble(),
            536870912.0);
        QVERIFY(QTest::qWaitFor([&] { return window.selectSandbox(QStringLiteral("after-restart")); }, 10000));
        QTest::keyClicks(window.commandLine(), QStringLiteral("echo live-again"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY(QTest::qWaitFor(
            [&] { return window.outputView()->document().plainText().contains(QLatin1String("live-again\n")); },
            10000));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            daemon.stop();
            QVERIFY(QTest::qWaitFor([&] { return window.daemonBanner()->isVisible(); }, 10000));
            QTest::qWait(100);
            QVERIFY(window.grab().save(dir + QStringLiteral("/banner.png")));
        }
    }

    void windowTitlesLeaveTheApplicationsNameToThePlatform()
    {
        // Qt adds the display name to every title ("History — Airlock"): none says it again.
        QCOMPARE(QGuiApplication::applicationDisplayName(), QStringLiteral("Airlock"));
        MainWindow window(*m_client);
        HistoryWindow *history = window.openHistory();
        LogView log;
        SecretsDialog secrets(*m_client);
        PolicyEditor policy(*m_client, QStringLiteral("gui-a"));
        PolicyEditor defaults(*m_client, QString());
        CreateSandboxDialog create({});
        AddHostDialog host;
        ConnectAgentDialog agent({}, {}, QStringLiteral("airlockctl"));
        ShortcutsDialog shortcuts({});
        const QList<QWidget *> windows{
            &window, history, &log, &secrets, &policy, &defaults, &create, &host, &agent, &shortcuts};
        for (QWidget *w : windows)
            QVERIFY2(!w->windowTitle().contains(QLatin1String("Airlock")), qPrintable(w->windowTitle()));
        QCOMPARE(window.windowTitle(), QString());
        QCOMPARE(history->windowTitle(), QStringLiteral("History"));
        history->close();
    }

    void everyFieldSaysWhatGoesInIt()
    {
        MainWindow window(*m_client);
        HistoryWindow *history = window.openHistory();
        SecretsDialog secrets(*m_client);
        PolicyEditor policy(*m_client, QStringLiteral("gui-a")); // its fields are there before it loads
        CreateSandboxDialog create({});
        AddHostDialog host;
        ConnectAgentDialog agent({}, {QStringLiteral("this computer")}, QStringLiteral("airlockctl"));
        QStringList missing;
        for (QWidget *top : QList<QWidget *>{&window, history, &secrets, &policy, &create, &host, &agent}) {
            QList<QWidget *> fields;
            for (QWidget *w : top->findChildren<QWidget *>()) {
                const bool field = qobject_cast<QLineEdit *>(w) || qobject_cast<QComboBox *>(w)
                    || qobject_cast<QAbstractSpinBox *>(w);
                // A line edit inside a combo box or a spin box is that field's own.
                const bool part = qobject_cast<QComboBox *>(w->parentWidget())
                    || qobject_cast<QAbstractSpinBox *>(w->parentWidget());
                if (field && !part)
                    fields.append(w);
            }
            QVERIFY(!fields.isEmpty());
            for (QWidget *w : fields)
                if (w->toolTip().isEmpty())
                    missing.append(
                        QStringLiteral("%1: %2 %3 (%4)")
                            .arg(QLatin1String(top->metaObject()->className()),
                                QLatin1String(w->metaObject()->className()), w->objectName(),
                                qobject_cast<QLineEdit *>(w) ? qobject_cast<QLineEdit *>(w)->placeholderText()
                                                             : QString()));
        }
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
        history->close();
    }

    void eachMenusMnemonicsAreUniqueAndEveryToolbarActionSaysWhatItDoes()
    {
        MainWindow window(*m_client);
        // An action without a tooltip of its own shows its text: that is what is looked for.
        const auto untold
            = [](const QAction *a) { return a->toolTip() == QString(a->text()).remove(QLatin1Char('&')); };
        QAction probe(QStringLiteral("&New thing…"));
        QVERIFY(untold(&probe));
        for (QToolBar *bar : window.findChildren<QToolBar *>())
            for (QAction *a : bar->actions())
                QVERIFY2(a->isSeparator() || !untold(a), qPrintable(a->text()));
        const QList<QMenu *> menus = window.menuBar()->findChildren<QMenu *>();
        QVERIFY(menus.size() >= 4);
        for (QMenu *menu : menus) {
            QHash<QChar, QString> taken;
            for (QAction *action : menu->actions()) {
                const QString text = action->text();
                const qsizetype at = text.indexOf(QLatin1Char('&'));
                if (action->isSeparator() || at < 0 || at + 1 >= text.size())
                    continue;
                const QChar key = text.at(at + 1).toLower();
                QVERIFY2(!taken.contains(key),
                    qPrintable(QStringLiteral("%1: '%2' and '%3'").arg(menu->title(), taken.value(key), text)));
                taken.insert(key, text);
            }
        }
    }
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
