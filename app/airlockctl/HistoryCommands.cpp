// SPDX-License-Identifier: Apache-2.0
// history: what ran, newest first, from the daemon's SQLite history.
#include "SandboxCommands.h"
#include "Table.h"
#include "model/Units.h"

#include <QDateTime>
#include <QJsonArray>

namespace airlock::cli {

class HistoryCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("history"); }
    QString summary() const override { return QStringLiteral("List past and running executions, newest first."); }
    QString usage() const override { return QStringLiteral("[--sandbox S] [--status STATUS] [--limit N]"); }
    QList<QCommandLineOption> options() const override { return {m_sandbox, m_status, m_limit}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("history takes no arguments; use --sandbox")));
        static const QStringList statuses = {QStringLiteral("running"), QStringLiteral("succeeded"), QStringLiteral("failed"),
                                             QStringLiteral("killed"), QStringLiteral("timed_out"), QStringLiteral("interrupted")};
        const QString status = parser.value(m_status);
        if (!status.isEmpty() && !statuses.contains(status))
            return fail(ctx, makeError(ErrorCode::InvalidArgument,
                                       QStringLiteral("--status: expected one of %1").arg(statuses.join(QStringLiteral(", ")))));
        int limit = 50;
        if (parser.isSet(m_limit)) {
            bool ok = false;
            limit = parser.value(m_limit).toInt(&ok);
            if (!ok || limit < 1 || limit > 10000)
                return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("--limit: expected 1..10000")));
        }
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto listed = (*client)->call(QStringLiteral("history.list"), {{QStringLiteral("sandbox"), parser.value(m_sandbox)},
                                                                       {QStringLiteral("status"), status},
                                                                       {QStringLiteral("limit"), limit}});
        if (!listed)
            return fail(ctx, listed.error());
        const QJsonArray rows = listed->value(QStringLiteral("executions")).toArray();
        if (ctx.json) {
            printJson(ctx, rows);
            return ExitOk;
        }
        Table table({QStringLiteral("STARTED"), QStringLiteral("SANDBOX"), QStringLiteral("EXEC"), QStringLiteral("STATUS"),
                     QStringLiteral("CODE"), QStringLiteral("DURATION"), QStringLiteral("COMMAND")});
        for (const QJsonValue &v : rows) {
            const QJsonObject e = v.toObject();
            const qint64 started = qint64(e.value(QStringLiteral("startedMs")).toDouble());
            const QJsonValue ended = e.value(QStringLiteral("endedMs"));
            QStringList argv;
            for (const QJsonValue &a : e.value(QStringLiteral("argv")).toArray())
                argv.append(a.toString());
            QString command = argv.join(QLatin1Char(' ')).simplified();
            if (command.size() > 60)
                command = command.left(59) + QChar(0x2026);
            const QJsonValue sig = e.value(QStringLiteral("signal"));
            table.add({QDateTime::fromMSecsSinceEpoch(started).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                       e.value(QStringLiteral("sandboxName")).toString(), QString::number(e.value(QStringLiteral("exec")).toInt()),
                       e.value(QStringLiteral("status")).toString(),
                       sig.isDouble() ? QStringLiteral("SIG%1").arg(sig.toInt())
                                      : e.value(QStringLiteral("exitCode")).isDouble() ? QString::number(e.value(QStringLiteral("exitCode")).toInt())
                                                                                       : QStringLiteral("-"),
                       ended.isDouble() ? units::formatDurationMs(uint64_t(std::max<qint64>(0, qint64(ended.toDouble()) - started)))
                                        : QStringLiteral("-"),
                       command});
        }
        table.print(ctx.out);
        return ExitOk;
    }

private:
    QCommandLineOption m_sandbox{QStringLiteral("sandbox"), QStringLiteral("Only this sandbox (name or id)."), QStringLiteral("S")};
    QCommandLineOption m_status{QStringLiteral("status"), QStringLiteral("Only executions with this status."), QStringLiteral("status")};
    QCommandLineOption m_limit{QStringLiteral("limit"), QStringLiteral("At most this many (default 50)."), QStringLiteral("n")};
};

void addHistoryCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<HistoryCommand>());
}

} // namespace airlock::cli
