// SPDX-License-Identifier: Apache-2.0
// airlock-gui-bench: the console under an output flood. One sandbox writes as fast as it can while
// the window shows it live; a 5 ms timer measures the longest time the event loop was away (a
// stall a person would feel), and the process's RSS is read at the end. Baseline, same run: the
// same timer with the window idle. Run with QT_QPA_PLATFORM=offscreen or under Xvfb.
//
//   airlock-gui-bench [--seconds N]
#include "MainWindow.h"
#include "OutputView.h"
#include "TestHelpers.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QTimer>

#include <cstdio>

using namespace airlock;
using namespace airlock::test;

namespace {
// The longest gap between 5 ms ticks over `ms` milliseconds of event loop.
qint64 longestStall(int ms)
{
    QElapsedTimer clock, sinceTick;
    clock.start();
    sinceTick.start();
    qint64 worst = 0;
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    QObject::connect(&tick, &QTimer::timeout, [&] {
        worst = std::max(worst, sinceTick.restart());
    });
    tick.start(5);
    while (clock.elapsed() < ms)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    return worst;
}
} // namespace

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    const int seconds = app.arguments().contains(QStringLiteral("--seconds"))
        ? app.arguments().value(app.arguments().indexOf(QStringLiteral("--seconds")) + 1).toInt()
        : 20;
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-gui-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    daemon.create({QStringLiteral("--name"), QStringLiteral("flood"), QStringLiteral("--output-limit"), QStringLiteral("64G")});
    QElapsedTimer evClock; qint64 evWorst = 0, evMaxBytes = 0, evCount = 0, evBytes = 0, slow = 0;
    QObject::connect(client.get(), &DaemonClient::eventReceived, &app, [&](const Event &e) { evClock.start(); evMaxBytes = std::max<qint64>(evMaxBytes, e.data.size()); ++evCount; evBytes += e.data.size(); });
    ui::MainWindow window(*client);
    QObject::connect(client.get(), &DaemonClient::eventReceived, &app, [&](const Event &) { const qint64 t = evClock.nsecsElapsed(); evWorst = std::max(evWorst, t); if (t > 20000000) ++slow; });
    window.show();
    QElapsedTimer wait;
    wait.start();
    while (!window.selectSandbox(QStringLiteral("flood")) && wait.elapsed() < 5000)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);

    const qint64 idle = longestStall(2000);
    (void)client->call(QStringLiteral("exec.start"), {{QStringLiteral("sandbox"), QStringLiteral("flood")},
                                                {QStringLiteral("argv"), QJsonArray{QStringLiteral("yes"), QStringLiteral("airlock output flood line")}},
                                                {QStringLiteral("timeoutMs"), double(seconds) * 1000}});
    const qint64 flood = longestStall(seconds * 1000);
    const qint64 rssKb = procStatusField(QCoreApplication::applicationPid(), "VmRSS:");
    const qint64 lines = window.outputView()->document().lineCount() + window.outputView()->document().droppedLines();
    std::printf("\nAirlock console under an output flood (%d s of `yes` in one sandbox, shown live)\n\n", seconds);
    std::printf("%-40s %10lld ms   (idle window, same timer: %lld ms)   target <= 50 ms\n", "longest event-loop stall", flood, idle);
    std::printf("%-40s %10.0f MiB  target <= 300 MiB\n", "GUI RSS at the end", double(rssKb) / 1024.0);
    std::printf("%-40s %10lld      (%.0f lines/s)\n", "lines received", lines, double(lines) / seconds);
    std::printf("TEMP events %lld, avg bytes %lld, max bytes %lld, worst handling %.1f ms, >20ms: %lld\n", evCount, evBytes / std::max<qint64>(evCount,1), evMaxBytes, evWorst / 1e6, slow);
    daemon.stop();
    return 0;
}
