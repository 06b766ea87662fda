// SPDX-License-Identifier: Apache-2.0
// The history's upkeep: pruning and vacuum in slices between the writer's batches, a disk the
// history filled pruned in the room of the reserve kept beside it, and a file SQLite finds damaged
// set aside. (Writing: HistoryStore.cpp.)
#include "history/HistoryStore.h"

#include "history/HistoryReader.h"
#include "history/HistorySchema.h"
#include "history/HistoryStatements.h"
#include "history/Sql.h"
#include "log/Log.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <future>
#include <limits>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.history");
    return l;
}
} // namespace

namespace {
// Damaged, as SQLite itself says: not a database, corrupt, or quick_check's findings. Anything
// else (busy, locked, out of memory, an I/O error, a newer schema) is not damage: the file stays.
Result<bool> damaged(const QString &path)
{
    sqlite3 *db = nullptr;
    const int opened = sqlite3_open_v2(QFile::encodeName(path).constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    const auto close = qScopeGuard([&] { sqlite3_close_v2(db); });
    const auto judge = [&](int code) -> Result<bool> {
        const int primary = code & 0xff;
        if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
            return true;
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot check %1: %2")
                .arg(path, QString::fromUtf8(db ? sqlite3_errmsg(db) : "out of memory")));
    };
    if (opened != SQLITE_OK)
        return judge(opened);
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt *version = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(version);
    const int schema = rc == SQLITE_ROW ? sqlite3_column_int(version, 0) : -1;
    sqlite3_finalize(version);
    if (rc != SQLITE_ROW)
        return judge(sqlite3_extended_errcode(db));
    if (schema > history::kSchemaVersion) // a newer daemon's: never ours to move
        return false;
    sqlite3_stmt *check = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &check, nullptr) != SQLITE_OK)
        return judge(sqlite3_extended_errcode(db));
    const auto finalize = qScopeGuard([&] { sqlite3_finalize(check); });
    bool found = false;
    while ((rc = sqlite3_step(check)) == SQLITE_ROW)
        found |= QByteArray(reinterpret_cast<const char *>(sqlite3_column_text(check, 0))) != "ok";
    if (rc != SQLITE_DONE)
        return judge(sqlite3_extended_errcode(db));
    return found;
}
} // namespace

Result<QString> HistoryStore::setAsideIfDamaged(const QString &path)
{
    if (!QFileInfo::exists(path))
        return makeError(ErrorCode::NotFound, QStringLiteral("%1 does not exist").arg(path));
    auto isDamaged = damaged(path);
    if (!isDamaged)
        return isDamaged.error();
    if (!*isDamaged)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1 is not damaged").arg(path));
    // A name of its own (never one set aside before), linked first and unlinked after: a failure
    // half way leaves every file where it was.
    const QString stamp
        = path + QStringLiteral(".damaged-") + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QString aside = stamp;
    for (int n = 2; QFileInfo::exists(aside) || QFileInfo::exists(aside + QStringLiteral("-wal")); ++n)
        aside = stamp + QLatin1Char('-') + QString::number(n);
    QStringList linked;
    for (const char *suffix : {"", "-wal", "-shm"}) {
        const QString from = path + QLatin1String(suffix);
        if (!QFileInfo::exists(from))
            continue;
        if (::link(QFile::encodeName(from).constData(), QFile::encodeName(aside + QLatin1String(suffix)).constData())
            != 0) {
            const QString why = QString::fromLocal8Bit(std::strerror(errno));
            for (const QString &l : std::as_const(linked))
                ::unlink(QFile::encodeName(l).constData());
            return makeError(ErrorCode::IoError, QStringLiteral("cannot set the damaged %1 aside: %2").arg(from, why));
        }
        linked.append(aside + QLatin1String(suffix));
    }
    for (const char *suffix : {"-shm", "-wal", ""})
        ::unlink(QFile::encodeName(path + QLatin1String(suffix)).constData());
    return aside;
}

