// SPDX-License-Identifier: Apache-2.0
// airlock-bench --scale N: what a daemon costs with N live sandboxes beside the same daemon with
// one, in one run. airlock-bench --parallel K: K sandboxes streaming at once beside K plain
// pipelines, and a one-shot run before and after that flood.
#include "BenchSupport.h"

#include "TestDaemon.h"

#include <QDir>
#include <QJsonArray>
#include <QThread>

#include <cmath>
#include <cstdio>
#include <memory>

using namespace airlock::test;

namespace airlock::bench {

namespace {
// The value after `flag` on the command line, or `fallback`.
int argumentAfter(const char *flag, int fallback)
{
    const QStringList args = QCoreApplication::arguments();
    const qsizetype at = args.indexOf(QLatin1String(flag));
    bool ok = false;
    const int value = at >= 0 ? args.value(at + 1).toInt(&ok) : 0;
    return ok && value > 0 ? value : fallback;
}

double percentile(QList<double> v, double p)
{
    if (v.isEmpty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[qsizetype(std::min<double>(double(v.size() - 1), std::ceil(p * double(v.size())) - 1))];
}

// CPU time of every thread of a process so far, in nanoseconds (schedstat's first field).
qint64 cpuNs(qint64 pid)
{
    qint64 total = 0;
    const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
    for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile f(tasks.filePath(tid) + QStringLiteral("/schedstat"));
        if (f.open(QIODevice::ReadOnly))
            total += f.readAll().split(' ').value(0).toLongLong();
    }
    return total;
}

// Every process under `root` (children, their children, ...), from each process's parent in /proc.
QList<qint64> descendantsOf(qint64 root)
{
    QMultiHash<qint64, qint64> children;
    const QDir proc(QStringLiteral("/proc"));
    for (const QString &name : proc.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool numeric = false;
        const qint64 pid = name.toLongLong(&numeric);
        if (!numeric)
            continue;
        QFile stat(proc.filePath(name) + QStringLiteral("/stat"));
        if (!stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = stat.readAll();
        // "pid (comm) state ppid ...": the command may hold spaces and parentheses, so after the last ')'.
        const QList<QByteArray> fields = text.mid(text.lastIndexOf(')') + 2).split(' ');
        children.insert(fields.value(1).toLongLong(), pid);
    }
    QList<qint64> found, queue{root};
    while (!queue.isEmpty()) {
        const QList<qint64> next = children.values(queue.takeFirst());
        found += next;
        queue += next;
    }
    return found;
}

struct AtScale {
    double execP50 = 0, execP99 = 0, cpuPerExecMs = 0, createMs = 0, lsMs = 0;
    // The kernel's part: what bubblewrap alone costs with these sandboxes on the host, as the issue
    // defines its baseline (the root bound read-only, every mount below it copied) and with /usr only.
    double bareBwrapMs = 0, usrOnlyBwrapMs = 0;
};

// Exec round trips, create+delete and `ls`, measured alike at any N.
AtScale measure(const TestDaemon &daemon, DaemonClient &client, ExecWaiter &waiter, const QString &sb,
    const EnvironmentBlock &envp, int rounds)
{
    AtScale at;
    auto apiExec = [&] {
        QElapsedTimer t;
        t.start();
        auto r = client.call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), sb}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        return double(t.nsecsElapsed()) / 1e6;
    };
    repeat(20, apiExec); // warm-up
    const int execs = rounds * 100;
    const qint64 cpuBefore = cpuNs(daemon.pid());
    const QList<double> trips = repeat(execs, apiExec);
    at.cpuPerExecMs = double(cpuNs(daemon.pid()) - cpuBefore) / 1e6 / execs;
    at.execP50 = percentile(trips, 0.5);
    at.execP99 = percentile(trips, 0.99);
    QList<double> creates;
    for (int i = 0; i < rounds * 2; ++i) {
        QElapsedTimer t;
        t.start();
        auto c = client.call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{}}});
        creates.append(double(t.nsecsElapsed()) / 1e6);
        if (c)
            (void)client.call(QStringLiteral("sandbox.delete"),
                {{QStringLiteral("sandbox"), c->value(QStringLiteral("id")).toString()}});
    }
    at.createMs = median(creates);
    const QStringList ls{
        binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"), QStringLiteral("ls")};
    at.lsMs = median(repeat(rounds * 2, [&] { return spawnMs(ls, envp.get()); }));
    const QStringList bareBwrap = bareBwrapArgs(), usrOnly = usrOnlyBwrapArgs();
    at.bareBwrapMs = median(repeat(rounds * 4, [&] { return spawnMs(bareBwrap); }));
    at.usrOnlyBwrapMs = median(repeat(rounds * 4, [&] { return spawnMs(usrOnly); }));
    return at;
}

