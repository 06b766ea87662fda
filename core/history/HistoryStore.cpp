// SPDX-License-Identifier: Apache-2.0
#include "history/HistoryStore.h"
#include "history/HistoryReader.h"
#include "history/Sql.h"
#include <QDateTime>
#include <QFile>
#include <QScopeGuard>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "history/HistorySchema.h"
#include "history/HistoryStatements.h"
#include "log/Log.h"

#include <QFileInfo>
#include <QJsonArray>

#include <algorithm>
#include <chrono>
#include <fcntl.h>
#include <future>
#include <limits>
#include <optional>
#include <sys/stat.h>
#include <utility>
#include <vector>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.history");
    return l;
}

constexpr qint64 kMaxChunkBytes = 256 * 1024; // consecutive output is merged up to this
constexpr qint64 kRetainedOnFailure = 1024 * 1024; // output kept for the retry of a failed batch
// Tails are indexed (once their executions end) a few milliseconds per batch, and in a batch that
// someone waits for only when none was for this long: a flood's tails are tens of megabytes.
constexpr auto kIndexSlice = std::chrono::milliseconds(4);
constexpr auto kIndexStarvedAfter = std::chrono::milliseconds(100);
constexpr int kTailIntervalMs = 1000; // a flood's tail is written this often
constexpr qint64 kTailSliceBytes
    = 1024 * 1024; // of it per batch (so that no batch, and no one's output in it, waits long)

bool is(const Event &e, const char *kind)
{
    return e.kind == QLatin1String(kind);
}

qint64 number(const QJsonObject &o, const char *key)
{
    return qint64(o.value(QLatin1String(key)).toDouble());
}

// An agent's command that was refused before it ran: by a rule (command.denied), by a person, or
// because nobody decided in time (approval.decided). A program an execution started, or a
// network or tool request, is not a command of the history.
struct Refusal {
    QString status, decidedBy;
    qint64 askedMs = 0;

    static std::optional<Refusal> of(const Event &e)
    {
        const QJsonObject &p = e.payload;
        if (!p.value(QStringLiteral("argv")).isArray())
            return std::nullopt;
        if (is(e, "command.denied"))
            return Refusal{QStringLiteral("denied"),
                QStringLiteral("denied by policy: %1").arg(p.value(QStringLiteral("reason")).toString()), e.timeMs};
        if (!is(e, "approval.decided") || p.value(QStringLiteral("kind")).toString() != QLatin1String("command")
            || number(p, "exec") != 0 || p.value(QStringLiteral("decision")).toString() != QLatin1String("deny"))
            return std::nullopt;
        const QString reason = p.value(QStringLiteral("reason")).toString();
        const qint64 asked = number(p, "requestedMs");
        if (p.value(QStringLiteral("expired")).toBool())
            return Refusal{QStringLiteral("unanswered"), reason, asked ? asked : e.timeMs};
        const QString by = p.value(QStringLiteral("by")).toString();
        return Refusal{QStringLiteral("denied"),
            reason.isEmpty() ? QStringLiteral("denied by %1").arg(by)
                             : QStringLiteral("denied by %1: %2").arg(by, reason),
            asked ? asked : e.timeMs};
    }
};
} // namespace

HistoryStore::HistoryStore(Options options)
    : m_options(std::move(options))
{
}