bool HistoryStore::keepReserve() const
{
    if (m_options.reserveBytes <= 0)
        return true;
    const QByteArray path = QFile::encodeName(reservePath());
    struct stat st { };
    if (::lstat(path.constData(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= m_options.reserveBytes)
        return true;
    const int fd = ::open(path.constData(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return false;
    // Allocated, not sparse: the blocks are really taken, and really given back.
    const bool kept = ::posix_fallocate(fd, 0, off_t(m_options.reserveBytes)) == 0;
    ::close(fd);
    if (!kept)
        ::unlink(path.constData());
    return kept;
}

qint64 HistoryStore::budgetOnThisDisk()
{
    constexpr qint64 kNoCap = std::numeric_limits<qint64>::max();
    const qint64 budget = m_options.maxStoredOutputTotal, keep = m_options.keepFreeBytes;
    const auto now = std::chrono::steady_clock::now();
    if (keep <= 0 || (!m_disk.near && now - m_disk.lastLook < std::chrono::seconds(1)))
        return std::min(budget, m_disk.cap);
    m_disk.lastLook = now;
    struct statvfs fs { };
    if (::statvfs(QFile::encodeName(QFileInfo(m_options.path).absolutePath()).constData(), &fs) != 0)
        return std::min(budget, m_disk.cap);
    const qint64 free = qint64(fs.f_bavail) * qint64(fs.f_frsize);
    m_disk.near = free < 2 * keep;
    if (free >= keep + keep / 4) { // room again, and a margin: the budget alone counts
        if (m_disk.cap != kNoCap)
            logger()->info("history: its disk has room again ({} bytes free); its budget alone counts", free);
        m_disk.cap = kNoCap;
    } else if (free < (m_disk.cap == kNoCap ? keep : m_disk.lowestFree)) {
        // Short (again, by more): the history grows no further, its new output taking the place
        // of its oldest. Not less than it has: output dropped gives the disk nothing back (its
        // pages stay in the file for the next writes, no vacuum), so dropping by what the disk lost
        // would only let whoever filled the disk (a workspace, anyone) erase the record; and that
        // prune, in one transaction, needs room for its log (secure_delete writes every page it
        // frees), which a short disk does not have.
        m_disk.cap = std::min(m_disk.cap, m_state.totalStored);
        m_disk.lowestFree = free;
        m_disk.giveBackLog = true;
        logger()->warn("history: its disk has {} bytes free, under the {} it leaves free: it keeps at most {} bytes "
                       "of output (its oldest goes first)",
            free, keep, m_disk.cap);
    }
    std::optional<DiskFloor> floor;
    if (m_disk.cap != kNoCap)
        floor = DiskFloor{free, keep, std::min(budget, m_disk.cap)};
    {
        std::lock_guard lock(m_mutex);
        m_diskFloor = floor;
    }
    return std::min(budget, m_disk.cap);
}

std::optional<HistoryStore::DiskFloor> HistoryStore::diskFloor() const
{
    std::lock_guard lock(m_mutex);
    return m_diskFloor;
}

void HistoryStore::prune(const Prune &request, std::function<void(Result<PruneReport>)> done, ProgressListener progress)
{
    auto job = std::make_unique<UpkeepJob>();
    job->request = request;
    job->done = std::move(done);
    job->progress = std::move(progress);
    {
        std::lock_guard lock(m_mutex);
        m_jobs.push_back(std::move(job));
    }
    m_wake.notify_one();
}

Result<HistoryStore::PruneReport> HistoryStore::pruneAndWait(const Prune &request, ProgressListener progress)
{
    std::promise<Result<PruneReport>> promise;
    auto result = promise.get_future();
    prune(
        request, [&promise](Result<PruneReport> r) { promise.set_value(std::move(r)); }, std::move(progress));
    return result.get();
}

void HistoryStore::checkpointNow()
{
    // TRUNCATE without a busy handler: it does what no reader holds back and returns at once; the
    // log is cut back to journal_size_limit at a later checkpoint.
    sqlite3 *db = m_writer.get();
    sqlite3_busy_timeout(db, 0);
    (void)sql::exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", QString());
    sqlite3_busy_timeout(db, sql::kBusyTimeoutMs);
}

void HistoryStore::abandonUpkeep(UpkeepJob &job)
{
    job.done(makeError(ErrorCode::DaemonUnavailable,
        QStringLiteral(
            "the history closed before the prune was done (what it dropped so far stays dropped); run it again")));
}

void HistoryStore::reportProgress(UpkeepJob &job, const QString &phase, qint64 done, qint64 total, bool force)
{
    const auto now = std::chrono::steady_clock::now();
    if (!job.progress || (!force && phase == job.lastPhase && now - job.lastReport < std::chrono::milliseconds(250)))
        return;
    job.lastPhase = phase;
    job.lastReport = now;
    job.progress(Progress{phase, std::min(done, total), total});
}

bool HistoryStore::upkeepSlice(UpkeepJob &job)
{
    using Phase = UpkeepJob::Phase;
    Status status = Ok{};
    bool more = false;
    switch (job.phase) {
    case Phase::Start: {
        job.goal = job.request.keepBytes.value_or(m_options.maxStoredOutputTotal);
        qint64 ended = 0;
        if (job.request.endedBeforeMs.value_or(0) != 0) {
            sql::Stmt q(m_writer.get(),
                "SELECT total(stored_bytes) FROM executions WHERE stored_bytes > 0 AND status != 'running' AND "
                "ended_ms < ?");
            q.integer(1, *job.request.endedBeforeMs);
            ended = q.step() ? q.columnInt(0) : 0;
        }
        job.toFree = std::min(m_state.totalStored, std::max(m_state.totalStored - job.goal, ended));
        // What ends after the prune began is the budget's business: a prune always ends.
        sql::Stmt last(m_writer.get(), "SELECT coalesce(max(id), 0) FROM executions");
        job.upToId = last.step() ? last.columnInt(0) : 0;
        job.phase = Phase::Prune;
        reportProgress(job, QStringLiteral("pruning"), 0, job.toFree, true);
        return false;
    }
    case Phase::Prune:
        // On the reserve's room, all of it before any batch: a batch would take that room first.
        do
            status = pruneSlice(job, &more);
        while (status && more && job.onReserve);
        if (status && !more)
            job.phase = job.request.vacuum ? Phase::Vacuum : Phase::Finish;
        if (status && !more && job.onReserve) { // made again before a vacuum's batches take the room
            if (!keepReserve())
                logger()->warn("history: no room for its reserve again yet");
            job.onReserve = false;
        }
        reportProgress(job, QStringLiteral("pruning"), job.report.freedBytes, job.toFree, !more);
        break;
    case Phase::Vacuum:
        status = vacuumSlice(job, &more);
        if (status && !more)
            job.phase = Phase::Finish;
        break;
    case Phase::Finish:
        break;
    }
    if (status && job.phase != Phase::Finish)
        return false;
    if (job.onReserve && !keepReserve())
        logger()->warn("history: no room for its reserve again yet");
    if (!status) {
        job.done(status.error());
        return true;
    }
    job.report.storedBytes = m_state.totalStored;
    job.report.fileBytes = QFileInfo(m_options.path).size() + QFileInfo(m_options.path + QStringLiteral("-wal")).size();
    job.done(job.report);
    return true;
}

Status HistoryStore::pruneSlice(UpkeepJob &job, bool *more)
{
    sqlite3 *db = m_writer.get();
    const WriterState before = m_state;
    PruneReport slice;
    // On a disk the history filled, a slice is a part of the reserve's room, and the write-ahead
    // log is emptied after each (into the database file, which takes the pages it freed).
    const qint64 maxBytes
        = job.onReserve ? std::max<qint64>(64 * 1024, m_options.reserveBytes / 4) : std::numeric_limits<qint64>::max();
    const Status s = sql::transaction(db, [&] {
        return pruneOldest(job.goal, job.request.endedBeforeMs.value_or(0), job.upToId, slice,
            std::chrono::steady_clock::now() + std::chrono::milliseconds(kUpkeepSliceMs), maxBytes, more);
    });
    if (!s) {
        m_state = before;
        // (The failing statement was reset since: its text is what is left of SQLITE_FULL.)
        const bool full = s.error().message.contains(QLatin1String(sqlite3_errstr(SQLITE_FULL)));
        if (!full || job.onReserve || m_options.reserveBytes <= 0 || !QFile::exists(reservePath()))
            return s;
        logger()->warn("history: the disk is full; pruning in the room of the reserve");
        QFile::remove(reservePath());
        job.onReserve = true;
        // The log first: it holds up to wal_autocheckpoint's 4 MB, which the database file takes in.
        (void)sql::exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", QStringLiteral("checkpoint"));
        *more = true;
        return Ok{};
    }
    if (job.onReserve)
        (void)sql::exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", QStringLiteral("checkpoint"));
    job.report.executions += slice.executions;
    job.report.freedBytes += slice.freedBytes;
    return Ok{};
}

Status HistoryStore::vacuumSlice(UpkeepJob &job, bool *more)
{
    sqlite3 *db = m_writer.get();
    const auto pragma = [db](const char *text) -> qint64 {
        sql::Stmt q(db, text);
        return q.step() ? q.columnInt(0) : -1;
    };
    *more = false;
    if (job.freePages < 0) {
        job.pageSize = std::max<qint64>(512, pragma("PRAGMA page_size"));
        const qint64 mode = pragma("PRAGMA auto_vacuum");
        if (mode == 0) {
            // Made before incremental vacuum (or by a daemon of then): one whole VACUUM makes it
            // incremental. It holds every commit for its length, once; the progress says so.
            const qint64 file = QFileInfo(m_options.path).size();
            reportProgress(job, QStringLiteral("converting"), 0, file, true);
            if (Status s = sql::exec(db, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM",
                    QStringLiteral("converting the history to incremental vacuum"));
                !s)
                return s;
            checkpointNow();
            reportProgress(job, QStringLiteral("converting"), file, file, true);
            return Ok{};
        }
        job.freePages = mode == 2 ? std::max<qint64>(0, pragma("PRAGMA freelist_count")) : 0;
        reportProgress(job, QStringLiteral("vacuuming"), 0, job.freePages * job.pageSize, true);
    }
    // A few hundred pages at a time (a commit each) until the slice is used up: each moves pages
    // from the end of the file into free ones, and checkpoints give the end back to the filesystem.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kUpkeepSliceMs);
    qint64 left = pragma("PRAGMA freelist_count");
    while (left > 0 && std::chrono::steady_clock::now() < until) {
        if (Status s = sql::exec(db, "PRAGMA incremental_vacuum(256)", QStringLiteral("vacuum")); !s)
            return s;
        left = pragma("PRAGMA freelist_count");
    }
    if (left < 0)
        return sql::error(db, QStringLiteral("vacuum"));
    const qint64 total = job.freePages * job.pageSize;
    if (left > 0) {
        *more = true;
        reportProgress(job, QStringLiteral("vacuuming"), std::max<qint64>(0, total - left * job.pageSize), total);
        return Ok{};
    }
    checkpointNow();
    reportProgress(job, QStringLiteral("vacuuming"), total, total, true);
    return Ok{};
}

Status HistoryStore::pruneOldest(qint64 target, qint64 endedBeforeMs, qint64 upToId, PruneReport &report,
    std::chrono::steady_clock::time_point until, qint64 maxBytes, bool *more)
{
    Statements &q = *m_sql;
    qint64 freed = 0;
    *more = false;
    while (m_state.totalStored > target || endedBeforeMs) {
        std::vector<std::pair<qint64, qint64>> victims;
        q.pruneCandidates.integer(1, endedBeforeMs).integer(2, upToId);
        while (q.pruneCandidates.step())
            victims.emplace_back(q.pruneCandidates.columnInt(0), q.pruneCandidates.columnInt(1));
        q.pruneCandidates.reset();
        if (victims.empty())
            return Ok{};
        for (const auto &[id, bytes] : victims) {
            if (m_state.totalStored <= target && !endedBeforeMs)
                return Ok{};
            if (freed > 0 && (freed >= maxBytes || std::chrono::steady_clock::now() >= until)) {
                *more = true;
                return Ok{};
            }
            // A chunk at a time (each at most 256 KiB, unindexed with it), the deadline checked
            // between them: one execution's output is never one step that cannot be cut short.
            qint64 left = bytes; // what its record still says it stores (the total counts that)
            bool cut = false;
            for (bool some = true; some && !cut;) {
                std::vector<std::pair<qint64, qint64>> chunks;
                q.chunksOf.integer(1, id);
                while (q.chunksOf.step())
                    chunks.emplace_back(q.chunksOf.columnInt(0), q.chunksOf.columnInt(1));
                q.chunksOf.reset();
                some = !chunks.empty();
                for (const auto &[chunk, size] : chunks) {
                    if (freed > 0 && (freed >= maxBytes || std::chrono::steady_clock::now() >= until)) {
                        cut = true;
                        break;
                    }
                    if (Status s = deleteChunk(chunk); !s)
                        return s;
                    const qint64 counted
                        = std::min(size, std::max<qint64>(left - 1, 0)); // the last byte goes with the record
                    left -= counted;
                    m_state.totalStored -= counted;
                    report.freedBytes += counted;
                    freed += std::max<qint64>(size, 1);
                }
            }
            if (cut) { // the rest in the next slice: the record says what is left
                if (!q.setStored.integer(1, left).integer(2, id).run())
                    return sql::error(m_writer.get(), QStringLiteral("pruning output"));
                *more = true;
                return Ok{};
            }
            if (!q.markPruned.integer(1, id).run())
                return sql::error(m_writer.get(), QStringLiteral("pruning output"));
            m_state.totalStored -= left;
            report.freedBytes += left;
            freed += std::max<qint64>(left, 1);
            report.executions += 1;
        }
    }
    return Ok{};
}

} // namespace airlock
