// SPDX-License-Identifier: Apache-2.0
// airlock-bench --agent: the real Claude Code (tests/agents) started by `airlockctl agent run`
// (a sandbox made for it, its key brokered, its package mounted) until its first request reaches
// the model stub, beside the same CLI started on this machine against the same stub, its key in
// its environment, in the same rounds. The stub's own clock stamps the request (the same clock as
// this process's).
#include "BenchSupport.h"
#include "StubHttps.h"
#include "TestDaemon.h"

#include <QDateTime>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>

#include <cstdio>

namespace airlock::bench {

using test::CliResult;
using test::StubHttps;
using test::TestDaemon;

namespace {
const QString kClaude = QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/agents/node_modules/.bin/claude");
const QStringList kEnv = {QStringLiteral("IS_SANDBOX=1"), QStringLiteral("DISABLE_AUTOUPDATER=1"),
    QStringLiteral("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")};

// Milliseconds from `startMs` to the first request the stub got after `before` requests.
double toFirstRequest(StubHttps &stub, qsizetype before, qint64 startMs)
{
    stub.next(before);
    const QList<QJsonObject> all = stub.requests();
    return all.size() > before ? double(all.at(before).value(QStringLiteral("time")).toInteger() - startMs) : -1.0;
}
} // namespace

int benchAgent(QList<Row> &rows, int rounds, bool /*quick*/)
{
    if (!QFileInfo(kClaude).isExecutable()) {
        std::fprintf(stderr, "airlock-bench: npm ci --prefix tests/agents first (Claude Code for the tests)\n");
        return 1;
    }
    QTemporaryDir dir;
    QFile script(dir.filePath(QStringLiteral("script.json")));
    if (!script.open(QIODevice::WriteOnly) || script.write(R"({"steps": [], "final": "ok"})") <= 0)
        return 1;
    script.close();
    StubHttps stub;
    if (!stub.start({QStringLiteral("api.anthropic.com")}, script.fileName())) {
        std::fprintf(stderr, "airlock-bench: %s\n", qPrintable(stub.error()));
        return 1;
    }
    TestDaemon daemon({QStringLiteral("--secret-store"), QStringLiteral("file"), QStringLiteral("--resolve"),
        QStringLiteral("api.anthropic.com=") + stub.address(), QStringLiteral("--upstream-ca"), stub.authorityPath()});
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return 1;
    }
    daemon.ctl({QStringLiteral("secret"), QStringLiteral("set"), QStringLiteral("anthropic-api-key")},
        "sk-bench-0123456789\n");
    QList<double> host, sandboxed;
    for (int r = 0; r < rounds; ++r) {
        // On this machine: its own home, the stub by its address, the test authority trusted.
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &kv : kEnv)
            env.insert(kv.section(QLatin1Char('='), 0, 0), kv.section(QLatin1Char('='), 1));
        env.insert(QStringLiteral("HOME"), dir.path());
        env.insert(QStringLiteral("ANTHROPIC_API_KEY"), QStringLiteral("sk-bench-0123456789"));
        env.insert(QStringLiteral("ANTHROPIC_BASE_URL"), QStringLiteral("https://") + stub.address());
        env.insert(QStringLiteral("NODE_EXTRA_CA_CERTS"), stub.authorityPath());
        p.setProcessEnvironment(env);
        p.setStandardInputFile(QProcess::nullDevice()); // -p reads its input first: nothing
        if (qEnvironmentVariableIsSet("AIRLOCK_BENCH_DEBUG"))
            std::fprintf(stderr, "%s\n", qPrintable(env.toStringList().join(QLatin1Char('\n'))));
        qsizetype before = stub.requests().size();
        qint64 start = QDateTime::currentMSecsSinceEpoch();
        p.start(
            kClaude, {QStringLiteral("--dangerously-skip-permissions"), QStringLiteral("-p"), QStringLiteral("hi")});
        host.append(toFirstRequest(stub, before, start));
        if (!p.waitForFinished(60000))
            p.kill();
        // The same under agent run.
        before = stub.requests().size();
        start = QDateTime::currentMSecsSinceEpoch();
        const CliResult ran = daemon.ctl(
            {QStringLiteral("agent"), QStringLiteral("run"), QStringLiteral("claude"), QStringLiteral("--program"),
                kClaude, QStringLiteral("--"), QStringLiteral("-p"), QStringLiteral("hi")},
            {}, 60000);
        sandboxed.append(toFirstRequest(stub, before, start));
        if (ran.exitCode != 0 || p.exitCode() != 0 || host.last() < 0 || sandboxed.last() < 0) {
            std::fprintf(stderr, "airlock-bench: an agent round failed (%.0f ms, %.0f ms): %s\n%s%s\n", host.last(),
                sandboxed.last(), qPrintable(ran.describe()), p.readAllStandardOutput().constData(),
                p.readAllStandardError().constData());
            return 1;
        }
    }
    rows.append({QStringLiteral("agent run claude to its first request"), median(sandboxed), QStringLiteral("ms"),
        QStringLiteral("claude on this machine"), median(host), QStringLiteral("<= 1.5x")});
    daemon.stop();
    return 0;
}

} // namespace airlock::bench
