// SPDX-License-Identifier: Apache-2.0
// airlock-bench: Airlock's performance budget, each figure beside a baseline measured in the same
// run on the same machine. Medians over several rounds; these machines are noisy.
#include "BenchSupport.h"
#include "LoopbackServer.h"
#include "NetnsPair.h"
#include "TestDaemon.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QRandomGenerator>
#include <QSslCertificate>
#include <QStandardPaths>
#include <QSysInfo>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTextStream>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace airlock;
using namespace airlock::test;
using namespace airlock::bench;

namespace {
// Row, median, EnvironmentBlock, spawnMs, repeat, rssKb and ExecWaiter: BenchSupport.h.

// Runs the probe's http-fetch; returns {median microseconds per fetch, MB/s}.
std::pair<double, double> fetch(const QStringList &command)
{
    QProcess p;
    p.start(command.first(), command.mid(1));
    p.waitForFinished(600000);
    const QList<QByteArray> words = p.readAllStandardOutput().trimmed().split(' ');
    if (words.value(0) != "ok") {
        std::fprintf(stderr, "airlock-bench: %s failed: %s\n", qPrintable(command.join(QLatin1Char(' '))),
            words.join(' ').constData());
        return {0, 0};
    }
    return {words.value(1).toDouble(), words.value(2).toDouble()};
}

// The egress proxy: a client in an allowlist sandbox fetching through CONNECT from a server on the
// host's loopback, against the same client on the host fetching directly, in the same rounds.
void benchProxy(QList<Row> &rows, int rounds, bool quick)
{
    LoopbackServer server("bench");
    TestDaemon daemon({QStringLiteral("--resolve"), QStringLiteral("bench.test=127.0.0.1")});
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return;
    }
    const QString sb = daemon.create(
        {QStringLiteral("--name"), QStringLiteral("proxy"), QStringLiteral("--allow"), QStringLiteral("bench.test"),
            QStringLiteral("--mount"), probeMount(), QStringLiteral("--output-limit"), QStringLiteral("4G")});
    const QString port = QString::number(server.port());
    const QString big = QStringLiteral("/bytes/%1").arg(quick ? 256ll << 20 : 1ll << 30);
    const auto inside = [&](const QString &path, int count) {
        return fetch(QStringList{binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
            QStringLiteral("--socket"), daemon.socketPath(), QStringLiteral("exec"), sb, QStringLiteral("-n"),
            QStringLiteral("--"), QStringLiteral("/opt/probe/airlock-probe"), QStringLiteral("http-fetch"),
            QStringLiteral("connect"), QStringLiteral("bench.test"), port, path, QString::number(count)});
    };
    const auto direct = [&](const QString &path, int count) {
        return fetch(QStringList{probePath(), QStringLiteral("http-fetch"), QStringLiteral("direct"),
            QStringLiteral("bench.test"), port, path, QString::number(count)});
    };
    QList<double> proxiedUs, directUs, proxiedMBps, directMBps;
    inside(QStringLiteral("/small"), 20); // warm-up
    for (int r = 0; r < rounds; ++r) {
        proxiedUs.append(inside(QStringLiteral("/small"), 200).first);
        directUs.append(direct(QStringLiteral("/small"), 200).first);
        proxiedMBps.append(inside(big, 1).second);
        directMBps.append(direct(big, 1).second);
    }
    rows.append({QStringLiteral("proxy: connect + small GET, p50"), median(proxiedUs) / 1000, QStringLiteral("ms"),
        QStringLiteral("direct"), median(directUs) / 1000, QStringLiteral("<= +1 ms")});
    rows.append({QStringLiteral("proxy: CONNECT throughput"), median(proxiedMBps), QStringLiteral("MB/s"),
        QStringLiteral("direct"), median(directMBps), QStringLiteral(">= 0.5x")});
    daemon.stop();
}