// Creates `count` sandboxes from `clients` connections, each with one request in flight; the rate.
double fill(const TestDaemon &daemon, int count, int clients, int &failed)
{
    std::vector<std::unique_ptr<DaemonClient>> connections;
    for (int i = 0; i < clients; ++i)
        connections.push_back(daemon.connect());
    int started = 0, done = 0;
    QEventLoop loop;
    QElapsedTimer t;
    t.start();
    std::function<void(DaemonClient &)> next = [&](DaemonClient &c) {
        if (started == count)
            return;
        ++started;
        c.callAsync(
            QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{}}}, [&](Result<QJsonValue> r) {
                failed += r ? 0 : 1;
                if (++done == count)
                    loop.quit();
                else
                    next(c);
            });
    };
    for (auto &c : connections)
        next(*c);
    if (count > 0)
        loop.exec();
    return count / (double(t.nsecsElapsed()) / 1e9);
}

QProcessEnvironment daemonEnvironment()
{
    QProcessEnvironment env;
    if (QCoreApplication::arguments().contains(QStringLiteral("--qt-loop")))
        env.insert(QStringLiteral("AIRLOCK_QT_EVENT_LOOP"), QStringLiteral("1"));
    return env;
}
} // namespace

int benchScale(QList<Row> &rows, int rounds, bool quick)
{
    const int n = argumentAfter("--scale", quick ? 200 : 1000);
    TestDaemon daemon({}, daemonEnvironment());
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench --scale: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    ExecWaiter waiter(*client);
    const EnvironmentBlock envp(daemon.environment());
    const QString sb = daemon.create({QStringLiteral("--name"), QStringLiteral("probe")});
    std::fprintf(stderr, "  measuring at N=1...\n");
    const qint64 idleRss = rssKb(daemon.pid(), "VmRSS:");
    const AtScale one = measure(daemon, *client, waiter, sb, envp, rounds);

    std::fprintf(stderr, "  creating %d more, 8 clients...\n", n - 1);
    int failed = 0;
    const double rate = fill(daemon, n - 1, 8, failed);
    if (failed) {
        std::fprintf(stderr, "airlock-bench --scale: %d creations failed\n", failed);
        return 1;
    }
    std::fprintf(stderr, "  measuring at N=%d...\n", n);
    const AtScale many = measure(daemon, *client, waiter, sb, envp, rounds);
    const int bareRuns = std::min(n, 200);
    const double bareRate = bareBwrapRate(bareRuns, 8);
    const qint64 rss = rssKb(daemon.pid(), "VmRSS:");
    qint64 pss = 0;
    for (qint64 pid : descendantsOf(daemon.pid()))
        pss += rssKb(pid, "Pss:");

    const QString atN = QStringLiteral(" at N=%1").arg(n);
    const QString atOne = QStringLiteral("the same at N=1");
    rows.append({QStringLiteral("exec round trip p50") + atN, many.execP50, QStringLiteral("ms"), atOne, one.execP50,
        QStringLiteral("<= 1.3x")});
    rows.append({QStringLiteral("exec round trip p99") + atN, many.execP99, QStringLiteral("ms"), atOne, one.execP99,
        QStringLiteral("<= 2x")});
    rows.append({QStringLiteral("daemon CPU per exec") + atN, many.cpuPerExecMs, QStringLiteral("ms"), atOne,
        one.cpuPerExecMs, QStringLiteral("-")});
    rows.append({QStringLiteral("create") + atN, many.createMs, QStringLiteral("ms"), atOne, one.createMs,
        QStringLiteral("<= 1.3x")});
    rows.append({QStringLiteral("bare bwrap true") + atN, many.bareBwrapMs, QStringLiteral("ms"), atOne,
        one.bareBwrapMs, QStringLiteral("-")});
    rows.append({QStringLiteral("bwrap of /usr only, true") + atN, many.usrOnlyBwrapMs, QStringLiteral("ms"), atOne,
        one.usrOnlyBwrapMs, QStringLiteral("-")});
    rows.append({QStringLiteral("airlockctl ls") + atN, many.lsMs, QStringLiteral("ms"), atOne, one.lsMs,
        QStringLiteral("<= 30 ms")});
    rows.append({QStringLiteral("create rate, 8 clients, to N=%1").arg(n), rate, QStringLiteral("/s"),
        QStringLiteral("bare bwrap, 8 parallel") + atN, bareRate, QStringLiteral(">= 100/s")});
    rows.append({QStringLiteral("daemon RSS") + atN, rss / 1024.0, QStringLiteral("MiB"), QStringLiteral("at N=1"),
        idleRss / 1024.0, QStringLiteral("<= 150 MiB")});
    rows.append({QStringLiteral("PSS per sandbox (daemon's descendants / N)"), pss / 1024.0 / n, QStringLiteral("MiB"),
        {}, 0, QStringLiteral("-")});
    std::fprintf(stderr, "  stopping (ends %d sandboxes)...\n", n);
    daemon.stop();
    return 0;
}

