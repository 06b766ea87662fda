// SPDX-License-Identifier: Apache-2.0
// airlock-history-bench: the history's budget (issue 3), each figure beside a baseline measured in
// the same run. Event ingest through the real writer vs raw batched SQLite inserts; then a
// database of a million executions and 1 GiB of stored output, browsed and searched through the
// reader and end to end through a real daemon and airlockctl. Medians over several rounds.
#include "TestDaemon.h"
#ifdef AIRLOCK_BENCH_GUI
#include "HistoryModel.h"
#include "HistoryWindow.h"
#include <QApplication>
#endif
#include "history/HistoryReader.h"
#include "history/HistoryStore.h"
#include "history/Sql.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QRandomGenerator>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTextStream>
#include <QThread>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

using namespace airlock;
using namespace airlock::test;

namespace {
double median(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double msSince(const QElapsedTimer &t)
{
    return double(t.nsecsElapsed()) / 1e6;
}

Event smallEvent(uint64_t seq)
{
    Event e;
    e.sandbox = QStringLiteral("bench-sandbox");
    e.seq = seq;
    e.timeMs = 1700000000000 + qint64(seq);
    e.kind = QStringLiteral("network.attempt");
    e.run = QStringLiteral("bench-run");
    e.payload = {{QStringLiteral("host"), QStringLiteral("pypi.org")}, {QStringLiteral("port"), 443},
        {QStringLiteral("decision"), QStringLiteral("allow")}};
    return e;
}

// The line-th 64-byte line of execution `exec`: each follows the one before it in its stream.
Event smallOutput(uint64_t seq, uint32_t exec, qint64 line)
{
    Event e;
    e.sandbox = QStringLiteral("bench-sandbox");
    e.seq = seq;
    e.timeMs = 1700000000000 + qint64(seq);
    e.kind = QStringLiteral("exec.output");
    e.exec = exec;
    e.stream = 1;
    e.offset = line * 64;
    e.data = QByteArray::number(line).rightJustified(10, '0') + " a line of build output, 64 bytes in all";
    e.data = e.data.leftJustified(63, '.') + '\n';
    return e;
}

// Events per second through HistoryStore: append n small events, then flush. With streams > 0,
// output events: lines of that many running executions, taking turns (as output from several
// sandboxes reaches the history), which the writer stores as chunks of each one's consecutive
// output.
double ingestRate(const QString &dir, int n, int streams)
{
    const QString path = dir + QStringLiteral("/ingest.db");
    QFile::remove(path);
    HistoryStore::Options options{path};
    options.maxStoredOutputPerExec = qint64(1) << 40;
    auto store = HistoryStore::open(options);
    if (!store)
        return -1;
    for (int exec = 1; exec <= streams; ++exec) {
        Event started = smallEvent(uint64_t(exec));
        started.kind = QStringLiteral("exec.started");
        started.exec = uint32_t(exec);
        started.payload
            = {{QStringLiteral("exec"), exec}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("make")}}};
        (*store)->append(started);
    }
    (void)(*store)->flush();
    QList<Event> events;
    events.reserve(n);
    for (int i = 0; i < n; ++i)
        events.append(streams > 0
                ? smallOutput(uint64_t(streams) + 1 + uint64_t(i), uint32_t(i % streams + 1), i / streams)
                : smallEvent(uint64_t(i) + 1));
    QElapsedTimer t;
    t.start();
    for (const Event &e : std::as_const(events))
        (*store)->append(e);
    const double appended = msSince(t);
    (void)(*store)->flush();
    if (qEnvironmentVariableIsSet("BENCH_DEBUG"))
        std::fprintf(stderr, "append %.1f ms, total %.1f ms\n", appended, msSince(t));
    return n / (msSince(t) / 1000.0);
}