// The same daemon over its unix socket and over wss:// from across a veth pair (a namespace of its
// own, as a remote host): exec round trip of `true` beside local plus the link's round trip
// (a TCP connect), and streaming throughput beside the same stream over the unix socket.
int benchRemote(QList<Row> &rows, int rounds, bool quick)
{
    NetnsPair link;
    QByteArray why;
    if (!link.up(&why)) {
        std::fprintf(
            stderr, "airlock-bench --remote: cannot make the network namespace (root needed): %s\n", why.constData());
        return 1;
    }
    const quint16 port = 7443;
    TestDaemon daemon({QStringLiteral("--listen"), QStringLiteral("%1:%2").arg(link.remote()).arg(port),
        QStringLiteral("--secret-store"), QStringLiteral("file")});
    daemon.setLauncher(link.launcher());
    if (!daemon.start())
        return 1;
    QProcess tokenCreate;
    tokenCreate.setProcessEnvironment(daemon.environment());
    tokenCreate.start(binDir() + QStringLiteral("/airlockd"),
        {QStringLiteral("token"), QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("bench")});
    tokenCreate.waitForFinished();
    const QString token = QString::fromLatin1(tokenCreate.readAllStandardOutput().trimmed());
    QFile certFile(daemon.dataDir() + QStringLiteral("/tls/cert.pem"));
    certFile.open(QIODevice::ReadOnly);
    const QString url
        = QStringLiteral("wss://%1:%2#sha256=%3")
              .arg(link.remote())
              .arg(port)
              .arg(QString::fromLatin1(QSslCertificate(certFile.readAll()).digest(QCryptographicHash::Sha256).toHex()));
    auto local = daemon.connect(); // attached to its own executions only: a client that subscribes and
                                   // never reads would hold the streams measured below
    DaemonClient remote;
    ConnectOptions options;
    options.host = url;
    options.token = token;
    options.autostart = false;
    if (!local || !remote.connectToDaemon(options)) {
        std::fprintf(stderr, "airlock-bench --remote: cannot connect\n");
        return 1;
    }
    const QString sb = daemon.create(
        {QStringLiteral("--name"), QStringLiteral("bench"), QStringLiteral("--output-limit"), QStringLiteral("4G")});
    auto roundTrip = [&sb](DaemonClient &client, ExecWaiter &waiter) {
        QElapsedTimer t;
        t.start();
        auto r = client.call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), sb}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}},
                {QStringLiteral("attach"), true}});
        waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        return double(t.nsecsElapsed()) / 1e6;
    };
    ExecWaiter localWaiter(*local), remoteWaiter(remote);
    repeat(10, [&] { return roundTrip(*local, localWaiter); });
    repeat(10, [&] { return roundTrip(remote, remoteWaiter); });
    QList<double> overUnix, overWss, rtt;
    for (int r = 0; r < rounds; ++r) {
        overUnix.append(median(repeat(50, [&] { return roundTrip(*local, localWaiter); })));
        overWss.append(median(repeat(50, [&] { return roundTrip(remote, remoteWaiter); })));
        rtt.append(median(repeat(50, [&] {
            QTcpSocket s;
            QElapsedTimer t;
            t.start();
            s.connectToHost(link.remote(), port);
            s.waitForConnected(2000);
            return double(t.nsecsElapsed()) / 1e6;
        })));
    }
    rows.append({QStringLiteral("exec round trip over wss (true)"), median(overWss), QStringLiteral("ms"),
        QStringLiteral("unix socket"), median(overUnix), QStringLiteral("<= 2x+rtt")});
    rows.append({QStringLiteral("link round trip (TCP connect)"), median(rtt), QStringLiteral("ms"), QString(), 0,
        QStringLiteral("-")});

    // Throughput: a stream of zeros to airlockctl, discarded, over each transport.
    const qint64 bytes = quick ? (256ll << 20) : (1ll << 30);
    auto streamMBps = [&](const QString &host) {
        QProcess p;
        QProcessEnvironment env = daemon.environment();
        env.insert(QStringLiteral("AIRLOCK_TOKEN"), token);
        p.setProcessEnvironment(env);
        p.setStandardOutputFile(QStringLiteral("/dev/null"));
        QStringList arguments{QStringLiteral("--no-autostart")};
        if (!host.isEmpty())
            arguments += {QStringLiteral("--host"), host};
        arguments += {QStringLiteral("exec"), sb, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("head"),
            QStringLiteral("-c"), QString::number(bytes), QStringLiteral("/dev/zero")};
        QElapsedTimer t;
        t.start();
        p.start(binDir() + QStringLiteral("/airlockctl"), arguments);
        p.waitForFinished(-1);
        return double(bytes) / (double(t.nsecsElapsed()) / 1e9) / 1e6;
    };
    QList<double> unixMBps, wssMBps;
    for (int r = 0; r < rounds; ++r) {
        unixMBps.append(streamMBps({}));
        wssMBps.append(streamMBps(url));
    }
    rows.append({QStringLiteral("stream over wss"), median(wssMBps), QStringLiteral("MB/s"),
        QStringLiteral("unix socket"), median(unixMBps), QStringLiteral(">= 0.5x")});
    return 0;
}