int benchParallel(QList<Row> &rows, int rounds, bool quick)
{
    const int k = argumentAfter("--parallel", 10);
    const qint64 bytes = quick ? (256ll << 20) : (1ll << 30);
    TestDaemon daemon({}, daemonEnvironment());
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench --parallel: cannot start airlockd\n");
        return 1;
    }
    const EnvironmentBlock envp(daemon.environment());
    const QString ctl = binDir() + QStringLiteral("/airlockctl");
    QStringList sandboxes;
    for (int i = 0; i < k; ++i)
        sandboxes.append(daemon.create({QStringLiteral("--output-limit"), QStringLiteral("4G")}));
    const QStringList oneShot{
        ctl, QStringLiteral("--no-autostart"), QStringLiteral("run"), QStringLiteral("--"), QStringLiteral("true")};
    // Each a moment after the last (300 ms, not timed), so that the sandbox made ahead is ready:
    // what is compared is the daemon before and after the flood, not the made-ahead one's start.
    auto oneShotMs = [&] {
        QThread::msleep(300);
        return spawnMs(oneShot, envp.get());
    };
    std::fprintf(stderr, "  one-shot on a fresh daemon...\n");
    spawnMs(oneShot, envp.get());
    const double freshOneShot = median(repeat(rounds * 3, oneShotMs));

    auto streamFrom = [&](const QString &sb) {
        return QStringList{ctl, QStringLiteral("--no-autostart"), QStringLiteral("exec"), sb, QStringLiteral("-n"),
            QStringLiteral("--"), QStringLiteral("head"), QStringLiteral("-c"), QString::number(bytes),
            QStringLiteral("/dev/zero")};
    };
    const QStringList pipeline{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
        QStringLiteral("head -c %1 /dev/zero | cat >/dev/null").arg(bytes)};
    // K commands at once: the wall time until the last ends.
    auto together = [&](const QList<QStringList> &commands, char **env) {
        QElapsedTimer t;
        t.start();
        std::vector<pid_t> pids;
        for (const QStringList &args : commands)
            if (const pid_t pid = spawnQuiet(args, env); pid > 0)
                pids.push_back(pid);
        for (pid_t pid : pids)
            ::waitpid(pid, nullptr, 0);
        return double(t.nsecsElapsed()) / 1e6;
    };
    QList<double> one, many, pipeOne, pipeMany;
    QList<QStringList> streams, pipelines;
    for (const QString &sb : sandboxes) {
        streams.append(streamFrom(sb));
        pipelines.append(pipeline);
    }
    const double mb = double(bytes) / 1e6;
    for (int r = 0; r < rounds; ++r) {
        std::fprintf(stderr, "  round %d of %d: one stream, %d streams, and the pipelines...\n", r + 1, rounds, k);
        one.append(mb / (spawnMs(streams.first(), envp.get()) / 1000.0));
        many.append(mb * k / (together(streams, envp.get()) / 1000.0));
        pipeOne.append(mb / (spawnMs(pipeline) / 1000.0));
        pipeMany.append(mb * k / (together(pipelines, environ) / 1000.0));
    }
    const double streamed = double(bytes) * (1 + k) * rounds / double(1ll << 30);
    const double floodedRss = rssKb(daemon.pid(), "VmRSS:") / 1024.0;
    const double floodedOneShot = median(repeat(rounds * 3, oneShotMs));
    rows.append({QStringLiteral("one stream, history on"), median(one), QStringLiteral("MB/s"),
        QStringLiteral("head | cat"), median(pipeOne), QStringLiteral(">= 0.4x")});
    rows.append({QStringLiteral("%1 streams at once (sum)").arg(k), median(many), QStringLiteral("MB/s"),
        QStringLiteral("one stream"), median(one), QStringLiteral(">= 1.7x")});
    rows.append({QStringLiteral("%1 pipelines at once (sum)").arg(k), median(pipeMany), QStringLiteral("MB/s"),
        QStringLiteral("one pipeline"), median(pipeOne), QStringLiteral("-")});
    rows.append({QStringLiteral("run -- true after %1 GiB streamed").arg(streamed, 0, 'f', 0), floodedOneShot,
        QStringLiteral("ms"), QStringLiteral("on the fresh daemon"), freshOneShot, QStringLiteral("<= 1.1x")});
    rows.append(
        {QStringLiteral("daemon RSS after the flood"), floodedRss, QStringLiteral("MiB"), {}, 0, QStringLiteral("-")});
    daemon.stop();
    return 0;
}

} // namespace airlock::bench
