// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "util/Result.h"

#include <QJsonArray>
#include <QString>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <memory>
#include <mutex>
#include <thread>

struct sqlite3;

namespace airlock {

// The SQLite history of every sandbox (issue 3): one append-only event stream, stored. One writer
// thread drains a queue and commits in batches (an event is durable within maxBatchLatencyMs, or
// as soon as flush() returns); readers open their own connections. WAL, `user_version` schema
// with stepwise migrations.
class HistoryStore {
public:
    struct Options {
        QString path;
        int maxBatchLatencyMs = 100;
        // Output bytes stored per execution (both streams); beyond it only the true byte counts
        // (from exec.exited) are kept. Keeping the tail as well is still to come.
        qint64 maxStoredOutputPerExec = 16 * 1024 * 1024;
    };

    static constexpr int kSchemaVersion = 1;

    // Opens (creating or migrating) the database and starts the writer. Refuses a database written
    // by a newer Airlock rather than guessing at it.
    static Result<std::unique_ptr<HistoryStore>> open(const Options &options);
    ~HistoryStore(); // commits what is queued, then stops the writer

    // Never blocks on the disk: the writer thread stores it.
    void append(const Event &event);
    // Blocks until every event appended before the call is committed (exit events and approvals are
    // acknowledged only after this). Returns the write error if the store cannot write.
    Status flush();

    // Readers (own connection each call; safe from any thread).
    Result<qint64> eventCount(const QString &sandbox = {}) const;
    struct ExecutionFilter {
        QString sandbox; // id or name
        QString status;
        int limit = 50;
    };
    // Newest first: [{sandbox, sandboxName, exec, argv, cwd, status, exitCode, signal, startedMs,
    // endedMs, bytesOut, bytesErr, truncated}].
    Result<QJsonArray> executions(const ExecutionFilter &filter) const;
    Result<int> schemaVersion() const;

private:
    explicit HistoryStore(Options options);
    void writerLoop();
    Status writeBatch(std::deque<Event> &batch);

    Options m_options;
    sqlite3 *m_writer = nullptr;
    std::thread m_thread;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_committed;
    std::deque<Event> m_queue;
    uint64_t m_appended = 0;  // events handed to append()
    uint64_t m_done = 0;      // events the writer finished with (committed or failed)
    bool m_flushRequested = false;
    bool m_stopping = false;
    Error m_writeError;       // the last failure, while m_failed
    bool m_failed = false;
    // Writer thread only: next byte offset of each (sandbox, exec, stream).
    std::map<std::tuple<QString, uint32_t, int>, qint64> m_offsets;
    // Under m_mutex: output bytes queued for storage per execution (the cap).
    std::map<std::pair<QString, uint32_t>, qint64> m_storedPerExec;
};

} // namespace airlock
