// SPDX-License-Identifier: Apache-2.0
// history, search, runs and prune: the daemon's SQLite history from the command line.
#include "HistoryFormat.h"
#include "ProgressLine.h"
#include "SandboxCommands.h"
#include "Table.h"
#include "model/Units.h"

#include <QJsonArray>

namespace airlock::cli {

namespace {
// The filters `history` and `search` share, read into history.list parameters.
class ExecutionFilters {
public:
    QList<QCommandLineOption> list() const
    {
        return {m_sandbox, m_run, m_agent, m_status, m_exitCode, m_since, m_until, m_limit, m_before};
    }
    Result<QJsonObject> read(const QCommandLineParser &parser) const
    {
        static const QStringList statuses
            = {QStringLiteral("running"), QStringLiteral("succeeded"), QStringLiteral("failed"),
                QStringLiteral("killed"), QStringLiteral("timed_out"), QStringLiteral("interrupted"),
                QStringLiteral("denied"), QStringLiteral("unanswered"), QStringLiteral("refused")};
        QJsonObject params;
        params.insert(QStringLiteral("sandbox"), parser.value(m_sandbox));
        params.insert(QStringLiteral("run"), parser.value(m_run));
        params.insert(QStringLiteral("agent"), parser.value(m_agent));
        const QString status = parser.value(m_status);
        if (!status.isEmpty() && !statuses.contains(status))
            return Command::badUsage(
                QStringLiteral("--status: expected one of %1").arg(statuses.join(QStringLiteral(", "))));
        params.insert(QStringLiteral("status"), status);
        for (const auto &[option, key, max] : {std::tuple{&m_exitCode, "exitCode", 255LL},
                 std::tuple{&m_limit, "limit", 10000LL}, std::tuple{&m_before, "before", 9'000'000'000'000'000LL}}) {
            if (!parser.isSet(*option))
                continue;
            bool ok = false;
            const qint64 v = parser.value(*option).toLongLong(&ok);
            if (!ok || v < 0 || v > max || (option == &m_limit && v == 0))
                return Command::badUsage(
                    QStringLiteral("--%1: expected a number up to %2").arg(option->names().constFirst()).arg(max));
            params.insert(QLatin1String(key), double(v));
        }
        for (const auto &[option, key] : {std::pair{&m_since, "sinceMs"}, std::pair{&m_until, "untilMs"}}) {
            if (!parser.isSet(*option))
                continue;
            auto t = format::parseTimePoint(parser.value(*option), QStringLiteral("--") + option->names().constFirst());
            if (!t)
                return t.error();
            params.insert(QLatin1String(key), double(*t));
        }
        return params;
    }

private:
    QCommandLineOption m_sandbox{
        QStringLiteral("sandbox"), QStringLiteral("Only this sandbox (name or id)."), QStringLiteral("S")};
    QCommandLineOption m_run{
        QStringLiteral("run"), QStringLiteral("Only this run (see 'airlockctl runs')."), QStringLiteral("name")};
    QCommandLineOption m_agent{QStringLiteral("agent"),
        QStringLiteral("Only commands this agent asked for (the AGENT column)."), QStringLiteral("name")};
    QCommandLineOption m_status{QStringLiteral("status"),
        QStringLiteral("Only this status: running, succeeded, failed, killed, timed_out, interrupted; denied "
                       "(by a rule or a person), unanswered (nobody decided in time) or refused (either)."),
        QStringLiteral("status")};
    QCommandLineOption m_exitCode{QStringLiteral("exit-code"),
        QStringLiteral("Only executions that exited with this code."), QStringLiteral("n")};
    QCommandLineOption m_since{QStringLiteral("since"),
        QStringLiteral("Started at or after: 30m, 2h, 7d ago or 2026-11-30[T14:05]."), QStringLiteral("time")};
    QCommandLineOption m_until{
        QStringLiteral("until"), QStringLiteral("Started before (same forms as --since)."), QStringLiteral("time")};
    QCommandLineOption m_limit{
        QStringLiteral("limit"), QStringLiteral("At most this many per page (default 50)."), QStringLiteral("n")};
    QCommandLineOption m_before{
        QStringLiteral("before"), QStringLiteral("The page older than this execution id."), QStringLiteral("id")};
};

// Lists one page of executions; shared by history and search.
int listExecutions(Context &ctx, const QJsonObject &params, const QString &command)
{
    auto client = ctx.client();
    if (!client)
        return Command::fail(ctx, client.error());
    auto listed = DaemonApi(**client).historyList(params).wait();
    if (!listed)
        return Command::fail(ctx, listed.error());
    if (ctx.json) {
        Command::printJson(ctx, *listed);
        return ExitOk;
    }
    const QJsonArray rows = listed->value(QStringLiteral("executions")).toArray();
    Table table({QStringLiteral("ID"), QStringLiteral("STARTED"), QStringLiteral("SANDBOX"), QStringLiteral("RUN"),
        QStringLiteral("AGENT"), QStringLiteral("STATUS"), QStringLiteral("CODE"), QStringLiteral("DURATION"),
        QStringLiteral("COMMAND")});
    for (const QJsonValue &v : rows) {
        const QJsonObject e = v.toObject();
        // A refused command never ran: it has no number in its sandbox.
        const QJsonValue exec = e.value(QStringLiteral("exec"));
        const QString sandbox = e.value(QStringLiteral("sandboxName")).toString();
        table.add({QString::number(qint64(e.value(QStringLiteral("id")).toDouble())),
            format::timestamp(qint64(e.value(QStringLiteral("startedMs")).toDouble())),
            exec.isDouble() ? QStringLiteral("%1:%2").arg(sandbox).arg(exec.toInt()) : sandbox,
            e.value(QStringLiteral("run")).toString(), format::escaped(e.value(QStringLiteral("agent")).toString(), 24),
            e.value(QStringLiteral("status")).toString(), format::exitText(e), format::duration(e),
            format::commandLine(e.value(QStringLiteral("argv")).toArray(), 60)});
    }
    if (rows.isEmpty())
        ctx.err << "no executions match" << Qt::endl;
    else
        table.print(ctx.out);
    if (const QJsonValue next = listed->value(QStringLiteral("next")); next.isDouble())
        ctx.err << "more: airlockctl " << command << " ... --before " << qint64(next.toDouble()) << Qt::endl;
    return ExitOk;
}
} // namespace

class HistoryCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("history"); }
    QString summary() const override
    {
        return QStringLiteral("List past and running executions, newest first, a page at a time.");
    }
    QString usage() const override
    {
        return QStringLiteral(
            "[--sandbox S] [--run NAME] [--agent A] [--status S] [--since T] [--until T] [--before ID]");
    }
    QList<QCommandLineOption> options() const override { return m_filters.list(); }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(ctx,
                badUsage(QStringLiteral("history takes no arguments; filter with --sandbox, --run, --status, ...")));
        auto params = m_filters.read(parser);
        return params ? listExecutions(ctx, *params, name()) : fail(ctx, params.error());
    }

private:
    ExecutionFilters m_filters;
};

class SearchCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("search"); }
    QString summary() const override
    {
        return QStringLiteral("Find executions whose command or output contains TEXT (a phrase).");
    }
    QString usage() const override { return QStringLiteral("TEXT [history filters]"); }
    QList<QCommandLineOption> options() const override { return m_filters.list(); }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        const QString text = positional.join(QLatin1Char(' ')).trimmed();
        if (text.isEmpty())
            return fail(ctx,
                badUsage(QStringLiteral("search needs the text to find, e.g. airlockctl search 'permission denied'")));
        auto params = m_filters.read(parser);
        if (!params)
            return fail(ctx, params.error());
        params->insert(QStringLiteral("text"), text);
        return listExecutions(ctx, *params, name());
    }

private:
    ExecutionFilters m_filters;
};

class RunsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("runs"); }
    QString summary() const override { return QStringLiteral("List runs (agent sessions), newest first."); }
    QString usage() const override { return QStringLiteral("[--limit N]"); }
    QList<QCommandLineOption> options() const override { return {m_limit}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(ctx, badUsage(QStringLiteral("runs takes no arguments")));
        bool ok = true;
        const int limit = parser.isSet(m_limit) ? parser.value(m_limit).toInt(&ok) : 50;
        if (!ok || limit < 1 || limit > 10000)
            return fail(ctx, badUsage(QStringLiteral("--limit: expected 1..10000")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto listed = DaemonApi(**client).historyRuns(limit).wait();
        if (!listed)
            return fail(ctx, listed.error());
        if (ctx.json) {
            printJson(ctx, *listed);
            return ExitOk;
        }
        Table table({QStringLiteral("RUN"), QStringLiteral("STARTED"), QStringLiteral("LAST ACTIVITY"),
            QStringLiteral("SANDBOXES"), QStringLiteral("EXECUTIONS")});
        for (const QJsonValue &v : listed->value(QStringLiteral("runs")).toArray()) {
            const QJsonObject r = v.toObject();
            table.add({format::commandLine({r.value(QStringLiteral("name"))}),
                format::timestamp(qint64(r.value(QStringLiteral("createdMs")).toDouble())),
                format::timestamp(qint64(r.value(QStringLiteral("lastMs")).toDouble())),
                QString::number(r.value(QStringLiteral("sandboxes")).toInt()),
                QString::number(r.value(QStringLiteral("executions")).toInt())});
        }
        table.print(ctx.out);
        return ExitOk;
    }

private:
    QCommandLineOption m_limit{
        QStringLiteral("limit"), QStringLiteral("At most this many (default 50)."), QStringLiteral("n")};
};

class PruneCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("prune"); }
    QString summary() const override
    {
        return QStringLiteral(
            "Drop stored output (oldest first; execution records stay), optionally vacuum the database.");
    }
    QString usage() const override { return QStringLiteral("[--keep SIZE] [--older-than AGE] [--vacuum]"); }
    QList<QCommandLineOption> options() const override { return {m_keep, m_olderThan, m_vacuum}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(ctx, badUsage(QStringLiteral("prune takes no arguments")));
        QJsonObject params{{QStringLiteral("vacuum"), parser.isSet(m_vacuum)}};
        if (parser.isSet(m_keep)) {
            const QString text = parser.value(m_keep);
            auto bytes = text == QLatin1String("0") ? Result<uint64_t>(0) : units::parseBytes(text);
            if (!bytes)
                return fail(ctx, badUsage(QStringLiteral("--keep: %1").arg(bytes.error().message)));
            params.insert(QStringLiteral("keepBytes"), double(*bytes));
        }
        if (parser.isSet(m_olderThan)) {
            auto t = format::parseTimePoint(parser.value(m_olderThan), QStringLiteral("--older-than"));
            if (!t)
                return fail(ctx, t.error());
            params.insert(QStringLiteral("endedBeforeMs"), double(*t));
        }
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        // Each phase is said on a terminal as it goes; a conversion (which holds new work for its
        // length, once) is said anywhere, since whoever waits meanwhile wants to know why.
        ProgressLine line;
        QString phase;
        const auto told = [&](const QJsonObject &step) {
            const QString now = step.value(QStringLiteral("phase")).toString();
            const bool changed = now != phase;
            phase = now;
            if (changed && now == QLatin1String("converting") && !ctx.json) {
                line.clear();
                ctx.err << "converting the history to incremental vacuum (once; new work waits until it is done)"
                        << Qt::endl;
            }
            line.update(now, qint64(step.value(QStringLiteral("done")).toDouble()),
                qint64(step.value(QStringLiteral("total")).toDouble()), changed);
        };
        auto pruned = DaemonApi(**client).pruneHistory(params).reporting(told).wait(3'600'000);
        line.clear();
        if (!pruned)
            return fail(ctx, pruned.error());
        if (ctx.json) {
            printJson(ctx, *pruned);
            return ExitOk;
        }
        ctx.out << "dropped the output of " << pruned->value(QStringLiteral("executions")).toInteger()
                << " executions ("
                << units::formatBytes(uint64_t(pruned->value(QStringLiteral("freedBytes")).toDouble())) << "); "
                << units::formatBytes(uint64_t(pruned->value(QStringLiteral("storedBytes")).toDouble()))
                << " of output stored, database "
                << units::formatBytes(uint64_t(pruned->value(QStringLiteral("fileBytes")).toDouble())) << Qt::endl;
        return ExitOk;
    }

private:
    QCommandLineOption m_keep{QStringLiteral("keep"),
        QStringLiteral("Keep at most this much output, e.g. 500M (default: the daemon's budget)."),
        QStringLiteral("size")};
    QCommandLineOption m_olderThan{QStringLiteral("older-than"),
        QStringLiteral("Drop the output of executions that ended before: 7d, 2026-11-01, ..."), QStringLiteral("age")};
    QCommandLineOption m_vacuum{QStringLiteral("vacuum"),
        QStringLiteral("Then give the freed space back to the filesystem (incremental: new work goes on meanwhile).")};
};

void addHistoryCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<HistoryCommand>());
    commands.push_back(std::make_unique<SearchCommand>());
    commands.push_back(std::make_unique<RunsCommand>());
    addShowCommand(commands);
    addExportCommand(commands);
    commands.push_back(std::make_unique<PruneCommand>());
}

} // namespace airlock::cli