// The baseline: the same rows into the same table with one prepared statement, 10 000 per
// transaction, payload JSON prepared beforehand. What SQLite itself does on this disk.
double rawInsertRate(const QString &dir, int n)
{
    const QString path = dir + QStringLiteral("/raw.db");
    QFile::remove(path);
    auto db = sql::open(path, false);
    if (!db)
        return -1;
    (void)sql::exec(db->get(),
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE events (sandbox_id TEXT NOT NULL, seq "
        "INTEGER NOT NULL, "
        "time_ms INTEGER NOT NULL, kind TEXT NOT NULL, exec_id INTEGER, payload TEXT NOT NULL, run_id INTEGER, "
        "PRIMARY KEY (sandbox_id, seq)) WITHOUT ROWID",
        {});
    const QByteArray payload = R"({"decision":"allow","host":"pypi.org","port":443})";
    QElapsedTimer t;
    t.start();
    sql::Stmt insert(db->get(), "INSERT INTO events VALUES (?,?,?,?,?,?,?)");
    for (int i = 1; i <= n; ++i) {
        if (i % 10000 == 1)
            (void)sql::exec(db->get(), "BEGIN", {});
        insert.utf8(1, "bench-sandbox")
            .integer(2, i)
            .integer(3, 1700000000000 + i)
            .utf8(4, "network.attempt")
            .integer(5, 0)
            .utf8(6, payload)
            .integer(7, 1)
            .run();
        if (i % 10000 == 0 || i == n)
            (void)sql::exec(db->get(), "COMMIT", {});
    }
    return n / (msSince(t) / 1000.0);
}

// Writes `executions` executions of `outputBytes` each through the real writer: commands and
// output from a vocabulary, every 100 000th execution mentioning "xylophone" and every 10th failing.
bool generate(const QString &path, int executions, int outputBytes, QTextStream &log)
{
    HistoryStore::Options options{path};
    options.maxStoredOutputTotal = qint64(4) << 30;
    auto store = HistoryStore::open(options);
    if (!store)
        return false;
    QStringList vocabulary;
    QRandomGenerator rng(42);
    for (int i = 0; i < 5000; ++i) {
        QString w;
        for (int c = 0, len = 3 + int(rng.bounded(8)); c < len; ++c)
            w += QChar(u'a' + rng.bounded(26));
        vocabulary.append(w);
    }
    const QStringList commands = {QStringLiteral("pytest"), QStringLiteral("make"), QStringLiteral("npm"),
        QStringLiteral("cargo"), QStringLiteral("python3"), QStringLiteral("ls"), QStringLiteral("git")};
    QElapsedTimer t;
    t.start();
    uint64_t seq = 0;
    for (int i = 1; i <= executions; ++i) {
        const QString sandbox = QStringLiteral("sb%1").arg(i / 1000);
        const uint32_t exec = uint32_t(i % 1000 + 1);
        if (exec == 1) {
            seq = 0;
            Event created;
            created.sandbox = sandbox;
            created.seq = ++seq;
            created.timeMs = 1700000000000 + qint64(i) * 10;
            created.kind = QStringLiteral("sandbox.created");
            created.run = QStringLiteral("run-%1").arg(i / 10000);
            created.payload = {{QStringLiteral("name"), sandbox}, {QStringLiteral("spec"), QJsonObject{}}};
            (*store)->append(created);
        }
        Event started;
        started.sandbox = sandbox;
        started.seq = ++seq;
        started.timeMs = 1700000000000 + qint64(i) * 10;
        started.kind = QStringLiteral("exec.started");
        started.exec = exec;
        started.run = QStringLiteral("run-%1").arg(i / 10000);
        started.payload = {{QStringLiteral("exec"), double(exec)},
            {QStringLiteral("argv"), QJsonArray{commands.at(i % commands.size()), vocabulary.at(rng.bounded(5000))}},
            {QStringLiteral("cwd"), QStringLiteral("/workspace")}, {QStringLiteral("envNames"), QJsonArray{}}};
        (*store)->append(started);
        QByteArray text;
        text.reserve(outputBytes + 16);
        if (i % 100000 == 0)
            text += "xylophone ";
        while (text.size() < outputBytes)
            text += vocabulary.at(rng.bounded(5000)).toLatin1() + (rng.bounded(12) ? ' ' : '\n');
        text.truncate(outputBytes);
        Event out;
        out.sandbox = sandbox;
        out.seq = ++seq;
        out.timeMs = started.timeMs + 1;
        out.kind = QStringLiteral("exec.output");
        out.exec = exec;
        out.stream = 1;
        out.data = text;
        (*store)->append(out);
        Event exited;
        exited.sandbox = sandbox;
        exited.seq = ++seq;
        exited.timeMs = started.timeMs + 5;
        exited.kind = QStringLiteral("exec.exited");
        exited.exec = exec;
        exited.run = started.run;
        const bool failed = i % 10 == 0;
        exited.payload = {{QStringLiteral("exec"), double(exec)},
            {QStringLiteral("status"), failed ? QStringLiteral("failed") : QStringLiteral("succeeded")},
            {QStringLiteral("exitCode"), failed ? 1 : 0}, {QStringLiteral("bytesOut"), outputBytes},
            {QStringLiteral("bytesErr"), 0}, {QStringLiteral("truncated"), false}};
        (*store)->append(exited);
        if (i % 20000 == 0) {
            (void)(*store)->flush(); // keeps the queue (and memory) bounded
            log << "\r  generating: " << i << " / " << executions << " executions" << Qt::flush;
        }
    }
    (void)(*store)->flush();
    log << "\r  generated " << executions << " executions in " << qRound(msSince(t) / 1000) << " s" << Qt::endl;
    return true;
}

// Runs argv with output to /dev/null; wall milliseconds.
double spawnMs(const QStringList &args, const QProcessEnvironment &env)
{
    std::vector<QByteArray> storage;
    std::vector<char *> argv, envp;
    for (const QString &a : args)
        storage.push_back(a.toLocal8Bit());
    const qsizetype argc = qsizetype(storage.size());
    for (const QString &kv : env.toStringList())
        storage.push_back(kv.toLocal8Bit());
    for (qsizetype i = 0; i < qsizetype(storage.size()); ++i)
        (i < argc ? argv : envp).push_back(storage[size_t(i)].data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    QElapsedTimer t;
    t.start();
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0)
        return -1;
    int status = 0;
    ::waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    return msSince(t);
}

double timeQuery(int rounds, const std::function<bool()> &query)
{
    QList<double> v;
    for (int r = 0; r < rounds; ++r) {
        QElapsedTimer t;
        t.start();
        if (!query())
            return -1;
        v.append(msSince(t));
    }
    return median(v);
}

// --vacuum (issue 19, item 10): a history of `mib` MiB of output through the real writer; half of
// it pruned and vacuumed while a sandbox's facts are committed one after another (each flushed, as
// the daemon does before it answers a create or an exec). Beside: the same commits with the
// writer idle, and a whole VACUUM of what is kept (what each commit waited for before).
int vacuumBench(const QString &dir, qint64 mib, QTextStream &out, QTextStream &log)
{
    const QString path = dir + QStringLiteral("/vacuum.db");
    HistoryStore::Options options{path};
    options.maxStoredOutputPerExec = 8 * 1024 * 1024;
    options.maxStoredOutputTotal = qint64(1) << 40;
    constexpr qint64 kPerExec = 4 * 1024 * 1024;
    const uint32_t execs = uint32_t(mib * 1024 * 1024 / kPerExec);
    auto store = HistoryStore::open(options);
    if (!store)
        return 1;
    log << "vacuum: writing " << mib << " MiB of output in " << execs << " executions" << Qt::endl;
    uint64_t seq = 0;
    auto fact = [&](const QString &sandbox, const QString &kind, QJsonObject payload, uint32_t exec = 0) {
        Event e;
        e.sandbox = sandbox;
        e.seq = ++seq;
        e.timeMs = 1700000000000 + qint64(seq);
        e.kind = kind;
        e.exec = exec;
        e.payload = std::move(payload);
        (*store)->append(e);
    };
    const QByteArray line
        = QByteArray("building target 42: compiling src/module.cpp with -O2 -Wall\n").repeated(4096).left(256 * 1024);
    for (uint32_t i = 1; i <= execs; ++i) {
        fact(QStringLiteral("flood"), QStringLiteral("exec.started"),
            {{QStringLiteral("exec"), double(i)}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("make")}}}, i);
        for (qint64 at = 0; at < kPerExec; at += line.size()) {
            Event e;
            e.sandbox = QStringLiteral("flood");
            e.kind = QStringLiteral("exec.output");
            e.exec = i;
            e.stream = 1;
            e.offset = at;
            e.data = line;
            (*store)->append(e);
        }
        fact(QStringLiteral("flood"), QStringLiteral("exec.exited"),
            {{QStringLiteral("exec"), double(i)}, {QStringLiteral("status"), QStringLiteral("succeeded")},
                {QStringLiteral("exitCode"), 0}, {QStringLiteral("bytesOut"), double(kPerExec)},
                {QStringLiteral("bytesErr"), 0}},
            i);
        if (i % 16 == 0)
            (void)(*store)->flush();
    }
    (void)(*store)->flush();
    const qint64 before = QFileInfo(path).size() + QFileInfo(path + QStringLiteral("-wal")).size();
    auto commits = [&](const std::function<bool()> &until) {
        QList<double> waits;
        while (!until()) {
            QElapsedTimer t;
            t.start();
            fact(QStringLiteral("busy"), QStringLiteral("network.attempt"),
                {{QStringLiteral("host"), QStringLiteral("pypi.org")}});
            (void)(*store)->flush();
            waits.append(msSince(t));
        }
        return waits;
    };
    int idleRounds = 0;
    const QList<double> idle = commits([&] { return ++idleRounds > 200; });
    std::atomic<bool> finished = false;
    Result<HistoryStore::PruneReport> report = makeError(ErrorCode::IoError, QStringLiteral("not done"));
    QElapsedTimer took;
    took.start();
    (*store)->prune({qint64(execs / 2) * kPerExec, std::nullopt, true}, [&](Result<HistoryStore::PruneReport> r) {
        report = std::move(r);
        finished = true;
    });
    QList<double> during = commits([&] { return finished.load(); });
    const double vacuumMs = msSince(took);
    if (!report) {
        std::fprintf(stderr, "airlock-history-bench: %s\n", qPrintable(report.error().message));
        return 1;
    }
    store->reset();
    // What a commit waited for before: one VACUUM of what is kept.
    auto db = sql::open(path, false);
    QElapsedTimer whole;
    whole.start();
    if (!db || !sql::exec(db->get(), "VACUUM", QStringLiteral("vacuum")))
        return 1;
    const double wholeMs = msSince(whole);
    std::sort(during.begin(), during.end());
    const auto pct = [](const QList<double> &v, double p) {
        return v.isEmpty() ? 0 : v[std::min<qsizetype>(v.size() - 1, qsizetype(v.size() * p))];
    };
    QList<double> idleSorted = idle;
    std::sort(idleSorted.begin(), idleSorted.end());
    out << "\nprune --vacuum of a " << before / (1 << 20) << " MiB history down to " << report->fileBytes / (1 << 20)
        << " MiB (" << QSysInfo::prettyProductName() << ", " << QThread::idealThreadCount() << " cores)\n";
    out << QStringLiteral("  took %1 ms; %2 commits meanwhile\n").arg(vacuumMs, 0, 'f', 0).arg(during.size());
    out << QStringLiteral("  a commit's wait during it: p50 %1 ms, p99 %2 ms, max %3 ms\n")
               .arg(pct(during, 0.5), 0, 'f', 1)
               .arg(pct(during, 0.99), 0, 'f', 1)
               .arg(during.isEmpty() ? 0 : during.last(), 0, 'f', 1);
    out << QStringLiteral("  baseline, the writer idle: p50 %1 ms, p99 %2 ms\n")
               .arg(pct(idleSorted, 0.5), 0, 'f', 1)
               .arg(pct(idleSorted, 0.99), 0, 'f', 1);
    out << QStringLiteral("  baseline, one whole VACUUM of what is kept (a commit's wait before): %1 ms\n")
               .arg(wholeMs, 0, 'f', 0);
    out.flush();
    return 0;
}

