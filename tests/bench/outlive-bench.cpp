// SPDX-License-Identifier: Apache-2.0
// airlock-outlive-bench: what issue 19 promises of a daemon that goes away, measured.
//
//   airlock-outlive-bench --adopt [N]         N sandboxes (200), each running a command; airlockd SIGKILLed; how long
//   the
//                                             next one takes until it serves with all N taken over, beside its start
//                                             with none
//   airlock-outlive-bench --kill-loop [N]     N SIGKILLs (200) of airlockd while 4 sandboxes print numbered lines to
//                                             clients and a fifth floods: lines lost and repeated (by the clients and
//                                             in the history), commands that did not finish normally, integrity_check
//   airlock-outlive-bench --commit-window [S] S seconds (20) of one sandbox printing a line every 5 ms while another
//                                             floods: how long after the guest read a line a subscriber hears it, which
//                                             is once it is stored (p50, p99, max), beside the same without the flood
#include "TestDaemon.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalSocket>
#include <QProcess>
#include <QRandomGenerator>
#include <QTextStream>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <unistd.h>

#include <sqlite3.h>

using namespace airlock;
using namespace airlock::test;

namespace {
QTextStream out(stdout);

double percentile(QList<double> v, double p)
{
    if (v.isEmpty())
        return 0;
    std::sort(v.begin(), v.end());
    return v.at(std::min<qsizetype>(v.size() - 1, qsizetype(std::lround(p * double(v.size() - 1)))));
}

// airlockd for `d`'s directories, started here so that its readiness is timed to the millisecond.
struct TimedDaemon {
    QProcess process;
    double startMs = 0;
    bool start(const TestDaemon &d)
    {
        process.setProcessEnvironment(d.environment());
        process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        QElapsedTimer t;
        t.start();
        process.start(binDir() + QStringLiteral("/airlockd"), {QStringLiteral("--socket"), d.socketPath()});
        if (!process.waitForStarted(5000))
            return false;
        for (;;) {
            QLocalSocket s;
            s.connectToServer(d.socketPath());
            if (s.waitForConnected(50))
                break;
            if (process.state() != QProcess::Running || t.elapsed() > 60000)
                return false;
            QThread::usleep(500);
        }
        startMs = double(t.nsecsElapsed()) / 1e6;
        return true;
    }
    void kill()
    {
        if (process.state() == QProcess::NotRunning)
            return;
        ::kill(pid_t(process.processId()), SIGKILL);
        process.waitForFinished(5000);
    }
};

QByteArray sqliteOne(const QString &path, const char *sql)
{
    sqlite3 *h = nullptr;
    QByteArray r = "?";
    if (sqlite3_open_v2(QFile::encodeName(path).constData(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt *st = nullptr;
        if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
            r = QByteArray(reinterpret_cast<const char *>(sqlite3_column_text(st, 0)));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return r;
}

int adopt(int n)
{
    TestDaemon d;
    d.setSandboxesOutlive(true);
    // The empty start first, in this run: the baseline.
    QList<double> empty;
    for (int i = 0; i < 5; ++i) {
        TimedDaemon t;
        if (!t.start(d))
            return out << "airlockd did not start\n", 1;
        empty.append(t.startMs);
        t.process.terminate();
        t.process.waitForFinished(5000);
    }
    if (!d.start())
        return 1;
    out << "creating " << n << " sandboxes, each running sleep…" << Qt::endl;
    for (int i = 0; i < n; ++i) {
        QString error;
        const QString sb = d.create({QStringLiteral("--name"), QStringLiteral("adopt-%1").arg(i)}, &error);
        if (sb.isEmpty())
            return out << error << "\n", 1;
        auto p = new QProcess(qApp);
        p->setProcessEnvironment(d.environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("--no-autostart"), QStringLiteral("exec"), sb, QStringLiteral("--"),
                QStringLiteral("sleep"), QStringLiteral("600")});
    }
    QThread::msleep(1000);
    QList<double> taken;
    for (int round = 0; round < 3; ++round) {
        ::kill(pid_t(d.pid()), SIGKILL);
        d.process().waitForFinished(5000);
        TimedDaemon t;
        if (!t.start(d))
            return out << "airlockd did not come back\n", 1;
        QElapsedTimer ls;
        ls.start();
        const CliResult list = d.ctl({QStringLiteral("ls"), QStringLiteral("--json")});
        int running = 0, execs = 0;
        for (const QJsonValue &v : QJsonDocument::fromJson(list.out).array()) {
            running += v.toObject().value(QStringLiteral("state")).toString() == QLatin1String("running");
            execs += v.toObject().value(QStringLiteral("executions")).toInt();
        }
        taken.append(t.startMs);
        out << QStringLiteral(
            "round %1: ready after %2 ms with %3/%4 sandboxes running, %5 commands going on (ls took %6 ms)")
                   .arg(round + 1)
                   .arg(t.startMs, 0, 'f', 1)
                   .arg(running)
                   .arg(n)
                   .arg(execs)
                   .arg(ls.elapsed())
            << Qt::endl;
        if (running != n || execs != n)
            return 1;
        // Hand it back to the TestDaemon for the next round and the cleanup.
        t.kill();
        if (!d.start())
            return 1;
    }
    out << QStringLiteral("\ntaking over %1 sandboxes: %2 ms (median of 3; goal ≤ 2000 ms)\ndaemon start with none: %3 "
                          "ms (median of 5; goal ≤ 100 ms)\n")
               .arg(n)
               .arg(percentile(taken, 0.5), 0, 'f', 1)
               .arg(percentile(empty, 0.5), 0, 'f', 1);
    for (QProcess *p : qApp->findChildren<QProcess *>())
        p->kill();
    return 0;
}

int killLoop(int kills)
{
    TestDaemon d;
    d.setSandboxesOutlive(true);
    if (!d.start())
        return 1;
    constexpr int kStreams = 4;
    constexpr int kLines = 60000; // about 75 s at 800 lines a second
    QList<QProcess *> clients;
    QStringList ids;
    for (int i = 0; i < kStreams; ++i) {
        const QString sb = d.create({QStringLiteral("--name"), QStringLiteral("s%1").arg(i)});
        ids.append(QJsonDocument::fromJson(d.ctl({QStringLiteral("info"), QStringLiteral("--json"), sb}).out)
                       .object()
                       .value(QStringLiteral("id"))
                       .toString());
        auto p = new QProcess(qApp);
        p->setProcessEnvironment(d.environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("--no-autostart"), QStringLiteral("exec"), sb, QStringLiteral("--"), QStringLiteral("perl"),
                QStringLiteral("-e"),
                QStringLiteral("$|=1; for $i (1..%1) { print \"line $i\\n\"; select(undef,undef,undef,0.00125) }")
                    .arg(kLines)});
        clients.append(p);
    }
    const QString flood = d.create(
        {QStringLiteral("--name"), QStringLiteral("flood"), QStringLiteral("--output-limit"), QStringLiteral("100G")});
    auto flooder = new QProcess(qApp);
    flooder->setProcessEnvironment(d.environment());
    flooder->setStandardOutputFile(QProcess::nullDevice());
    flooder->start(binDir() + QStringLiteral("/airlockctl"),
        {QStringLiteral("--no-autostart"), QStringLiteral("exec"), flood, QStringLiteral("--"), QStringLiteral("sh"),
            QStringLiteral("-c"), QStringLiteral("yes flood | head -c 20G")});
    QByteArray got[kStreams];
    const auto drain = [&] {
        for (int i = 0; i < kStreams; ++i)
            got[i] += clients[i]->readAllStandardOutput();
    };
    QThread::msleep(1000);
    int integrityFailures = 0;
    QElapsedTimer loop;
    loop.start();
    for (int k = 0; k < kills; ++k) {
        QElapsedTimer wait;
        wait.start();
        const int ms = 100 + int(QRandomGenerator::global()->bounded(300));
        while (wait.elapsed() < ms) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
            drain();
            QThread::msleep(5);
        }
        ::kill(pid_t(d.pid()), SIGKILL);
        d.process().waitForFinished(5000);
        if (k % 20 == 19 && sqliteOne(d.dataDir() + QStringLiteral("/history.db"), "PRAGMA integrity_check") != "ok")
            ++integrityFailures;
        if (!d.start()) {
            out << "airlockd did not come back after kill " << k + 1 << ": "
                << (d.process().state() == QProcess::Running ? "not ready in 10 s" : "exited") << " (exit "
                << d.process().exitCode() << ")\n";
            for (const QFileInfo &log :
                QDir(d.rootDir() + QStringLiteral("/state/airlock")).entryInfoList(QDir::Files)) {
                QFile f(log.filePath());
                if (f.open(QIODevice::ReadOnly))
                    out << log.fileName() << ":\n" << f.readAll().right(3000) << "\n";
            }
            return 1;
        }
        if (k % 20 == 19)
            out << "kill " << k + 1 << ", " << loop.elapsed() / 1000 << " s" << Qt::endl;
    }
    out << "waiting for the commands to finish…" << Qt::endl;
    int abnormal = 0;
    for (int i = 0; i < kStreams; ++i) {
        while (clients[i]->state() != QProcess::NotRunning) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
            drain();
            clients[i]->waitForFinished(100);
        }
        drain();
        if (clients[i]->exitCode() != 0) {
            ++abnormal;
            out << "stream " << i << " exited " << clients[i]->exitCode() << ": "
                << clients[i]->readAllStandardError().right(400) << Qt::endl;
        }
    }
    flooder->kill();
    if (sqliteOne(d.dataDir() + QStringLiteral("/history.db"), "PRAGMA integrity_check") != "ok")
        ++integrityFailures;
    qint64 lost = 0, repeated = 0, storedLost = 0, storedRepeated = 0;
    const auto count = [&](const QByteArray &text, qint64 &missing, qint64 &twice) {
        QList<int> seen(kLines + 1, 0);
        for (const QByteArray &line : text.split('\n'))
            if (line.startsWith("line "))
                if (const int n = line.mid(5).toInt(); n >= 1 && n <= kLines)
                    ++seen[n];
        for (int n = 1; n <= kLines; ++n) {
            missing += seen[n] == 0;
            twice += std::max(0, seen[n] - 1);
        }
    };
    for (int i = 0; i < kStreams; ++i) {
        const qint64 lostBefore = lost;
        count(got[i], lost, repeated);
        // What the client said besides reconnecting (a gap it was told of, for one), when it lost lines.
        if (lost > lostBefore)
            for (const QByteArray &line : clients[i]->readAllStandardError().split('\n'))
                if (!line.isEmpty() && !line.contains("went away") && !line.contains("reconnected after"))
                    out << "stream " << i << " said: " << line.left(300) << Qt::endl;
        const QByteArray stored = sqliteOne(d.dataDir() + QStringLiteral("/history.db"),
            QStringLiteral("SELECT group_concat(data, '') FROM (SELECT data FROM chunks JOIN executions x ON x.id = "
                           "chunks.execution WHERE x.sandbox_id = '%1' AND stream = 1 ORDER BY offset)")
                .arg(ids[i])
                .toUtf8()
                .constData());
        count(stored, storedLost, storedRepeated);
    }
    out << QStringLiteral("\n%1 SIGKILLs of airlockd in %2 s, %3 streams of %4 lines and a flood beside them:\n"
                          "  commands that did not finish normally: %5\n"
                          "  lines lost: %6 (clients), %7 (history); repeated: %8 (clients), %9 (history)\n"
                          "  integrity_check failures: %10 (every 20 kills and at the end)\n")
               .arg(kills)
               .arg(loop.elapsed() / 1000)
               .arg(kStreams)
               .arg(kLines)
               .arg(abnormal)
               .arg(lost)
               .arg(storedLost)
               .arg(repeated)
               .arg(storedRepeated)
               .arg(integrityFailures);
    return abnormal || lost || repeated || storedLost || storedRepeated || integrityFailures;
}

