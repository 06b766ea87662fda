// SPDX-License-Identifier: Apache-2.0
// The history store on real SQLite files: schema, batching, durability after flush, and what an
// event turns into in the tables.
#include "history/HistoryStore.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

#include <sqlite3.h>

using namespace airlock;

namespace {
Event makeEvent(const QString &sandbox, uint64_t seq, const QString &kind, QJsonObject payload = {})
{
    Event e;
    e.sandbox = sandbox;
    e.seq = seq;
    e.timeMs = 1700000000000 + qint64(seq);
    e.kind = kind;
    e.payload = std::move(payload);
    e.exec = uint32_t(e.payload.value(QStringLiteral("exec")).toDouble());
    return e;
}

QVariant scalar(const QString &path, const char *sql)
{
    sqlite3 *db = nullptr;
    sqlite3_open_v2(QFile::encodeName(path).constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt *st = nullptr;
    QVariant v;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
            v = qint64(sqlite3_column_int64(st, 0));
        else if (sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = QByteArray(static_cast<const char *>(sqlite3_column_blob(st, 0)), sqlite3_column_bytes(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
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
        QCOMPARE(*(*store)->schemaVersion(), HistoryStore::kSchemaVersion);
        QCOMPARE(scalar(path, "PRAGMA journal_mode").toByteArray(), QByteArray("wal"));
        QCOMPARE(scalar(path, "PRAGMA quick_check").toByteArray(), QByteArray("ok"));
    }

    void aDatabaseFromANewerAirlockIsRefused()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        sqlite3 *db = nullptr;
        QCOMPARE(sqlite3_open(QFile::encodeName(path).constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "CREATE TABLE future(x); PRAGMA user_version=99;", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        auto store = HistoryStore::open({path});
        QVERIFY(!store);
        QVERIFY2(store.error().message.contains(QStringLiteral("newer Airlock")), qPrintable(store.error().message));
        QCOMPARE(scalar(path, "SELECT count(*) FROM future").toLongLong(), 0); // untouched
    }

    void eventsLandInTheirTablesAfterFlush()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path, 10000}); // long latency: only flush() makes it durable
        QVERIFY(store);
        HistoryStore &h = **store;
        h.append(makeEvent(QStringLiteral("sb1"), 1, QStringLiteral("sandbox.created"),
                       {{QStringLiteral("name"), QStringLiteral("one")}, {QStringLiteral("spec"), QJsonObject{{QStringLiteral("network"), QStringLiteral("none")}}}}));
        h.append(makeEvent(QStringLiteral("sb1"), 2, QStringLiteral("exec.started"),
                       {{QStringLiteral("exec"), 1}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("echo"), QStringLiteral("hi")}},
                        {QStringLiteral("cwd"), QStringLiteral("/workspace")}, {QStringLiteral("envNames"), QJsonArray{}}}));
        Event out = makeEvent(QStringLiteral("sb1"), 3, QStringLiteral("exec.output"));
        out.exec = 1;
        out.stream = 1;
        out.data = QByteArray("hi\n\0\xff\x1b[2J", 9);
        h.append(out);
        out.seq = 4;
        out.data = QByteArray("more");
        h.append(out);
        h.append(makeEvent(QStringLiteral("sb1"), 5, QStringLiteral("exec.exited"),
                       {{QStringLiteral("exec"), 1}, {QStringLiteral("status"), QStringLiteral("succeeded")}, {QStringLiteral("exitCode"), 0},
                        {QStringLiteral("signal"), QJsonValue()}, {QStringLiteral("bytesOut"), 13}, {QStringLiteral("bytesErr"), 0},
                        {QStringLiteral("truncated"), false}}));
        QVERIFY(h.flush());
        // Another connection sees everything: committed, not just queued.
        QCOMPARE(scalar(path, "SELECT count(*) FROM events").toLongLong(), 3); // output lives in output_chunks
        QCOMPARE(scalar(path, "SELECT spec_json FROM sandboxes WHERE id='sb1'").toByteArray(), QByteArray(R"({"network":"none"})"));
        QCOMPARE(scalar(path, "SELECT status FROM executions").toByteArray(), QByteArray("succeeded"));
        QCOMPARE(scalar(path, "SELECT exit_code FROM executions").toLongLong(), 0);
        QCOMPARE(scalar(path, "SELECT argv_json FROM executions").toByteArray(), QByteArray(R"(["echo","hi"])"));
        // Raw bytes exactly, at their stream offsets.
        QCOMPARE(scalar(path, "SELECT data FROM output_chunks WHERE offset=0").toByteArray(), QByteArray("hi\n\0\xff\x1b[2J", 9));
        QCOMPARE(scalar(path, "SELECT offset FROM output_chunks WHERE data=CAST('more' AS BLOB)").toLongLong(), 9);
    }

