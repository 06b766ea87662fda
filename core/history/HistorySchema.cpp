// SPDX-License-Identifier: Apache-2.0
#include "history/HistorySchema.h"

#include "history/Sql.h"
#include "log/Log.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <iterator>

namespace airlock::history {

namespace {
// Entry N turns schema N into N+1. Never edit a step once released; add one.
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
    // 1 -> 2: every event and execution names its run; executions get a stable integer id (what
    // `airlockctl show` takes and what the search index points at); output is kept as head and
    // tail with its stored byte count; FTS5 over commands and output text; events are clustered
    // by sandbox and sequence number (one B-tree, not a table and an index).
    R"sql(
    CREATE TABLE executions_v2 (
        id INTEGER PRIMARY KEY,
        sandbox_id TEXT NOT NULL,
        exec_id INTEGER NOT NULL,
        run_id INTEGER REFERENCES runs(id),
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
        stored_bytes INTEGER NOT NULL DEFAULT 0,
        truncated INTEGER NOT NULL DEFAULT 0,
        output_pruned INTEGER NOT NULL DEFAULT 0,
        UNIQUE (sandbox_id, exec_id)
    );
    INSERT INTO executions_v2 (sandbox_id, exec_id, run_id, argv_json, cwd, env_names_json, started_ms, ended_ms,
                               exit_code, signal, status, bytes_out, bytes_err, stored_bytes, truncated)
        SELECT e.sandbox_id, e.exec_id, s.run_id, e.argv_json, e.cwd, e.env_names_json, e.started_ms, e.ended_ms,
               e.exit_code, e.signal, e.status, e.bytes_out, e.bytes_err,
               (SELECT total(length(c.data)) FROM output_chunks c WHERE c.sandbox_id = e.sandbox_id AND c.exec_id = e.exec_id),
               e.truncated
        FROM executions e LEFT JOIN sandboxes s ON s.id = e.sandbox_id
        ORDER BY e.started_ms, e.rowid;
    DROP TABLE executions;
    ALTER TABLE executions_v2 RENAME TO executions;
    CREATE INDEX executions_by_start ON executions(started_ms);
    CREATE INDEX executions_by_sandbox ON executions(sandbox_id, id);
    CREATE INDEX executions_by_run ON executions(run_id, id);
    CREATE INDEX executions_by_status ON executions(status, id);

    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        execution INTEGER NOT NULL REFERENCES executions(id),
        stream INTEGER NOT NULL CHECK (stream IN (1, 2)),
        offset INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        data BLOB NOT NULL,
        indexed INTEGER NOT NULL DEFAULT 1 -- in output_fts; a running execution's tail is not, yet
    );
    INSERT INTO chunks (execution, stream, offset, time_ms, data)
        SELECT x.id, c.stream, c.offset, c.time_ms, c.data
        FROM output_chunks c JOIN executions x ON x.sandbox_id = c.sandbox_id AND x.exec_id = c.exec_id
        ORDER BY x.id, c.time_ms, c.stream, c.offset;
    DROP TABLE output_chunks;
    CREATE INDEX chunks_by_execution ON chunks(execution, id);
    CREATE INDEX chunks_unindexed ON chunks(execution) WHERE indexed = 0;

    CREATE TABLE events_v2 (
        sandbox_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        exec_id INTEGER,
        payload TEXT NOT NULL,
        run_id INTEGER REFERENCES runs(id),
        PRIMARY KEY (sandbox_id, seq)
    ) WITHOUT ROWID;
    INSERT INTO events_v2 SELECT e.sandbox_id, e.seq, e.time_ms, e.kind, e.exec_id, e.payload,
                                 (SELECT run_id FROM sandboxes s WHERE s.id = e.sandbox_id)
        FROM events e;
    DROP TABLE events;
    ALTER TABLE events_v2 RENAME TO events;
    CREATE INDEX events_by_run ON events(run_id);
    CREATE INDEX sandboxes_by_run ON sandboxes(run_id);

    CREATE VIRTUAL TABLE command_fts USING fts5(command, content='');
    CREATE VIRTUAL TABLE output_fts USING fts5(text, content='');
    INSERT INTO command_fts (rowid, command) SELECT id, airlock_command_text(argv_json) FROM executions;
    INSERT INTO output_fts (rowid, text) SELECT id, airlock_index_text(data) FROM chunks;
    )sql",
    // 2 -> 3: what an agent asked for and did not get is a row too (status 'denied' by a rule or
    // a person, 'unanswered' when nobody decided in time; no exec id, since nothing ran), and every
    // row says which agent asked and how it was decided. Ids are kept: the search index and the
    // chunks point at them.
    R"sql(
    CREATE TABLE executions_v3 (
        id INTEGER PRIMARY KEY,
        sandbox_id TEXT NOT NULL,
        exec_id INTEGER,
        run_id INTEGER REFERENCES runs(id),
        argv_json TEXT NOT NULL,
        cwd TEXT,
        env_names_json TEXT,
        started_ms INTEGER NOT NULL,
        ended_ms INTEGER,
        exit_code INTEGER,
        signal INTEGER,
        status TEXT NOT NULL CHECK (status IN ('running','succeeded','failed','killed','timed_out','interrupted','denied','unanswered')),
        bytes_out INTEGER NOT NULL DEFAULT 0,
        bytes_err INTEGER NOT NULL DEFAULT 0,
        stored_bytes INTEGER NOT NULL DEFAULT 0,
        truncated INTEGER NOT NULL DEFAULT 0,
        output_pruned INTEGER NOT NULL DEFAULT 0,
        agent TEXT,
        decided_by TEXT,
        UNIQUE (sandbox_id, exec_id)
    );
    INSERT INTO executions_v3 (id, sandbox_id, exec_id, run_id, argv_json, cwd, env_names_json, started_ms, ended_ms, exit_code,
                               signal, status, bytes_out, bytes_err, stored_bytes, truncated, output_pruned)
        SELECT id, sandbox_id, exec_id, run_id, argv_json, cwd, env_names_json, started_ms, ended_ms, exit_code,
               signal, status, bytes_out, bytes_err, stored_bytes, truncated, output_pruned
        FROM executions ORDER BY id;
    DROP TABLE executions;
    ALTER TABLE executions_v3 RENAME TO executions;
    CREATE INDEX executions_by_start ON executions(started_ms);
    CREATE INDEX executions_by_sandbox ON executions(sandbox_id, id);
    CREATE INDEX executions_by_run ON executions(run_id, id);
    CREATE INDEX executions_by_status ON executions(status, id);
    CREATE INDEX executions_by_agent ON executions(agent, id);
    )sql",
    // 4: a run's events in the order a trace reads them (time, sandbox, sequence), so each page
    // of history.events (and of an export, paged the same way) is a range of the index instead
    // of a sort of the whole run. It replaces events_by_run: one index to keep up, as before.
    R"sql(
    DROP INDEX events_by_run;
    CREATE INDEX events_by_run_time ON events(run_id, time_ms, sandbox_id, seq);
    )sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

