// SPDX-License-Identifier: Apache-2.0
// The console with a second, "remote" daemon reached over wss:// on loopback (its own data
// directory, --listen, a pinned fingerprint and a token), offscreen: the Add host dialog checks
// what is pasted and shows the fingerprint, the host's row says it is connected with its round
// trip and version, a command typed for a remote sandbox runs there with its output here, an
// agent's request over there arrives in the one approvals dock labelled with the host and is
// decided from here, and a host that goes away says so and comes back on its own.
#include "AddHostDialog.h"
#include "ApprovalsDock.h"
#include "ExecutionReplay.h"
#include "FleetView.h"
#include "GuiTestSettings.h"
#include "HistoryModel.h"
#include "HistoryWindow.h"
#include "MainWindow.h"
#include "OutputDocument.h"
#include "OutputView.h"
#include "PolicyEditor.h"
#include "RemoteHosts.h"
#include "SandboxModel.h"
#include "TestHelpers.h"
#include "TimelineModel.h"
#include "client/HostTokens.h"
#include "util/Version.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDialogButtonBox>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QLocalSocket>
#include <QPushButton>
#include <QSignalSpy>
#include <QSslCertificate>
#include <QStatusBar>
#include <QTableView>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocumentFragment>
#include <QTreeView>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsoleRemote final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_local, m_remote;
    std::unique_ptr<DaemonClient> m_client;
    quint16 m_port = 0;
    QString m_url, m_token;
    HostRegistry::Entry m_entry; // far, as saved by the dialog

    int hostRow(MainWindow &window) const
    {
        for (int row = 0; row < window.sandboxModel()->hostCount(); ++row)
            if (window.sandboxModel()->hostName(row) == QLatin1String("far"))
                return row;
        return -1;
    }
    QString hostState(MainWindow &window) const
    {
        const int row = hostRow(window);
        return row < 0 ? QString() : window.sandboxModel()->index(row, SandboxModel::State).data().toString();
    }

