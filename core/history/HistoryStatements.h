// SPDX-License-Identifier: Apache-2.0
#pragma once
// The writer's prepared statements, shared by the files that define HistoryStore's members
// (HistoryStore.cpp: writing; HistoryUpkeep.cpp: pruning). Not for anyone else.
#include "history/HistoryStore.h"
#include "history/Sql.h"

namespace airlock {

struct HistoryStore::Statements {
    explicit Statements(sqlite3 *db)
        : event(db,
            "INSERT OR IGNORE INTO events(sandbox_id, seq, time_ms, kind, exec_id, payload, run_id) "
            "VALUES(?,?,?,?,?,?,?)")
        , sandbox(db, "INSERT OR REPLACE INTO sandboxes(id, name, run_id, spec_json, created_ms) VALUES(?,?,?,?,?)")
        , deleted(db, "UPDATE sandboxes SET deleted_ms=? WHERE id=?")
        , started(db,
              "INSERT OR IGNORE INTO executions(sandbox_id, exec_id, run_id, argv_json, cwd, env_names_json, "
              "started_ms, status, "
              "agent, decided_by) VALUES(?,?,?,?,?,?,?,'running',?,?)")
        , refused(db,
              "INSERT INTO executions(sandbox_id, exec_id, run_id, argv_json, cwd, env_names_json, started_ms, "
              "ended_ms, status, "
              "agent, decided_by) VALUES(?,NULL,?,?,?,?,?,?,?,?,?)")
        , commandIndex(db, "INSERT INTO command_fts(rowid, command) VALUES(?,?)")
        , findExec(db,
              "SELECT id, (SELECT coalesce(sum(length(data)), 0) FROM chunks WHERE execution = executions.id) FROM "
              "executions "
              "WHERE sandbox_id=? AND exec_id=?")
        , exited(db,
              "UPDATE executions SET ended_ms=?, exit_code=?, signal=?, status=?, bytes_out=?, bytes_err=?, "
              "stored_bytes=?, "
              "truncated=? WHERE id=?")
        , chunk(db, "INSERT INTO chunks(execution, stream, offset, time_ms, data, indexed) VALUES(?,?,?,?,?,?)")
        , outputIndex(db, "INSERT INTO output_fts(rowid, text) VALUES(?,?)")
        , unindexChunk(db,
              "INSERT INTO output_fts(output_fts, rowid, text) SELECT 'delete', id, airlock_index_text(data) FROM "
              "chunks "
              "WHERE id=? AND indexed=1")
        , dropChunk(db, "DELETE FROM chunks WHERE id=?")
        , addRun(db, "INSERT INTO runs(name, created_ms) VALUES(?,?) ON CONFLICT(name) DO NOTHING")
        , findRun(db, "SELECT id FROM runs WHERE name=?")
        , pruneCandidates(db,
              "SELECT id, stored_bytes FROM executions WHERE stored_bytes > 0 AND status != 'running' "
              "AND (?1 = 0 OR ended_ms < ?1) AND id <= ?2 ORDER BY id LIMIT 256")
        , chunksOf(db, "SELECT id, length(data) FROM chunks WHERE execution=? ORDER BY id LIMIT 16")
        , setStored(db, "UPDATE executions SET stored_bytes=? WHERE id=?")
        , markPruned(db, "UPDATE executions SET stored_bytes=0, output_pruned=1 WHERE id=?")
        , unindexedChunks(db, "SELECT id, data FROM chunks WHERE execution=? AND indexed=0 ORDER BY id LIMIT 4")
        , markIndexed(db, "UPDATE chunks SET indexed=1 WHERE id=?")
    {
    }
    bool ok() const
    {
        for (const sql::Stmt *s : {&event, &sandbox, &deleted, &started, &refused, &commandIndex, &findExec, &exited,
                 &chunk, &outputIndex, &unindexChunk, &dropChunk, &addRun, &findRun, &pruneCandidates, &chunksOf,
                 &setStored, &markPruned, &unindexedChunks, &markIndexed})
            if (!s->prepared())
                return false;
        return true;
    }
    sql::Stmt event, sandbox, deleted, started, refused, commandIndex, findExec, exited, chunk, outputIndex,
        unindexChunk, dropChunk, addRun, findRun, pruneCandidates, chunksOf, setStored, markPruned, unindexedChunks,
        markIndexed;
};

} // namespace airlock
