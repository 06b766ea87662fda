// SPDX-License-Identifier: Apache-2.0
// The history's upkeep on real SQLite files: the budget, prune and vacuum in slices between
// commits (with progress), pruning a disk the history filled, and a damaged file set aside.
#include "HistoryEvents.h"
#include "history/HistoryReader.h"
#include "history/HistorySchema.h"
#include "history/HistoryStore.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <mutex>

#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestHistoryUpkeep final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theBudgetDropsTheOldestOutputButNoRecords()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.maxStoredOutputTotal = 10000;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        for (uint32_t i = 1; i <= 5; ++i) {
            startExecution(**store, QStringLiteral("sb"), i, {QStringLiteral("cat")});
            (*store)->append(output(QStringLiteral("sb"), i, 1, 0, QByteArray(3000, char('a' + i))));
            exitExecution(**store, QStringLiteral("sb"), i, 3000);
            QVERIFY((*store)->flush());
        }
        // 15 000 bytes against a 10 000 budget: pruned down to 90 %, oldest first.
        QCOMPARE(scalar(path, "SELECT group_concat(stored_bytes || '/' || output_pruned, ' ') FROM executions")
                     .toByteArray(),
            QByteArray("0/1 0/1 3000/0 3000/0 3000/0"));
        QCOMPARE(scalar(path, "SELECT count(*) FROM executions").toLongLong(), 5);
        QCOMPARE(scalar(path, "SELECT sum(length(data)) FROM chunks").toLongLong(), 9000);
        // And on request: everything that ended before execution 4 did, then vacuum.
        auto report = (*store)->pruneAndWait({std::nullopt, kT0 + 8, true});
        QVERIFY2(report, report ? "" : qPrintable(report.error().message));
        QCOMPARE(report->executions, 1);
        QCOMPARE(report->freedBytes, 3000);
        QCOMPARE(report->storedBytes, 6000);
        QCOMPARE(scalar(path, "SELECT group_concat(stored_bytes, ' ') FROM executions").toByteArray(),
            QByteArray("0 0 0 3000 3000"));
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        QCOMPARE(search(path, QString(3000, QLatin1Char('d'))).size(), 0); // unindexed with it
        QCOMPARE(search(path, QString(3000, QLatin1Char('e'))).size(), 1);
    }

    // The history filled its disk (issue 19, item 8): prune, the fix the refusal suggests, works in
    // the room of the reserve kept beside it, and the history writes again. Without a reserve it
    // cannot: its own deletions need room (SQLite's "database or disk is full").
    void pruningWorksOnADiskTheHistoryFilled_data()
    {
        QTest::addColumn<qint64>("reserve");
        QTest::newRow("with the reserve") << qint64(6 * 1024 * 1024); // the log's 4 MB, and room to prune
        QTest::newRow("without one") << qint64(0);
    }
    void pruningWorksOnADiskTheHistoryFilled()
    {
        QFETCH(qint64, reserve);
        if (::geteuid() != 0)
            QSKIP("a small filesystem of its own (tmpfs) needs root");
        QTemporaryDir dir;
        const QByteArray mountPoint = QFile::encodeName(dir.path());
        QCOMPARE(::mount("airlock-test", mountPoint.constData(), "tmpfs", 0, "size=16m"), 0);
        const auto unmount = qScopeGuard([&] { ::umount2(mountPoint.constData(), MNT_DETACH); });
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.reserveBytes = reserve;
        options.keepFreeBytes = 0; // only the budget counts: the history fills the disk
        options.retryIntervalMs = 20;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        QCOMPARE(QFileInfo(path + QStringLiteral("-reserve")).size(), reserve);
        uint32_t exec = 1;
        for (; exec < 400 && (*store)->writable(); ++exec) {
            startExecution(**store, QStringLiteral("sb"), exec, {QStringLiteral("cat")});
            (*store)->append(output(QStringLiteral("sb"), exec, 1, 0, QByteArray(256 * 1024, char('a' + exec % 26))));
            exitExecution(**store, QStringLiteral("sb"), exec, 256 * 1024);
            (void)(*store)->flush();
        }
        const Status full = (*store)->writable();
        QVERIFY2(!full && full.error().message.contains(QStringLiteral("disk is full")),
            qPrintable(full ? QStringLiteral("writable") : full.error().message));

        auto report = (*store)->pruneAndWait({qint64(0), std::nullopt, false});
        if (reserve == 0) {
            QVERIFY(!report);
            QVERIFY2(
                report.error().message.contains(QStringLiteral("disk is full")), qPrintable(report.error().message));
            return;
        }
        QVERIFY2(report, report ? "" : qPrintable(report.error().message));
        QVERIFY(report->freedBytes >= 4 * 1024 * 1024);
        QCOMPARE(report->storedBytes, 0);
        QCOMPARE(QFileInfo(path + QStringLiteral("-reserve")).size(), reserve); // made again
        // Writing again: what waited is stored, and new work with it.
        QVERIFY(QTest::qWaitFor([&] { return bool((*store)->writable()); }, 5000));
        startExecution(**store, QStringLiteral("sb"), exec + 1, {QStringLiteral("echo"), QStringLiteral("after")});
        QVERIFY((*store)->flush());
        QCOMPARE(
            scalar(path, "SELECT count(*) FROM executions WHERE argv_json = '[\"echo\",\"after\"]'").toLongLong(), 1);
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
    }

    // The history never fills its disk itself (issue 19, item 8): however big its budget, when its
    // disk has less than keepFreeBytes free it keeps less output, its oldest going first, and says
    // so; writing goes on. (With keepFreeBytes 0, the test above fills this same disk.)
    void theHistoryLeavesRoomOnItsDisk()
    {
        if (::geteuid() != 0)
            QSKIP("a small filesystem of its own (tmpfs) needs root");
        QTemporaryDir dir;
        const QByteArray mountPoint = QFile::encodeName(dir.path());
        QCOMPARE(::mount("airlock-test", mountPoint.constData(), "tmpfs", 0, "size=48m"), 0);
        const auto unmount = qScopeGuard([&] { ::umount2(mountPoint.constData(), MNT_DETACH); });
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.reserveBytes = 2 * 1024 * 1024;
        options.keepFreeBytes = 16 * 1024 * 1024;
        options.retryIntervalMs = 20;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        const auto freeBytes = [&] {
            struct statvfs fs { };
            return ::statvfs(mountPoint.constData(), &fs) == 0 ? qint64(fs.f_bavail) * qint64(fs.f_frsize) : -1;
        };
        // 100 MiB of output into a 48 MiB disk, against a 2 GiB budget.
        constexpr uint32_t kExecs = 400;
        qint64 leastFree = freeBytes();
        for (uint32_t exec = 1; exec <= kExecs; ++exec) {
            startExecution(**store, QStringLiteral("sb"), exec, {QStringLiteral("cat")});
            (*store)->append(output(QStringLiteral("sb"), exec, 1, 0, QByteArray(256 * 1024, char('a' + exec % 26))));
            exitExecution(**store, QStringLiteral("sb"), exec, 256 * 1024);
            const Status flushed = (*store)->flush();
            QVERIFY2(flushed,
                qPrintable(
                    flushed ? QString() : QStringLiteral("execution %1: %2").arg(exec).arg(flushed.error().message)));
            leastFree = std::min(leastFree, freeBytes());
            if (exec % 50 == 0) // the disk is looked at once a second
                QTest::qWait(1100);
        }
        QVERIFY((*store)->writable());
        // It stopped short of the disk: what it leaves free, less what a second of writing takes.
        QVERIFY2(leastFree > 4 * 1024 * 1024, qPrintable(QStringLiteral("%1 bytes free at the least").arg(leastFree)));
        const auto floor = (*store)->diskFloor();
        QVERIFY(floor);
        QCOMPARE(floor->keepFreeBytes, options.keepFreeBytes);
        QVERIFY2(floor->keptBytes < 40 * 1024 * 1024, qPrintable(QString::number(floor->keptBytes)));
        // The oldest output went; the newest is whole; every record stays.
        QCOMPARE(scalar(path, "SELECT count(*) FROM executions").toLongLong(), qint64(kExecs));
        QCOMPARE(
            scalar(path, "SELECT stored_bytes || '/' || output_pruned FROM executions WHERE exec_id = 1").toByteArray(),
            QByteArray("0/1"));
        QCOMPARE(scalar(path, "SELECT stored_bytes FROM executions ORDER BY id DESC LIMIT 1").toLongLong(),
            qint64(256 * 1024));
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        store->reset();
    }

    // Red team: the disk floor must not let someone else's writes erase the record. A sandbox's
    // workspace image (whose dirty pages still land after DiskGuard ends it), or any local user
    // writing to the same filesystem, takes the disk under keepFreeBytes; the history did not grow
    // meanwhile. Dropping output gives the disk nothing back (the pages stay in the file, no
    // vacuum), so the only effect is that the oldest record is gone for good: here all of it, at
    // once, by one dip (and, repeated, any amount). Expected: what the history kept before the dip
    // is still there after it; the history only stops growing while short.
    void aDiskFilledBySomeoneElseDoesNotEraseTheRecord_data()
    {
        QTest::addColumn<qint64>("leftFree");
        QTest::newRow("a shallow dip (10 MiB left): the record is erased") << qint64(10 * 1024 * 1024);
        QTest::newRow("a deep dip (about 1 MiB left): the history fails closed") << qint64(2 * 1024 * 1024);
    }
    void aDiskFilledBySomeoneElseDoesNotEraseTheRecord()
    {
        QFETCH(qint64, leftFree);
        if (::geteuid() != 0)
            QSKIP("a small filesystem of its own (tmpfs) needs root");
        QTemporaryDir dir;
        const QByteArray mountPoint = QFile::encodeName(dir.path());
        QCOMPARE(::mount("airlock-test", mountPoint.constData(), "tmpfs", 0, "size=64m"), 0);
        const auto unmount = qScopeGuard([&] { ::umount2(mountPoint.constData(), MNT_DETACH); });
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.reserveBytes = 2 * 1024 * 1024;
        options.keepFreeBytes = 16 * 1024 * 1024;
        options.retryIntervalMs = 20;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        const auto freeBytes = [&] {
            struct statvfs fs { };
            return ::statvfs(mountPoint.constData(), &fs) == 0 ? qint64(fs.f_bavail) * qint64(fs.f_frsize) : -1;
        };
        uint32_t exec = 1;
        const auto write = [&](qsizetype bytes) {
            startExecution(**store, QStringLiteral("sb"), exec, {QStringLiteral("cat")});
            (*store)->append(output(QStringLiteral("sb"), exec, 1, 0, QByteArray(bytes, char('a' + exec % 26))));
            exitExecution(**store, QStringLiteral("sb"), exec, bytes);
            ++exec;
            return (*store)->flush();
        };
        // 8 MiB of record, well under the budget and with plenty of room on the disk.
        for (int i = 0; i < 32; ++i)
            QVERIFY(write(256 * 1024));
        QTest::qWait(1100);
        QVERIFY(write(16));
        QVERIFY(!(*store)->diskFloor());
        const qint64 fileBefore = QFileInfo(path).size();

        // Someone else fills the disk to 1 MiB short of empty (not the history: it does not grow).
        const QString fillerPath = dir.filePath(QStringLiteral("filler"));
        {
            QFile filler(fillerPath);
            QVERIFY(filler.open(QIODevice::WriteOnly));
            const QByteArray mib(1024 * 1024, 'x');
            while (freeBytes() > leftFree)
                QVERIFY(filler.write(mib) == mib.size() && filler.flush());
        }
        QTest::qWait(1100); // the disk is looked at once a second
        // One small record while it is short: without the floor it fits in the 1 MiB or so left.
        // With it, the floor's own prune (one transaction; Debian's SQLite has secure_delete on,
        // so every page it frees is written to the log) needs about as much room as it drops, and
        // the history fails closed (new work refused) on a disk it did not fill.
        const Status whileShort = write(16);
        QVERIFY((*store)->diskFloor());
        // New output while it is short takes the place of the oldest, no more of it (not a tenth of
        // the whole, as over the budget): here the first execution's.
        const Status newWhileShort = write(64 * 1024);
        QVERIFY2(newWhileShort, qPrintable(newWhileShort ? QString() : newWhileShort.error().message));
        QVERIFY(write(16));
        // The someone else frees it again.
        QVERIFY(QFile::remove(fillerPath));
        QVERIFY(QTest::qWaitFor([&] { return bool((*store)->writable()); }, 5000));
        QTest::qWait(1100);
        QVERIFY(write(16));
        QVERIFY(!(*store)->diskFloor());

        // Dropping gave the disk nothing back: the file is as big as before.
        QVERIFY2(QFileInfo(path).size() >= fileBefore,
            qPrintable(QStringLiteral("%1 -> %2").arg(fileBefore).arg(QFileInfo(path).size())));
        const QByteArray kept = scalar(path,
            "SELECT count(*) || ' of 32 kept, ' || coalesce(sum(stored_bytes), 0) || ' bytes' FROM "
            "executions WHERE exec_id <= 32 AND output_pruned = 0")
                                    .toByteArray();
        QVERIFY2(whileShort && kept == "31 of 32 kept, 8126464 bytes",
            qPrintable(QStringLiteral("while short: %1; after: %2")
                           .arg(whileShort ? QStringLiteral("written") : whileShort.error().message,
                               QString::fromLatin1(kept))));
    }

    // Vacuum gives the space back a slice at a time between the writer's batches (issue 19, item
    // 10): commits meanwhile wait at most about a slice, where one VACUUM held them all for its
    // whole length. A history made before incremental vacuum is converted once (that one step
    // holds them, and says so as its phase), and is incremental from then on.
    void vacuumGivesSpaceBackWhileCommitsGoOn_data()
    {
        QTest::addColumn<bool>("legacy");
        QTest::newRow("incremental") << false;
        QTest::newRow("made before incremental vacuum") << true;
    }
    void vacuumGivesSpaceBackWhileCommitsGoOn()
    {
        QFETCH(bool, legacy);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.maxStoredOutputPerExec = 8 * 1024 * 1024;
        options.reserveBytes = 0;
        constexpr uint32_t kExecs = 48;
        constexpr qint64 kBytes = 4 * 1024 * 1024;
        {
            auto store = HistoryStore::open(options);
            QVERIFY(store);
            QCOMPARE(scalar(path, "PRAGMA auto_vacuum").toLongLong(), 2); // a new file: incremental
            for (uint32_t i = 1; i <= kExecs; ++i) {
                startExecution(**store, QStringLiteral("sb"), i, {QStringLiteral("cat")});
                for (qint64 at = 0; at < kBytes; at += 256 * 1024)
                    (*store)->append(
                        output(QStringLiteral("sb"), i, 1, at, QByteArray(256 * 1024, char('a' + i % 26))));
                exitExecution(**store, QStringLiteral("sb"), i, kBytes);
            }
            QVERIFY((*store)->flush());
        }
        if (legacy)
            QCOMPARE(exec(path, "PRAGMA auto_vacuum=NONE; VACUUM;"), SQLITE_OK);
        QCOMPARE(scalar(path, "PRAGMA auto_vacuum").toLongLong(), legacy ? 0 : 2);
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        QVERIFY(exec(path, "PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK);
        const qint64 before = QFileInfo(path).size();
        QVERIFY(before > kExecs * kBytes);

        std::mutex mutex;
        QList<HistoryStore::Progress> progress;
        std::atomic<bool> finished = false;
        std::optional<Result<HistoryStore::PruneReport>> report;
        QElapsedTimer took;
        took.start();
        constexpr qint64 kKept = kExecs / 2; // half stays: a whole VACUUM would rewrite all of it
        (*store)->prune(
            {qint64(kBytes * kKept), std::nullopt, true},
            [&](Result<HistoryStore::PruneReport> r) {
                std::lock_guard lock(mutex);
                report = std::move(r);
                finished = true;
            },
            [&](const HistoryStore::Progress &p) {
                std::lock_guard lock(mutex);
                progress.append(p);
            });
        // Meanwhile a sandbox starts executions, each acknowledged only once committed.
        qint64 worst = 0;
        uint32_t started = 0;
        for (uint32_t seq = 1; !finished; ++seq) {
            QElapsedTimer commit;
            commit.start();
            (*store)->append(makeEvent(QStringLiteral("busy"), seq, QStringLiteral("sandbox.created")));
            QVERIFY((*store)->flush());
            worst = std::max(worst, commit.elapsed());
            started = seq;
        }
        const qint64 total = took.elapsed();
        std::lock_guard lock(mutex);
        QVERIFY2(*report, *report ? "" : qPrintable(report->error().message));
        QCOMPARE((*report)->executions, qint64(kExecs - kKept));
        QCOMPARE((*report)->storedBytes, kKept * kBytes);
        QVERIFY2((*report)->fileBytes < before * 6 / 10,
            qPrintable(QStringLiteral("%1 of %2 bytes").arg((*report)->fileBytes).arg(before)));
        QCOMPARE(scalar(path, "PRAGMA auto_vacuum").toLongLong(), 2);
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        QCOMPARE(
            scalar(path, "SELECT count(*) FROM sandboxes WHERE id = 'busy'").toLongLong(), qint64(started > 0 ? 1 : 0));
        // What it said, in order: pruning, (converting,) vacuuming; each phase ends done.
        QStringList phases;
        for (const auto &p : std::as_const(progress)) {
            if (phases.isEmpty() || phases.last() != p.phase)
                phases.append(p.phase);
            QVERIFY(p.done <= p.total);
        }
        // (A conversion is a whole VACUUM: nothing is left for the incremental one.)
        const QStringList expected = legacy ? QStringList{QStringLiteral("pruning"), QStringLiteral("converting")}
                                            : QStringList{QStringLiteral("pruning"), QStringLiteral("vacuuming")};
        QCOMPARE(phases, expected);
        QCOMPARE(progress.first().total, (kExecs - kKept) * kBytes);
        QCOMPARE(progress.last().done, progress.last().total);
        qInfo("pruned and vacuumed %lld MB in %lld ms; %u commits meanwhile, the slowest %lld ms", before >> 20, total,
            started, worst);
        if (!legacy) {
            QVERIFY(progress.last().total > before / 3);
            QVERIFY(std::count_if(progress.cbegin(), progress.cend(), [](const auto &p) {
                return p.phase == QLatin1String("vacuuming");
            }) >= 3);
            // Commits went on: a slice and a batch at a time, never the whole vacuum.
            QVERIFY2(worst < 500, qPrintable(QStringLiteral("a commit waited %1 ms of %2").arg(worst).arg(total)));
            QVERIFY2(started >= 10, qPrintable(QStringLiteral("%1 commits in %2 ms").arg(started).arg(total)));
        }
    }

    // One execution's output is dropped a chunk at a time too: 8 MiB of words that are all
    // different (the search index's dearest case to take out) never holds a commit for long.
    void aHugeExecutionIsPrunedInSlicesToo()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        HistoryStore::Options options{path};
        options.maxStoredOutputPerExec = 16 * 1024 * 1024;
        options.reserveBytes = 0;
        auto store = HistoryStore::open(options);
        QVERIFY(store);
        startExecution(**store, QStringLiteral("sb"), 1, {QStringLiteral("cat")});
        qint64 at = 0;
        for (int chunk = 0; chunk < 32; ++chunk) {
            QByteArray words;
            for (int w = 0; words.size() < 256 * 1024; ++w)
                words += "w" + QByteArray::number(chunk * 100000 + w, 36) + ' ';
            words.truncate(256 * 1024);
            (*store)->append(output(QStringLiteral("sb"), 1, 1, at, words));
            at += words.size();
        }
        exitExecution(**store, QStringLiteral("sb"), 1, at);
        QVERIFY((*store)->flush());
        std::atomic<bool> finished = false;
        std::optional<Result<HistoryStore::PruneReport>> report;
        (*store)->prune({qint64(0), std::nullopt, false}, [&](Result<HistoryStore::PruneReport> r) {
            report = std::move(r);
            finished = true;
        });
        qint64 worst = 0;
        QElapsedTimer took;
        took.start();
        for (uint64_t seq = 1; !finished; ++seq) {
            QElapsedTimer commit;
            commit.start();
            (*store)->append(makeEvent(QStringLiteral("busy"), seq, QStringLiteral("sandbox.created")));
            QVERIFY((*store)->flush());
            worst = std::max(worst, commit.elapsed());
        }
        QVERIFY2(report && *report, report && !*report ? qPrintable(report->error().message) : "");
        QCOMPARE((*report)->executions, 1);
        QCOMPARE((*report)->freedBytes, at);
        QCOMPARE((*report)->storedBytes, 0);
        QCOMPARE(scalar(path, "SELECT count(*) FROM chunks").toLongLong(), 0);
        QCOMPARE(scalar(path, "SELECT stored_bytes || '/' || output_pruned FROM executions").toByteArray(),
            QByteArray("0/1"));
        QCOMPARE(search(path, QStringLiteral("w1")).size(), 0);
        QCOMPARE(*HistoryReader(path).quickCheck(), QStringLiteral("ok"));
        qInfo("8 MiB of one execution pruned in %lld ms; the slowest commit meanwhile %lld ms", took.elapsed(), worst);
        QVERIFY2(worst < 500, qPrintable(QStringLiteral("a commit waited %1 ms of %2").arg(worst).arg(took.elapsed())));
    }

    void onlyADamagedHistoryIsSetAside()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("history.db"));
        {
            auto store = HistoryStore::open({path});
            QVERIFY(store);
            startExecution(**store, QStringLiteral("sb"), 1, {QStringLiteral("true")});
            QVERIFY((*store)->flush());
        }
        // Healthy: stays, and says it is not damaged.
        auto healthy = HistoryStore::setAsideIfDamaged(path);
        QVERIFY(!healthy);
        QCOMPARE(healthy.error().code, ErrorCode::InvalidArgument);
        // Healthy but held by another process (exclusive lock): not judged damaged, not moved.
        sqlite3 *holder = nullptr;
        QCOMPARE(sqlite3_open(QFile::encodeName(path).constData(), &holder), SQLITE_OK);
        QCOMPARE(
            sqlite3_exec(holder,
                "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO runs(name, created_ms) VALUES('held', 1);",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
        auto busy = HistoryStore::setAsideIfDamaged(path);
        QVERIFY(!busy);
        QCOMPARE(busy.error().code, ErrorCode::IoError);
        QVERIFY(QFileInfo::exists(path));
        sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(holder);
        // Not a database: set aside byte for byte; again in the same second: a name of its own.
        QStringList asides;
        for (const QByteArray &junk : {QByteArray("not a database, first"), QByteArray("not a database, second")}) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate) && file.write(junk.repeated(500)) > 0);
            file.close();
            auto aside = HistoryStore::setAsideIfDamaged(path);
            QVERIFY2(aside, aside ? "" : qPrintable(aside.error().message));
            QVERIFY(!QFileInfo::exists(path));
            QFile kept(*aside);
            QVERIFY(kept.open(QIODevice::ReadOnly));
            QCOMPARE(kept.readAll(), junk.repeated(500));
            asides.append(*aside);
        }
        QVERIFY(asides.at(0) != asides.at(1));
    }
};

QTEST_GUILESS_MAIN(TestHistoryUpkeep)
#include "tst_history_upkeep.moc"
