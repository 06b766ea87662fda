// SPDX-License-Identifier: Apache-2.0
// tool: the host tools a sandbox may call (what its policy says about each), and calling one the
// way a sandbox's process would: validated, decided, perhaps asked, recorded.
#include "HistoryFormat.h"
#include "SandboxCommands.h"
#include "Table.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

namespace airlock::cli {

class ToolCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("tool"); }
    QString summary() const override
    {
        return QStringLiteral(
            "List the host tools a sandbox may call, or call one (ls SANDBOX | call SANDBOX NAME [JSON|-]).");
    }
    QString usage() const override { return QStringLiteral("ls SANDBOX | call SANDBOX NAME [JSON|-]"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        QStringList p = positional;
        p.removeAll(QStringLiteral("--"));
        if (p.value(0) == QLatin1String("ls") && p.size() == 2)
            return list(ctx, p.at(1));
        if (p.value(0) == QLatin1String("call") && (p.size() == 3 || p.size() == 4))
            return call(ctx, p.at(1), p.at(2), p.value(3, QStringLiteral("{}")));
        return fail(ctx, badUsage(QStringLiteral("usage: airlockctl tool %1").arg(usage())));
    }

private:
    int list(Context &ctx, const QString &sandbox)
    {
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto r = DaemonApi(**client).listTools(sandbox).wait();
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json) {
            printJson(ctx, *r);
            return ExitOk;
        }
        Table table({QStringLiteral("TOOL"), QStringLiteral("DECISION"), QStringLiteral("CONSTRAINTS"),
            QStringLiteral("DESCRIPTION")});
        for (const QJsonValue &v : r->value(QStringLiteral("tools")).toArray()) {
            const QJsonObject t = v.toObject();
            QStringList constraints;
            const QJsonObject c = t.value(QStringLiteral("constraints")).toObject();
            for (auto it = c.begin(); it != c.end(); ++it)
                constraints.append(it.key() + QLatin1Char('=') + it.value().toString());
            table.add({t.value(QStringLiteral("name")).toString(), t.value(QStringLiteral("decision")).toString(),
                constraints.isEmpty() ? QStringLiteral("-") : format::escaped(constraints.join(QLatin1Char(' '))),
                format::escaped(t.value(QStringLiteral("description")).toString(), 70)});
        }
        table.print(ctx.out);
        return ExitOk;
    }

    int call(Context &ctx, const QString &sandbox, const QString &tool, const QString &json)
    {
        QByteArray text = json.toUtf8();
        if (json == QLatin1String("-")) {
            auto read = readStdin(1024 * 1024, QStringLiteral("the arguments on stdin"));
            if (!read)
                return fail(ctx, read.error());
            text = *read;
        }
        QJsonParseError err{};
        const QJsonDocument doc = QJsonDocument::fromJson(text, &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject())
            return fail(ctx,
                badUsage(QStringLiteral("the arguments must be a JSON object, like '{\"path\": \"/tmp\"}' (%1)")
                             .arg(err.error != QJsonParseError::NoError ? err.errorString()
                                                                        : QStringLiteral("not an object"))));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        // A call that asks waits for a person: as long as the daemon's approval timeout.
        auto r = DaemonApi(**client).callTool(sandbox, tool, doc.object()).wait(24 * 3600 * 1000);
        if (!r)
            return fail(ctx, r.error());
        printJson(ctx, *r);
        // A command tool's own failure is the caller's to see, like exec's exit code.
        const QJsonValue code = r->value(QStringLiteral("exitCode"));
        return code.isDouble() && code.toInt() != 0 ? ExitFailure : ExitOk;
    }
};

void addToolCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ToolCommand>());
}

} // namespace airlock::cli