auto logger()
{
    static auto l = log::get("core.history");
    return l;
}
} // namespace

Result<int> userVersion(sqlite3 *db)
{
    sql::Stmt st(db, "PRAGMA user_version");
    if (!st.step())
        return sql::error(db, QStringLiteral("reading the schema version"));
    return int(st.columnInt(0));
}

Status migrateTo(sqlite3 *db, int target)
{
    auto version = userVersion(db);
    if (!version)
        return version.error();
    for (int v = *version; v < target; ++v) {
        // Each step and its version bump commit together, so a crash leaves a whole schema; a step
        // that left a reference dangling does not commit.
        const QByteArray step = QByteArray("BEGIN IMMEDIATE;") + kMigrations[v]
            + "PRAGMA user_version=" + QByteArray::number(v + 1) + ";";
        Status s = sql::exec(db, step.constData(), QStringLiteral("migrating schema %1 to %2").arg(v).arg(v + 1));
        if (s) {
            sql::Stmt dangling(db, "PRAGMA foreign_key_check");
            if (dangling.step())
                s = makeError(ErrorCode::IoError,
                    QStringLiteral("migrating schema %1 to %2 left rows of %3 without the row they refer to")
                        .arg(v)
                        .arg(v + 1)
                        .arg(dangling.columnText(0)));
        }
        if (s)
            s = sql::exec(db, "COMMIT", QStringLiteral("migrating schema %1 to %2").arg(v).arg(v + 1));
        if (!s) {
            (void)sql::exec(db, "ROLLBACK", QStringLiteral("rollback"));
            return s;
        }
        logger()->info("history schema migrated to {}", v + 1);
    }
    return Ok{};
}

Status migrate(sqlite3 *db, const QString &path)
{
    auto version = userVersion(db);
    if (!version)
        return version.error();
    if (*version > kSchemaVersion)
        return makeError(ErrorCode::IoError,
            QStringLiteral("history database %1 has schema %2, written by a newer Airlock (this one knows %3); "
                           "upgrade Airlock or move the file away")
                .arg(path)
                .arg(*version)
                .arg(kSchemaVersion));
    return migrateTo(db, kSchemaVersion);
}

Status recoverInterrupted(sqlite3 *db, const QStringList &liveSandboxes)
{
    // Only one daemon uses a data directory (InstanceLock), so anything still running here was
    // running when a previous daemon died: it is interrupted, never succeeded. Except in the
    // sandboxes that outlived it, which the new daemon takes over and settles itself.
    const QString live
        = QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(liveSandboxes)).toJson(QJsonDocument::Compact));
    if (Status s = sql::exec(db, "BEGIN IMMEDIATE", QStringLiteral("marking executions of a dead daemon interrupted"));
        !s)
        return s;
    sql::Stmt executions(db, R"sql(
        UPDATE executions SET status = 'interrupted',
            ended_ms = max(started_ms,
                           coalesce((SELECT max(time_ms) FROM events WHERE events.sandbox_id = executions.sandbox_id), 0),
                           coalesce((SELECT max(time_ms) FROM chunks WHERE chunks.execution = executions.id), 0)),
            stored_bytes = (SELECT total(length(data)) FROM chunks WHERE chunks.execution = executions.id),
            bytes_out = coalesce((SELECT max(offset + length(data)) FROM chunks WHERE execution = executions.id AND stream = 1), 0),
            bytes_err = coalesce((SELECT max(offset + length(data)) FROM chunks WHERE execution = executions.id AND stream = 2), 0)
            WHERE status = 'running' AND sandbox_id NOT IN (SELECT value FROM json_each(?)))sql");
    sql::Stmt sandboxes(db, R"sql(
        UPDATE sandboxes SET deleted_ms = coalesce((SELECT max(time_ms) FROM events WHERE events.sandbox_id = sandboxes.id), created_ms)
            WHERE deleted_ms IS NULL AND id NOT IN (SELECT value FROM json_each(?)))sql");
    const bool done = executions.text(1, live).run() && sandboxes.text(1, live).run();
    if (!done) {
        const Error e = sql::error(db, QStringLiteral("marking executions of a dead daemon interrupted"));
        (void)sql::exec(db, "ROLLBACK", QString());
        return e;
    }
    return sql::exec(db, "COMMIT", QStringLiteral("marking executions of a dead daemon interrupted"));
}

} // namespace airlock::history
