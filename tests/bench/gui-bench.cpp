// SPDX-License-Identifier: Apache-2.0
// airlock-gui-bench: the console under an output flood, as the issue puts it. One sandbox writes as
// fast as it can (`yes`) while the window shows it live, and nine others print 1,000 lines a second
// each (their events reach the console too, which shows only the selected sandbox). A 5 ms timer
// measures the longest time the event loop was away (a stall a person would feel), and the
// process's RSS is read at the end. Baselines, same run: the same timer with the window idle, then
// with only the steady sandboxes running. Run with QT_QPA_PLATFORM=offscreen or under Xvfb.
//
//   airlock-gui-bench [--seconds N] [--steady N] [--line TEXT]
//   airlock-gui-bench --fleet [--sandboxes N] [--streaming N]
//   airlock-gui-bench --trace [--programs N] [--sandboxes N]
//
// --fleet: the fleet view with N sandboxes (default 200), some of them printing 1,000 lines a
// second (default 10): the GUI thread's time per sampling tick (the sandbox.stats answer applied
// to the model, the sort and filter kept up to date), and sorting or filtering every row, each the
// median and the worst of several.
//
// --trace: a run whose commands start N programs (default 10,000 in 5 sandboxes; each an exec.program event)
// shown as a trace: from asking to the tree on screen (every page of history.events, the spans
// built, the model reset, the view painted), and the build alone. Baseline, same run: fetching
// the same events page by page and nothing else (what any view of them costs). Medians of 5.
//
//   --seconds N   how long the flood lasts (default 20; the scenario is 60)
//   --steady N    sandboxes printing 1,000 lines/s alongside (default 9)
//   --line TEXT   what `yes` repeats (default: yes's own "y", two bytes a line)
#include "FleetSampler.h"
#include "FleetView.h"
#include "MainWindow.h"
#include "OutputView.h"
#include "SandboxModel.h"
#include "TestHelpers.h"
#include "TraceModel.h"
#include "TraceView.h"
#include "model/Trace.h"

#include <QApplication>
#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QLineEdit>
#include <QTimer>
#include <QTreeView>

#include <cstdio>
#include <ctime>

using namespace airlock;
using namespace airlock::test;

namespace {
// The longest gap between 5 ms ticks over `ms` milliseconds of event loop, and how much of it this
// thread spent on the CPU (the rest it was waiting: for the kernel, or for a core on a busy machine).
struct Stall {
    qint64 ms = 0;
    qint64 onCpuMs = 0;
    qint64 endedAtMs = 0; // into the measurement
};

qint64 threadCpuNs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Stall longestStall(int ms)
{
    QElapsedTimer clock, sinceTick;
    clock.start();
    sinceTick.start();
    qint64 cpuAtTick = threadCpuNs();
    Stall worst;
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const qint64 cpu = threadCpuNs();
        const qint64 gap = sinceTick.restart();
        if (gap > worst.ms)
            worst = {gap, (cpu - cpuAtTick) / 1000000, clock.elapsed()};
        cpuAtTick = cpu;
    });
    tick.start(5);
    while (clock.elapsed() < ms)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    return worst;
}

QString option(const QStringList &arguments, const QString &name, const QString &fallback)
{
    const qsizetype at = arguments.indexOf(name);
    return at >= 0 && at + 1 < arguments.size() ? arguments.at(at + 1) : fallback;
}

// 100 lines, a write each, then a tenth of a second's rest: 1,000 lines a second from one process
// (a shell loop would fork `sleep` ten times a second per sandbox, a load of its own on a small machine).
const char kSteadyScript[]
    = "$| = 1; for (my $n = 0;; ++$n) { "
      "print \"steady line $n.$_ from a sandbox that prints 1000 lines a second\\n\" for 0 .. 99; "
      "select(undef, undef, undef, 0.1) }";

void startExec(DaemonClient &client, const QString &sandbox, const QJsonArray &argv, int seconds)
{
    const auto started = client.call(QStringLiteral("exec.start"),
        {{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("argv"), argv},
            {QStringLiteral("timeoutMs"), double(seconds) * 1000}});
    if (!started)
        std::fprintf(stderr, "airlock-gui-bench: %s did not start: %s\n", qPrintable(sandbox),
            qPrintable(started.error().message));
}
} // namespace