struct Row {
    QString what, value, baseline, ratio, target;
};

void printRows(QTextStream &out, const QList<Row> &rows)
{
    out << QStringLiteral("%1 %2 %3 %4 %5\n")
               .arg(QStringLiteral("measurement"), -40)
               .arg(QStringLiteral("airlock"), 12)
               .arg(QStringLiteral("baseline"), 36)
               .arg(QStringLiteral("ratio"), 7)
               .arg(QStringLiteral("target"), 11);
    for (const Row &r : rows)
        out << QStringLiteral("%1 %2 %3 %4 %5\n")
                   .arg(r.what, -40)
                   .arg(r.value, 12)
                   .arg(r.baseline, 36)
                   .arg(r.ratio, 7)
                   .arg(r.target, 11);
}
} // namespace

int main(int argc, char *argv[])
{
#ifdef AIRLOCK_BENCH_GUI
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
#else
    QCoreApplication app(argc, argv);
#endif
    const bool quick = app.arguments().contains(QStringLiteral("--quick"));
    const int rounds = quick ? 3 : 5;
    QTextStream out(stdout), log(stderr);
    QTemporaryDir scratch;
    if (const qsizetype at = app.arguments().indexOf(QStringLiteral("--vacuum")); at > 0)
        return vacuumBench(
            scratch.path(), app.arguments().value(at + 1, QStringLiteral("1024")).toLongLong(), out, log);
    QList<Row> rows;
    auto fmt = [](double v, const char *unit) {
        return QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 2 : 0).arg(QLatin1String(unit));
    };

    // 1. Ingest.
    const int n = quick ? 200000 : 1000000;
    const bool browseOnly
        = app.arguments().contains(QStringLiteral("--browse-only")); // the million-execution part alone
    log << "ingest: " << n << " small events per round" << Qt::endl;
    QList<double> ingest, outputs, interleaved, raw;
    for (int r = 0; r < (browseOnly ? 0 : rounds); ++r) {
        ingest.append(ingestRate(scratch.path(), n, 0));
        outputs.append(ingestRate(scratch.path(), n, 1));
        interleaved.append(ingestRate(scratch.path(), n, 10));
        raw.append(rawInsertRate(scratch.path(), n));
    }
    if (!browseOnly) {
        rows.append({QStringLiteral("ingest, small events (one row each)"), fmt(median(ingest) / 1000, "k/s"),
            fmt(median(raw) / 1000, "k/s (raw batched inserts)"),
            QStringLiteral("%1x").arg(median(ingest) / median(raw), 0, 'f', 2), QStringLiteral(">= 500 k/s")});
        rows.append({QStringLiteral("ingest, 64-byte output events"), fmt(median(outputs) / 1000, "k/s"),
            fmt(median(raw) / 1000, "k/s (raw batched inserts)"),
            QStringLiteral("%1x").arg(median(outputs) / median(raw), 0, 'f', 2), QStringLiteral(">= 0.8x")});
        rows.append({QStringLiteral("ingest, output of 10 executions in turn"), fmt(median(interleaved) / 1000, "k/s"),
            fmt(median(raw) / 1000, "k/s (raw batched inserts)"),
            QStringLiteral("%1x").arg(median(interleaved) / median(raw), 0, 'f', 2), QStringLiteral(">= 0.8x")});
    }
    if (app.arguments().contains(QStringLiteral("--ingest-only"))) {
        out << "\nAirlock history ingest (" << rounds << " rounds, medians; " << n << " events each; "
            << QThread::idealThreadCount() << " cores)\n\n";
        printRows(out, rows);
        return 0;
    }

    // 2. A million executions, 1 GiB of output, in a real daemon's data directory.
    const int executions = quick ? 100000 : 1000000;
    TestDaemon daemon;
    QDir().mkpath(daemon.dataDir());
    const QString path = daemon.dataDir() + QStringLiteral("/history.db");
    if (!generate(path, executions, 1024, log))
        return 1;
    const qint64 fileBytes = QFileInfo(path).size();
    log << "  database: " << fileBytes / (1 << 20) << " MiB" << Qt::endl;
    HistoryReader reader(path);
    HistoryReader::Query firstPage;
    auto rowsOf
        = [](const Result<QJsonObject> &r) { return r ? r->value(QStringLiteral("executions")).toArray().size() : -1; };
    const double pageMs = timeQuery(rounds, [&] { return rowsOf(reader.executions(firstPage)) == 50; });
    HistoryReader::Query failed;
    failed.status = QStringLiteral("failed");
    const double failedMs = timeQuery(rounds, [&] { return rowsOf(reader.executions(failed)) == 50; });
    HistoryReader::Query deep;
    deep.beforeId = executions / 2;
    const double deepMs = timeQuery(rounds, [&] { return rowsOf(reader.executions(deep)) == 50; });
    HistoryReader::Query rare;
    rare.text = QStringLiteral("xylophone");
    const double rareMs = timeQuery(rounds, [&] { return rowsOf(reader.executions(rare)) == executions / 100000; });
    HistoryReader::Query common;
    common.text = QStringLiteral("pytest");
    const double commonMs = timeQuery(rounds, [&] { return rowsOf(reader.executions(common)) == 50; });
    rows.append({QStringLiteral("history first page (reader)"), fmt(pageMs, "ms"), QStringLiteral("-"),
        QStringLiteral("-"), QStringLiteral("<= 50 ms")});
    rows.append({QStringLiteral("history --status failed (reader)"), fmt(failedMs, "ms"), QStringLiteral("-"),
        QStringLiteral("-"), QStringLiteral("<= 50 ms")});
    rows.append({QStringLiteral("history page at the middle (reader)"), fmt(deepMs, "ms"), QStringLiteral("-"),
        QStringLiteral("-"), QStringLiteral("<= 50 ms")});
    rows.append({QStringLiteral("search, rare word (reader)"), fmt(rareMs, "ms"), QStringLiteral("-"),
        QStringLiteral("-"), QStringLiteral("<= 200 ms")});
    rows.append({QStringLiteral("search, word in 1/7 commands (reader)"), fmt(commonMs, "ms"), QStringLiteral("-"),
        QStringLiteral("-"), QStringLiteral("<= 200 ms")});

    // End to end: airlockctl against the daemon that owns this database, beside `airlockctl ls`
    // (the same process start and connection, no history).
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-history-bench: cannot start airlockd\n");
        return 1;
    }
    const QString ctl = binDir() + QStringLiteral("/airlockctl");
    const QProcessEnvironment env = daemon.environment();
    auto cli = [&](const QStringList &a) {
        QList<double> v;
        for (int r = 0; r < rounds; ++r)
            v.append(spawnMs(QStringList{ctl, QStringLiteral("--no-autostart")} + a, env));
        return median(v);
    };
    const double lsMs = cli({QStringLiteral("ls")});
    const double historyMs = cli({QStringLiteral("history")});
    const double searchMs = cli({QStringLiteral("search"), QStringLiteral("xylophone")});
    rows.append({QStringLiteral("airlockctl history"), fmt(historyMs, "ms"), fmt(lsMs, "ms (airlockctl ls)"),
        QStringLiteral("%1x").arg(historyMs / lsMs, 0, 'f', 2), QStringLiteral("<= 50 ms")});
    rows.append({QStringLiteral("airlockctl search (rare word)"), fmt(searchMs, "ms"), fmt(lsMs, "ms (airlockctl ls)"),
        QStringLiteral("%1x").arg(searchMs / lsMs, 0, 'f', 2), QStringLiteral("<= 200 ms")});
