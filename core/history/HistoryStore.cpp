// SPDX-License-Identifier: Apache-2.0
#include "history/HistoryStore.h"

#include "log/Log.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.history");
    return l;
}

// Stepwise migrations: entry N turns schema N into N+1. Never edit a step once released; add one.
constexpr const char *kMigrations[] = {
    // 0 -> 1: the first schema.
    R"sql(
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_ms INTEGER NOT NULL
    );
    CREATE TABLE sandboxes (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        run_id INTEGER REFERENCES runs(id),
        spec_json TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        deleted_ms INTEGER
    );
    CREATE TABLE executions (
        sandbox_id TEXT NOT NULL,
        exec_id INTEGER NOT NULL,
        argv_json TEXT NOT NULL,
        cwd TEXT,
        env_names_json TEXT,
        started_ms INTEGER NOT NULL,
        ended_ms INTEGER,
        exit_code INTEGER,
        signal INTEGER,
        status TEXT NOT NULL CHECK (status IN ('running','succeeded','failed','killed','timed_out','interrupted')),
        bytes_out INTEGER NOT NULL DEFAULT 0,
        bytes_err INTEGER NOT NULL DEFAULT 0,
        truncated INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (sandbox_id, exec_id)
    );
    CREATE INDEX executions_by_start ON executions(started_ms DESC);
    CREATE TABLE output_chunks (
        sandbox_id TEXT NOT NULL,
        exec_id INTEGER NOT NULL,
        stream INTEGER NOT NULL CHECK (stream IN (1, 2)),
        offset INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (sandbox_id, exec_id, stream, offset)
    );
    CREATE TABLE events (
        sandbox_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        exec_id INTEGER,
        payload TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, seq)
    );
    )sql",
};
static_assert(std::size(kMigrations) == HistoryStore::kSchemaVersion);

Error sqlError(sqlite3 *db, const QString &what)
{
    return makeError(ErrorCode::IoError,
                     QStringLiteral("history database: %1: %2").arg(what, QString::fromUtf8(db ? sqlite3_errmsg(db) : "out of memory")));
}

Status exec(sqlite3 *db, const char *sql, const QString &what)
{
    char *err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK)
        return Ok{};
    const QString message = QString::fromUtf8(err ? err : "unknown error");
    sqlite3_free(err);
    return makeError(ErrorCode::IoError, QStringLiteral("history database: %1: %2").arg(what, message));
}

Result<sqlite3 *> openConnection(const QString &path, bool readOnly)
{
    sqlite3 *db = nullptr;
    const int flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(QFile::encodeName(path).constData(), &db, flags, nullptr) != SQLITE_OK) {
        const Error e = sqlError(db, QStringLiteral("cannot open %1").arg(path));
        sqlite3_close(db);
        return e;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

Result<int> userVersion(sqlite3 *db)
{
    sqlite3_stmt *st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) != SQLITE_OK)
        return sqlError(db, QStringLiteral("reading the schema version"));
    const int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return version;
}