double medianOf(QList<double> values)
{
    std::sort(values.begin(), values.end());
    return values.isEmpty() ? 0 : values.at(values.size() / 2);
}

int fleetBench(const QStringList &arguments)
{
    const int sandboxes = option(arguments, QStringLiteral("--sandboxes"), QStringLiteral("200")).toInt();
    const int streaming = option(arguments, QStringLiteral("--streaming"), QStringLiteral("10")).toInt();
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-gui-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    std::fprintf(stderr, "creating %d sandboxes…\n", sandboxes);
    for (int k = 1; k <= sandboxes; ++k)
        if (daemon.create({QStringLiteral("--name"), QStringLiteral("fleet-%1").arg(k, 3, 10, QLatin1Char('0'))})
                .isEmpty()) {
            std::fprintf(stderr, "airlock-gui-bench: sandbox %d not created\n", k);
            return 1;
        }
    ui::MainWindow window(*client);
    window.resize(1600, 1000);
    window.show();
    QElapsedTimer wait;
    wait.start();
    while (window.sandboxModel()->rowCount(window.sandboxModel()->index(0, 0)) < sandboxes && wait.elapsed() < 20000)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    for (int k = 1; k <= streaming; ++k)
        startExec(*client, QStringLiteral("fleet-%1").arg(k, 3, 10, QLatin1Char('0')),
            QJsonArray{QStringLiteral("perl"), QStringLiteral("-e"), QString::fromLatin1(kSteadyScript)}, 120);
    ui::FleetSampler *sampler = window.fleet()->sampler();
    QList<double> ticks;
    QObject::connect(
        sampler, &ui::FleetSampler::sampled, sampler, [&] { ticks.append(double(sampler->lastApplyNs()) / 1e6); });
    const Stall stall = longestStall(15000);
    // Sorting every row on a column, and filtering them, as a click or a keystroke does.
    QTreeView *tree = window.sandboxTree();
    QList<double> sorts, filters;
    const int columns[] = {ui::SandboxModel::Cpu, ui::SandboxModel::Name, ui::SandboxModel::Memory,
        ui::SandboxModel::Age, ui::SandboxModel::LastOutput};
    for (int round = 0; round < 5; ++round)
        for (int column : columns) {
            QElapsedTimer t;
            t.start();
            tree->sortByColumn(column, round % 2 ? Qt::AscendingOrder : Qt::DescendingOrder);
            sorts.append(double(t.nsecsElapsed()) / 1e6);
        }
    for (const QString &text : {QStringLiteral("fleet-01"), QString(), QStringLiteral("steady line"), QString(),
             QStringLiteral("none"), QString()}) {
        QElapsedTimer t;
        t.start();
        window.fleet()->filterLine()->setText(text);
        filters.append(double(t.nsecsElapsed()) / 1e6);
    }
    std::printf("\nAirlock fleet view: %d sandboxes, %d of them printing 1,000 lines/s, sampled once a second\n\n",
        sandboxes, streaming);
    std::printf("%-40s %8.2f ms median, %.2f ms worst of %lld ticks   target <= 5 ms\n", "GUI time per sampling tick",
        medianOf(ticks), ticks.isEmpty() ? 0.0 : *std::max_element(ticks.cbegin(), ticks.cend()), qint64(ticks.size()));
    std::printf("%-40s %8.2f ms median, %.2f ms worst of %lld   target <= 16 ms\n", "sorting every row on a column",
        medianOf(sorts), *std::max_element(sorts.cbegin(), sorts.cend()), qint64(sorts.size()));
    std::printf("%-40s %8.2f ms median, %.2f ms worst of %lld   target <= 16 ms\n", "filtering every row",
        medianOf(filters), *std::max_element(filters.cbegin(), filters.cend()), qint64(filters.size()));
    std::printf(
        "%-40s %8lld ms   (%lld ms of it on the CPU) over 15 s\n", "longest event-loop stall", stall.ms, stall.onCpuMs);
    daemon.stop();
    return 0;
}