private Q_SLOTS:
    void initTestCase()
    {
        isolateSettings();
        m_local = std::make_unique<TestDaemon>();
        QVERIFY(m_local->start());
        m_client = m_local->connect();
        QVERIFY(m_client);
        // The console's own settings and saved hosts live in the local daemon's private XDG dirs.
        qputenv("XDG_CONFIG_HOME", (m_local->rootDir() + QStringLiteral("/config")).toUtf8());
        m_port = freeLoopbackPort();
        m_remote = std::make_unique<TestDaemon>(
            QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(m_port)});
        QVERIFY(m_remote->start());
        QString error;
        QVERIFY2(
            m_remote->create(args("--name", "over-there"), &error) == QLatin1String("over-there"), qPrintable(error));
        QFile cert(m_remote->dataDir() + QStringLiteral("/tls/cert.pem"));
        QVERIFY(cert.open(QIODevice::ReadOnly));
        const QString fingerprint
            = QString::fromLatin1(QSslCertificate(cert.readAll()).digest(QCryptographicHash::Sha256).toHex());
        m_url = QStringLiteral("wss://127.0.0.1:%1#sha256=%2").arg(m_port).arg(fingerprint);
        QProcess token;
        token.setProcessEnvironment(m_remote->environment());
        token.start(binDir() + QStringLiteral("/airlockd"), args("token", "create", "--name", "console"));
        QVERIFY(token.waitForFinished(10000) && token.exitCode() == 0);
        m_token = QString::fromLatin1(token.readAllStandardOutput().trimmed());
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_remote.reset();
        m_local.reset();
    }

    void addingAHostShowsItsFingerprintAndItsSandboxes()
    {
        AddHostDialog dialog;
        QPushButton *add = dialog.buttons()->button(QDialogButtonBox::Ok);
        dialog.nameEdit()->setText(QStringLiteral("far"));
        dialog.addressEdit()->setText(QStringLiteral("wss://127.0.0.1:%1").arg(m_port)); // no pin: refused, said why
        QVERIFY(!add->isEnabled());
        QVERIFY2(dialog.problemLabel()->text().contains(QLatin1String("#sha256=FINGERPRINT")),
            qPrintable(dialog.problemLabel()->text()));
        dialog.addressEdit()->setText(m_url);
        QVERIFY(dialog.fingerprintLabel()->text().startsWith(
            QStringLiteral("SHA-256 ") + m_url.section(QLatin1Char('='), 1).left(4) + QLatin1Char(' ')));
        QVERIFY(!add->isEnabled()); // still no token
        dialog.tokenEdit()->setText(QStringLiteral("hunter2"));
        QVERIFY(!add->isEnabled());
        QVERIFY(dialog.tokenEdit()->echoMode() == QLineEdit::Password);
        dialog.tokenEdit()->setText(m_token);
        QVERIFY2(add->isEnabled(), qPrintable(dialog.problemLabel()->text()));
        auto saved = dialog.save();
        QVERIFY2(saved, qPrintable(saved ? QString() : saved.error().message));
        QCOMPARE(saved->url, m_url);
        m_entry = *saved;
        QVERIFY(dialog.tokenEdit()->text().isEmpty()); // not kept in the widget once saved
        // Where no keyring answers, the person is told where the token went instead.
        const QString inFile = QStringLiteral("The token of 'far' is kept in ") + hosttokens::filePath()
            + QStringLiteral(" (readable by you alone): no keyring answered (");
        QVERIFY2(saved->token == QLatin1String("file") ? dialog.tokenNotice().startsWith(inFile)
                                                       : dialog.tokenNotice().isEmpty(),
            qPrintable(saved->token + QLatin1Char(' ') + dialog.tokenNotice()));
        QFile hosts(m_local->rootDir() + QStringLiteral("/config/airlock/hosts.json"));
        QVERIFY(hosts.open(QIODevice::ReadOnly));
        QVERIFY(!hosts.readAll().contains(m_token.section(QLatin1Char('_'), 2).toLatin1()));

        // The console, as the composition root builds it: this computer, then the saved host.
        MainWindow window(*m_client);
        QVERIFY(window.remoteHosts()->add(*saved));
        // A second host of the same name is refused: a name picks where decisions and commands go.
        const Status twice = window.remoteHosts()->add(*saved);
        QVERIFY(!twice);
        QCOMPARE(twice.error().code, ErrorCode::AlreadyExists);
        QCOMPARE(window.sandboxModel()->hostCount(), 2);
        window.show();
        QVERIFY2(QTest::qWaitFor([&] { return hostState(window) == QLatin1String("connected"); }, 10000),
            qPrintable(hostState(window)));
        // The round trip and the version are in the tooltip, not the column.
        const QString details = QTextDocumentFragment::fromHtml(
            window.sandboxModel()->index(hostRow(window), SandboxModel::State).data(Qt::ToolTipRole).toString())
                                    .toPlainText();
        QVERIFY2(details.startsWith(QLatin1String("Round trip "))
                && details.contains(QStringLiteral(" ms, airlockd ") + airlock::version() + QLatin1Char('\n')),
            qPrintable(details));
        const int row = hostRow(window);
        QCOMPARE(window.sandboxModel()->index(row, SandboxModel::Network).data().toString(),
            QStringLiteral("wss://127.0.0.1:%1").arg(m_port));
        const QString pinned = QTextDocumentFragment::fromHtml(
            window.sandboxModel()->index(row, SandboxModel::Name).data(Qt::ToolTipRole).toString())
                                   .toPlainText();
        QVERIFY2(pinned.endsWith(m_url),
            qPrintable(pinned)); // the pin, in full (as plain text: a remote daemon's words are never rich text)
        QVERIFY(QTest::qWaitFor(
            [&] { return window.sandboxModel()->rowCount(window.sandboxModel()->index(row, 0)) == 1; }, 10000));

        // A command for the remote sandbox runs there; its output comes here.
        const QModelIndex remoteSandbox = window.sandboxModel()->index(0, 0, window.sandboxModel()->index(row, 0));
        QCOMPARE(remoteSandbox.data().toString(), QStringLiteral("over-there"));
        window.fleet()->setCurrent(remoteSandbox);
        QCOMPARE(&window.currentClient(), window.remoteHosts()->client(QStringLiteral("far")));
        QTest::keyClicks(window.commandLine(), QStringLiteral("printf 'ran on %s\\n' $(hostname)"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        const OutputDocument &doc = window.outputView()->document();
        QVERIFY2(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("ran on over-there\n")); }, 10000),
            qPrintable(doc.plainText()));
        QVERIFY(m_remote->ctl(args("history", "--json")).out.contains("ran on %s"));
        QVERIFY(!m_local->ctl(args("history", "--json")).out.contains("ran on %s"));

        // The history is that host's own.
        HistoryWindow *history = window.openHistory();
        QVERIFY(history->windowTitle().endsWith(QStringLiteral(" — far")));
        QVERIFY(QTest::qWaitFor(
            [&] { return history->model()->rowCount() == 1 && !history->model()->isLoading(); }, 10000));
        QVERIFY(history->model()
                    ->execution(0)
                    .value(QStringLiteral("argv"))
                    .toArray()
                    .last()
                    .toString()
                    .startsWith(QLatin1String("printf 'ran on")));
        history->close();

        // An agent over there asks; the card says which host; Allow here lets it run there.
        auto agent = std::make_unique<QProcess>();
        agent->setProcessEnvironment(m_remote->environment());
        agent->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "over-there", "-n", "--", "printf",
                "approved remotely\\n"));
        QVERIFY(QTest::qWaitFor([&] { return window.approvals()->cards().size() == 1; }, 10000));
        ApprovalCard *card = window.approvals()->cards().first();
        QCOMPARE(card->request().value(QStringLiteral("host")).toString(), QStringLiteral("far"));
        const auto labels = card->findChildren<QLabel *>();
        QVERIFY(std::any_of(labels.begin(), labels.end(),
            [](const QLabel *l) { return l->text().startsWith(QLatin1String("<b>far</b>: bot in")); }));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            QTest::qWait(100);
            QVERIFY(window.grab().save(dir + QStringLiteral("/remote-host.png")));
        }
        QVERIFY(QTest::qWaitFor([&] { return card->settled(); }, 3000)); // a card that just came ignores clicks
        QTest::mouseClick(card->allowButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return agent->state() == QProcess::NotRunning; }, 10000));
        QCOMPARE(agent->exitCode(), 0);
        QCOMPARE(agent->readAllStandardOutput(), QByteArray("approved remotely\n"));

        // The connection drops mid-stream (its end is cut here; the host and the command go on):
        // the gap is shown while it waits, then the whole output once it is back, each line once
        // and in order.
        QTest::keyClicks(window.commandLine(),
            QStringLiteral("i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo tick $i; sleep 0.05; done"));
        QTest::keyClick(window.commandLine(), Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return doc.plainText().contains(QLatin1String("tick 5\n")); }, 10000));
        window.remoteHosts()->client(QStringLiteral("far"))->findChild<QLocalSocket *>()->abort();
        QVERIFY2(
            QTest::qWaitFor(
                [&] { return doc.plainText().contains(QLatin1String("the connection to this host was lost")); }, 5000),
            qPrintable(doc.plainText().right(500)));
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         return doc.plainText().contains(QLatin1String("tick 60\n"))
                             && !doc.plainText().contains(QLatin1String("was lost"));
                     },
                     20000),
            qPrintable(doc.plainText().right(800)));
        const QString shown = doc.plainText();
        qsizetype at = 0;
        for (int i = 1; i <= 60; ++i) {
            const QString line = QStringLiteral("tick %1\n").arg(i);
            const qsizetype found = shown.indexOf(line); // the first anywhere: after the one before it, and only once
            QVERIFY2(found >= at && shown.indexOf(line, found + 1) < 0, qPrintable(line));
            at = found + line.size();
        }

        // The host goes away: its row says so (and why, in the tooltip); it comes back by itself.
        m_remote->stop();
        QVERIFY2(QTest::qWaitFor(
                     [&] { return hostState(window).startsWith(QLatin1String("unreachable, retrying")); }, 10000),
            qPrintable(hostState(window)));
        QVERIFY(!window.sandboxModel()->index(row, SandboxModel::State).data(Qt::ToolTipRole).toString().isEmpty());
        QVERIFY(m_remote->start());
        QVERIFY2(QTest::qWaitFor([&] { return hostState(window) == QLatin1String("connected"); }, 20000),
            qPrintable(hostState(window)));
    }

    // Each daemon keeps its own history; the window shows all connected hosts' merged by time,
    // exactly, though their pages end at different times, and each row asks its own host for its
    // output, timeline and export.
    void testConnectionSaysWhoAnswersBeforeAnythingIsSaved()
    {
        const QString hostsFile = m_local->configDir() + QStringLiteral("/hosts.json");
        QFile before(hostsFile);
        QVERIFY(before.open(QIODevice::ReadOnly));
        const QByteArray saved = before.readAll();
        before.close();
        AddHostDialog dialog;
        dialog.nameEdit()->setText(QStringLiteral("tested"));
        dialog.addressEdit()->setText(m_url);
        dialog.tokenEdit()->setText(m_token);
        QVERIFY2(dialog.testConnection(), qPrintable(dialog.testLabel()->text()));
        const QString fingerprint = m_url.section(QStringLiteral("sha256="), 1);
        QString groups;
        for (int i = 0; i < fingerprint.size(); i += 4)
            groups += (i ? QStringLiteral(" ") : QString()) + fingerprint.mid(i, 4);
        QVERIFY2(dialog.testLabel()->text().startsWith(QLatin1String("Connected in "))
                && dialog.testLabel()->text().contains(QLatin1String(" sandbox"))
                && dialog.testLabel()->text().contains(
                    QStringLiteral("Presented: SHA-256 ") + groups + QStringLiteral(" (the one pasted)")),
            qPrintable(dialog.testLabel()->text()));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            dialog.show();
            QTest::qWait(100);
            QVERIFY(dialog.grab().save(dir + QStringLiteral("/add-host-test.png")));
        }
        // Another certificate than the one pasted: refused, both shown side by side to compare.
        const QString other = QString(64, QLatin1Char('0'));
        dialog.addressEdit()->setText(
            m_url.section(QStringLiteral("sha256="), 0, 0) + QStringLiteral("sha256=") + other);
        QVERIFY(!dialog.testConnection());
        QVERIFY2(dialog.testLabel()->text().contains(QStringLiteral("Presented: SHA-256 ") + groups)
                && dialog.testLabel()->text().contains(QStringLiteral("Pasted:    SHA-256 0000 0000")),
            qPrintable(dialog.testLabel()->text()));
        // A token the daemon does not know: said, nothing saved.
        dialog.addressEdit()->setText(m_url);
        dialog.tokenEdit()->setText(QStringLiteral("alk_") + QString(43, QLatin1Char('A')));
        QVERIFY(!dialog.testConnection());
        QVERIFY2(dialog.testLabel()->text().startsWith(QLatin1String("Not connected: ")),
            qPrintable(dialog.testLabel()->text()));
        QVERIFY(before.open(QIODevice::ReadOnly));
        QCOMPARE(before.readAll(), saved);
    }

    void aTokenLimitedToASandboxStillSeesWhatIsInheritedInItsPolicy()
    {
        // Such a token is not shown the person's defaults as they are now ("below"): the editor
        // shows what is in force less this layer's, each with its layer, and applies none of it.
        QCOMPARE(m_remote->create(args("--name", "limited")), QStringLiteral("limited"));
        QProcess token;
        token.setProcessEnvironment(m_remote->environment());
        token.start(binDir() + QStringLiteral("/airlockd"),
            args("token", "create", "--name", "scoped-console", "--scope", "sandbox:limited"));
        QVERIFY(token.waitForFinished(10000));
        QVERIFY2(token.exitCode() == 0, token.readAllStandardError().constData());
        DaemonClient scoped;
        ConnectOptions options;
        options.host = m_url;
        options.token = QString::fromLatin1(token.readAllStandardOutput().trimmed());
        options.autostart = false;
        QVERIFY(scoped.connectToDaemon(options));
        PolicyEditor editor(scoped, QStringLiteral("limited"));
        QVERIFY(QTest::qWaitFor([&] { return editor.isLoaded(); }, 10000));
        const QList<InheritedRow> rules = editor.commandRules()->inherited();
        QVERIFY2(rules.size() >= 8, qPrintable(QString::number(rules.size())));
        QCOMPARE(rules.first().layer, QStringLiteral("preset:locked"));
        QCOMPARE(editor.commandRules()->rows().size(), 0);
        QCOMPARE(editor.edited(), QJsonObject());
        QCOMPARE(m_remote->ctl(args("rm", "limited")).exitCode, 0);
    }

    void hostsFollowTheSavedListAndAreEditedOrRemovedOnTheirRow()
    {
        MainWindow window(*m_client);
        // Hosts come and go under the fleet's models: each stays a well-formed model throughout.
        QAbstractItemModelTester source(window.sandboxModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester shown(
            window.sandboxTree()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(window.remoteHosts()->follow(m_local->configDir() + QStringLiteral("/hosts.json")).isEmpty());
        QVERIFY(hostRow(window) > 0); // far, as the first test saved it
        window.show();
        QVERIFY2(QTest::qWaitFor([&] { return hostState(window) == QLatin1String("connected"); }, 10000),
            qPrintable(hostState(window)));
        // The CLI takes it out: the console follows, and its row is no longer shown.
        const int row = hostRow(window);
        QCOMPARE(m_local->ctl(args("hosts", "rm", "far")).exitCode, 0);
        QVERIFY(QTest::qWaitFor([&] { return window.sandboxModel()->isRetired(row); }, 5000));
        QVERIFY(!window.remoteHosts()->client(QStringLiteral("far")));
        const auto shownHosts = [&] {
            QStringList names;
            const QAbstractItemModel *shown = window.sandboxTree()->model();
            for (int r = 0; r < shown->rowCount(); ++r)
                names.append(shown->index(r, 0).data().toString());
            return names;
        };
        QCOMPARE(shownHosts(), QStringList{QStringLiteral("This computer")});
        // The CLI adds it again under another name: connected, with its sandboxes.
        QTemporaryDir dir;
        QFile tokenFile(dir.filePath(QStringLiteral("token")));
        QVERIFY(tokenFile.open(QIODevice::WriteOnly) && tokenFile.write(m_token.toLatin1()) > 0);
        tokenFile.close();
        QCOMPARE(m_local
                     ->ctl(args("hosts", "add", "yonder")
                         + QStringList{m_url, QStringLiteral("--token-file"), tokenFile.fileName()})
                     .exitCode,
            0);
        QVERIFY(QTest::qWaitFor(
            [&] {
                return window.remoteHosts()->client(QStringLiteral("yonder"))
                    && window.remoteHosts()->client(QStringLiteral("yonder"))->isConnected();
            },
            10000));
        QCOMPARE(shownHosts(), (QStringList{QStringLiteral("This computer"), QStringLiteral("yonder")}));
        // Edited on its row: renamed, the saved token kept (left empty), reconnected.
        int yonder = -1;
        for (int r = 0; r < window.sandboxModel()->hostCount(); ++r)
            if (window.sandboxModel()->hostName(r) == QLatin1String("yonder"))
                yonder = r;
        QVERIFY(yonder > 0);
        AddHostDialog edit(&window, window.remoteHosts()->entry(yonder));
        QCOMPARE(edit.addressEdit()->text(), m_url);
        QVERIFY(edit.tokenEdit()->text().isEmpty());
        // Another address: the saved token does not go there unless it is typed again.
        edit.addressEdit()->setText(QStringLiteral("wss://127.0.0.1:%1#sha256=%2")
                                        .arg(m_port + 1)
                                        .arg(m_url.section(QStringLiteral("sha256="), 1)));
        QVERIFY(!edit.buttons()->button(QDialogButtonBox::Ok)->isEnabled());
        QVERIFY2(edit.problemLabel()->text().startsWith(QLatin1String("The token is what")),
            qPrintable(edit.problemLabel()->text()));
        edit.addressEdit()->setText(m_url);
        edit.nameEdit()->setText(QStringLiteral("beyond"));
        QVERIFY2(edit.buttons()->button(QDialogButtonBox::Ok)->isEnabled(), qPrintable(edit.problemLabel()->text()));
        QVERIFY2(edit.testConnection(), qPrintable(edit.testLabel()->text())); // with the saved token
        auto renamed = edit.save();
        QVERIFY2(renamed, qPrintable(renamed ? QString() : renamed.error().message));
        QVERIFY(!renamed->token.isEmpty());
        QVERIFY(QTest::qWaitFor(
            [&] {
                return window.remoteHosts()->client(QStringLiteral("beyond"))
                    && window.remoteHosts()->client(QStringLiteral("beyond"))->isConnected();
            },
            10000));
        QVERIFY(!window.remoteHosts()->client(QStringLiteral("yonder")));
        QCOMPARE(shownHosts(), (QStringList{QStringLiteral("This computer"), QStringLiteral("beyond")}));
        // Removed on its row: gone from the console and the saved list; the far daemon runs on.
        int beyond = -1;
        for (int r = 0; r < window.sandboxModel()->hostCount(); ++r)
            if (window.sandboxModel()->hostName(r) == QLatin1String("beyond"))
                beyond = r;
        QVERIFY(window.removeHost(beyond, false));
        QCOMPARE(shownHosts(), QStringList{QStringLiteral("This computer")});
        QVERIFY(!m_local->ctl(args("hosts", "ls")).out.contains("beyond"));
        QCOMPARE(m_remote->ctl(args("ls")).exitCode, 0);
        // Back as it was for the tests after this one.
        QVERIFY(m_local
                    ->ctl(args("hosts", "add", "far")
                        + QStringList{m_url, QStringLiteral("--token-file"), tokenFile.fileName()})
                    .exitCode
            == 0);
    }

    void historyMergesEveryConnectedHostByTime()
    {
        QVERIFY(!m_entry.url.isEmpty());
        QString error;
        QVERIFY2(m_local->create(args("--name", "near"), &error) == QLatin1String("near"), qPrintable(error));
        QVERIFY2(m_remote->create(args("--name", "yonder"), &error) == QLatin1String("yonder"), qPrintable(error));
        // Oldest first: L0 L1 R0 R1 R2 R3 L2 L3 (L1 exits 5, R2 exits 3), each started after the last.
        const std::pair<char, int> order[]
            = {{'L', 0}, {'L', 1}, {'R', 0}, {'R', 1}, {'R', 2}, {'R', 3}, {'L', 2}, {'L', 3}};
        for (const auto &[host, n] : order) {
            const int code = host == 'L' && n == 1 ? 5 : host == 'R' && n == 2 ? 3 : 0;
            const TestDaemon &d = host == 'L' ? *m_local : *m_remote;
            const CliResult r
                = d.ctl(args("--run", "merged", "exec", host == 'L' ? "near" : "yonder", "-n", "--", "sh", "-c")
                    + QStringList{QStringLiteral("echo %1%2; exit %3").arg(QLatin1Char(host)).arg(n).arg(code)});
            QVERIFY2(r.exitCode == code, qPrintable(r.describe()));
            QTest::qWait(5); // distinct start times
        }

        MainWindow window(*m_client);
        QVERIFY(window.remoteHosts()->add(m_entry));
        QVERIFY2(QTest::qWaitFor([&] { return hostState(window) == QLatin1String("connected"); }, 10000),
            qPrintable(hostState(window)));
        HistoryWindow *history = window.openHistory();
        QVERIFY(history->hostChooser()->isVisibleTo(history));
        QCOMPARE(history->hostChooser()->count(), 3); // all, this computer, far
        QCOMPARE(history->shownHost(), window.sandboxModel()->hostName(0));
        QVERIFY(history->table()->isColumnHidden(HistoryModel::Host));
        HistoryModel *model = history->model();
        model->setPageSize(2);
        history->setFilter({}, QStringLiteral("merged"));
        history->showHost({});
        QCOMPARE(history->windowTitle(), QStringLiteral("History — all connected hosts"));
        QVERIFY(model->isMerged());
        QVERIFY(!history->table()->isColumnHidden(HistoryModel::Host));
        auto shown = [&] {
            QStringList rows;
            for (int row = 0; row < model->rowCount(); ++row)
                rows.append(model->index(row, HistoryModel::Host).data().toString() + QLatin1Char(' ')
                    + model->execution(row)
                          .value(QStringLiteral("argv"))
                          .toArray()
                          .last()
                          .toString()
                          .section(QLatin1Char(';'), 0, 0));
            return rows.join(QStringLiteral(", "));
        };
        auto fetchAll = [&] {
            return QTest::qWaitFor(
                [&] {
                    if (!model->isLoading() && model->canFetchMore())
                        model->fetchMore();
                    return !model->isLoading() && !model->canFetchMore();
                },
                15000);
        };
        // The first pages: this computer's holds L3 L2 and far's R3 R2; L2 is the last row that
        // may be shown before this computer's next page (which holds L1, newer than R1).
        QVERIFY(QTest::qWaitFor([&] { return !model->isLoading() && model->rowCount() > 0; }, 10000));
        const QString here = window.sandboxModel()->hostName(0);
        QCOMPARE(shown(), QStringLiteral("%1 echo L3, %1 echo L2").arg(here));
        QVERIFY(fetchAll());
        QCOMPARE(shown(),
            QStringLiteral(
                "%1 echo L3, %1 echo L2, far echo R3, far echo R2, far echo R1, far echo R0, %1 echo L1, %1 echo L0")
                .arg(here));
        QVERIFY2(history->statusBar()->currentMessage().contains(QLatin1String("8 executions from 2 hosts")),
            qPrintable(history->statusBar()->currentMessage()));

        // Opening far's row replays far's output and shows far's timeline; its run exports from far.
        const int r1 = 4;
        QCOMPARE(model->sourceOf(r1).name, QStringLiteral("far"));
        QSignalSpy replayed(history->replay(), &ExecutionReplay::finished);
        history->table()->setCurrentIndex(model->index(r1, HistoryModel::Command));
        QVERIFY(replayed.wait(10000));
        QVERIFY2(history->outputView()->document().plainText().contains(QLatin1String("R1\n")),
            qPrintable(history->outputView()->document().plainText()));
        QCOMPARE(history->timeline()->sources().value(0).name, QStringLiteral("far"));
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(history->grab().save(dir + QStringLiteral("/history-all-hosts.png")));
        QVERIFY(QTest::qWaitFor(
            [&] { return !history->timeline()->isLoading() && history->timeline()->rowCount() > 0; }, 10000));
        for (int row = 0; row < history->timeline()->rowCount(); ++row)
            QVERIFY(!history->timeline()
                         ->index(row, TimelineModel::Details)
                         .data()
                         .toString()
                         .contains(QLatin1String("echo L")));
        QTemporaryDir dir;
        bool exported = false;
        history->exportRun(QStringLiteral("merged"), dir.filePath(QStringLiteral("far.jsonl")),
            [&](bool ok, const QString &) { exported = ok; });
        QVERIFY(QTest::qWaitFor([&] { return exported; }, 10000));
        QFile bundle(dir.filePath(QStringLiteral("far.jsonl")));
        QVERIFY(bundle.open(QIODevice::ReadOnly));
        const QByteArray records = bundle.readAll();
        QVERIFY(records.contains("echo R3") && !records.contains("echo L3"));

        // Sorted by exit code, high first: across hosts, then in start order.
        history->table()->sortByColumn(HistoryModel::Exit, Qt::DescendingOrder);
        QVERIFY(fetchAll());
        QCOMPARE(shown(),
            QStringLiteral(
                "%1 echo L1, far echo R2, %1 echo L3, %1 echo L2, far echo R3, far echo R1, far echo R0, %1 echo L0")
                .arg(here));
        // By host: each host's together.
        history->table()->sortByColumn(HistoryModel::Host, Qt::AscendingOrder);
        QVERIFY(fetchAll());
        QCOMPARE(shown().count(QStringLiteral("far ")), 4);
        QVERIFY(shown().startsWith(QStringLiteral("far echo R3, far echo R2, far echo R1, far echo R0, "))
            == (QStringLiteral("far") < here));
        history->table()->sortByColumn(HistoryModel::Id, Qt::DescendingOrder);

        // far drops: all connected hosts is this computer's alone, and the window says far is not
        // connected; far back, its rows are back.
        window.remoteHosts()->client(QStringLiteral("far"))->findChild<QLocalSocket *>()->abort();
        QVERIFY(
            QTest::qWaitFor([&] { return !model->isMerged() && !model->isLoading() && model->rowCount() > 0; }, 10000));
        QVERIFY(fetchAll());
        QCOMPARE(model->rowCount(), 4);
        QVERIFY2(history->statusBar()->currentMessage().endsWith(QStringLiteral("· not connected: far")),
            qPrintable(history->statusBar()->currentMessage()));
        QCOMPARE(history->hostChooser()->itemText(history->hostChooser()->findData(QStringLiteral("far"))),
            QStringLiteral("far (not connected)"));
        QVERIFY(QTest::qWaitFor([&] { return model->isMerged(); }, 15000));
        QVERIFY(fetchAll());
        QCOMPARE(model->rowCount(), 8);

        // A host that cannot answer drops out of the merge, said so; the rest is shown.
        HistoryModel partial(*m_client);
        HistoryModel::Filter merged;
        merged.run = QStringLiteral("merged");
        partial.setQuery({{here, m_client.get()}, {QStringLiteral("gone"), nullptr}}, merged);
        QVERIFY(QTest::qWaitFor([&] { return !partial.isLoading() && partial.rowCount() == 4; }, 10000));
        QCOMPARE(partial.unavailable(), QStringList{QStringLiteral("gone: not connected")});
        QVERIFY(!partial.canFetchMore());
    }
};

QTEST_MAIN(TestConsoleRemote)
#include "tst_console_remote.moc"