#ifdef AIRLOCK_BENCH_GUI
    // The console's history window, from construction to its first rows painted, beside the same
    // first page asked for without a window (one history.list over the same connection).
    if (auto client = daemon.connect()) {
        QList<double> window, query;
        for (int r = 0; r < rounds; ++r) {
            QElapsedTimer t;
            t.start();
            if (!client->call(QStringLiteral("history.list"), {{QStringLiteral("limit"), 200}}))
                return 1;
            query.append(msSince(t));
            t.restart();
            auto *history = new ui::HistoryWindow(*client);
            history->show();
            while (history->model()->rowCount() == 0)
                QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
            QCoreApplication::processEvents(); // laid out and painted
            history->repaint();
            window.append(msSince(t));
            delete history;
        }
        rows.append({QStringLiteral("history window: first rows shown"), fmt(median(window), "ms"),
            fmt(median(query), "ms (history.list, 200 rows)"),
            QStringLiteral("%1x").arg(median(window) / median(query), 0, 'f', 2), QStringLiteral("<= 300 ms")});
    }
#endif
    daemon.stop();

    out << "\nAirlock history benchmarks (" << rounds << " rounds, medians; " << executions << " executions, "
        << fileBytes / (1 << 20) << " MiB database; " << QSysInfo::prettyProductName() << ", "
        << QThread::idealThreadCount() << " cores)\n\n";
    printRows(out, rows);
    out.flush();
    return 0;
}