Result<std::unique_ptr<HistoryStore>> HistoryStore::open(const Options &options)
{
    std::unique_ptr<HistoryStore> store(new HistoryStore(options));
    auto db = sql::open(options.path, false);
    if (!db)
        return db.error();
    sqlite3 *raw = db->get();
    store->m_writer = std::move(*db);
    // A migration rebuilds tables that others refer to, so it runs before the foreign keys are
    // enforced (SQLite's own procedure) and checks them itself before each step commits.
    // Incremental vacuum (which a new file takes only before its first table, and before WAL):
    // giving space back is then done a slice at a time, never one long VACUUM. Set on a new file
    // only: on an existing one the pragma writes its header.
    const bool fresh = [raw] {
        sql::Stmt pages(raw, "PRAGMA page_count");
        return pages.step() && pages.columnInt(0) == 0;
    }();
    if (fresh)
        if (Status s = sql::exec(raw, "PRAGMA auto_vacuum=INCREMENTAL", QStringLiteral("PRAGMA auto_vacuum")); !s)
            return s.error();
    // The write-ahead log is cut back to this after a checkpoint (a vacuum can grow it).
    for (const char *pragma :
        {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA journal_size_limit=67108864"})
        if (Status s = sql::exec(raw, pragma, QString::fromLatin1(pragma)); !s)
            return s.error();
    if (Status s = history::migrate(raw, options.path); !s)
        return s.error();
    if (Status s = sql::exec(raw, "PRAGMA foreign_keys=ON", QStringLiteral("PRAGMA foreign_keys=ON")); !s)
        return s.error();
    if (Status s = history::recoverInterrupted(raw, options.liveSandboxes); !s)
        return s.error();
    store->m_sql = std::make_unique<Statements>(raw);
    if (!store->m_sql->ok())
        return sql::error(raw, QStringLiteral("preparing statements"));
    sql::Stmt total(raw, "SELECT total(stored_bytes) FROM executions");
    store->m_state.totalStored = total.step() ? total.columnInt(0) : 0;
    // Tails of executions that ended (or were interrupted) before they were indexed.
    sql::Stmt unindexed(raw, "SELECT DISTINCT execution FROM chunks WHERE indexed = 0");
    while (unindexed.step())
        store->m_state.toIndex.push_back(unindexed.columnInt(0));
    if (!store->keepReserve())
        logger()->warn(
            "history: no room for its {}-byte reserve beside {}", options.reserveBytes, options.path.toStdString());
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
    m_sql.reset();
}

uint64_t HistoryStore::append(const Event &event)
{
    bool wake = false;
    bool queuedOutput = false;
    uint64_t batch = 0;
    {
        std::lock_guard lock(m_mutex);
        // Only the first event of a batch wakes the writer (which then gathers for a while):
        // waking it for every event would cost a context switch each.
        const bool idle = m_queue.empty() && !m_tailPending;
        if (event.isOutput()) {
            // The per-execution cap is applied here, not in the writer: output that will not be
            // stored must not sit in the queue either.
            OutputBudget &budget = m_output[{event.sandbox, event.exec}];
            QByteArrayView rest = event.data;
            qint64 offset = event.offset;
            queuedOutput = budget.head < headBudget();
            if (queuedOutput) {
                const qint64 take = std::min<qint64>(rest.size(), headBudget() - budget.head);
                m_queue.push_back({event, false});
                if (take < rest.size())
                    m_queue.back().event.data.truncate(take);
                budget.head += take;
                rest = rest.sliced(take);
                offset += take;
            }
            // Someone waits to hear of it (HistoryGate): the batch is cut short.
            if (queuedOutput && !m_cutBatchAt) {
                m_cutBatchAt
                    = std::chrono::steady_clock::now() + std::chrono::milliseconds(m_options.batchedFactLatencyMs);
                wake = true;
            }
            if (!rest.isEmpty() && tailBudget() > 0) {
                if (rest.size() > tailBudget()) {
                    offset += rest.size() - tailBudget();
                    rest = rest.last(tailBudget());
                }
                Item item{event, true};
                item.event.offset = offset;
                if (rest.size() != event.data.size())
                    item.event.data = rest.toByteArray();
                budget.tail.push_back(std::move(item));
                m_tailPending = true;
                budget.tailBytes += rest.size();
                // Keep at least the budget: drop whole events from the front while that holds.
                while (budget.tailBytes - budget.tail.front().event.data.size() >= tailBudget()) {
                    budget.tailBytes -= budget.tail.front().event.data.size();
                    budget.tail.pop_front();
                }
            }
        } else {
            if (is(event, "exec.exited")) {
                // Its tail goes before its exit, so that the exit sees every stored byte.
                const auto mine
                    = [&](const Item &t) { return t.event.exec == event.exec && t.event.sandbox == event.sandbox; };
                std::deque<Item> others;
                for (Item &t : m_tailSlices)
                    (mine(t) ? m_queue : others).push_back(std::move(t));
                m_tailSlices.swap(others);
                if (auto it = m_output.find({event.sandbox, event.exec}); it != m_output.end()) {
                    for (Item &t : it->second.tail)
                        m_queue.push_back(std::move(t));
                    m_output.erase(it);
                }
            }
            m_queue.push_back({event, false});
            // Someone waits to hear of it (HistoryGate): the batch is cut short.
            if (event.batched && !m_cutBatchAt) {
                m_cutBatchAt
                    = std::chrono::steady_clock::now() + std::chrono::milliseconds(m_options.batchedFactLatencyMs);
                wake = true;
            }
        }
        wake = wake || (idle && (!m_queue.empty() || m_tailPending)); // dropped output wakes nobody
        // The writer takes the whole queue when it starts a batch. Output past the head goes to
        // the tail, which no batch stores in order (once a second, the latest of it): there is
        // no batch to wait for, and waiting for an unrelated one only stalled floods (issue 23).
        batch = event.isOutput() && !queuedOutput ? 0 : m_batchesStarted + 1;
    }
    if (wake)
        m_wake.notify_one();
    return batch;
}

void HistoryStore::dropSupersededTail()
{
    // What still waits of an earlier second's tail is older than the tail that follows it now,
    // and the stored tail keeps only the latest tailBudget() bytes: of the older slices, only what
    // fits beside the newer tail would stay, the rest would be written to be deleted. Without
    // this a flood from many executions piled up slices faster than batches wrote them (issue 23).
    std::map<ExecKey, qint64> older;
    for (const Item &t : m_tailSlices)
        older[{t.event.sandbox, t.event.exec}] += t.event.data.size();
    std::deque<Item> kept;
    for (Item &t : m_tailSlices) {
        const ExecKey key{t.event.sandbox, t.event.exec};
        const auto newer = m_output.find(key);
        qint64 &olderBytes = older[key];
        const qint64 newerBytes = newer == m_output.end() ? 0 : newer->second.tailBytes;
        if (olderBytes + newerBytes - t.event.data.size() >= tailBudget()) {
            olderBytes -= t.event.data.size(); // the oldest of it, beyond what the budget keeps
            continue;
        }
        kept.push_back(std::move(t));
    }
    m_tailSlices.swap(kept);
}

uint64_t HistoryStore::finishedBatches() const
{
    std::lock_guard lock(m_mutex);
    return m_batchesDone;
}

void HistoryStore::setBatchListener(std::function<void()> listener)
{
    std::lock_guard lock(m_mutex); // the writer calls it under the lock
    m_batchListener = std::move(listener);
}

Status HistoryStore::flush()
{
    std::unique_lock lock(m_mutex);
    if (m_failed)
        return m_writeError;
    if (m_stopping)
        return Ok{}; // the writer commits everything queued before it stops
    const uint64_t target = m_batchesStarted + 1; // the next batch takes everything appended so far
    m_flushRequested = true;
    m_wake.notify_one();
    m_committed.wait(lock, [&] { return m_batchesDone >= target; });
    if (m_failed)
        return m_writeError;
    return Ok{};
}

Status HistoryStore::writable() const
{
    std::lock_guard lock(m_mutex);
    if (m_failed)
        return makeError(ErrorCode::HistoryUnavailable,
            QStringLiteral("refusing new work: the history cannot be written (%1); free space on the disk "
                           "holding %2 (or run 'airlockctl prune') and it resumes by itself")
                .arg(m_writeError.message, m_options.path));
    return Ok{};
}

void HistoryStore::writerLoop()
{
    using Clock = std::chrono::steady_clock;
    Clock::time_point lastTail{}, lastIndexed{};
    int failuresWhileStopping = 0;
    std::unique_lock lock(m_mutex);
    for (;;) {
        // m_state.toIndex is the writer's own: tails still to index keep it going when idle.
        m_wake.wait(lock, [&] {
            return !m_queue.empty() || m_tailPending || !m_tailSlices.empty() || m_flushRequested || !m_jobs.empty()
                || m_activeJob || m_stopping || m_failed || !m_state.toIndex.empty() || m_state.overBudget;
        });
        // (Upkeep under way is given up when stopping: each of its slices committed.)
        if (m_stopping && m_queue.empty() && !m_tailPending && m_tailSlices.empty())
            break;
        if (m_stopping && m_failed && ++failuresWhileStopping > 3) {
            logger()->error(
                "history: giving up on {} events that could not be written before stopping", m_queue.size());
            break;
        }
        // Gather for a while (bounded latency) unless someone waits; retry slowly while failing.
        if (m_failed && !m_stopping)
            m_wake.wait_for(lock, std::chrono::milliseconds(m_options.retryIntervalMs), [&] { return m_stopping; });
        else if (!m_flushRequested && !m_stopping && !m_activeJob && m_jobs.empty()
            && (!m_queue.empty() || m_state.overBudget
                || ((m_tailPending || !m_tailSlices.empty()) && m_state.toIndex.empty()))) {
            // (Tails to index are not gathered for, nor a flood's tail, which goes once a second:
            // the tails are indexed a slice at a time meanwhile.) The wait is the tails' time.
            const Clock::time_point gathered = Clock::now() + std::chrono::milliseconds(m_options.maxBatchLatencyMs);
            while (!m_flushRequested && !m_stopping) {
                const Clock::time_point until = m_cutBatchAt ? std::min(gathered, *m_cutBatchAt) : gathered;
                if (Clock::now() >= until)
                    break;
                if (m_state.toIndex.empty()) {
                    m_wake.wait_until(lock, until);
                    continue;
                }
                lock.unlock();
                const Status indexed
                    = indexTails(Indexing::UntilSomeoneWaits, std::min(until, Clock::now() + kIndexSlice));
                lock.lock();
                lastIndexed = Clock::now();
                if (!indexed)
                    break; // the batch meets the same trouble, and reports it
            }
        }
        // A batch someone waits for leaves the tails to the next one, unless they starved: then
        // it indexes a whole slice, whoever waits.
        const Clock::time_point now = Clock::now();
        const bool waitedFor = m_flushRequested || (m_cutBatchAt && now >= *m_cutBatchAt);
        const Indexing indexing = m_state.toIndex.empty() ? Indexing::None
            : !waitedFor                                  ? Indexing::UntilSomeoneWaits
            : now - lastIndexed >= kIndexStarvedAfter     ? Indexing::WholeSlice
                                                          : Indexing::None;
        if (indexing != Indexing::None)
            lastIndexed = now;
        m_flushRequested = false;
        m_cutBatchAt.reset();
        std::deque<Item> batch;
        batch.swap(m_queue);
        // A flood's tail (output past the head budget) is written at most once a second: most of
        // it is replaced before then, and rewriting megabytes ten times a second would cost the
        // flood half its speed. An exit takes its tail along (append() queues it).
        if (m_tailPending && (now - lastTail >= std::chrono::milliseconds(kTailIntervalMs) || m_stopping)) {
            lastTail = now;
            dropSupersededTail();
            for (auto &[key, budget] : m_output) {
                for (Item &t : budget.tail)
                    m_tailSlices.push_back(std::move(t));
                budget.tail.clear();
                budget.tailBytes = 0;
            }
            m_tailPending = false;
        }
        // A slice of it per batch: a second's tail of a flood is megabytes, and everyone's output
        // in the same batch would wait for all of it.
        for (qint64 taken = 0; !m_tailSlices.empty() && (taken < kTailSliceBytes || m_stopping);) {
            taken += m_tailSlices.front().event.data.size();
            batch.push_back(std::move(m_tailSlices.front()));
            m_tailSlices.pop_front();
        }
        const uint64_t id = ++m_batchesStarted;
        lock.unlock();

        const bool attempted = !batch.empty() || m_state.overBudget || indexing != Indexing::None;
        // Indexing alone changes no more of the writer's state than its list of tails (a batch
        // copies all of it: every running execution's tail chunks).
        const bool onlyIndexing = batch.empty() && !m_state.overBudget;
        WriterState before;
        if (!onlyIndexing)
            before = m_state;
        Status written = !attempted ? Status(Ok{})
            : onlyIndexing          ? indexTails(indexing, Clock::now() + kIndexSlice)
                                    : writeBatch(batch, indexing);
        if (!written) {
            if (!onlyIndexing)
                m_state = before;
            // Keep the facts for the retry (and a little output); the rest of the output is lost,
            // which the execution's true byte counts will show.
            std::deque<Item> retry;
            qint64 retained = 0;
            for (Item &item : batch) {
                if (item.event.isOutput() && (retained += item.event.data.size()) > kRetainedOnFailure
                    && !retry.empty())
                    continue;
                retry.push_back(std::move(item));
            }
            batch.swap(retry);
        }

        lock.lock();
        if (!written) {
            if (!m_failed)
                logger()->error(
                    "{}; new work is refused until it can write again", written.error().message.toStdString());
            m_failed = true;
            m_writeError = written.error();
            while (!batch.empty()) {
                m_queue.push_front(std::move(batch.back()));
                batch.pop_back();
            }
        } else if (m_failed && attempted) {
            logger()->info("history writable again");
            m_failed = false;
        }
        m_batchesDone = id;
        m_committed.notify_all();
        if (m_batchListener)
            m_batchListener();
        // Upkeep a slice at a time between batches, once the batch's waiters are released: what
        // arrives meanwhile waits at most a slice, then goes in the next batch (no gathering).
        if (!m_activeJob && !m_jobs.empty()) {
            m_activeJob = std::move(m_jobs.front());
            m_jobs.pop_front();
        }
        if (m_activeJob && !m_stopping) {
            lock.unlock();
            const bool finished = upkeepSlice(*m_activeJob);
            lock.lock();
            if (finished)
                m_activeJob.reset();
        }
    }
    m_batchesDone = std::numeric_limits<uint64_t>::max();
    m_committed.notify_all();
    std::deque<std::unique_ptr<UpkeepJob>> abandoned;
    abandoned.swap(m_jobs);
    if (m_activeJob)
        abandoned.push_front(std::move(m_activeJob));
    lock.unlock();
    for (auto &job : abandoned)
        abandonUpkeep(*job);
}

Result<qint64> HistoryStore::runId(const QString &name, qint64 timeMs)
{
    if (name.isEmpty())
        return qint64(0);
    if (auto it = m_state.runIds.constFind(name); it != m_state.runIds.constEnd())
        return *it;
    if (!m_sql->addRun.text(1, name).integer(2, timeMs).run())
        return sql::error(m_writer.get(), QStringLiteral("recording run %1").arg(name));
    sql::Stmt &find = m_sql->findRun;
    find.text(1, name);
    const qint64 id = find.step() ? find.columnInt(0) : 0;
    find.reset();
    m_state.runIds.insert(name, id);
    return id;
}

Status HistoryStore::deleteChunk(qint64 chunkId)
{
    if (!m_sql->unindexChunk.integer(1, chunkId).run() || !m_sql->dropChunk.integer(1, chunkId).run())
        return sql::error(m_writer.get(), QStringLiteral("dropping old output"));
    return Ok{};
}

Status HistoryStore::writeOutput(const Item &first, const QByteArray &data)
{
    const Event &e = first.event;
    auto row = m_state.execs.find({e.sandbox, e.exec});
    if (row == m_state.execs.end()) {
        // Started before this writer knew it (it is in the database): look it up once.
        sql::Stmt &find = m_sql->findExec;
        find.text(1, e.sandbox).integer(2, e.exec);
        const bool found = find.step();
        const ExecRow fresh{found ? find.columnInt(0) : 0, found ? find.columnInt(1) : 0, {}, 0};
        find.reset();
        if (!found)
            return Ok{}; // output of an execution with no record: nothing to attach it to
        row = m_state.execs.emplace(ExecKey{e.sandbox, e.exec}, fresh).first;
    }
    ExecRow &r = row->second;
    // The head is searchable at once; a tail is indexed once its execution ends (most of a flood's
    // tail is dropped again before then, and indexing is the writer's dearest work).
    const bool indexNow = !first.tail;
    if (!m_sql->chunk.integer(1, r.id)
             .integer(2, e.stream)
             .integer(3, e.offset)
             .integer(4, e.timeMs)
             .blob(5, data)
             .integer(6, indexNow)
             .run())
        return sql::error(m_writer.get(), QStringLiteral("storing output"));
    const qint64 chunkId = sqlite3_last_insert_rowid(m_writer.get());
    if (indexNow && !m_sql->outputIndex.integer(1, chunkId).text(2, sql::indexText(data)).run())
        return sql::error(m_writer.get(), QStringLiteral("indexing output"));
    r.stored += data.size();
    m_state.totalStored += data.size();
    if (!first.tail)
        return Ok{};
    r.tail.emplace_back(chunkId, data.size());
    r.tailBytes += data.size();
    while (r.tailBytes - r.tail.front().second >= tailBudget()) {
        const auto [oldId, bytes] = r.tail.front();
        if (Status s = deleteChunk(oldId); !s)
            return s;
        r.tail.pop_front();
        r.tailBytes -= bytes;
        r.stored -= bytes;
        m_state.totalStored -= bytes;
    }
    return Ok{};
}

Status HistoryStore::indexTails(Indexing indexing, std::chrono::steady_clock::time_point until)
{
    const std::deque<qint64> before = m_state.toIndex;
    const Status s = sql::transaction(m_writer.get(), [&] { return indexSomeTails(indexing, until); });
    if (!s)
        m_state.toIndex = before;
    return s;
}

Status HistoryStore::writeBatch(std::deque<Item> &batch, Indexing indexing)
{
    sqlite3 *db = m_writer.get();
    Statements &q = *m_sql;
    if (Status s = sql::exec(db, "BEGIN IMMEDIATE", QStringLiteral("begin")); !s)
        return s;
    auto failWith = [&](const Error &error) {
        (void)sql::exec(db, "ROLLBACK", QStringLiteral("rollback"));
        return error;
    };
    auto fail = [&](const QString &what) { return failWith(sql::error(db, what)); };
    std::pair<QString, QByteArray> sandboxText, kindText;
    // Consecutive output of one execution's stream is one chunk (fewer rows, words not split),
    // however other executions' output comes between its events: an execution's chunk is open
    // until its output goes on elsewhere (the other stream, a gap, its tail) or a fact about it
    // comes, so its chunks keep the order of its events.
    struct OpenChunk {
        size_t first; // in the batch
        QByteArray data;
    };
    std::map<ExecKey, OpenChunk> open;
    auto close = [&](std::map<ExecKey, OpenChunk>::iterator it) {
        const Status s = writeOutput(batch[it->second.first], it->second.data);
        open.erase(it);
        return s;
    };

    for (size_t i = 0; i < batch.size(); ++i) {
        const Item &item = batch[i];
        const Event &e = item.event;
        if (e.isOutput()) {
            auto it = open.find({e.sandbox, e.exec});
            if (it != open.end()) {
                const Item &first = batch[it->second.first];
                if (first.tail == item.tail && first.event.stream == e.stream
                    && first.event.offset + it->second.data.size() == e.offset
                    && it->second.data.size() < kMaxChunkBytes) {
                    it->second.data += e.data;
                    continue;
                }
                if (Status s = close(it); !s)
                    return failWith(s.error());
            }
            open.emplace(ExecKey{e.sandbox, e.exec}, OpenChunk{i, e.data});
            continue;
        }
        // Its output so far goes before it (an exit counts every stored byte); a fact about the
        // sandbox, all of its executions'.
        if (e.exec != 0) {
            if (auto it = open.find({e.sandbox, e.exec}); it != open.end())
                if (Status s = close(it); !s)
                    return failWith(s.error());
        } else {
            for (auto it = open.lower_bound({e.sandbox, 0}); it != open.end() && it->first.first == e.sandbox;)
                if (Status s = close(it++); !s)
                    return failWith(s.error());
        }
        auto run = runId(e.run, e.timeMs);
        if (!run)
            return failWith(run.error());
        const QJsonObject &p = e.payload;
        // Events come in runs of one sandbox and few kinds: convert each string once per run.
        if (e.sandbox != sandboxText.first)
            sandboxText = {e.sandbox, e.sandbox.toUtf8()};
        if (e.kind != kindText.first)
            kindText = {e.kind, e.kind.toUtf8()};
        if (!q.event.utf8(1, sandboxText.second)
                 .integer(2, qint64(e.seq))
                 .integer(3, e.timeMs)
                 .utf8(4, kindText.second)
                 .integer(5, e.exec)
                 .json(6, p)
                 .nullable(7, *run ? QJsonValue(double(*run)) : QJsonValue())
                 .run())
            return fail(QStringLiteral("recording %1").arg(e.kind));
        const QJsonValue runValue = *run ? QJsonValue(double(*run)) : QJsonValue();
        if (is(e, "sandbox.created")) {
            if (!q.sandbox.text(1, e.sandbox)
                     .text(2, p.value(QStringLiteral("name")).toString())
                     .nullable(3, runValue)
                     .json(4, p.value(QStringLiteral("spec")))
                     .integer(5, e.timeMs)
                     .run())
                return fail(QStringLiteral("recording sandbox %1").arg(e.sandbox));
        } else if (is(e, "sandbox.deleted")) {
            if (!q.deleted.integer(1, e.timeMs).text(2, e.sandbox).run())
                return fail(QStringLiteral("recording the deletion of %1").arg(e.sandbox));
        } else if (is(e, "exec.started")) {
            const QJsonArray argv = p.value(QStringLiteral("argv")).toArray();
            if (!q.started.text(1, e.sandbox)
                     .integer(2, e.exec)
                     .nullable(3, runValue)
                     .json(4, argv)
                     .text(5, p.value(QStringLiteral("cwd")).toString())
                     .json(6, p.value(QStringLiteral("envNames")))
                     .integer(7, e.timeMs)
                     .nullableText(8, p.value(QStringLiteral("agent")).toString())
                     .nullableText(9, p.value(QStringLiteral("decidedBy")).toString())
                     .run())
                return fail(QStringLiteral("recording an execution"));
            if (sqlite3_changes(db) == 1) {
                const qint64 id = sqlite3_last_insert_rowid(db);
                m_state.execs[{e.sandbox, e.exec}] = ExecRow{id, 0, {}, 0};
                if (Status s = indexCommand(id, argv); !s)
                    return failWith(s.error());
            }
        } else if (const std::optional<Refusal> refusal = Refusal::of(e)) {
            // An agent's command that did not run: a row of its own, so that "what did it try that
            // was refused" is a filter of the history, not a search through events.
            if (!q.refused.text(1, e.sandbox)
                     .nullable(2, runValue)
                     .json(3, p.value(QStringLiteral("argv")))
                     .text(4, p.value(QStringLiteral("cwd")).toString())
                     .json(5, p.value(QStringLiteral("envNames")))
                     .integer(6, refusal->askedMs)
                     .integer(7, e.timeMs)
                     .text(8, refusal->status)
                     .nullableText(9, p.value(QStringLiteral("requester")).toString())
                     .text(10, refusal->decidedBy)
                     .run())
                return fail(QStringLiteral("recording a refused command"));
            if (Status s = indexCommand(sqlite3_last_insert_rowid(db), p.value(QStringLiteral("argv")).toArray()); !s)
                return failWith(s.error());
        } else if (is(e, "exec.exited")) {
            auto row = m_state.execs.find({e.sandbox, e.exec});
            if (row == m_state.execs.end()) {
                // Started under an earlier daemon (its sandbox outlived it) and silent since.
                sql::Stmt &find = m_sql->findExec;
                find.text(1, e.sandbox).integer(2, e.exec);
                const bool found = find.step();
                const ExecRow restored{found ? find.columnInt(0) : 0, found ? find.columnInt(1) : 0, {}, 0};
                find.reset();
                if (!found)
                    continue;
                row = m_state.execs.emplace(ExecKey{e.sandbox, e.exec}, restored).first;
            }
            const qint64 stored = row->second.stored;
            const qint64 bytes = number(p, "bytesOut") + number(p, "bytesErr");
            if (!q.exited.integer(1, e.timeMs)
                     .nullable(2, p.value(QStringLiteral("exitCode")))
                     .nullable(3, p.value(QStringLiteral("signal")))
                     .text(4, p.value(QStringLiteral("status")).toString())
                     .integer(5, number(p, "bytesOut"))
                     .integer(6, number(p, "bytesErr"))
                     .integer(7, stored)
                     .integer(8, p.value(QStringLiteral("truncated")).toBool() || bytes > stored)
                     .integer(9, row->second.id)
                     .run())
                return fail(QStringLiteral("recording an exit"));
            if (!row->second.tail.empty())
                m_state.toIndex.push_back(row->second.id);
            m_state.execs.erase(row);
        }
    }
    // The chunks still open, in the order their output began.
    std::vector<std::map<ExecKey, OpenChunk>::iterator> rest;
    for (auto it = open.begin(); it != open.end(); ++it)
        rest.push_back(it);
    std::sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) { return a->second.first < b->second.first; });
    for (auto it : rest)
        if (Status s = close(it); !s)
            return failWith(s.error());
    if (Status s = indexSomeTails(indexing, std::chrono::steady_clock::now() + kIndexSlice); !s)
        return failWith(s.error());
    // Over the budget: down to 90 % of it, a slice per batch (the batch's waiters wait for it),
    // unless new output outruns the slices by a tenth of the budget.
    // Held to less while its disk is short of room (then new output outruns the slices at once: a
    // short disk is worth a longer commit).
    const qint64 budget = budgetOnThisDisk();
    const bool diskBound = budget < m_options.maxStoredOutputTotal;
    // Held by its disk, it drops what is over and no more: the tenth below is for a budget's
    // slices, and there it would be a tenth of the record gone each time the disk is short.
    const qint64 target = diskBound ? budget : budget - budget / 10;
    m_state.overBudget = m_state.totalStored > target && (m_state.overBudget || m_state.totalStored > budget);
    if (m_state.overBudget) {
        PruneReport report;
        const auto until = m_state.totalStored > budget + budget / 10
            ? std::chrono::steady_clock::time_point::max()
            : std::chrono::steady_clock::now() + std::chrono::milliseconds(kUpkeepSliceMs);
        bool more = false;
        if (Status s = pruneOldest(target, 0, std::numeric_limits<qint64>::max(), report, until,
                std::numeric_limits<qint64>::max(), &more);
            !s)
            return failWith(s.error());
        m_state.overBudget = more;
        if (report.executions)
            logger()->info("history over its {}-byte budget{}: dropped the output of the {} oldest executions ({} "
                           "bytes)",
                budget, diskBound ? " (its disk is short of room)" : "", report.executions, report.freedBytes);
    }
    if (Status s = sql::exec(db, "COMMIT", QStringLiteral("commit")); !s)
        return failWith(s.error());
    if (std::exchange(m_disk.giveBackLog, false))
        checkpointNow(); // the log's room is the disk's again
    return Ok{};
}

