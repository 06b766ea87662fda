// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "history/Sql.h"
#include "model/Event.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonArray>
#include <QString>
#include <QStringList>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace airlock {

// The writing half of the SQLite history (issue 3): the daemon's one event stream, stored. One
// writer thread drains a queue and commits in batches: an event is durable within
// maxBatchLatencyMs, or once flush() returns. Output is kept per execution as a head and a tail
// (half of maxStoredOutputPerExec each; the bytes between are a gap whose size the offsets show),
// and all output together within maxStoredOutputTotal, pruning the oldest executions' output
// first (never their records). Readers use HistoryReader, on their own connections.
class HistoryStore {
public:
    struct Options {
        QString path;
        int maxBatchLatencyMs = 100;
        int batchedFactLatencyMs = 20; // a batch holding an Event::batched fact is cut this short
        qint64 maxStoredOutputPerExec = 16 * 1024 * 1024;
        qint64 maxStoredOutputTotal = qint64(2) * 1024 * 1024 * 1024;
        int retryIntervalMs = 250; // while the database cannot be written
        // Room kept on the history's filesystem (a file beside it, allocated) and given up when the
        // disk is full, so that pruning, which writes too, still works; made again afterwards.
        qint64 reserveBytes = 32 * 1024 * 1024;
        // Room the history leaves free on its filesystem, whatever its budget: when the disk has
        // less, the history grows no further (new output takes the place of its oldest) so that it
        // never fills the disk itself. 0: only the budget counts. Not held back: the search index's
        // own growth (FTS5 writes on deletion too), which the reserve is there for.
        qint64 keepFreeBytes = 256 * 1024 * 1024;
        // Sandboxes that outlived the previous daemon: what runs in them is not marked
        // interrupted at open (the daemon that takes them over settles it).
        QStringList liveSandboxes = {};
    };

    // Opens (creating or migrating) the database, marks what a dead daemon left running as
    // interrupted, and starts the writer.
    static Result<std::unique_ptr<HistoryStore>> open(const Options &options);
    // A history file that SQLite finds damaged (not a database, or quick_check's findings) is
    // renamed aside with its -wal and -shm, never deleted: the new name. An error when the file
    // is not damaged (its trouble is something else: say that instead) or cannot be moved.
    static Result<QString> setAsideIfDamaged(const QString &path);
    ~HistoryStore(); // commits what is queued, then stops the writer

    const QString &path() const { return m_options.path; }

    // Never blocks on the disk: the writer thread stores it. Returns the number of the batch that
    // will hold it (see finishedBatches()), or 0 for output that no batch holds in order (past the
    // execution's head: its tail is written apart; or dropped).
    uint64_t append(const Event &event);
    // How many batches the writer has finished (committed, or failed: see writable()).
    uint64_t finishedBatches() const;
    // Called on the writer thread after every batch it finishes; replaced or cleared (nullptr) at
    // any time, and never called after that returns.
    void setBatchListener(std::function<void()> listener);
    // Blocks until everything appended before the call is committed (exit events and starts are
    // acknowledged only after this). While the store cannot write, returns that error at once.
    Status flush();
    // Ok while the store writes; the write error while it cannot. The daemon refuses new sandboxes
    // and executions then (fail closed) and the writer keeps retrying until the disk heals.
    Status writable() const;

    // Set while the disk holding the history has less free than keepFreeBytes: the output it keeps
    // is then held to keptBytes (under the budget), and a person should hear why.
    struct DiskFloor {
        qint64 freeBytes = 0;
        qint64 keepFreeBytes = 0;
        qint64 keptBytes = 0;
    };
    std::optional<DiskFloor> diskFloor() const;

    struct Prune {
        std::optional<qint64> keepBytes; // output to keep at most (default: the budget)
        std::optional<qint64> endedBeforeMs; // drop the output of executions that ended before this
        bool vacuum = false; // then give the space back to the filesystem
    };
    struct PruneReport {
        qint64 executions = 0; // whose output was dropped
        qint64 freedBytes = 0;
        qint64 storedBytes = 0; // output stored afterwards
        qint64 fileBytes = 0; // database + WAL afterwards
    };
    struct Progress {
        // "pruning"; "converting" (once, for a history made before incremental vacuum: the one
        // step that holds commits for its whole length); "vacuuming".
        QString phase;
        qint64 done = 0; // bytes
        qint64 total = 0;
    };
    using ProgressListener = std::function<void(const Progress &)>;
    // Runs on the writer thread in slices of about kUpkeepSliceMs between batches, so that a
    // commit waits at most a slice (issue 19, item 10). Each slice commits: what a prune dropped
    // stays dropped if the daemon stops half way. `done` and `progress` (at most four times a
    // second, and at each phase) are called on that thread.
    void prune(const Prune &request, std::function<void(Result<PruneReport>)> done, ProgressListener progress = {});
    Result<PruneReport> pruneAndWait(const Prune &request, ProgressListener progress = {});
    static constexpr int kUpkeepSliceMs = 40;

private:
    // Under m_mutex, when a newer tail moves to m_tailSlices: drops the older slices it supersedes.
    void dropSupersededTail();
    using ExecKey = std::pair<QString, uint32_t>;
    struct Item {
        Event event;
        bool tail = false; // output beyond the head budget: may be dropped again for newer tail
    };
    struct OutputBudget { // append side, per running execution
        qint64 head = 0;
        std::deque<Item> tail;
        qint64 tailBytes = 0;
    };
    struct ExecRow { // writer side, per running execution
        qint64 id = 0;
        qint64 stored = 0;
        std::deque<std::pair<qint64, qint64>> tail; // (chunk id, bytes), oldest first
        qint64 tailBytes = 0;
    };
    struct WriterState { // rolled back with the transaction when a batch fails
        QHash<QString, qint64> runIds;
        std::map<ExecKey, ExecRow> execs;
        qint64 totalStored = 0;
        std::deque<qint64> toIndex; // finished executions whose tail is not in the search index yet
        bool overBudget = false; // pruning down to 90 % of the budget, a slice per batch
    };
    struct Statements; // prepared once for the writer's connection
    struct UpkeepJob { // a prune (and vacuum) under way, in slices (HistoryUpkeep.cpp)
        enum class Phase { Start, Prune, Vacuum, Finish };
        Prune request;
        std::function<void(Result<PruneReport>)> done;
        ProgressListener progress;
        Phase phase = Phase::Start;
        PruneReport report;
        qint64 goal = 0; // output to keep at most
        qint64 toFree = 0; // what pruning expects to drop
        qint64 upToId = 0; // the executions it may drop: those recorded when it began
        bool onReserve = false; // the disk was full: the reserve was given up, and is made again at the end
        qint64 freePages = -1; // vacuum: the free pages it started with
        qint64 pageSize = 4096;
        QString lastPhase;
        std::chrono::steady_clock::time_point lastReport{};
    };

