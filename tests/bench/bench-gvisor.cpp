// SPDX-License-Identifier: Apache-2.0
// airlock-bench --gvisor (issue 22): the gVisor runtime beside bare runsc and beside bubblewrap's
// runtime, in the same rounds: create until the first exec, exec round trip, streaming out of a
// sandbox, and the memory of 50 live gVisor sandboxes.
#include "BenchSupport.h"
#include "TestDaemon.h"

#include <QEventLoop>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <cstdio>

using namespace airlock;
using namespace airlock::test;

namespace airlock::bench {

namespace {
const QJsonObject kGvisor{{QStringLiteral("isolation"), QStringLiteral("gvisor")}};

// Host processes of gVisor's (runsc, gofer, sentry) whose command line names `needle`.
QList<qint64> runscProcesses(const QByteArray &needle)
{
    QList<qint64> found;
    for (qint64 pid : pidsWithCommandLine(needle))
        if (QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
            f.open(QIODevice::ReadOnly) && f.readAll().contains("runsc"))
            found.append(pid);
    return found;
}
} // namespace

int benchGvisor(QList<Row> &rows, int rounds, bool quick)
{
    const QString runsc = QStandardPaths::findExecutable(QStringLiteral("runsc"));
    if (runsc.isEmpty()) {
        std::fprintf(stderr, "airlock-bench --gvisor: runsc is not installed (sudo apt install runsc)\n");
        return 1;
    }
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench --gvisor: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    ExecWaiter waiter(*client);
    const auto execTrue = [&](const QString &sandbox) {
        auto r = client->call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        if (!r)
            return false;
        waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        return true;
    };

    // 1. Create until the first exec has run, beside `runsc do true` (which starts a sandbox, runs
    // true in it and ends it) in the same rounds.
    std::fprintf(stderr, "  measuring create until first exec\n");
    QTemporaryDir runscRoot;
    const QStringList bare = {runsc, QStringLiteral("--root"), runscRoot.path(), QStringLiteral("--rootless"),
        QStringLiteral("--network=none"), QStringLiteral("do"), QStringLiteral("true")};
    QList<double> creates, bareRuns;
    for (int i = 0; i < rounds * 4; ++i) {
        QElapsedTimer t;
        t.start();
        auto c = client->call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), kGvisor}});
        const QString id = c ? c->value(QStringLiteral("id")).toString() : QString();
        if (id.isEmpty() || !execTrue(id)) {
            std::fprintf(stderr, "airlock-bench --gvisor: create failed: %s\n",
                c ? "the first exec failed" : qPrintable(c.error().message));
            return 1;
        }
        creates.append(double(t.nsecsElapsed()) / 1e6);
        (void)client->call(QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), id}});
        bareRuns.append(spawnMs(bare));
    }
    rows.append({QStringLiteral("gVisor: create until first exec"), median(creates), QStringLiteral("ms"),
        QStringLiteral("runsc do true"), median(bareRuns), QStringLiteral("<= 1.3x")});

    // 2. Exec round trip (true) in a running sandbox of each runtime.
    std::fprintf(stderr, "  measuring exec round trip\n");
    const QString gv = daemon.create({QStringLiteral("--name"), QStringLiteral("gv"), QStringLiteral("--isolation"),
        QStringLiteral("gvisor"), QStringLiteral("--output-limit"), QStringLiteral("4G")});
    const QString ns = daemon.create(
        {QStringLiteral("--name"), QStringLiteral("ns"), QStringLiteral("--output-limit"), QStringLiteral("4G")});
    if (gv.isEmpty() || ns.isEmpty())
        return 1;
    const auto roundTrip = [&](const QString &sandbox) {
        QElapsedTimer t;
        t.start();
        execTrue(sandbox);
        return double(t.nsecsElapsed()) / 1e6;
    };
    repeat(20, [&] { return roundTrip(gv); });
    repeat(20, [&] { return roundTrip(ns); });
    QList<double> gvExec, nsExec;
    for (int r = 0; r < rounds; ++r) {
        gvExec.append(median(repeat(100, [&] { return roundTrip(gv); })));
        nsExec.append(median(repeat(100, [&] { return roundTrip(ns); })));
    }
    rows.append({QStringLiteral("gVisor: exec round trip, API (true)"), median(gvExec), QStringLiteral("ms"),
        QStringLiteral("namespaces runtime"), median(nsExec), QStringLiteral("<= 3x")});

    // What one process start costs inside each, whatever Airlock does: a shell starting true 100
    // times, less an exec of nothing, per start. (gVisor's ptrace platform, the one that works
    // here, traps every system call of fork and exec.)
    const QJsonArray loop{QStringLiteral("sh"), QStringLiteral("-c"),
        QStringLiteral("i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done")};
    const auto spawnInside = [&](const QString &sandbox) {
        QElapsedTimer t;
        t.start();
        auto r = client->call(
            QStringLiteral("exec.start"), {{QStringLiteral("sandbox"), sandbox}, {QStringLiteral("argv"), loop}});
        if (r)
            waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        const double whole = double(t.nsecsElapsed()) / 1e6;
        return (whole - roundTrip(sandbox)) / 100;
    };
    QList<double> gvSpawn, nsSpawn;
    for (int r = 0; r < rounds; ++r) {
        gvSpawn.append(spawnInside(gv));
        nsSpawn.append(spawnInside(ns));
    }
    rows.append({QStringLiteral("gVisor: fork+exec of true inside"), median(gvSpawn), QStringLiteral("ms"),
        QStringLiteral("namespaces runtime"), median(nsSpawn), QStringLiteral("-")});

    // 3. Streaming out of a sandbox to a discarding client, history on.
    const qint64 bytes = quick ? qint64(256) << 20 : qint64(2) << 30;
    std::fprintf(stderr, "  measuring output streaming (%lld MiB per round)\n", bytes >> 20);
    const EnvironmentBlock envp(daemon.environment());
    // With head's 8 KiB writes (as in the main benchmark), and with 1 MiB ones: each system call
    // costs far more under gVisor's ptrace platform, and head makes 32 of them per MiB.
    const auto stream = [&](const QString &sandbox, const QStringList &command) {
        const double ms
            = spawnMs(QStringList{binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
                          QStringLiteral("exec"), sandbox, QStringLiteral("-n"), QStringLiteral("--")}
                    + command,
                envp.get());
        return double(bytes) / (ms / 1000.0) / 1e6;
    };
    const QStringList head{
        QStringLiteral("head"), QStringLiteral("-c"), QString::number(bytes), QStringLiteral("/dev/zero")};
    const QStringList dd{QStringLiteral("dd"), QStringLiteral("if=/dev/zero"), QStringLiteral("bs=1M"),
        QStringLiteral("count=%1").arg(bytes >> 20), QStringLiteral("status=none")};
    QList<double> gvHead, nsHead, gvDd, nsDd;
    for (int r = 0; r < (quick ? 1 : 3); ++r) {
        gvHead.append(stream(gv, head));
        nsHead.append(stream(ns, head));
        gvDd.append(stream(gv, dd));
        nsDd.append(stream(ns, dd));
    }
    rows.append({QStringLiteral("gVisor: stream %1 MiB (head -c), history on").arg(bytes >> 20), median(gvHead),
        QStringLiteral("MB/s"), QStringLiteral("namespaces runtime"), median(nsHead), QStringLiteral(">= 0.5x")});
    rows.append({QStringLiteral("gVisor: stream %1 MiB (dd bs=1M), history on").arg(bytes >> 20), median(gvDd),
        QStringLiteral("MB/s"), QStringLiteral("namespaces runtime"), median(nsDd), QStringLiteral("-")});
    // The floor: head alone inside, to /dev/null, nothing of Airlock's in the path (no pipe, no
    // guest, no daemon). Under gVisor's ptrace platform its own system calls are the cost.
    const qint64 floorBytes = qint64(256) << 20;
    const QStringList headAlone{
        QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("head -c %1 /dev/zero > /dev/null").arg(floorBytes)};
    QList<double> gvAlone, nsAlone;
    for (int r = 0; r < (quick ? 1 : 3); ++r) {
        gvAlone.append(stream(gv, headAlone) * double(floorBytes) / double(bytes));
        nsAlone.append(stream(ns, headAlone) * double(floorBytes) / double(bytes));
    }
    rows.append({QStringLiteral("gVisor: head -c %1 MiB > /dev/null inside").arg(floorBytes >> 20), median(gvAlone),
        QStringLiteral("MB/s"), QStringLiteral("namespaces runtime"), median(nsAlone), QStringLiteral("-")});

    // 4. 50 live gVisor sandboxes: what the daemon and gVisor's processes hold for each.
    const int count = quick ? 10 : 50;
    std::fprintf(stderr, "  measuring %d live gVisor sandboxes\n", count);
    const QByteArray workspaces = QFile::encodeName(
        QFileInfo(QJsonDocument::fromJson(daemon.ctl({QStringLiteral("info"), QStringLiteral("--json"), gv}).out)
                      .object()
                      .value(QStringLiteral("workspace"))
                      .toString())
            .path());
    const auto gvisorPss = [&] {
        qint64 kb = 0;
        for (qint64 pid : runscProcesses(workspaces))
            kb += rssKb(pid, "Pss:");
        return kb;
    };
    const qint64 rssBefore = rssKb(daemon.pid(), "VmRSS:");
    const qint64 pssBefore = gvisorPss();
    int failed = 0;
    for (int i = 0; i < count; ++i)
        failed += client->call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), kGvisor}}) ? 0 : 1;
    if (failed)
        std::fprintf(stderr, "airlock-bench --gvisor: %d of %d creates failed\n", failed, count);
    const qint64 rssAfter = rssKb(daemon.pid(), "VmRSS:");
    const qint64 pssAfter = gvisorPss();
    rows.append({QStringLiteral("gVisor: daemon RSS per live sandbox (%1 live)").arg(count),
        double(rssAfter - rssBefore) / count, QStringLiteral("KiB"), QString(), 0, QStringLiteral("-")});
    rows.append({QStringLiteral("gVisor: runsc, gofer and sentry PSS per live sandbox"),
        double(pssAfter - pssBefore) / count / 1024.0, QStringLiteral("MiB"), QString(), 0, QStringLiteral("-")});
    return 0;
}

} // namespace airlock::bench
