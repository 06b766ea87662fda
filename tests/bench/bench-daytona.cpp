// SPDX-License-Identifier: Apache-2.0
// airlock-bench --daytona: the official Daytona SDK against airlockd --daytona-api beside its
// baselines, measured by tests/daytona/bench.mjs in the same Node process and the same rounds: a
// command's round trip (executeCommand('true') vs sandbox_exec of the same command through
// `airlockctl mcp`) and a sandbox made to its first command done (create + executeCommand vs
// `airlockctl create` + `airlockctl exec`). The person's rules let `true` run.
#include "BenchSupport.h"
#include "TestDaemon.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cstdio>

namespace airlock::bench {

using test::TestDaemon;

int benchDaytona(QList<Row> &rows, int rounds, bool /*quick*/)
{
    const QString dir = QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/daytona");
    if (!QFileInfo::exists(dir + QStringLiteral("/node_modules/@daytonaio/sdk/package.json"))
        || !QFileInfo::exists(QStringLiteral(AIRLOCK_SOURCE_DIR "/tests/mcp/node_modules/@modelcontextprotocol/sdk"))) {
        std::fprintf(stderr, "airlock-bench: npm ci --prefix tests/daytona and --prefix tests/mcp first\n");
        return 1;
    }
    const quint16 port = test::freeLoopbackPort();
    TestDaemon daemon({QStringLiteral("--daytona-api"), QStringLiteral("127.0.0.1:%1").arg(port)});
    QDir().mkpath(daemon.configDir());
    QFile policy(daemon.configDir() + QStringLiteral("/policy.json"));
    if (!policy.open(QIODevice::WriteOnly)
        || policy.write(R"({"version": 1, "commands": {"default": "ask", "rules": [
            {"decision": "allow", "command": "sh"}, {"decision": "allow", "command": "true"}]}})")
            <= 0)
        return 1;
    policy.close();
    if (!daemon.start()) {
        std::fprintf(stderr, "airlock-bench: cannot start airlockd\n");
        return 1;
    }
    QProcess token;
    token.setProcessEnvironment(daemon.environment());
    token.start(test::binDir() + QStringLiteral("/airlockd"),
        {QStringLiteral("token"), QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("bench")});
    token.waitForFinished(10000);
    const QString key = QString::fromLatin1(token.readAllStandardOutput()).trimmed().section(QLatin1Char('\n'), -1);
    QProcess node;
    QProcessEnvironment env = daemon.environment();
    env.insert(QStringLiteral("DAYTONA_API_URL"), QStringLiteral("http://127.0.0.1:%1/api").arg(port));
    env.insert(QStringLiteral("DAYTONA_API_KEY"), key);
    env.insert(QStringLiteral("AIRLOCKCTL"), test::binDir() + QStringLiteral("/airlockctl"));
    node.setProcessEnvironment(env);
    node.setWorkingDirectory(dir);
    node.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    node.start(QStringLiteral("node"), {dir + QStringLiteral("/bench.mjs"), QString::number(rounds)});
    if (!node.waitForFinished(900000) || node.exitCode() != 0) {
        std::fprintf(
            stderr, "airlock-bench --daytona: bench.mjs failed: %s\n", node.readAllStandardOutput().constData());
        return 1;
    }
    const QJsonObject r = QJsonDocument::fromJson(node.readAllStandardOutput().trimmed()).object();
    rows.append(
        {QStringLiteral("SDK executeCommand('true') round trip"), r.value(QStringLiteral("execSdkMs")).toDouble(),
            QStringLiteral("ms"), QStringLiteral("sandbox_exec via airlockctl mcp"),
            r.value(QStringLiteral("execMcpMs")).toDouble(), QStringLiteral("<= 1.5x")});
    rows.append({QStringLiteral("SDK create to first command done"), r.value(QStringLiteral("firstSdkMs")).toDouble(),
        QStringLiteral("ms"), QStringLiteral("airlockctl create + exec"),
        r.value(QStringLiteral("firstCliMs")).toDouble(), QStringLiteral("<= 1.5x")});
    return 0;
}

} // namespace airlock::bench
