// SPDX-License-Identifier: Apache-2.0
// The history on real SQLite files: schema and migration, batching and durability, output head and
// tail retention, full-text search, paging, export pages and write failures. (Its upkeep: the
// budget, prune, vacuum, a full disk, damage: tst_history_upkeep.)
#include "HistoryEvents.h"
#include "history/HistoryReader.h"
#include "history/HistorySchema.h"
#include "history/HistoryStore.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <algorithm>
#include <tuple>

#include <sqlite3.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// `size` bytes of a build's log: lines of words, many of them distinct (what indexing costs).
QByteArray buildLog(qsizetype size)
{
    QByteArray log;
    for (int line = 0; log.size() < size; ++line)
        log += "line " + QByteArray::number(line) + " compiling module" + QByteArray::number(line % 977)
            + " with flags -O" + QByteArray::number(line % 3) + "\n";
    log.truncate(size);
    return log;
}

Result<std::unique_ptr<HistoryStore>> openWithOutputCap(const QString &path, qint64 perExec)
{
    HistoryStore::Options options{path};
    options.maxStoredOutputPerExec = perExec; // half head, half tail
    return HistoryStore::open(options);
}
} // namespace

class TestHistory final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void freshDatabaseGetsTheCurrentSchemaInWalMode()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY2(store, store ? "" : qPrintable(store.error().message));
        QCOMPARE(*HistoryReader(path).schemaVersion(), history::kSchemaVersion);
        QCOMPARE(scalar(path, "PRAGMA journal_mode").toByteArray(), QByteArray("wal"));
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
    }

    void aDatabaseFromANewerAirlockIsRefused()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        QCOMPARE(exec(path, "CREATE TABLE future(x); PRAGMA user_version=99;"), SQLITE_OK);
        auto store = HistoryStore::open({path});
        QVERIFY(!store);
        QVERIFY2(store.error().message.contains(QStringLiteral("newer Airlock")), qPrintable(store.error().message));
        QCOMPARE(scalar(path, "SELECT count(*) FROM future").toLongLong(), 0); // untouched
        QCOMPARE(scalar(path, "PRAGMA user_version").toLongLong(), 99);
    }

    void aFirstSchemaDatabaseIsMigratedWithItsData()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        {
            auto db = sql::open(path, false);
            QVERIFY(db);
            QVERIFY(history::migrateTo(db->get(), 1));
        }
        // What a schema-1 daemon wrote: a run, a sandbox, two executions, output and events.
        QCOMPARE(exec(path, R"sql(
            INSERT INTO runs VALUES (7, 'agent-a', 1000);
            INSERT INTO sandboxes VALUES ('sbx', 'build', 7, '{"network":"none"}', 1000, 2000);
            INSERT INTO executions VALUES ('sbx', 1, '["make","all"]', '/workspace', '[]', 1100, 1200, 0, NULL, 'succeeded', 6, 0, 0);
            INSERT INTO executions VALUES ('sbx', 2, '["ls"]', '/workspace', '[]', 1300, 1400, 2, NULL, 'failed', 0, 5, 0);
            INSERT INTO output_chunks VALUES ('sbx', 1, 1, 0, 1150, CAST('quokka' AS BLOB));
            INSERT INTO output_chunks VALUES ('sbx', 2, 2, 0, 1350, X'6E6F7065FF');
            INSERT INTO events VALUES ('sbx', 1, 1000, 'sandbox.created', NULL, '{}');
            INSERT INTO events VALUES ('sbx', 2, 1100, 'exec.started', 1, '{}');
        )sql"),
            SQLITE_OK);
        auto store = HistoryStore::open({path});
        QVERIFY2(store, store ? "" : qPrintable(store.error().message));
        QCOMPARE(scalar(path, "PRAGMA user_version").toLongLong(), history::kSchemaVersion);
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        // Executions got ids in start order, kept their run (from their sandbox) and their counts.
        QCOMPARE(scalar(path,
                     "SELECT group_concat(id || ':' || exec_id || ':' || run_id || ':' || stored_bytes, ' ') FROM "
                     "executions")
                     .toByteArray(),
            QByteArray("1:1:7:6 2:2:7:5"));
        QCOMPARE(replay(path, 2, 2), QByteArray("nope\xff"));
        QCOMPARE(scalar(path, "SELECT count(*) FROM events WHERE run_id = 7").toLongLong(), 2);
        // The search index covers what was there before the upgrade.
        QCOMPARE(search(path, QStringLiteral("quokka")).size(), 1);
        QCOMPARE(search(path, QStringLiteral("make")).first().toObject().value(QStringLiteral("id")).toInt(), 1);
        QCOMPARE(search(path, QStringLiteral("nope")).first().toObject().value(QStringLiteral("exec")).toInt(), 2);
    }

    // An agent's command refused before it ran is a row (no exec, found by its words); a program
    // inside an execution, a network or tool request, or an allowed decision is not.
    void onlyAnAgentsRefusedCommandsBecomeRows()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        HistoryStore &h = **store;
        startExecution(h, QStringLiteral("sb1"), 1, {QStringLiteral("true")}, QStringLiteral("r"));
        const QJsonArray argv{QStringLiteral("curl"), QStringLiteral("evil.example")};
        auto decided = [&](uint64_t seq, QJsonObject p) {
            p.insert(QStringLiteral("requester"), QStringLiteral("claude"));
            p.insert(QStringLiteral("requestedMs"), double(kT0));
            p.insert(QStringLiteral("argv"), argv);
            h.append(makeEvent(QStringLiteral("sb1"), seq, QStringLiteral("approval.decided"), p, QStringLiteral("r")));
        };
        decided(10,
            {{QStringLiteral("kind"), QStringLiteral("command")}, {QStringLiteral("decision"), QStringLiteral("deny")},
                {QStringLiteral("by"), QStringLiteral("alice")}, {QStringLiteral("reason"), QStringLiteral("no")}});
        decided(11,
            {{QStringLiteral("kind"), QStringLiteral("command")}, {QStringLiteral("decision"), QStringLiteral("deny")},
                {QStringLiteral("expired"), true}, {QStringLiteral("by"), QStringLiteral("airlockd")},
                {QStringLiteral("reason"), QStringLiteral("nobody decided within 2 s")}});
        decided(12,
            {{QStringLiteral("kind"), QStringLiteral("command")}, {QStringLiteral("decision"), QStringLiteral("deny")},
                {QStringLiteral("exec"), 1}});
        decided(13,
            {{QStringLiteral("kind"), QStringLiteral("network")},
                {QStringLiteral("decision"), QStringLiteral("deny")}});
        decided(14,
            {{QStringLiteral("kind"), QStringLiteral("command")},
                {QStringLiteral("decision"), QStringLiteral("allow")}});
        h.append(makeEvent(QStringLiteral("sb1"), 15, QStringLiteral("command.denied"),
            {{QStringLiteral("requester"), QStringLiteral("codex")}, {QStringLiteral("argv"), argv},
                {QStringLiteral("reason"), QStringLiteral("rule x")}},
            QStringLiteral("r")));
        QVERIFY(h.flush());
        QCOMPARE(
            scalar(path,
                "SELECT group_concat(status || ':' || coalesce(exec_id, '-') || ':' || coalesce(agent, '') || ':' || "
                "(ended_ms - started_ms) || ':' || decided_by, ' | ') FROM executions WHERE status != 'running' ORDER "
                "BY id")
                .toString(),
            QStringLiteral(
                "denied:-:claude:10:denied by alice: no | unanswered:-:claude:11:nobody decided within 2 s | "
                "denied:-:codex:0:denied by policy: rule x"));
        HistoryReader::Query refused;
        refused.status = QStringLiteral("refused");
        refused.agent = QStringLiteral("claude");
        QCOMPARE(HistoryReader(path).executions(refused)->value(QStringLiteral("executions")).toArray().size(), 2);
        QCOMPARE(search(path, QStringLiteral("evil.example")).size(), 3);
    }

    void eventsLandInTheirTablesAfterFlush()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path, 10000}); // long latency: only flush() makes it durable
        QVERIFY(store);
        HistoryStore &h = **store;
        startExecution(
            h, QStringLiteral("sb1"), 1, {QStringLiteral("echo"), QStringLiteral("hi")}, QStringLiteral("agent-7"));
        h.append(output(QStringLiteral("sb1"), 1, 1, 0, QByteArray("hi\n\0\xff\x1b[2J", 9)));
        h.append(output(QStringLiteral("sb1"), 1, 2, 0, QByteArray("warn")));
        h.append(output(QStringLiteral("sb1"), 1, 1, 9, QByteArray("more")));
        exitExecution(h, QStringLiteral("sb1"), 1, 13, 4, 0, QStringLiteral("agent-7"));
        QVERIFY(h.flush());
        // Another connection sees everything: committed, not just queued.
        QCOMPARE(scalar(path, "SELECT count(*) FROM events").toLongLong(), 3); // output lives in chunks
        QCOMPARE(scalar(path, "SELECT count(*) FROM events WHERE run_id = (SELECT id FROM runs WHERE name = 'agent-7')")
                     .toLongLong(),
            3);
        QCOMPARE(scalar(path, "SELECT spec_json FROM sandboxes WHERE id='sb1'").toByteArray(),
            QByteArray(R"({"network":"none"})"));
        QCOMPARE(
            scalar(path, "SELECT status || ' ' || exit_code || ' ' || stored_bytes || ' ' || truncated FROM executions")
                .toByteArray(),
            QByteArray("succeeded 0 17 0"));
        QCOMPARE(scalar(path, "SELECT argv_json FROM executions").toByteArray(), QByteArray(R"(["echo","hi"])"));
        QCOMPARE(scalar(path, "SELECT env_names_json FROM executions").toByteArray(), QByteArray(R"(["A"])"));
        // Raw bytes exactly, at their stream offsets, in the order they were produced.
        QCOMPARE(replay(path, 1, 1), QByteArray("hi\n\0\xff\x1b[2Jmore", 13));
        QCOMPARE(replay(path, 1, 2), QByteArray("warn"));
        auto shown = HistoryReader(path).execution(QStringLiteral("sb1-name:1"));
        QVERIFY(shown);
        QCOMPARE(shown->value(QStringLiteral("run")).toString(), QStringLiteral("agent-7"));
        QCOMPARE(shown->value(QStringLiteral("id")).toInt(), 1);
        QCOMPARE(HistoryReader(path).execution(QStringLiteral("nope:1")).error().code, ErrorCode::NotFound);
        QCOMPARE(HistoryReader(path).execution(QStringLiteral("a b")).error().code, ErrorCode::InvalidArgument);
    }

    // Output from several executions reaches the writer in turns (issue 23: the history batches
    // across sandboxes): each execution's stream is still one chunk, not a row per event, and an
    // execution's own chunks keep the order of its events (stdout, stderr, stdout again stay three
    // chunks; what came before its exit is counted by it).
    void interleavedOutputOfExecutionsIsAChunkEach()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path, 10000}); // one batch: flush() cuts it
        QVERIFY(store);
        HistoryStore &h = **store;
        const QString a = QStringLiteral("sa"), b = QStringLiteral("sb");
        startExecution(h, a, 1, {QStringLiteral("make")});
        startExecution(h, b, 1, {QStringLiteral("make")}); // the same exec number in another sandbox
        startExecution(h, a, 2, {QStringLiteral("tail")});
        QVERIFY(h.flush());
        h.append(output(a, 1, 1, 0, "a1 "));
        h.append(output(b, 1, 1, 0, "b1 "));
        h.append(output(a, 2, 1, 0, "c1 "));
        h.append(output(a, 1, 1, 3, "a2 "));
        h.append(output(b, 1, 1, 3, "b2 "));
        h.append(output(a, 1, 2, 0, "E "));
        h.append(output(a, 2, 1, 3, "c2 "));
        exitExecution(h, b, 1, 6);
        h.append(output(a, 1, 1, 6, "a3 "));
        h.append(output(a, 2, 1, 9, "gap"));
        QVERIFY(h.flush());
        QCOMPARE(scalar(path,
                     "SELECT group_concat(line, '|') FROM (SELECT x.sandbox_id || x.exec_id || '.' || c.stream || '=' "
                     "|| CAST(c.data AS TEXT) AS line FROM chunks c JOIN executions x ON x.id = c.execution "
                     "ORDER BY x.sandbox_id, x.exec_id, c.id)")
                     .toByteArray(),
            QByteArray("sa1.1=a1 a2 |sa1.2=E |sa1.1=a3 |sa2.1=c1 c2 |sa2.1=gap|sb1.1=b1 b2 "));
        QCOMPARE(
            scalar(path, "SELECT stored_bytes || ' ' || status FROM executions WHERE sandbox_id = 'sb'").toByteArray(),
            QByteArray("6 succeeded"));
        QCOMPARE(search(path, QStringLiteral("b2")).size(), 1);
    }

    void retentionKeepsHeadAndTailWithTrueCounts()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.maxStoredOutputPerExec = 1000; // 500 head, 500 tail
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        HistoryStore &h = **store;
        startExecution(h, QStringLiteral("sb"), 1, {QStringLiteral("yes")});
        QByteArray all;
        for (int i = 0; i < 100; ++i) { // 10 000 bytes, flushed now and then so the tail is trimmed in the database too
            const QByteArray piece
                = QByteArray::number(i).rightJustified(4, '0') + QByteArray(95, char('a' + i % 26)) + '\n';
            h.append(output(QStringLiteral("sb"), 1, 1, all.size(), piece));
            all += piece;
            if (i % 10 == 0)
                QVERIFY(h.flush());
        }
        exitExecution(h, QStringLiteral("sb"), 1, all.size());
        QVERIFY(h.flush());
        const QByteArray expected = all.left(500) + "[gap 9000]" + all.right(500);
        QCOMPARE(replay(path, 1, 1), expected);
        QCOMPARE(
            scalar(path, "SELECT bytes_out || ' ' || stored_bytes || ' ' || truncated FROM executions").toByteArray(),
            QByteArray("10000 1000 1"));
        QCOMPARE(scalar(path, "SELECT sum(length(data)) FROM chunks").toLongLong(), 1000);
        // What the tail dropped is gone from the index too: only the head's and tail's words match.
        // (The tail is indexed in the writer's next slice after the exit, not with it.)
        QTRY_COMPARE(search(path, QStringLiteral("0099") + QString(95, QLatin1Char('v'))).size(), 1);
        QCOMPARE(search(path, QStringLiteral("0000aaaa")).size(), 0); // "0000" + 95 'a' is one token
        QCOMPARE(search(path, QStringLiteral("0000") + QString(95, QLatin1Char('a'))).size(), 1);
        QCOMPARE(search(path, QStringLiteral("0050") + QString(95, QLatin1Char('y'))).size(), 0);
    }

    // A flood's tail is written once a second, 1 MiB of it per batch. When a newer second's tail
    // comes while an older one still waits, the older slices it supersedes go unwritten (they
    // would be deleted right after: the tail keeps the latest bytes), but only those: what fits
    // beside a short newer tail is still stored. 80 executions with 16 KiB tails give 1.25 MiB:
    // the first batch leaves 16 tails waiting; 8 of them get a whole newer tail, 8 a quarter of
    // one. In the end each execution has its head and exactly its latest 16 KiB (written whole,
    // an older 16 KiB chunk beside a newer 4 KiB one would stay: the tail keeps whole chunks).
    void aNewerTailSupersedesOnlyWhatItReplaces()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        constexpr qint64 kHalf = 16 * 1024;
        options.maxStoredOutputPerExec = 2 * kHalf;
        options.maxBatchLatencyMs = options.batchedFactLatencyMs = 60000; // batches only at flush()
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        HistoryStore &h = **store;
        constexpr uint32_t kExecs = 80;
        QList<QByteArray> all(kExecs + 1);
        auto write = [&](uint32_t exec, qint64 bytes) {
            for (qint64 done = 0; done < bytes; done += 4096) {
                QByteArray piece = QByteArray::number(qint64(all[exec].size())).rightJustified(8, '0');
                piece += QByteArray(4096 - piece.size() - 1, char('a' + exec % 26)) + '\n';
                h.append(output(QStringLiteral("sb"), exec, 1, all[exec].size(), piece));
                all[exec] += piece;
            }
        };
        for (uint32_t exec = 1; exec <= kExecs; ++exec) {
            startExecution(h, QStringLiteral("sb"), exec, {QStringLiteral("yes")});
            write(exec, kHalf + 2 * kHalf); // the head, then twice the tail
        }
        QVERIFY(h.flush()); // the tails move out; 1 MiB of them is written
        for (uint32_t exec = kExecs - 15; exec <= kExecs; ++exec)
            write(exec, exec <= kExecs - 8 ? kHalf : kHalf / 4);
        QTest::qWait(1100); // a second on: the newer tails move out too
        QVERIFY(h.flush());
        for (uint32_t exec = 1; exec <= kExecs; ++exec)
            exitExecution(h, QStringLiteral("sb"), exec, all[exec].size());
        QVERIFY(h.flush());
        for (uint32_t exec = 1; exec <= kExecs; ++exec) {
            const QByteArray &bytes = all[exec];
            const QByteArray expected
                = bytes.left(kHalf) + "[gap " + QByteArray::number(bytes.size() - 2 * kHalf) + "]" + bytes.right(kHalf);
            const QByteArray got = replay(path, exec, 1);
            QVERIFY2(got == expected,
                qPrintable(QStringLiteral("execution %1: %2").arg(exec).arg(QString::fromLatin1(got.mid(kHalf, 30)))));
        }
    }

    void searchFindsWordsInColouredOrBrokenOutputAndCommands()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        HistoryStore &h = **store;
        startExecution(
            h, QStringLiteral("sb"), 1, {QStringLiteral("pytest"), QStringLiteral("-k"), QStringLiteral("frobnicate")});
        const char text[] = "\x1b[31mERROR\x1b[0m: \xff\xfe wombat\0exploded\n";
        h.append(output(QStringLiteral("sb"), 1, 1, 0, QByteArray(text, sizeof text - 1)));
        exitExecution(h, QStringLiteral("sb"), 1, sizeof text - 1, 0, 1);
        startExecution(h, QStringLiteral("sb"), 2, {QStringLiteral("echo"), QStringLiteral("calm")});
        exitExecution(h, QStringLiteral("sb"), 2, 0);
        QVERIFY(h.flush());
        QCOMPARE(search(path, QStringLiteral("wombat")).size(), 1);
        QCOMPARE(search(path, QStringLiteral("ERROR")).size(), 1); // not "31mERROR"
        QCOMPARE(search(path, QStringLiteral("exploded")).size(), 1); // NUL is a separator
        QCOMPARE(search(path, QStringLiteral("frobnicate")).size(), 1);
        QCOMPARE(search(path, QStringLiteral("calm")).first().toObject().value(QStringLiteral("exec")).toInt(), 2);
        // Query syntax is not interpreted: quotes, stars and operators are just text.
        QCOMPARE(search(path, QStringLiteral("\"wombat OR calm*")).size(), 0);
        QCOMPARE(search(path, QStringLiteral("NEAR(")).size(), 0);
        // Filters combine with the text.
        HistoryReader::Query q;
        q.text = QStringLiteral("wombat");
        q.exitCode = 0;
        QCOMPARE(HistoryReader(path).executions(q)->value(QStringLiteral("executions")).toArray().size(), 0);
        q.exitCode = 1;
        q.status = QStringLiteral("failed");
        QCOMPARE(HistoryReader(path).executions(q)->value(QStringLiteral("executions")).toArray().size(), 1);
    }

    void pagesWalkEveryExecutionOnce()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        for (uint32_t i = 1; i <= 25; ++i) {
            startExecution(**store, QStringLiteral("sb"), i, {QStringLiteral("true")});
            exitExecution(**store, QStringLiteral("sb"), i, 0);
        }
        QVERIFY((*store)->flush());
        HistoryReader::Query q;
        q.limit = 10;
        QList<int> seen;
        for (int page = 0; page < 5; ++page) {
            auto rows = HistoryReader(path).executions(q);
            QVERIFY(rows);
            for (const QJsonValue &r : rows->value(QStringLiteral("executions")).toArray())
                seen.append(r.toObject().value(QStringLiteral("exec")).toInt());
            if (rows->value(QStringLiteral("next")).isNull())
                break;
            q.beforeId = qint64(rows->value(QStringLiteral("next")).toDouble());
        }
        QList<int> expected;
        for (int i = 25; i >= 1; --i)
            expected.append(i);
        QCOMPARE(seen, expected);
        q = {};
        q.sinceMs = kT0 + 10; // started events have seq 2i, time kT0 + 2i
        q.untilMs = kT0 + 20;
        QCOMPARE(HistoryReader(path).executions(q)->value(QStringLiteral("executions")).toArray().size(), 5);
    }

    void aPageStaysWithinAFrameHoweverLongTheCommands()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        // Commands an agent made as long as it could, full of characters JSON must escape.
        const QString huge = QString(100000, QChar(0x01));
        for (uint32_t i = 1; i <= 30; ++i) {
            startExecution(**store, QStringLiteral("sb"), i, {QStringLiteral("echo"), huge});
            exitExecution(**store, QStringLiteral("sb"), i, 0);
        }
        QVERIFY((*store)->flush());
        HistoryReader::Query q;
        q.limit = 1000;
        int seen = 0, pages = 0;
        for (; pages < 100; ++pages) {
            auto page = HistoryReader(path).executions(q);
            QVERIFY(page);
            const qsizetype bytes = QJsonDocument(*page).toJson(QJsonDocument::Compact).size();
            QVERIFY2(bytes < 2 * 1024 * 1024, qPrintable(QString::number(bytes))); // far below the 4 MiB frame limit
            seen += int(page->value(QStringLiteral("executions")).toArray().size());
            if (page->value(QStringLiteral("next")).isNull())
                break;
            q.beforeId = qint64(page->value(QStringLiteral("next")).toDouble());
        }
        QCOMPARE(seen, 30);
        QVERIFY(pages >= 10); // so the pages were cut by size, not by the limit
    }

    void executionsOfADeadDaemonAreInterrupted()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        {
            auto store = HistoryStore::open({path});
            QVERIFY(store);
            startExecution(**store, QStringLiteral("sb"), 1, {QStringLiteral("sleep")});
            (*store)->append(output(QStringLiteral("sb"), 1, 2, 0, QByteArray("partial")));
            (*store)->append(
                makeEvent(QStringLiteral("sb"), 3, QStringLiteral("exec.truncated"), {{QStringLiteral("exec"), 1}}));
            QVERIFY((*store)->flush());
        } // the daemon "dies" with the execution still running
        QCOMPARE(scalar(path, "SELECT status FROM executions").toByteArray(), QByteArray("running"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        QCOMPARE(scalar(path, "SELECT status || ' ' || bytes_err || ' ' || stored_bytes FROM executions").toByteArray(),
            QByteArray("interrupted 7 7"));
        QCOMPARE(scalar(path, "SELECT ended_ms FROM executions").toLongLong(), kT0 + 3); // the last thing recorded
        QCOMPARE(scalar(path, "SELECT deleted_ms FROM sandboxes").toLongLong(), kT0 + 3);
    }

    void batchesCommitWithinTheLatencyBound()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path, 100});
        QVERIFY(store);
        for (uint64_t i = 1; i <= 1000; ++i)
            (*store)->append(makeEvent(QStringLiteral("sb"), i, QStringLiteral("policy.changed")));
        // No flush: the writer commits on its own within ~100 ms.
        QVERIFY(
            QTest::qWaitFor([&] { return scalar(path, "SELECT count(*) FROM events").toLongLong() == 1000; }, 2000));
    }

    // A flood's tails are indexed once their executions end: tens of megabytes, seconds of the
    // writer's time. A fact someone waits for (a one-shot's start and exit are acknowledged only
    // once stored) does not wait for that: a batch waited for leaves the tails to the next, which
    // index a few milliseconds at a time (issue 23: "one-shot after a flood"; before, each waited
    // batch held a megabyte of indexing, and a flush waited for two of them).
    void aFlushDoesNotWaitForTheTailsBeingIndexed()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = openWithOutputCap(path, 8 * 1024 * 1024); // 4 MiB head, 4 MiB tail
        QVERIFY(store);
        HistoryStore &h = **store;
        const int executions = 10;
        const QByteArray piece = buildLog(64 * 1024);
        for (int i = 1; i <= executions; ++i) {
            const QString sb = QStringLiteral("flood%1").arg(i);
            startExecution(h, sb, 1, {QStringLiteral("make")});
            qint64 offset = 0;
            for (int k = 0; k < 128; ++k, offset += piece.size()) // 8 MiB each
                h.append(output(sb, 1, 1, offset, piece));
            exitExecution(h, sb, 1, offset);
        }
        QVERIFY(h.flush());
        const qint64 toIndex = scalar(path, "SELECT count(*) FROM chunks WHERE indexed = 0").toLongLong();
        QVERIFY2(toIndex >= executions * 8, qPrintable(QString::number(toIndex))); // 40 MiB of tails

        QList<double> waits;
        for (uint32_t i = 1; i <= 15; ++i) {
            QTest::qWait(10);
            startExecution(h, QStringLiteral("oneshot"), i, {QStringLiteral("true")});
            QElapsedTimer t;
            t.start();
            QVERIFY(h.flush());
            waits.append(double(t.nsecsElapsed()) / 1e6);
        }
        const qint64 stillToIndex = scalar(path, "SELECT count(*) FROM chunks WHERE indexed = 0").toLongLong();
        std::sort(waits.begin(), waits.end());
        const double medianMs = waits.at(waits.size() / 2);
        qInfo("flush while %lld of %lld tail chunks were still to index: median %.1f ms, longest %.1f ms", stillToIndex,
            toIndex, medianMs, waits.last());
        QVERIFY2(stillToIndex > 0, "the tails were indexed before the flushes: nothing was measured");
        QVERIFY2(medianMs < 12, qPrintable(QStringLiteral("median flush %1 ms").arg(medianMs)));
        // And the tails are still indexed, a slice at a time: no waiter starves them.
        QVERIFY(QTest::qWaitFor(
            [&] { return scalar(path, "SELECT count(*) FROM chunks WHERE indexed = 0").toLongLong() == 0; }, 60000));
        QCOMPARE(search(path, QStringLiteral("module976")).size(), executions + 0); // heads and tails alike
    }

    // The other side of the above: another execution printing steadily (each line waited for, by
    // the gate, within batchedFactLatencyMs) does not hold the tails back. The writer's wait for
    // the lines to gather is the tails' time (the red team's finding, on a version that indexed
    // only in batches and let each line cut a slice short: an agent printing fast beside a flood
    // kept its tail out of search at a chunk per 100 ms).
    void tailsAreIndexedBesideAStreamThatIsWaitedFor()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = openWithOutputCap(path, 40 * 1024 * 1024); // 20 MiB head, 20 MiB tail
        QVERIFY(store);
        HistoryStore &h = **store;
        startExecution(h, QStringLiteral("flood"), 1, {QStringLiteral("make")});
        startExecution(h, QStringLiteral("steady"), 1, {QStringLiteral("tail"), QStringLiteral("-f")});
        const QByteArray piece = buildLog(256 * 1024); // a chunk each, milliseconds to index
        qint64 offset = 0;
        for (int k = 0; k < 160; ++k, offset += piece.size()) // 40 MiB
            h.append(output(QStringLiteral("flood"), 1, 1, offset, piece));
        exitExecution(h, QStringLiteral("flood"), 1, offset);
        QVERIFY(h.flush());
        const qint64 toIndex = scalar(path, "SELECT count(*) FROM chunks WHERE indexed = 0").toLongLong();
        QVERIFY2(toIndex >= 60, qPrintable(QString::number(toIndex)));
        QElapsedTimer t;
        t.start();
        qint64 at = 0, left = toIndex;
        for (int i = 0; left > 0 && t.elapsed() < 20000; ++i) { // about 40 KB/s: within its head all along
            const QByteArray line = QByteArray::number(i % 10000000).rightJustified(7) + '\n';
            h.append(output(QStringLiteral("steady"), 1, 1, at, line));
            at += line.size();
            QThread::usleep(200);
            if (i % 250 == 0)
                left = scalar(path, "SELECT count(*) FROM chunks WHERE indexed = 0").toLongLong();
        }
        const qint64 ms = t.elapsed();
        qInfo("%lld tail chunks of 256 KiB indexed beside a line every 0.2 ms in %lld ms", toIndex, ms);
        QCOMPARE(left, 0);
        QVERIFY2(ms < 5000, qPrintable(QStringLiteral("%1 ms").arg(ms))); // a chunk per 100 ms: 8 s and more
        QCOMPARE(search(path, QStringLiteral("module976")).size(), 1);
    }

    void destructionCommitsWhatIsQueued()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        {
            auto store = HistoryStore::open({path, 60000});
            QVERIFY(store);
            for (uint64_t i = 1; i <= 500; ++i)
                (*store)->append(makeEvent(QStringLiteral("sb"), i, QStringLiteral("policy.changed")));
        }
        QCOMPARE(*HistoryReader(path).eventCount(QStringLiteral("sb")), 500);
    }

    void anExportWalksTheWholeRunInPages()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        startExecution(**store, QStringLiteral("sb"), 1, {QStringLiteral("cat")}, QStringLiteral("r1"));
        for (int i = 0; i < 8; ++i)
            (*store)->append(output(QStringLiteral("sb"), 1, 1, i * 300000, QByteArray(300000, char('a' + i))));
        exitExecution(**store, QStringLiteral("sb"), 1, 8 * 300000, 0, 0, QStringLiteral("r1"));
        startExecution(**store, QStringLiteral("other"), 1, {QStringLiteral("true")}, QStringLiteral("r2"));
        QVERIFY((*store)->flush());
        QMap<QString, int> types;
        qint64 outputBytes = 0;
        QJsonObject cursor;
        int pages = 0;
        for (; pages < 100; ++pages) {
            auto page = HistoryReader(path).exportPage(QStringLiteral("r1"), cursor, 1024 * 1024);
            QVERIFY2(page, page ? "" : qPrintable(page.error().message));
            for (const QJsonValue &r : page->value(QStringLiteral("records")).toArray()) {
                types[r.toObject().value(QStringLiteral("type")).toString()] += 1;
                if (r.toObject().value(QStringLiteral("type")).toString() == QLatin1String("output"))
                    outputBytes
                        += QByteArray::fromBase64(r.toObject().value(QStringLiteral("data")).toString().toLatin1())
                               .size();
            }
            if (page->value(QStringLiteral("cursor")).isNull())
                break;
            cursor = page->value(QStringLiteral("cursor")).toObject();
        }
        QVERIFY(pages >= 2); // 2.4 MB of output does not fit one page
        QCOMPARE(types.value(QStringLiteral("run")), 1);
        QCOMPARE(types.value(QStringLiteral("sandbox")), 1); // not the other run's
        QCOMPARE(types.value(QStringLiteral("execution")), 1);
        QCOMPARE(types.value(QStringLiteral("event")), 3);
        QCOMPARE(outputBytes, 8 * 300000);
        QCOMPARE(HistoryReader(path).exportPage(QStringLiteral("nope"), {}, 1000).error().code, ErrorCode::NotFound);
    }

    void anExportsEventsComeInTimeOrderEachOnceAcrossPages()
    {
        // Two sandboxes whose events interleave in time (and tie): paged a record or two at a
        // time, every event comes once, ordered by (time, sandbox, seq) as the trace reads them.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        for (uint64_t seq = 1; seq <= 40; ++seq)
            for (const char *sandbox : {"sb-b", "sb-a"}) {
                Event e = makeEvent(
                    QLatin1String(sandbox), seq, QStringLiteral("policy.changed"), {}, QStringLiteral("timed"));
                e.timeMs = kT0 + qint64(seq / 2); // two sandboxes, two seqs: four events a millisecond
                (*store)->append(e);
            }
        QVERIFY((*store)->flush());
        QList<std::tuple<qint64, QString, qint64>> seen;
        QJsonObject cursor;
        int pages = 0;
        for (; pages < 1000; ++pages) {
            auto page = HistoryReader(path).exportPage(QStringLiteral("timed"), cursor, 200);
            QVERIFY2(page, page ? "" : qPrintable(page.error().message));
            for (const QJsonValue &v : page->value(QStringLiteral("records")).toArray())
                if (const QJsonObject r = v.toObject(); r.value(QStringLiteral("type")) == QLatin1String("event"))
                    seen.append({qint64(r.value(QStringLiteral("timeMs")).toDouble()),
                        r.value(QStringLiteral("sandbox")).toString(),
                        qint64(r.value(QStringLiteral("seq")).toDouble())});
            if (page->value(QStringLiteral("cursor")).isNull())
                break;
            cursor = page->value(QStringLiteral("cursor")).toObject();
        }
        QVERIFY(pages > 10);
        QCOMPARE(seen.size(), 80);
        QVERIFY(std::is_sorted(seen.cbegin(), seen.cend()));
        QVERIFY(std::adjacent_find(seen.cbegin(), seen.cend()) == seen.cend());
    }

    void aWriteFailureRefusesNewWorkAndHeals()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.retryIntervalMs = 50;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        // A trigger that refuses every insert stands in for a database that cannot be written.
        QCOMPARE(
            exec(path, "CREATE TRIGGER no_space BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk full'); END;"),
            SQLITE_OK);
        (*store)->append(makeEvent(QStringLiteral("sb"), 1, QStringLiteral("policy.changed")));
        const Status failed = (*store)->flush();
        QVERIFY(!failed);
        QVERIFY2(failed.error().message.contains(QStringLiteral("disk full")), qPrintable(failed.error().message));
        const Status refused = (*store)->writable();
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::HistoryUnavailable);
        QVERIFY2(
            refused.error().message.contains(QStringLiteral("refusing new work")), qPrintable(refused.error().message));
        (*store)->append(makeEvent(QStringLiteral("sb"), 2, QStringLiteral("policy.changed")));
        // It heals by itself once writing works again, and the facts it held are written then.
        QCOMPARE(exec(path, "DROP TRIGGER no_space"), SQLITE_OK);
        QVERIFY(QTest::qWaitFor([&] { return bool((*store)->writable()); }, 5000));
        QVERIFY((*store)->flush());
        QCOMPARE(*HistoryReader(path).eventCount(), 2);
    }
};

QTEST_GUILESS_MAIN(TestHistory)
#include "tst_history.moc"
