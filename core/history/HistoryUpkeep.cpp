// SPDX-License-Identifier: Apache-2.0
// The history's upkeep on a bad day: a file SQLite finds damaged is set aside, and a disk the
// history filled is pruned in the room of the reserve kept beside it. (Writing: HistoryStore.cpp.)
#include "history/HistoryStore.h"

#include "history/HistoryReader.h"
#include "history/HistorySchema.h"
#include "history/Sql.h"
#include "log/Log.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
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
        return makeError(ErrorCode::IoError, QStringLiteral("cannot check %1: %2").arg(path, QString::fromUtf8(db ? sqlite3_errmsg(db) : "out of memory")));
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
    const QString stamp = path + QStringLiteral(".damaged-") + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QString aside = stamp;
    for (int n = 2; QFileInfo::exists(aside) || QFileInfo::exists(aside + QStringLiteral("-wal")); ++n)
        aside = stamp + QLatin1Char('-') + QString::number(n);
    QStringList linked;
    for (const char *suffix : {"", "-wal", "-shm"}) {
        const QString from = path + QLatin1String(suffix);
        if (!QFileInfo::exists(from))
            continue;
        if (::link(QFile::encodeName(from).constData(), QFile::encodeName(aside + QLatin1String(suffix)).constData()) != 0) {
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
    struct stat st {};
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

Result<HistoryStore::PruneReport> HistoryStore::runPrune(const Prune &request)
{
    bool full = false;
    auto pruned = pruneOnce(request, &full);
    // A disk the history filled has no room for the deletion's own writes: the reserve makes it.
    if (pruned || !full || m_options.reserveBytes <= 0 || !QFile::exists(reservePath()))
        return pruned;
    logger()->warn("history: the disk is full; pruning in the room of the reserve");
    QFile::remove(reservePath());
    // The write-ahead log first (it holds up to wal_autocheckpoint's 4 MB, which the database file
    // takes in), then a slice at a time, the log emptied after each, so that no transaction needs
    // more room than the reserve gave.
    (void)sql::exec(m_writer.get(), "PRAGMA wal_checkpoint(TRUNCATE)", QStringLiteral("checkpoint"));
    const qint64 goal = request.keepBytes.value_or(m_options.maxStoredOutputTotal);
    const qint64 slice = std::max<qint64>(64 * 1024, m_options.reserveBytes / 4);
    PruneReport sum;
    for (;;) {
        Prune step;
        step.keepBytes = std::max(goal, m_state.totalStored - slice);
        pruned = pruneOnce(step, &full);
        (void)sql::exec(m_writer.get(), "PRAGMA wal_checkpoint(TRUNCATE)", QStringLiteral("checkpoint"));
        if (!pruned)
            break;
        sum.executions += pruned->executions;
        sum.freedBytes += pruned->freedBytes;
        if (m_state.totalStored <= goal || pruned->freedBytes == 0)
            break;
    }
    if (pruned) // what else was asked (an age, a vacuum), now that there is room
        pruned = pruneOnce(request, &full);
    if (pruned) {
        pruned->executions += sum.executions;
        pruned->freedBytes += sum.freedBytes;
    }
    if (!keepReserve())
        logger()->warn("history: no room for its reserve again yet");
    return pruned;
}

Result<HistoryStore::PruneReport> HistoryStore::pruneOnce(const Prune &request, bool *full)
{
    sqlite3 *db = m_writer.get();
    PruneReport report;
    const WriterState before = m_state;
    if (Status s = sql::exec(db, "BEGIN IMMEDIATE", QStringLiteral("begin")); !s) {
        *full = s.error().message.contains(QLatin1String(sqlite3_errstr(SQLITE_FULL)));
        return s.error();
    }
    Status pruned = pruneOldest(request.keepBytes.value_or(m_options.maxStoredOutputTotal), request.endedBeforeMs.value_or(0), report);
    if (pruned)
        pruned = sql::exec(db, "COMMIT", QStringLiteral("commit"));
    if (!pruned) {
        // (The failing statement was reset since: its text is what is left of SQLITE_FULL.)
        *full = pruned.error().message.contains(QLatin1String(sqlite3_errstr(SQLITE_FULL)));
        (void)sql::exec(db, "ROLLBACK", QStringLiteral("rollback"));
        m_state = before;
        return pruned.error();
    }
    if (request.vacuum) {
        if (Status s = sql::exec(db, "VACUUM; PRAGMA wal_checkpoint(TRUNCATE);", QStringLiteral("vacuum")); !s)
            return s.error();
    }
    report.storedBytes = m_state.totalStored;
    report.fileBytes = QFileInfo(m_options.path).size() + QFileInfo(m_options.path + QStringLiteral("-wal")).size();
    return report;
}

} // namespace airlock