int traceBench(const QStringList &arguments)
{
    const int programs = option(arguments, QStringLiteral("--programs"), QStringLiteral("10000")).toInt();
    // Spread over sandboxes (default 5): past a burst of 2,000 a sandbox's program records are
    // rate-limited, and a real run's trace holds several sandboxes anyway.
    const int sandboxes = std::max(1, option(arguments, QStringLiteral("--sandboxes"), QStringLiteral("5")).toInt());
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-gui-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    std::fprintf(stderr, "running %d programs in %d sandboxes…\n", programs, sandboxes);
    for (int k = 1; k <= sandboxes; ++k) {
        const QString name = QStringLiteral("traced-%1").arg(k);
        const QStringList run{QStringLiteral("--run"), QStringLiteral("bench-trace")};
        const CliResult ran = daemon.create({QStringLiteral("--name"), name}).isEmpty()
            ? CliResult{}
            : daemon.ctl(run
                + QStringList{QStringLiteral("exec"), name, QStringLiteral("--"), QStringLiteral("sh"),
                    QStringLiteral("-c"),
                    QStringLiteral("i=0; while [ $i -lt %1 ]; do /bin/true; i=$((i+1)); done")
                        .arg(programs / sandboxes)});
        if (ran.exitCode != 0) {
            std::fprintf(stderr, "airlock-gui-bench: the command in %s failed: %s\n", qPrintable(name),
                qPrintable(ran.describe()));
            return 1;
        }
    }
    std::fprintf(stderr, "measuring…\n");
    // The events, page by page, as the trace reads them: the baseline.
    QList<QJsonObject> events;
    auto fetch = [&] {
        events.clear();
        QJsonValue after;
        do {
            QJsonObject params{{QStringLiteral("run"), QStringLiteral("bench-trace")}, {QStringLiteral("limit"), 5000}};
            if (after.isObject())
                params.insert(QStringLiteral("after"), after);
            const auto page = client->call(QStringLiteral("history.events"), params);
            if (!page)
                return false;
            for (const QJsonValue &e : page->value(QStringLiteral("events")).toArray())
                events.append(e.toObject());
            after = page->value(QStringLiteral("next"));
        } while (after.isObject());
        return true;
    };
    ui::TraceView view;
    view.resize(1600, 1000);
    view.show();
    QList<double> fetches, builds, shown;
    for (int round = 0; round < 5; ++round) {
        QElapsedTimer t;
        t.start();
        if (!fetch()) {
            std::fprintf(stderr, "airlock-gui-bench: history.events failed\n");
            return 1;
        }
        fetches.append(double(t.nsecsElapsed()) / 1e6);
        t.restart();
        const trace::Trace built
            = trace::Trace::build(events, QStringLiteral("run bench-trace"), QDateTime::currentMSecsSinceEpoch());
        builds.append(double(t.nsecsElapsed()) / 1e6);
        t.restart();
        bool loaded = false;
        const QMetaObject::Connection done
            = QObject::connect(view.model(), &ui::TraceModel::loaded, [&] { loaded = true; });
        view.showTrace(*client, QString(), QStringLiteral("bench-trace"), QStringLiteral("run bench-trace"));
        while (!loaded && t.elapsed() < 60000)
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
        (void)view.grab(); // painted
        shown.append(double(t.nsecsElapsed()) / 1e6);
        QObject::disconnect(done);
    }
    const double fetched = medianOf(fetches), total = medianOf(shown);
    std::printf("\nAirlock trace: one run, %lld events (%d programs), %lld spans\n\n", qint64(events.size()), programs,
        qint64(view.model()->trace().spans.size()));
    std::printf("%-44s %8.1f ms median of 5\n", "baseline: fetching its events (history.events)", fetched);
    std::printf("%-44s %8.1f ms median of 5   %.2fx the baseline\n", "building the spans alone", medianOf(builds),
        medianOf(builds) / fetched);
    std::printf("%-44s %8.1f ms median of 5   %.2fx the baseline   target <= 300 ms\n",
        "the trace on screen (fetch, build, paint)", total, total / fetched);
    daemon.stop();
    return 0;
}

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    const QStringList arguments = app.arguments();
    if (arguments.contains(QStringLiteral("--trace")))
        return traceBench(arguments);
    if (arguments.contains(QStringLiteral("--fleet")))
        return fleetBench(arguments);
    const int seconds = option(arguments, QStringLiteral("--seconds"), QStringLiteral("20")).toInt();
    const int steady = option(arguments, QStringLiteral("--steady"), QStringLiteral("9")).toInt();
    const QString line = option(arguments, QStringLiteral("--line"), QStringLiteral("y"));
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-gui-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    daemon.create(
        {QStringLiteral("--name"), QStringLiteral("flood"), QStringLiteral("--output-limit"), QStringLiteral("64G")});
    QStringList steadyNames;
    for (int k = 1; k <= steady; ++k) {
        steadyNames.append(QStringLiteral("steady-%1").arg(k));
        daemon.create(
            {QStringLiteral("--name"), steadyNames.last(), QStringLiteral("--output-limit"), QStringLiteral("64G")});
    }
    ui::MainWindow window(*client);
    window.show();
    QElapsedTimer wait;
    wait.start();
    while (!window.selectSandbox(QStringLiteral("flood")) && wait.elapsed() < 5000)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);

    // Lines that reached the console per sandbox, counted as they arrive (the window keeps only so many).
    QHash<QString, qint64> linesBySandbox;
    QObject::connect(client.get(), &DaemonClient::eventReceived, &app, [&](const Event &e) {
        if (e.isOutput())
            linesBySandbox[e.sandbox] += e.data.count('\n');
    });
    QHash<QString, QString> nameById;
    for (const QString &name : std::as_const(steadyNames) + QStringList{QStringLiteral("flood")})
        if (auto info = client->call(QStringLiteral("sandbox.info"), {{QStringLiteral("sandbox"), name}}))
            nameById.insert(info->value(QStringLiteral("id")).toString(), name);

    const Stall idle = longestStall(2000);
    for (const QString &name : std::as_const(steadyNames))
        startExec(*client, name,
            QJsonArray{QStringLiteral("perl"), QStringLiteral("-e"), QString::fromLatin1(kSteadyScript)}, seconds + 10);
    const Stall steadyOnly = steady > 0 ? longestStall(3000) : Stall{};
    linesBySandbox.clear();
    startExec(*client, QStringLiteral("flood"), QJsonArray{QStringLiteral("yes"), line}, seconds);
    QElapsedTimer flooding;
    flooding.start();
    const Stall flood = longestStall(seconds * 1000);
    const double elapsed = double(flooding.elapsed()) / 1000.0;
    const qint64 rssKb = procStatusField(QCoreApplication::applicationPid(), "VmRSS:");
    const qint64 peakKb = procStatusField(QCoreApplication::applicationPid(), "VmHWM:");
    const ui::OutputDocument &doc = window.outputView()->document();
    qint64 floodLines = 0, steadyLines = 0;
    for (auto it = linesBySandbox.cbegin(); it != linesBySandbox.cend(); ++it)
        (nameById.value(it.key(), it.key()) == QLatin1String("flood") ? floodLines : steadyLines) += it.value();

    std::printf("\nAirlock console under an output flood (%d s of `yes %s` in one sandbox, shown live; %d sandbox(es) "
                "at 1,000 lines/s alongside)\n\n",
        seconds, qPrintable(line), steady);
    std::printf("%-40s %10lld ms   (%lld ms of it on the CPU, ending %.1f s in; same timer: idle window %lld ms, "
                "steady sandboxes only %lld ms)   target <= 50 ms\n",
        "longest event-loop stall", flood.ms, flood.onCpuMs, double(flood.endedAtMs) / 1000.0, idle.ms, steadyOnly.ms);
    std::printf("%-40s %10.0f MiB  (peak %.0f MiB)   target <= 300 MiB\n", "GUI RSS at the end", double(rssKb) / 1024.0,
        double(peakKb) / 1024.0);
    std::printf("%-40s %10lld      (%.0f lines/s; the view keeps %lld, dropped %lld)\n", "flood lines received",
        floodLines, double(floodLines) / elapsed, qint64(doc.lineCount()), qint64(doc.droppedLines()));
    if (steady > 0)
        std::printf("%-40s %10lld      (%.0f lines/s per sandbox)\n", "steady lines received", steadyLines,
            double(steadyLines) / elapsed / steady);
    daemon.stop();
    return 0;
}