void printRows(QTextStream &out, const QList<Row> &rows, int rounds)
{
    out << "\nAirlock benchmarks (" << rounds << " rounds, medians; " << QSysInfo::prettyProductName() << ", "
        << QThread::idealThreadCount() << " cores)\n\n";
    out << QStringLiteral("%1 %2 %3 %4 %5\n")
               .arg(QStringLiteral("measurement"), -38)
               .arg(QStringLiteral("airlock"), 14)
               .arg(QStringLiteral("baseline"), 28)
               .arg(QStringLiteral("ratio"), 8)
               .arg(QStringLiteral("target"), 10);
    for (const Row &r : rows) {
        const QString value = QStringLiteral("%1 %2").arg(r.value, 0, 'f', r.value < 10 ? 2 : 0).arg(r.unit);
        const QString base = r.baselineWhat.isEmpty()
            ? QStringLiteral("-")
            : QStringLiteral("%1 %2 (%3)").arg(r.baseline, 0, 'f', r.baseline < 10 ? 2 : 0).arg(r.unit, r.baselineWhat);
        const QString ratio = r.baselineWhat.isEmpty() || r.baseline == 0
            ? QStringLiteral("-")
            : QStringLiteral("%1x").arg(r.value / r.baseline, 0, 'f', 2);
        out << QStringLiteral("%1 %2 %3 %4 %5\n")
                   .arg(r.what, -38)
                   .arg(value, 14)
                   .arg(base, 28)
                   .arg(ratio, 8)
                   .arg(r.target, 10);
    }
    out.flush();
}
} // namespace