    void storedOutputIsCappedPerExecution()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.maxStoredOutputPerExec = 1000;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        for (uint64_t i = 1; i <= 10; ++i) {
            Event out = makeEvent(QStringLiteral("sb"), i, QStringLiteral("exec.output"));
            out.exec = 1;
            out.stream = i % 2 ? 1 : 2;
            out.data = QByteArray(300, char('a' + i));
            (*store)->append(out);
        }
        QVERIFY((*store)->flush());
        QCOMPARE(scalar(path, "SELECT sum(length(data)) FROM output_chunks").toLongLong(), 1000);
        // The last stored chunk is cut at the cap, not dropped.
        QCOMPARE(scalar(path, "SELECT length(data) FROM output_chunks ORDER BY rowid DESC LIMIT 1").toLongLong(), 100);
    }

    void executionsOfADeadDaemonAreInterrupted()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        {
            auto store = HistoryStore::open({path});
            QVERIFY(store);
            (*store)->append(makeEvent(QStringLiteral("sb"), 1, QStringLiteral("sandbox.created"),
                                       {{QStringLiteral("name"), QStringLiteral("sb")}, {QStringLiteral("spec"), QJsonObject{}}}));
            (*store)->append(makeEvent(QStringLiteral("sb"), 2, QStringLiteral("exec.started"),
                                       {{QStringLiteral("exec"), 1}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("sleep")}}}));
            (*store)->append(makeEvent(QStringLiteral("sb"), 3, QStringLiteral("exec.truncated"), {{QStringLiteral("exec"), 1}}));
            QVERIFY((*store)->flush());
        } // the daemon "dies" with the execution still running
        QCOMPARE(scalar(path, "SELECT status FROM executions").toByteArray(), QByteArray("running"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        QCOMPARE(scalar(path, "SELECT status FROM executions").toByteArray(), QByteArray("interrupted"));
        QCOMPARE(scalar(path, "SELECT ended_ms FROM executions").toLongLong(), 1700000000003); // its sandbox's last event
        QCOMPARE(scalar(path, "SELECT deleted_ms FROM sandboxes").toLongLong(), 1700000000003);
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
        QVERIFY(QTest::qWaitFor([&] { return scalar(path, "SELECT count(*) FROM events").toLongLong() == 1000; }, 2000));
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
        QCOMPARE(scalar(path, "SELECT count(*) FROM events").toLongLong(), 500);
        auto reopened = HistoryStore::open({path});
        QVERIFY(reopened);
        QCOMPARE(*(*reopened)->eventCount(QStringLiteral("sb")), 500);
    }

    void aWriteFailureIsReportedByFlush()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        auto store = HistoryStore::open({path});
        QVERIFY(store);
        // A trigger that refuses every insert stands in for a full disk.
        sqlite3 *db = nullptr;
        sqlite3_open(QFile::encodeName(path).constData(), &db);
        QCOMPARE(sqlite3_exec(db, "CREATE TRIGGER no_space BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
                              nullptr, nullptr, nullptr),
                 SQLITE_OK);
        (*store)->append(makeEvent(QStringLiteral("sb"), 1, QStringLiteral("policy.changed")));
        const Status failed = (*store)->flush();
        QVERIFY(!failed);
        QCOMPARE(failed.error().code, ErrorCode::IoError);
        QVERIFY2(failed.error().message.contains(QStringLiteral("disk full")), qPrintable(failed.error().message));
        // And it recovers once writing works again.
        QCOMPARE(sqlite3_exec(db, "DROP TRIGGER no_space", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        (*store)->append(makeEvent(QStringLiteral("sb"), 2, QStringLiteral("policy.changed")));
        QVERIFY((*store)->flush());
        QCOMPARE(*(*store)->eventCount(), 1);
    }
};

QTEST_GUILESS_MAIN(TestHistory)
#include "tst_history.moc"