// Subscribes to a sandbox's events and measures, for each output event, now minus the time the
// guest read it.
QList<double> windowFor(const TestDaemon &d, const QString &sb, int seconds)
{
    auto client = d.connect();
    QList<double> lags;
    if (!client)
        return lags;
    const QString id = QJsonDocument::fromJson(d.ctl({QStringLiteral("info"), QStringLiteral("--json"), sb}).out)
                           .object()
                           .value(QStringLiteral("id"))
                           .toString();
    QObject::connect(client.get(), &DaemonClient::eventReceived, client.get(), [&](const Event &e) {
        if (e.sandbox == id && e.isOutput())
            lags.append(double(QDateTime::currentMSecsSinceEpoch() - e.timeMs));
    });
    if (!client->call(QStringLiteral("events.subscribe"), {{QStringLiteral("sandbox"), id}}))
        return lags;
    QProcess ticker;
    ticker.setProcessEnvironment(d.environment());
    ticker.setStandardOutputFile(QProcess::nullDevice());
    ticker.start(binDir() + QStringLiteral("/airlockctl"),
        {QStringLiteral("--no-autostart"), QStringLiteral("exec"), sb, QStringLiteral("--"), QStringLiteral("perl"),
            QStringLiteral("-e"),
            QStringLiteral(
                "$|=1; $t = time + %1; while (time < $t) { print \"tick\\n\"; select(undef,undef,undef,0.005) }")
                .arg(seconds)});
    while (ticker.state() != QProcess::NotRunning) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        ticker.waitForFinished(5);
    }
    return lags;
}

