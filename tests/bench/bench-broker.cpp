// SPDX-License-Identifier: Apache-2.0
// airlock-bench --broker: the credential broker (TLS ended in the egress proxy, the request
// rewritten, TLS made again to the host) beside a plain CONNECT tunnel to the same host, from the
// same sandbox, in the same rounds. The host is a real Node HTTPS server on loopback (StubHttps);
// the client is curl in the sandbox, each given only its authority's certificate (so that neither
// pays for reading a bundle). Figures are curl's own time_total (no process start).
#include "BenchSupport.h"
#include "StubHttps.h"
#include "TestDaemon.h"

#include <QFileInfo>

#include <cstdio>

namespace airlock::bench {

using test::CliResult;
using test::StubHttps;
using test::TestDaemon;

int benchBroker(QList<Row> &rows, int rounds, bool quick)
{
    StubHttps stub;
    if (!stub.start({QStringLiteral("api.broker.test"), QStringLiteral("plain.broker.test")})) {
        std::fprintf(stderr, "airlock-bench: %s\n", qPrintable(stub.error()));
        return 1;
    }
    TestDaemon daemon({QStringLiteral("--secret-store"), QStringLiteral("file"), QStringLiteral("--resolve"),
        QStringLiteral("api.broker.test=") + stub.address(), QStringLiteral("--resolve"),
        QStringLiteral("plain.broker.test=") + stub.address(), QStringLiteral("--upstream-ca"), stub.authorityPath()});
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return 1;
    }
    daemon.ctl({QStringLiteral("secret"), QStringLiteral("set"), QStringLiteral("KEY")}, "bench-secret-0123456789\n");
    // The sandbox's user reads the host's authority (the directory is the run's own, 0700).
    const QString upstreamDir = QFileInfo(stub.authorityPath()).absolutePath();
    QFile::setPermissions(upstreamDir,
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner | QFileDevice::ReadOther
            | QFileDevice::ExeOther);
    QFile::setPermissions(stub.authorityPath(), QFileDevice::ReadOwner | QFileDevice::ReadOther);
    const CliResult created = daemon.ctl(
        {QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("broker"), QStringLiteral("--mount"),
            upstreamDir + QStringLiteral(":/opt/upstream:ro"), QStringLiteral("--policy"), QStringLiteral("-")},
        R"({"network": {"mode": "allowlist", "allow": ["api.broker.test", "plain.broker.test"]},
            "credentials": {"grants": [{"secret": "KEY", "env": "KEY",
              "broker": {"host": "api.broker.test", "header": "x-api-key"}}]}})");
    if (created.exitCode != 0) {
        std::fprintf(stderr, "airlock-bench: %s\n", qPrintable(created.describe()));
        return 1;
    }
    const int n = qEnvironmentVariableIntValue("AIRLOCK_BENCH_N") ? qEnvironmentVariableIntValue("AIRLOCK_BENCH_N")
        : quick                                                   ? 15
                                                                  : 30;
    const QString bytes = QString::number(quick ? 64ll << 20 : 256ll << 20);
    // Per host: the median of n requests each on a new connection, of n on one kept-alive
    // connection (in seconds), and the download rate of one large answer (bytes/s).
    const QString script = QStringLiteral(
        "one() { ca=$1; shift; curl -sS -o /dev/null --cacert \"$ca\" -H \"x-api-key: $KEY\" -w '%{time_total}\\n' "
        "\"$@\"; }\n"
        "p50() { sort -n | sed -n \"$(( %1 / 2 + 1 ))p\"; }\n"
        "for h in api.broker.test:/.airlock/trust/authority.pem plain.broker.test:/opt/upstream/ca.pem; do\n"
        "  host=${h%%:*} ca=${h#*:}\n"
        "  fresh=$(for i in $(seq %1); do one \"$ca\" https://$host/small; done | p50)\n"
        "  urls=$(for i in $(seq %1); do printf -- '-o /dev/null https://%s/small ' $host; done)\n"
        "  kept=$(one \"$ca\" $urls | p50)\n"
        "  rate=$(curl -sS -o /dev/null --cacert \"$ca\" -w '%{speed_download}' https://$host/bytes/%2)\n"
        "  echo $fresh $kept $rate\n"
        "done\n")
                               .arg(n)
                               .arg(bytes);
    QList<double> brokeredFresh, plainFresh, brokeredKept, plainKept, brokeredRate, plainRate;
    for (int r = 0; r < rounds; ++r) {
        const CliResult run
            = daemon.ctl({QStringLiteral("exec"), QStringLiteral("broker"), QStringLiteral("-n"), QStringLiteral("--"),
                             QStringLiteral("bash"), QStringLiteral("-c"), script},
                {}, 600000);
        if (qEnvironmentVariableIsSet("AIRLOCK_BENCH_DEBUG"))
            std::fprintf(stderr, "%s\n", qPrintable(run.describe()));
        const QList<QByteArray> lines = run.out.trimmed().split('\n');
        if (run.exitCode != 0 || lines.size() != 2) {
            std::fprintf(stderr, "airlock-bench: the broker round failed: %s\n", qPrintable(run.describe()));
            return 1;
        }
        const QList<QByteArray> b = lines[0].split(' '), p = lines[1].split(' ');
        brokeredFresh.append(b.value(0).toDouble() * 1000);
        brokeredKept.append(b.value(1).toDouble() * 1000);
        brokeredRate.append(b.value(2).toDouble() / 1e6);
        plainFresh.append(p.value(0).toDouble() * 1000);
        plainKept.append(p.value(1).toDouble() * 1000);
        plainRate.append(p.value(2).toDouble() / 1e6);
    }
    rows.append({QStringLiteral("broker: new connection + small GET, p50"), median(brokeredFresh), QStringLiteral("ms"),
        QStringLiteral("plain CONNECT"), median(plainFresh), QStringLiteral("<= +2 ms")});
    rows.append({QStringLiteral("broker: kept-alive small GET, p50"), median(brokeredKept), QStringLiteral("ms"),
        QStringLiteral("plain CONNECT"), median(plainKept), QStringLiteral("<= +2 ms")});
    rows.append({QStringLiteral("broker: download throughput"), median(brokeredRate), QStringLiteral("MB/s"),
        QStringLiteral("plain CONNECT"), median(plainRate), QStringLiteral(">= 0.5x")});
    daemon.stop();
    return 0;
}

} // namespace airlock::bench