// MCP: sandbox_exec of `true` through `airlockctl mcp` (a client writing JSON-RPC lines, one
// call at a time) vs the same command through `airlockctl exec`, in the same rounds.
int benchMcp(QList<Row> &rows, int rounds, bool quick)
{
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench --mcp: cannot start airlockd\n");
        return 1;
    }
    // The person's sandbox, shared with the session, where the agent may run anything.
    const CliResult created
        = daemon.ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("mcp-bench"),
                         QStringLiteral("--policy"), QStringLiteral("-")},
            "{\"commands\": {\"default\": \"allow\"}}");
    if (created.exitCode != 0) {
        std::fprintf(stderr, "airlock-bench --mcp: %s\n", qPrintable(created.describe()));
        return 1;
    }
    const QString ctl = binDir() + QStringLiteral("/airlockctl");
    QProcess server;
    server.setProcessEnvironment(daemon.environment());
    server.start(ctl,
        {QStringLiteral("--no-autostart"), QStringLiteral("mcp"), QStringLiteral("--sandbox"),
            QStringLiteral("mcp-bench")});
    qint64 id = 0;
    auto exchange = [&](const QByteArray &method, const QByteArray &params) {
        server.write("{\"jsonrpc\":\"2.0\",\"id\":" + QByteArray::number(++id) + ",\"method\":\"" + method
            + "\",\"params\":" + params + "}\n");
        QByteArray line;
        while (!line.endsWith('\n') && (server.waitForReadyRead(10000) || server.bytesAvailable()))
            line += server.readLine();
        return line;
    };
    if (!exchange("initialize",
            "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"airlock-bench\","
            "\"version\":\"1\"}}")
             .contains("\"result\"")) {
        std::fprintf(stderr, "airlock-bench --mcp: the server did not initialize\n");
        return 1;
    }
    auto overMcp = [&] {
        QElapsedTimer t;
        t.start();
        const QByteArray reply = exchange(
            "tools/call", "{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox\":\"mcp-bench\",\"argv\":[\"true\"]}}");
        if (!reply.contains("\"exit_code\":0"))
            std::fprintf(stderr, "airlock-bench --mcp: %s\n", reply.left(300).constData());
        return double(t.nsecsElapsed()) / 1e6;
    };
    const EnvironmentBlock envp(daemon.environment());
    const QStringList cliExec{ctl, QStringLiteral("--no-autostart"), QStringLiteral("exec"),
        QStringLiteral("mcp-bench"), QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("true")};
    auto overCli = [&] { return spawnMs(cliExec, envp.get()); };
    // What MCP adds: the same execution asked for directly on the daemon's socket.
    auto client = daemon.connect();
    ExecWaiter waiter(*client);
    auto overApi = [&] {
        QElapsedTimer t;
        t.start();
        auto r = client->call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), QStringLiteral("mcp-bench")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        return double(t.nsecsElapsed()) / 1e6;
    };
    repeat(10, overMcp);
    repeat(5, overCli);
    repeat(10, overApi);
    QList<double> mcp, cli, api;
    const int n = quick ? 20 : 50;
    for (int r = 0; r < rounds; ++r) {
        mcp.append(median(repeat(n, overMcp)));
        cli.append(median(repeat(n, overCli)));
        api.append(median(repeat(n, overApi)));
    }
    rows.append({QStringLiteral("sandbox_exec round trip over MCP (true)"), median(mcp), QStringLiteral("ms"),
        QStringLiteral("airlockctl exec"), median(cli), QStringLiteral("<= 1x")});
    rows.append({QStringLiteral("the same, beside the daemon's API"), median(mcp), QStringLiteral("ms"),
        QStringLiteral("exec.start on its socket"), median(api), QStringLiteral("<= 1.5x")});
    server.closeWriteChannel();
    server.waitForFinished(5000);
    return 0;
}