Status HistoryStore::indexCommand(qint64 id, const QJsonArray &argv)
{
    QStringList words;
    for (const QJsonValue &a : argv)
        words.append(a.toString());
    if (!m_sql->commandIndex.integer(1, id).text(2, words.join(QLatin1Char(' '))).run())
        return sql::error(m_writer.get(), QStringLiteral("indexing a command"));
    return Ok{};
}

bool HistoryStore::someoneWaits() const
{
    std::lock_guard lock(m_mutex);
    return m_flushRequested || (m_cutBatchAt && std::chrono::steady_clock::now() >= *m_cutBatchAt);
}

Status HistoryStore::indexSomeTails(Indexing indexing, std::chrono::steady_clock::time_point until)
{
    if (indexing == Indexing::None)
        return Ok{};
    Statements &q = *m_sql;
    bool some = false; // at least one chunk per slice, however slow
    while (!m_state.toIndex.empty()) {
        q.unindexedChunks.integer(1, m_state.toIndex.front());
        std::vector<std::pair<qint64, QByteArray>> chunks;
        while (q.unindexedChunks.step())
            chunks.emplace_back(q.unindexedChunks.columnInt(0), q.unindexedChunks.columnBlob(1));
        q.unindexedChunks.reset();
        if (chunks.empty()) {
            m_state.toIndex.pop_front();
            continue;
        }
        for (const auto &[id, data] : chunks) {
            if (some
                && (std::chrono::steady_clock::now() >= until
                    || (indexing == Indexing::UntilSomeoneWaits && someoneWaits())))
                return Ok{}; // the rest in a later batch
            if (!q.outputIndex.integer(1, id).text(2, sql::indexText(data)).run()
                || !q.markIndexed.integer(1, id).run())
                return sql::error(m_writer.get(), QStringLiteral("indexing output"));
            some = true;
        }
    }
    return Ok{};
}

} // namespace airlock