int commitWindow(int seconds)
{
    TestDaemon d;
    if (!d.start())
        return 1;
    const QString sb = d.create({QStringLiteral("--name"), QStringLiteral("ticker")});
    const QList<double> quiet = windowFor(d, sb, seconds);
    const QString flood = d.create(
        {QStringLiteral("--name"), QStringLiteral("flood"), QStringLiteral("--output-limit"), QStringLiteral("100G")});
    QProcess flooder;
    flooder.setProcessEnvironment(d.environment());
    flooder.setStandardOutputFile(QProcess::nullDevice());
    flooder.start(binDir() + QStringLiteral("/airlockctl"),
        {QStringLiteral("--no-autostart"), QStringLiteral("exec"), flood, QStringLiteral("--"), QStringLiteral("sh"),
            QStringLiteral("-c"), QStringLiteral("yes flood of text to search | head -c 100G")});
    QThread::msleep(500);
    const QList<double> busy = windowFor(d, sb, seconds);
    flooder.kill();
    flooder.waitForFinished(5000);
    const auto line = [](const char *what, const QList<double> &v) {
        return QStringLiteral("%1: %2 output events, p50 %3 ms, p99 %4 ms, max %5 ms\n")
            .arg(QLatin1String(what))
            .arg(v.size())
            .arg(percentile(v, 0.5), 0, 'f', 0)
            .arg(percentile(v, 0.99), 0, 'f', 0)
            .arg(percentile(v, 1.0), 0, 'f', 0);
    };
    out << "\nfrom the guest reading a line to a subscriber hearing it (stored first), " << seconds << " s each:\n"
        << line("alone", quiet) << line("beside a flood", busy) << "goal: p99 ≤ 100 ms beside the flood\n";
    return busy.isEmpty() || percentile(busy, 0.99) > 100;
}
} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const auto number = [&](const QString &flag, int fallback) {
        const qsizetype i = args.indexOf(flag);
        return i >= 0 && i + 1 < args.size() && args.at(i + 1).toInt() > 0 ? args.at(i + 1).toInt() : fallback;
    };
    if (args.contains(QStringLiteral("--adopt")))
        return adopt(number(QStringLiteral("--adopt"), 200));
    if (args.contains(QStringLiteral("--kill-loop")))
        return killLoop(number(QStringLiteral("--kill-loop"), 200));
    if (args.contains(QStringLiteral("--commit-window")))
        return commitWindow(number(QStringLiteral("--commit-window"), 20));
    out << "usage: airlock-outlive-bench --adopt [N] | --kill-loop [N] | --commit-window [SECONDS]\n";
    return 2;
}