int benchExecCheck(QList<Row> &rows, int rounds, bool quick)
{
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench --exec-check: cannot start airlockd\n");
        return 1;
    }
    // No flags: `policy set` replaces the sandbox's layer, and limits set at creation cannot change.
    const QString sb = daemon.create({QStringLiteral("--name"), QStringLiteral("xb")});
    const auto judge = [&](bool on) {
        return daemon
                   .ctl({QStringLiteral("policy"), QStringLiteral("set"), sb, QStringLiteral("-")},
                       on ? QByteArray("{}") : QByteArray(R"({"commands": {"judgeExecs": false}})"))
                   .exitCode
            == 0;
    };
    const auto inside = [&](const QString &script) {
        return QStringList{binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
            QStringLiteral("exec"), sb, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("sh"),
            QStringLiteral("-c"), script};
    };
    const CliResult made = daemon.ctl(inside(
        QStringLiteral(
            "mkdir -p b && cd b && for i in $(seq 100); do echo \"int f$i(void) { return $i; }\" > f$i.c; done && "
            "printf 'all: $(patsubst %%.c,%%.o,$(wildcard *.c))\\n' > Makefile"))
                                          .mid(1));
    if (sb.isEmpty() || made.exitCode != 0 || !judge(true)) {
        std::fprintf(
            stderr, "airlock-bench --exec-check: cannot prepare the sandbox: %s\n", qPrintable(made.describe()));
        return 1;
    }
    const EnvironmentBlock envp(daemon.environment());
    const QStringList loop = inside(QStringLiteral("for i in $(seq 1000); do /bin/true; done"));
    const QStringList build = inside(QStringLiteral("cd b && rm -f *.o && make -s -j2"));
    const QStringList one = {binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
        QStringLiteral("exec"), sb, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("true")};
    QList<double> loopOn, loopOff, buildOn, buildOff, oneOn, oneOff;
    const int n = quick ? 10 : 20;
    for (int r = 0; r < rounds; ++r) {
        for (const bool on : {true, false}) {
            if (!judge(on))
                return 1;
            (on ? loopOn : loopOff).append(spawnMs(loop, envp.get()));
            (on ? buildOn : buildOff).append(spawnMs(build, envp.get()));
            (on ? oneOn : oneOff).append(median(repeat(n, [&] { return spawnMs(one, envp.get()); })));
        }
    }
    rows.append({QStringLiteral("airlockctl exec true, exec check on"), median(oneOn), QStringLiteral("ms"),
        QStringLiteral("check off"), median(oneOff), QString()});
    rows.append({QStringLiteral("1,000 fork+exec of /bin/true, check on"), median(loopOn), QStringLiteral("ms"),
        QStringLiteral("check off"), median(loopOff), QString()});
    rows.append({QStringLiteral("  added per exec"), (median(loopOn) - median(loopOff)) / 1000.0, QStringLiteral("ms"),
        QString(), 0, QStringLiteral("<= 0.3 ms")});
    rows.append({QStringLiteral("make -j2 of 100 C files, check on"), median(buildOn), QStringLiteral("ms"),
        QStringLiteral("check off"), median(buildOff), QStringLiteral("<= 1.15x")});
    return 0;
}

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    const bool quick = app.arguments().contains(QStringLiteral("--quick"));
    const int rounds = quick ? 3 : 5;
    QTextStream out(stdout);
    // The suites of their own: each measures one part beside its baseline.
    const std::pair<const char *, int (*)(QList<Row> &, int, bool)> suites[] = {
        {"--remote", benchRemote},
        {"--mcp", benchMcp},
        {"--exec-check", benchExecCheck},
        {"--cp", benchCp},
        {"--disk", benchDisk},
        {"--gvisor", benchGvisor},
        {"--scale", benchScale},
        {"--parallel", benchParallel},
        {"--broker", benchBroker},
        {"--agent", benchAgent},
        {"--cow", benchCow},
        {"--daytona", benchDaytona},
        {"--proxy", [](QList<Row> &rows, int rounds, bool quick) { return benchProxy(rows, rounds, quick), 0; }},
    };
    for (const auto &[flag, suite] : suites) {
        if (!app.arguments().contains(QLatin1String(flag)))
            continue;
        QList<Row> rows;
        if (int failed = suite(rows, rounds, quick))
            return failed;
        printRows(out, rows, rounds);
        return 0;
    }
    const QStringList bwrapBaseline = bareBwrapArgs();
    TestDaemon daemon;
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return 1;
    }
    auto client = daemon.connect();
    QList<Row> rows;
    auto progress = [&](const char *what) { std::fprintf(stderr, "  measuring %s...\n", what); };

    // 1. exec round trip at API level vs fork+exec of /bin/true.
    progress("exec round trip");
    const QString sb = daemon.create(
        {QStringLiteral("--name"), QStringLiteral("bench"), QStringLiteral("--output-limit"), QStringLiteral("4G")});
    ExecWaiter waiter(*client);
    auto apiExec = [&] {
        QElapsedTimer t;
        t.start();
        auto r = client->call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), sb}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        waiter.wait(uint32_t(r->value(QStringLiteral("exec")).toDouble()));
        return double(t.nsecsElapsed()) / 1e6;
    };
    repeat(20, apiExec); // warm-up
    QList<double> api, forkExec;
    for (int r = 0; r < rounds; ++r) {
        api.append(median(repeat(100, apiExec)));
        forkExec.append(median(repeat(100, [] { return spawnMs({QStringLiteral("/bin/true")}); })));
    }
    rows.append({QStringLiteral("exec round trip, API (true)"), median(api), QStringLiteral("ms"),
        QStringLiteral("fork+exec /bin/true"), median(forkExec), QStringLiteral("<= 3x")});

    // 2. airlockctl exec as a whole process vs a bare bwrap run.
    progress("airlockctl exec");
    const EnvironmentBlock envp(daemon.environment());
    const QStringList ctlExec = {binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
        QStringLiteral("exec"), sb, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("true")};
    QList<double> ctl, bw;
    for (int r = 0; r < rounds; ++r) {
        ctl.append(median(repeat(15, [&] { return spawnMs(ctlExec, envp.get()); })));
        bw.append(median(repeat(15, [&] { return spawnMs(bwrapBaseline); })));
    }
    const double bwrapMs = median(bw);
    rows.append({QStringLiteral("airlockctl exec SB -- true"), median(ctl), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("<= 3x")});

    // 2b. The one-shot: a client's own start, and run (one request: a sandbox made for the
    // command, which goes with it) as a whole process. The daemon makes the next one ahead once
    // one has ended: a run a moment after the last takes it (here 300 ms, not timed); back to
    // back, the next waits for the rest of its start.
    progress("client start and run -- true");
    const QStringList ctlRun = {binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"),
        QStringLiteral("run"), QStringLiteral("--"), QStringLiteral("true")};
    QList<double> starts, qtStarts, bare, runs, backToBack;
    for (int r = 0; r < rounds; ++r) {
        starts.append(median(repeat(30, [&] {
            return spawnMs({binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--version")});
        })));
        qtStarts.append(median(repeat(30, [&] { return spawnMs({binDir() + QStringLiteral("/airlock-qt-start")}); })));
        bare.append(median(repeat(30, [] { return spawnMs({QStringLiteral("/bin/true")}); })));
        runs.append(median(repeat(10, [&] {
            QThread::msleep(300);
            return spawnMs(ctlRun, envp.get());
        })));
        backToBack.append(median(repeat(10, [&] { return spawnMs(ctlRun, envp.get()); })));
    }
    rows.append({QStringLiteral("client start (airlockctl --version)"), median(starts), QStringLiteral("ms"),
        QStringLiteral("fork+exec /bin/true"), median(bare), QStringLiteral("<= 3 ms")});
    rows.append({QStringLiteral("client start (airlockctl --version)"), median(starts), QStringLiteral("ms"),
        QStringLiteral("a QtCore program's start"), median(qtStarts), QStringLiteral("-")});
    rows.append({QStringLiteral("airlockctl run -- true"), median(runs), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("<= 3x")});
    rows.append({QStringLiteral("airlockctl run -- true, back to back"), median(backToBack), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("-")});

    // 3. create until the first exec is possible, and delete.
    progress("create and delete");
    QList<double> creates, deletes, plainCreates;
    const QJsonObject noDisk{{QStringLiteral("limits"), QJsonObject{{QStringLiteral("diskBytes"), 0}}}};
    for (int i = 0; i < rounds * 4; ++i) {
        QElapsedTimer t;
        t.start();
        auto c = client->call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{}}});
        creates.append(double(t.nsecsElapsed()) / 1e6);
        t.restart();
        (void)client->call(
            QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), c->value(QStringLiteral("id")).toString()}});
        deletes.append(double(t.nsecsElapsed()) / 1e6);
        // The same without a workspace image (--disk none), in the same rounds.
        t.restart();
        auto p = client->call(QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), noDisk}});
        plainCreates.append(double(t.nsecsElapsed()) / 1e6);
        (void)client->call(
            QStringLiteral("sandbox.delete"), {{QStringLiteral("sandbox"), p->value(QStringLiteral("id")).toString()}});
    }
    rows.append({QStringLiteral("create until first exec"), median(creates), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("<= 5x")});
    rows.append({QStringLiteral("create until first exec, --disk none"), median(plainCreates), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("-")});
    rows.append({QStringLiteral("delete (whole tree gone)"), median(deletes), QStringLiteral("ms"),
        QStringLiteral("bare bwrap true"), bwrapMs, QStringLiteral("-")});

    // 4. streaming 2 GiB out of a sandbox to a discarding client.
    progress("output streaming (2 GiB per round)");
    const qint64 bytes = 2ll << 30;
    QList<double> stream, pipe;
    for (int r = 0; r < (quick ? 1 : 5); ++r) {
        const double ms = spawnMs(
            {binDir() + QStringLiteral("/airlockctl"), QStringLiteral("--no-autostart"), QStringLiteral("exec"), sb,
                QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("head"), QStringLiteral("-c"),
                QString::number(bytes), QStringLiteral("/dev/zero")},
            envp.get());
        stream.append(double(bytes) / (ms / 1000.0) / 1e6);
        const double base = spawnMs({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
            QStringLiteral("head -c %1 /dev/zero | cat >/dev/null").arg(bytes)});
        pipe.append(double(bytes) / (base / 1000.0) / 1e6);
    }
    rows.append({QStringLiteral("stream 2G, history on"), median(stream), QStringLiteral("MB/s"),
        QStringLiteral("head | cat"), median(pipe), QStringLiteral(">= 0.3x")});

    // 5. 200 live sandboxes: creation rate (8 requests in flight), daemon RSS, memory per sandbox.
    progress("200 live sandboxes");
    const int count = 200;
    const qint64 rssBefore = rssKb(daemon.pid(), "VmRSS:");
    QElapsedTimer t;
    t.start();
    int started = 0, done = 0, failed = 0;
    QEventLoop loop;
    std::function<void()> launch = [&] {
        while (started < count && started - done < 8) {
            ++started;
            client->callAsync(
                QStringLiteral("sandbox.create"), {{QStringLiteral("spec"), QJsonObject{}}}, [&](Result<QJsonValue> r) {
                    ++done;
                    failed += r ? 0 : 1;
                    if (done == count)
                        loop.quit();
                    else
                        launch();
                });
        }
    };
    launch();
    loop.exec();
    const double rate = count / (double(t.nsecsElapsed()) / 1e9);
    const qint64 daemonRss = rssKb(daemon.pid(), "VmRSS:");
    qint64 pss = 0;
    int procs = 0;
    for (qint64 pid : pidsWithCommandLine("/.airlock/guest --fd") + pidsWithCommandLine("--unshare-cgroup")) {
        pss += rssKb(pid, "Pss:");
        ++procs;
    }
    // The same number of bare bwrap runs, 8 at a time: what this kernel allows at most.
    const double bwrapRate = bareBwrapRate(count, 8);
    rows.append({QStringLiteral("create rate, 200 sandboxes"), rate, QStringLiteral("/s"),
        QStringLiteral("bare bwrap, 8 parallel"), bwrapRate, QStringLiteral(">= 50/s")});
    rows.append({QStringLiteral("daemon RSS with 200 sandboxes"), daemonRss / 1024.0, QStringLiteral("MiB"),
        QStringLiteral("idle daemon"), rssBefore / 1024.0, QStringLiteral("<= 200 MiB")});
    rows.append({QStringLiteral("memory per sandbox (PSS bwrap+guest)"), pss / 1024.0 / count, QStringLiteral("MiB"),
        {}, 0, QStringLiteral("-")});
    if (failed)
        std::fprintf(stderr, "  %d creations failed\n", failed);
    Q_UNUSED(procs)

    daemon.stop();
    // 6. the egress proxy (its own daemon, with a resolve table).
    progress("egress proxy");
    benchProxy(rows, rounds, quick);
    printRows(out, rows, rounds);
    return 0;
}
