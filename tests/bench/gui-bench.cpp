// SPDX-License-Identifier: Apache-2.0
// airlock-gui-bench: the console under an output flood, as the issue puts it. One sandbox writes as
// fast as it can (`yes`) while the window shows it live, and nine others print 1,000 lines a second
// each (their events reach the console too, which shows only the selected sandbox). A 5 ms timer
// measures the longest time the event loop was away (a stall a person would feel), and the
// process's RSS is read at the end. Baselines, same run: the same timer with the window idle, then
// with only the steady sandboxes running. Run with QT_QPA_PLATFORM=offscreen or under Xvfb.
//
//   airlock-gui-bench [--seconds N] [--steady N] [--line TEXT]
//
//   --seconds N   how long the flood lasts (default 20; the scenario is 60)
//   --steady N    sandboxes printing 1,000 lines/s alongside (default 9)
//   --line TEXT   what `yes` repeats (default: yes's own "y", two bytes a line)
#include "MainWindow.h"
#include "OutputView.h"
#include "TestHelpers.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QTimer>

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
const char kSteadyScript[] = "$| = 1; for (my $n = 0;; ++$n) { "
                             "print \"steady line $n.$_ from a sandbox that prints 1000 lines a second\\n\" for 0 .. 99; "
                             "select(undef, undef, undef, 0.1) }";

void startExec(DaemonClient &client, const QString &sandbox, const QJsonArray &argv, int seconds)
{
    const auto started = client.call(QStringLiteral("exec.start"), {{QStringLiteral("sandbox"), sandbox},
                                                                   {QStringLiteral("argv"), argv},
                                                                   {QStringLiteral("timeoutMs"), double(seconds) * 1000}});
    if (!started)
        std::fprintf(stderr, "airlock-gui-bench: %s did not start: %s\n", qPrintable(sandbox), qPrintable(started.error().message));
}
} // namespace

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    const QStringList arguments = app.arguments();
    const int seconds = option(arguments, QStringLiteral("--seconds"), QStringLiteral("20")).toInt();
    const int steady = option(arguments, QStringLiteral("--steady"), QStringLiteral("9")).toInt();
    const QString line = option(arguments, QStringLiteral("--line"), QStringLiteral("y"));
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-gui-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    daemon.create({QStringLiteral("--name"), QStringLiteral("flood"), QStringLiteral("--output-limit"), QStringLiteral("64G")});
    QStringList steadyNames;
    for (int k = 1; k <= steady; ++k) {
        steadyNames.append(QStringLiteral("steady-%1").arg(k));
        daemon.create({QStringLiteral("--name"), steadyNames.last(), QStringLiteral("--output-limit"), QStringLiteral("64G")});
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
        startExec(*client, name, QJsonArray{QStringLiteral("perl"), QStringLiteral("-e"), QString::fromLatin1(kSteadyScript)}, seconds + 10);
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

    std::printf("\nAirlock console under an output flood (%d s of `yes %s` in one sandbox, shown live; %d sandbox(es) at 1,000 lines/s alongside)\n\n",
                seconds, qPrintable(line), steady);
    std::printf("%-40s %10lld ms   (%lld ms of it on the CPU, ending %.1f s in; same timer: idle window %lld ms, steady sandboxes only %lld ms)   target <= 50 ms\n",
                "longest event-loop stall", flood.ms, flood.onCpuMs, double(flood.endedAtMs) / 1000.0, idle.ms, steadyOnly.ms);
    std::printf("%-40s %10.0f MiB  (peak %.0f MiB)   target <= 300 MiB\n", "GUI RSS at the end", double(rssKb) / 1024.0, double(peakKb) / 1024.0);
    std::printf("%-40s %10lld      (%.0f lines/s; the view keeps %lld, dropped %lld)\n", "flood lines received", floodLines,
                double(floodLines) / elapsed, qint64(doc.lineCount()), qint64(doc.droppedLines()));
    if (steady > 0)
        std::printf("%-40s %10lld      (%.0f lines/s per sandbox)\n", "steady lines received", steadyLines, double(steadyLines) / elapsed / steady);
    daemon.stop();
    return 0;
}