// RAII for prepared statements in one batch.
struct Stmt {
    sqlite3_stmt *s = nullptr;
    Stmt(sqlite3 *db, const char *sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
    ~Stmt() { sqlite3_finalize(s); }
    Stmt &text(int i, const QString &v)
    {
        const QByteArray u = v.toUtf8();
        sqlite3_bind_text(s, i, u.constData(), int(u.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt &json(int i, const QJsonValue &v)
    {
        const QByteArray u = v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                                         : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
        sqlite3_bind_text(s, i, u.constData(), int(u.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt &integer(int i, qint64 v)
    {
        sqlite3_bind_int64(s, i, v);
        return *this;
    }
    Stmt &nullable(int i, const QJsonValue &v)
    {
        if (v.isDouble())
            sqlite3_bind_int64(s, i, qint64(v.toDouble()));
        else
            sqlite3_bind_null(s, i);
        return *this;
    }
    Stmt &blob(int i, const QByteArray &v)
    {
        sqlite3_bind_blob(s, i, v.constData(), int(v.size()), SQLITE_STATIC);
        return *this;
    }
    bool run()
    {
        const int rc = sqlite3_step(s);
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        return rc == SQLITE_DONE;
    }
};
} // namespace

HistoryStore::HistoryStore(Options options) : m_options(std::move(options)) {}

Result<std::unique_ptr<HistoryStore>> HistoryStore::open(const Options &options)
{
    std::unique_ptr<HistoryStore> store(new HistoryStore(options));
    auto db = openConnection(options.path, false);
    if (!db)
        return db.error();
    store->m_writer = *db;
    for (const char *pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"})
        if (Status s = exec(*db, pragma, QString::fromLatin1(pragma)); !s)
            return s.error();
    auto version = userVersion(*db);
    if (!version)
        return version.error();
    if (*version > kSchemaVersion)
        return makeError(ErrorCode::IoError,
                         QStringLiteral("history database %1 has schema %2, written by a newer Airlock (this one knows %3); "
                                        "upgrade Airlock or move the file away")
                             .arg(options.path)
                             .arg(*version)
                             .arg(kSchemaVersion));
    for (int v = *version; v < kSchemaVersion; ++v) {
        // Each step and its version bump commit together, so a crash leaves a whole schema.
        const QByteArray step = QByteArray("BEGIN IMMEDIATE;") + kMigrations[v] + "PRAGMA user_version=" + QByteArray::number(v + 1)
            + ";COMMIT;";
        if (Status s = exec(*db, step.constData(), QStringLiteral("migrating schema %1 to %2").arg(v).arg(v + 1)); !s) {
            (void)exec(*db, "ROLLBACK", QStringLiteral("rollback"));
            return s.error();
        }
        logger()->info("history schema migrated to {}", v + 1);
    }
    // Only one daemon uses a data directory (InstanceLock), so anything still running here was
    // running when a previous daemon died: it is interrupted, never succeeded, as of the last
    // thing its sandbox recorded; and its sandbox is gone.
    const char *recover = R"sql(
        BEGIN IMMEDIATE;
        UPDATE executions SET status = 'interrupted',
            ended_ms = coalesce((SELECT max(time_ms) FROM events WHERE events.sandbox_id = executions.sandbox_id), started_ms)
            WHERE status = 'running';
        UPDATE sandboxes SET deleted_ms = coalesce((SELECT max(time_ms) FROM events WHERE events.sandbox_id = sandboxes.id), created_ms)
            WHERE deleted_ms IS NULL;
        COMMIT;)sql";
    if (Status s = exec(*db, recover, QStringLiteral("marking executions of a dead daemon interrupted")); !s)
        return s.error();
    store->m_thread = std::thread([s = store.get()] { s->writerLoop(); });
    return store;
}

HistoryStore::~HistoryStore()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
    sqlite3_close(m_writer);
}

void HistoryStore::append(const Event &event)
{
    {
        std::lock_guard lock(m_mutex);
        if (event.isOutput()) {
            // The cap is applied here, not in the writer: output that will not be stored must not
            // sit in the queue either (a flood would otherwise hold throughput x latency bytes).
            qint64 &stored = m_storedPerExec[{event.sandbox, event.exec}];
            const qint64 keep = std::min<qint64>(event.data.size(), m_options.maxStoredOutputPerExec - stored);
            if (keep <= 0)
                return;
            stored += keep;
            m_queue.push_back(event);
            if (keep < event.data.size())
                m_queue.back().data.truncate(keep);
        } else {
            if (event.kind == QLatin1String("exec.exited"))
                m_storedPerExec.erase({event.sandbox, event.exec});
            m_queue.push_back(event);
        }
        ++m_appended;
    }
    m_wake.notify_one();
}

Status HistoryStore::flush()
{
    std::unique_lock lock(m_mutex);
    const uint64_t target = m_appended;
    m_flushRequested = true;
    m_wake.notify_one();
    m_committed.wait(lock, [&] { return m_done >= target || m_stopping; });
    if (m_failed)
        return m_writeError;
    return Ok{};
}

void HistoryStore::writerLoop()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [&] { return !m_queue.empty() || m_stopping; });
        if (m_queue.empty() && m_stopping)
            return;
        // Gather for a while (bounded latency), unless someone waits for the commit.
        if (!m_flushRequested && !m_stopping)
            m_wake.wait_for(lock, std::chrono::milliseconds(m_options.maxBatchLatencyMs),
                            [&] { return m_flushRequested || m_stopping; });
        m_flushRequested = false;
        std::deque<Event> batch;
        batch.swap(m_queue);
        lock.unlock();
        const size_t n = batch.size();
        const Status written = writeBatch(batch);
        lock.lock();
        if (!written) {
            m_failed = true;
            m_writeError = written.error();
            logger()->error("{}", written.error().message.toStdString());
        } else {
            m_failed = false;
        }
        m_done += n;
        m_committed.notify_all();
    }
}

Status HistoryStore::writeBatch(std::deque<Event> &batch)
{
    sqlite3 *db = m_writer;
    if (Status s = exec(db, "BEGIN IMMEDIATE", QStringLiteral("begin")); !s)
        return s;
    Stmt event(db, "INSERT OR IGNORE INTO events(sandbox_id, seq, time_ms, kind, exec_id, payload) VALUES(?,?,?,?,?,?)");
    Stmt sandbox(db, "INSERT OR REPLACE INTO sandboxes(id, name, spec_json, created_ms) VALUES(?,?,?,?)");
    Stmt deleted(db, "UPDATE sandboxes SET deleted_ms=? WHERE id=?");
    Stmt started(db, "INSERT OR REPLACE INTO executions(sandbox_id, exec_id, argv_json, cwd, env_names_json, started_ms, status) "
                     "VALUES(?,?,?,?,?,?,'running')");
    Stmt exited(db, "UPDATE executions SET ended_ms=?, exit_code=?, signal=?, status=?, bytes_out=?, bytes_err=?, truncated=? "
                    "WHERE sandbox_id=? AND exec_id=?");
    Stmt chunk(db, "INSERT OR IGNORE INTO output_chunks(sandbox_id, exec_id, stream, offset, time_ms, data) VALUES(?,?,?,?,?,?)");
    bool ok = true;
    for (const Event &e : batch) {
        if (e.isOutput()) {
            auto &offset = m_offsets[std::make_tuple(e.sandbox, e.exec, e.stream)];
            ok = chunk.text(1, e.sandbox).integer(2, e.exec).integer(3, e.stream).integer(4, offset).integer(5, e.timeMs).blob(6, e.data).run() && ok;
            offset += e.data.size();
            continue;
        }
        ok = event.text(1, e.sandbox).integer(2, qint64(e.seq)).integer(3, e.timeMs).text(4, e.kind).integer(5, e.exec).json(6, e.payload).run() && ok;
        const QJsonObject &p = e.payload;
        if (e.kind == QLatin1String("sandbox.created")) {
            ok = sandbox.text(1, e.sandbox).text(2, p.value(QStringLiteral("name")).toString()).json(3, p.value(QStringLiteral("spec"))).integer(4, e.timeMs).run() && ok;
        } else if (e.kind == QLatin1String("sandbox.deleted")) {
            ok = deleted.integer(1, e.timeMs).text(2, e.sandbox).run() && ok;
        } else if (e.kind == QLatin1String("exec.started")) {
            ok = started.text(1, e.sandbox).integer(2, e.exec).json(3, p.value(QStringLiteral("argv"))).text(4, p.value(QStringLiteral("cwd")).toString())
                     .json(5, p.value(QStringLiteral("envNames"))).integer(6, e.timeMs).run() && ok;
        } else if (e.kind == QLatin1String("exec.exited")) {
            for (int stream : {1, 2})
                m_offsets.erase(std::make_tuple(e.sandbox, e.exec, stream));
            ok = exited.integer(1, e.timeMs).nullable(2, p.value(QStringLiteral("exitCode"))).nullable(3, p.value(QStringLiteral("signal")))
                     .text(4, p.value(QStringLiteral("status")).toString()).integer(5, qint64(p.value(QStringLiteral("bytesOut")).toDouble()))
                     .integer(6, qint64(p.value(QStringLiteral("bytesErr")).toDouble())).integer(7, p.value(QStringLiteral("truncated")).toBool())
                     .text(8, e.sandbox).integer(9, e.exec).run() && ok;
        }
    }
    if (!ok) {
        const Error e = sqlError(db, QStringLiteral("writing %1 events").arg(batch.size()));
        (void)exec(db, "ROLLBACK", QStringLiteral("rollback"));
        return e;
    }
    return exec(db, "COMMIT", QStringLiteral("commit"));
}

Result<qint64> HistoryStore::eventCount(const QString &sandbox) const
{
    auto db = openConnection(m_options.path, true);
    if (!db)
        return db.error();
    Stmt st(*db, sandbox.isEmpty() ? "SELECT count(*) FROM events" : "SELECT count(*) FROM events WHERE sandbox_id=?");
    if (!sandbox.isEmpty())
        st.text(1, sandbox);
    qint64 count = -1;
    if (sqlite3_step(st.s) == SQLITE_ROW)
        count = sqlite3_column_int64(st.s, 0);
    sqlite3_finalize(std::exchange(st.s, nullptr));
    sqlite3_close(*db);
    return count;
}

Result<QJsonArray> HistoryStore::executions(const ExecutionFilter &filter) const
{
    auto db = openConnection(m_options.path, true);
    if (!db)
        return db.error();
    Stmt st(*db, "SELECT e.sandbox_id, coalesce(s.name, ''), e.exec_id, e.argv_json, e.cwd, e.status, e.exit_code, e.signal, "
                 "e.started_ms, e.ended_ms, e.bytes_out, e.bytes_err, e.truncated "
                 "FROM executions e LEFT JOIN sandboxes s ON s.id = e.sandbox_id "
                 "WHERE (?1 = '' OR e.sandbox_id = ?1 OR s.name = ?1) AND (?2 = '' OR e.status = ?2) "
                 "ORDER BY e.started_ms DESC, e.exec_id DESC LIMIT ?3");
    st.text(1, filter.sandbox).text(2, filter.status).integer(3, std::clamp(filter.limit, 1, 10000));
    QJsonArray out;
    auto text = [&](int col) { return QString::fromUtf8(reinterpret_cast<const char *>(sqlite3_column_text(st.s, col))); };
    auto number = [&](int col) {
        return sqlite3_column_type(st.s, col) == SQLITE_NULL ? QJsonValue() : QJsonValue(double(sqlite3_column_int64(st.s, col)));
    };
    while (sqlite3_step(st.s) == SQLITE_ROW) {
        out.append(QJsonObject{{QStringLiteral("sandbox"), text(0)},
                               {QStringLiteral("sandboxName"), text(1)},
                               {QStringLiteral("exec"), number(2)},
                               {QStringLiteral("argv"), QJsonDocument::fromJson(text(3).toUtf8()).array()},
                               {QStringLiteral("cwd"), text(4)},
                               {QStringLiteral("status"), text(5)},
                               {QStringLiteral("exitCode"), number(6)},
                               {QStringLiteral("signal"), number(7)},
                               {QStringLiteral("startedMs"), number(8)},
                               {QStringLiteral("endedMs"), number(9)},
                               {QStringLiteral("bytesOut"), number(10)},
                               {QStringLiteral("bytesErr"), number(11)},
                               {QStringLiteral("truncated"), sqlite3_column_int(st.s, 12) != 0}});
    }
    sqlite3_finalize(std::exchange(st.s, nullptr));
    sqlite3_close(*db);
    return out;
}

Result<int> HistoryStore::schemaVersion() const
{
    auto db = openConnection(m_options.path, true);
    if (!db)
        return db.error();
    auto v = userVersion(*db);
    sqlite3_close(*db);
    return v;
}

} // namespace airlock