    explicit HistoryStore(Options options);
    void writerLoop();
    // How much of the finished executions' tails a batch indexes (kIndexSlice at most).
    enum class Indexing { None, UntilSomeoneWaits, WholeSlice };
    Status writeBatch(std::deque<Item> &batch, Indexing indexing);
    // A transaction of nothing else (its list of tails put back if it fails).
    Status indexTails(Indexing indexing, std::chrono::steady_clock::time_point until);
    Status writeOutput(const Item &first, const QByteArray &data);
    Status deleteChunk(qint64 chunkId);
    Status indexCommand(qint64 id, const QJsonArray &argv);
    // A flush waits for the next batch, or a batched fact whose latency is up (writer thread;
    // takes m_mutex).
    bool someoneWaits() const;
    // Indexes finished executions' tails until `until` (at least one chunk), in the transaction
    // under way.
    Status indexSomeTails(Indexing indexing, std::chrono::steady_clock::time_point until);
    Result<qint64> runId(const QString &name, qint64 timeMs);
    // One slice of a job (HistoryUpkeep.cpp): true once it is finished and `done` was called.
    bool upkeepSlice(UpkeepJob &job);
    Status pruneSlice(UpkeepJob &job, bool *more);
    Status vacuumSlice(UpkeepJob &job, bool *more);
    void abandonUpkeep(UpkeepJob &job); // the daemon stops: its `done` hears so
    void reportProgress(UpkeepJob &job, const QString &phase, qint64 done, qint64 total, bool force = false);
    QString reservePath() const { return m_options.path + QStringLiteral("-reserve"); }
    // Allocates the reserve if it is missing; false when there is no room for it.
    bool keepReserve() const;
    // Drops the oldest output down to `target` (and all that ended before `endedBeforeMs`); stops
    // early, with *more set, once past `until` or `maxBytes` (after at least one execution).
    Status pruneOldest(qint64 target, qint64 endedBeforeMs, qint64 upToId, PruneReport &report,
        std::chrono::steady_clock::time_point until, qint64 maxBytes, bool *more);
    // A checkpoint that never waits for readers (what they hold is checkpointed later).
    void checkpointNow();
    // The output the history may keep now: the budget, or less while its disk is short of
    // keepFreeBytes (looked at once a second, every batch when near it). Writer thread.
    qint64 budgetOnThisDisk();
    qint64 headBudget() const { return m_options.maxStoredOutputPerExec / 2; }
    qint64 tailBudget() const { return m_options.maxStoredOutputPerExec - headBudget(); }

    Options m_options;
    sql::Db m_writer;
    std::unique_ptr<Statements> m_sql;
    WriterState m_state; // writer thread only
    std::unique_ptr<UpkeepJob> m_activeJob; // writer thread only
    struct DiskWatch { // writer thread only
        qint64 cap = std::numeric_limits<qint64>::max(); // what the disk lets the history keep
        qint64 lowestFree = 0; // the least free seen while short: only a new shortfall lowers cap
        bool near = false; // under twice keepFreeBytes free: looked at every batch, not once a second
        bool giveBackLog = false; // newly short: the write-ahead log is cut back after the commit
        std::chrono::steady_clock::time_point lastLook{};
    } m_disk;
    std::thread m_thread;

    mutable std::mutex m_mutex; // guards everything below
    std::condition_variable m_wake;
    std::condition_variable m_committed;
    std::deque<Item> m_queue;
    std::map<ExecKey, OutputBudget> m_output;
    std::deque<std::unique_ptr<UpkeepJob>> m_jobs; // waiting for the one before to finish
    uint64_t m_batchesStarted = 0;
    uint64_t m_batchesDone = 0;
    std::function<void()> m_batchListener;
    std::optional<std::chrono::steady_clock::time_point> m_cutBatchAt; // a batched fact waits
    bool m_tailPending = false; // some OutputBudget holds tail output
    std::deque<Item> m_tailSlices; // tail output taken for writing, a slice per batch
    bool m_flushRequested = false;
    bool m_stopping = false;
    bool m_failed = false;
    Error m_writeError;
    std::optional<DiskFloor> m_diskFloor;
};

} // namespace airlock
