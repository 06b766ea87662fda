// SPDX-License-Identifier: Apache-2.0
// The console's history against a real daemon, offscreen: search finds an old execution by its
// output and replays it byte-exact, its run's timeline, Export run, sorting and paging in the
// daemon (QAbstractItemModelTester watching), and a client that asks and never reads.
#include "ExecutionReplay.h"
#include "GuiTestSettings.h"
#include "HistoryModel.h"
#include "HistoryWindow.h"
#include "OutputView.h"
#include "TestHelpers.h"
#include "TimelineModel.h"
#include "rpc/Protocol.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDateTime>
#include <QDateTimeEdit>
#include <QHeaderView>
#include <QLocalSocket>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::test;
using namespace airlock::ui;

class TestConsoleHistory final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<DaemonClient> m_client;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(startConsoleTest(m_daemon, m_client));
        QCOMPARE(m_daemon->create(args("--name", "gui-a")), QStringLiteral("gui-a"));
        for (const char *word : {"one", "two"})
            QCOMPARE(execIn(*m_daemon, QStringLiteral("gui-a"), args("echo", word)).exitCode, 0);
    }
    void cleanupTestCase()
    {
        m_client.reset();
        m_daemon.reset();
    }

    void historySearchFindsAnOldExecutionAndReplaysItByteExact()
    {
        // An execution whose output holds what a view must not obey and more than one page of the
        // store's answers (1 MiB), in a named run; then a newer one, so the search has to find it.
        const QString script = QStringLiteral(
            "printf 'xylo%s\\n' graph; printf 'esc \\033]52;c;ZXZpbA==\\007 bad \\377 nul \\000 cr\\rend\\n'; "
            "seq 1 60000 | sed 's/$/ padding padding padding/'; echo to-stderr >&2; printf 'no newline at the end'");
        const CliResult old = m_daemon->ctl(args("--run", "hist-run", "exec", "gui-a", "-n", "--", "sh", "-c", script));
        QVERIFY2(old.exitCode == 0 && old.out.size() > 1500000, qPrintable(old.describe()));
        QCOMPARE(old.err, QByteArray("to-stderr\n"));
        QCOMPARE(execIn(*m_daemon, QStringLiteral("gui-a"), args("echo", "newer")).exitCode, 0);

        HistoryWindow history(*m_client);
        QAbstractItemModelTester executions(history.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester timeline(history.timeline(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        history.show();
        QVERIFY(
            QTest::qWaitFor([&] { return history.model()->rowCount() >= 2 && !history.model()->isLoading(); }, 10000));
        // By time: all of these ran within the last hour.
        const int everything = history.model()->rowCount();
        history.timeFilter()->setCurrentIndex(1);
        QVERIFY(QTest::qWaitFor([&] { return !history.model()->isLoading(); }, 10000));
        QCOMPARE(history.model()->rowCount(), everything);
        QVERIFY(history.model()->filter().sinceMs > QDateTime::currentMSecsSinceEpoch() - 3601000);
        // Between two moments: around now, everything; ending an hour ago, nothing.
        history.timeFilter()->setCurrentIndex(history.timeFilter()->findData(-2));
        QVERIFY(history.fromEdit()->isVisibleTo(&history) && history.untilEdit()->isVisibleTo(&history));
        const QDateTime now = QDateTime::currentDateTime();
        history.fromEdit()->setDateTime(now.addSecs(-3600));
        history.untilEdit()->setDateTime(now.addSecs(3600));
        QVERIFY(QTest::qWaitFor(
            [&] { return history.model()->filter().untilMs > 0 && !history.model()->isLoading(); }, 10000));
        QCOMPARE(history.model()->rowCount(), everything);
        history.untilEdit()->setDateTime(now.addSecs(-3000));
        QVERIFY(QTest::qWaitFor(
            [&] {
                return history.model()->filter().untilMs < now.toMSecsSinceEpoch() && !history.model()->isLoading();
            },
            10000));
        QCOMPARE(history.model()->rowCount(), 0);
        QVERIFY(history.model()->filter().sinceMs >= now.addSecs(-3601).toMSecsSinceEpoch());
        history.timeFilter()->setCurrentIndex(0);
        QVERIFY(!history.fromEdit()->isVisibleTo(&history));
        // The word is only in the output (the command spells it in two halves): full-text search.
        history.setFilter({}, {}, {}, QStringLiteral("xylograph"));
        QVERIFY(
            QTest::qWaitFor([&] { return !history.model()->isLoading() && history.model()->rowCount() == 1; }, 10000));
        const QJsonObject found = history.model()->execution(0);
        QCOMPARE(found.value(QStringLiteral("run")).toString(), QStringLiteral("hist-run"));
        QCOMPARE(found.value(QStringLiteral("argv")).toArray().last().toString(), script);

        QByteArray streams[3], order;
        connect(history.replay(), &ExecutionReplay::chunk, this, [&](int stream, const QByteArray &data) {
            streams[stream == 2 ? 2 : 1] += data;
            order += char('0' + stream);
        });
        QSignalSpy done(history.replay(), &ExecutionReplay::finished);
        history.table()->setCurrentIndex(history.model()->index(0, HistoryModel::Command)); // as a click opens it
        QVERIFY(done.wait(20000));
        QCOMPARE(streams[1].size(), old.out.size());
        QVERIFY(streams[1] == old.out); // byte for byte, NUL, \377 and escape sequences included
        QCOMPARE(streams[2], old.err);
        QVERIFY2(order.count('1') > 1, "expected the output in more than one page");
        // In the view: the same document live output makes (inert sequences, visible bytes), framed
        // by the command and how it ended.
        OutputDocument expected;
        expected.append(1, old.out.left(200));
        const QString text = history.outputView()->document().plainText();
        QVERIFY2(text.contains(expected.plainText().section(QLatin1Char('\n'), 0, 2)), qPrintable(text.left(400)));
        // "esc …" rewritten from its start by "end", as a terminal would; the inert pieces stay whole.
        QVERIFY(text.contains(QLatin1String("\nend \\x1b]52;c;ZXZpbA==\\x07 bad \\xff nul \\x00 cr\n")));
        QVERIFY(
            text.contains(QLatin1String("no newline at the end\n"))); // stdout and stderr interleave as they arrived
        QVERIFY2(text.endsWith(QLatin1String("\n[#") + QString::number(found.value(QStringLiteral("exec")).toInt())
                     + QLatin1String(" exit 0]\n")),
            qPrintable(text.right(100)));

        // Its run's timeline joins the execution's start and end; the categories filter in the daemon.
        QVERIFY(QTest::qWaitFor(
            [&] { return !history.timeline()->isLoading() && history.timeline()->rowCount() >= 2; }, 10000));
        QStringList kinds;
        for (int row = 0; row < history.timeline()->rowCount(); ++row)
            kinds.append(history.timeline()->eventAt(row).value(QStringLiteral("kind")).toString());
        QVERIFY2(kinds.contains(QStringLiteral("exec.started")) && kinds.contains(QStringLiteral("exec.exited")),
            qPrintable(kinds.join(QLatin1Char(' '))));
        QVERIFY(history.timeline()
                    ->data(history.timeline()->index(
                        int(kinds.indexOf(QStringLiteral("exec.started"))), TimelineModel::Details))
                    .toString()
                    .contains(QLatin1String("$ sh -c ")));
        history.timeline()->setCategories(TimelineModel::Network);
        QVERIFY(QTest::qWaitFor([&] { return !history.timeline()->isLoading(); }, 10000));
        QCOMPARE(history.timeline()->rowCount(), 0); // this run opened no connection

        // Export run: the same bundle `airlockctl export` writes, and it verifies.
        if (const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR"); !dir.isEmpty()) {
            history.timeline()->setCategories(TimelineModel::All);
            QTest::qWait(150);
            QVERIFY(history.grab().save(dir + QStringLiteral("/history.png")));
            history.tabs()->setCurrentIndex(1);
            QTest::qWait(100);
            QVERIFY(history.grab().save(dir + QStringLiteral("/timeline.png")));
            history.tabs()->setCurrentIndex(0);
        }
        QTemporaryDir dir;
        const QString bundle = dir.filePath(QStringLiteral("hist-run.jsonl"));
        bool exported = false, ok = false;
        history.exportRun(QStringLiteral("hist-run"), bundle, [&](bool success, const QString &) {
            exported = true;
            ok = success;
        });
        QVERIFY(QTest::qWaitFor([&] { return exported; }, 20000));
        QVERIFY(ok);
        const CliResult verified = m_daemon->ctl(args("export", "--verify", bundle));
        QVERIFY2(verified.exitCode == 0 && verified.out.startsWith("ok: "), qPrintable(verified.describe()));
        // A run that does not exist: the daemon's reason, and no file left behind.
        exported = false;
        QString message;
        history.exportRun(QStringLiteral("no-such-run"), dir.filePath(QStringLiteral("none.jsonl")),
            [&](bool success, const QString &m) {
                exported = true;
                ok = success;
                message = m;
            });
        QVERIFY(QTest::qWaitFor([&] { return exported; }, 10000));
        QVERIFY(!ok);
        QVERIFY2(message.contains(QLatin1String("no run named 'no-such-run'")), qPrintable(message));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("none.jsonl"))));
    }

    void aClientThatAsksAndNeverReadsCannotGrowTheDaemon()
    {
        // 400 requests for a megabyte each (the 1.7 MB execution above), never read: the daemon
        // stops reading this client's requests once 32 MiB of answers wait, and stays small.
        const QJsonArray found = jsonObject(m_daemon->ctl(args("search", "xylograph", "--json")).out)
                                     .value(QStringLiteral("executions"))
                                     .toArray();
        QVERIFY(!found.isEmpty());
        const double execution = found.first().toObject().value(QStringLiteral("id")).toDouble();
        QLocalSocket raw;
        raw.connectToServer(m_daemon->socketPath());
        QVERIFY(raw.waitForConnected(5000));
        raw.setReadBufferSize(4096); // and this client hardly reads at all
        raw.write(rpc::encodeJson(rpc::makeRequest(1, QStringLiteral("hello"),
            {{QStringLiteral("protocol"), rpc::kProtocolVersion}, {QStringLiteral("client"), QStringLiteral("hog")}})));
        const qint64 before = procStatusField(m_daemon->pid(), "VmRSS:");
        // In waves small enough that the queries are never refused as busy: only the pause holds them.
        for (int wave = 0; wave < 40; ++wave) {
            QByteArray requests;
            for (int i = 0; i < 10; ++i)
                requests += rpc::encodeJson(rpc::makeRequest(
                    2 + wave * 10 + i, QStringLiteral("history.output"), {{QStringLiteral("execution"), execution}}));
            raw.write(requests);
            QTest::qWait(100);
        }
        QTest::qWait(1000);
        const qint64 during = procStatusField(m_daemon->pid(), "VmRSS:");
        QVERIFY2(during - before < 150 * 1024,
            qPrintable(QStringLiteral("daemon RSS grew from %1 to %2 kB").arg(before).arg(during)));
        // Everyone else is still answered.
        QVERIFY(m_client->call(QStringLiteral("sandbox.list")));
        raw.abort();
    }

    // The arrow only where the rows are in that order: Run and Command do not sort.
    void onlyColumnsThatSortShowAnArrow()
    {
        HistoryWindow history(*m_client);
        QHeaderView *header = history.table()->horizontalHeader();
        QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::Id));
        for (int column : {HistoryModel::Command, HistoryModel::Run}) {
            QVERIFY(!HistoryModel::sorts(column));
            history.table()->sortByColumn(column, Qt::AscendingOrder); // as a click on its header does
            QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::Id));
            QCOMPARE(header->sortIndicatorOrder(), Qt::DescendingOrder);
            QVERIFY(history.model()
                        ->headerData(column, Qt::Horizontal, Qt::ToolTipRole)
                        .toString()
                        .startsWith(QLatin1String("Not sorted")));
        }
        history.table()->sortByColumn(HistoryModel::Status, Qt::AscendingOrder);
        QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::Status));
        history.table()->sortByColumn(HistoryModel::Command, Qt::DescendingOrder);
        QCOMPARE(header->sortIndicatorSection(), int(HistoryModel::Status));
        QCOMPARE(header->sortIndicatorOrder(), Qt::AscendingOrder);
    }

    void historySortsAndPagesInTheDaemon()
    {
        // A command that looks like markup: its tooltip is plain text (Qt would render it as rich text).
        QCOMPARE(execIn(*m_daemon, QStringLiteral("gui-a"), args("echo", "<h3>big</h3>")).exitCode, 0);
        HistoryModel model(*m_client);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy pages(&model, &HistoryModel::loaded);
        model.setPageSize(2);
        model.setFilter({QStringLiteral("gui-a"), {}, {}, {}, {}});
        QVERIFY(QTest::qWaitFor([&] { return !model.isLoading(); }, 10000));
        while (model.canFetchMore()) {
            model.fetchMore();
            QVERIFY(QTest::qWaitFor([&] { return !model.isLoading(); }, 10000));
        }
        const int all = model.rowCount();
        QVERIFY(all >= 4);
        const QString tip = model.data(model.index(0, HistoryModel::Command), Qt::ToolTipRole)
                                .toString()
                                .replace(QChar::Nbsp, QLatin1Char(' '));
        QVERIFY2(tip.contains(QLatin1String("&lt;h3&gt;big&lt;/h3&gt;")) && !tip.contains(QLatin1String("<h3>")),
            qPrintable(tip));
        QCOMPARE(pages.size(), (all + 1) / 2); // two rows a page (the tester fetches too)
        QList<qint64> ids;
        for (int row = 0; row < all; ++row)
            ids.append(qint64(model.execution(row).value(QStringLiteral("id")).toDouble()));
        QVERIFY(std::is_sorted(ids.rbegin(), ids.rend())); // newest first
        QCOMPARE(QSet<qint64>(ids.begin(), ids.end()).size(), all); // no page repeated a row
        // By output size, biggest first, paged by offset: every row once, in order.
        model.sort(HistoryModel::Output, Qt::DescendingOrder);
        QVERIFY(QTest::qWaitFor([&] { return !model.isLoading(); }, 10000));
        while (model.canFetchMore()) {
            model.fetchMore();
            QVERIFY(QTest::qWaitFor([&] { return !model.isLoading(); }, 10000));
        }
        QCOMPARE(model.rowCount(), all);
        QList<qint64> sizes;
        for (int row = 0; row < all; ++row)
            sizes.append(qint64(model.execution(row).value(QStringLiteral("storedBytes")).toDouble()));
        QVERIFY(std::is_sorted(sizes.rbegin(), sizes.rend()));
        QVERIFY(sizes.first() > 1500000);
        // More queries at once than the daemon keeps waiting: the rest are refused at once as busy,
        // none is lost, and the daemon answers normally afterwards.
        int answered = 0, busy = 0;
        for (int i = 0; i < 200; ++i)
            m_client->callAsync(
                QStringLiteral("history.list"), {{QStringLiteral("limit"), 200}}, [&](Result<QJsonValue> r) {
                    ++answered;
                    busy += !r && r.error().code == ErrorCode::Busy;
                });
        QVERIFY(QTest::qWaitFor([&] { return answered == 200; }, 20000));
        QVERIFY2(busy > 0 && busy <= 200 - 16, qPrintable(QString::number(busy)));
        QVERIFY(m_client->call(QStringLiteral("history.list"), {{QStringLiteral("limit"), 1}}));
        // A sort key the daemon does not know is refused with the list it does.
        auto refused = m_client->call(
            QStringLiteral("history.list"), {{QStringLiteral("sort"), QStringLiteral("argv; DROP TABLE x")}});
        QVERIFY(!refused);
        QVERIFY2(refused.error().message.contains(QLatin1String("not a column to sort by")),
            qPrintable(refused.error().message));
    }
};

QTEST_MAIN(TestConsoleHistory)
#include "tst_console_history.moc"
