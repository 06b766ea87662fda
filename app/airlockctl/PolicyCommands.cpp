// SPDX-License-Identifier: Apache-2.0
// policy: presets, a sandbox's policy (its own layer or the effective one, with the layer every
// value came from), replacing it on a running sandbox, and what the policy would say about a command.
#include "HistoryFormat.h"
#include "SandboxCommands.h"
#include "SpecOptions.h"
#include "Table.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryFile>

namespace airlock::cli {

namespace {
// Every leaf of a document as (JSON pointer, compact value).
void flatten(const QJsonValue &v, const QString &pointer, QList<QPair<QString, QString>> &out)
{
    if (pointer.startsWith(QLatin1String("/commands/rules/")) && v.isObject()) {
        // A rule reads best whole: "deny rm -rf".
        const QJsonObject r = v.toObject();
        const QJsonValue words = r.value(QStringLiteral("command"));
        QStringList list;
        for (const QJsonValue &w : words.toArray())
            list.append(w.toString());
        out.append({pointer,
            r.value(QStringLiteral("decision")).toString() + QLatin1Char(' ')
                + (words.isString() ? words.toString() : list.join(QLatin1Char(' ')))});
    } else if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            flatten(it.value(), pointer + QLatin1Char('/') + it.key(), out);
    } else if (v.isArray() && !v.toArray().isEmpty()) {
        const QJsonArray a = v.toArray();
        for (qsizetype i = 0; i < a.size(); ++i)
            flatten(a.at(i), QStringLiteral("%1/%2").arg(pointer).arg(i), out);
    } else {
        const QString text = v.isString()
            ? v.toString()
            : QString::fromUtf8(QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
        out.append({pointer, text});
    }
}

// The layer a pointer's value came from: its own entry, or the nearest enclosing one.
QString layerOf(const QJsonObject &sources, QString pointer)
{
    while (!pointer.isEmpty()) {
        if (sources.contains(pointer))
            return sources.value(pointer).toString();
        pointer.truncate(pointer.lastIndexOf(QLatin1Char('/')));
    }
    return QStringLiteral("builtin");
}
} // namespace

class PolicyCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("policy"); }
    QString summary() const override { return QStringLiteral("Show, change or try a sandbox's policy; list presets."); }
    QString usage() const override
    {
        return QStringLiteral("presets | show SANDBOX [--effective] | set SANDBOX FILE|- | edit SANDBOX | check "
                              "SANDBOX (-- CMD... | --url URL | --tool NAME [JSON])");
    }
    QList<QCommandLineOption> options() const override { return {m_effective, m_url, m_tool}; }
    int positionalsBeforeCommand(const QString &) const override { return 2; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        const QString sub = positional.value(0);
        QStringList positionalArgs = positional;
        if (sub != QLatin1String("check"))
            positionalArgs.removeAll(QStringLiteral("--")); // FILE may be '-' (stdin)
        if (sub == QLatin1String("presets"))
            return presets(ctx);
        if (positionalArgs.size() < 2)
            return fail(ctx, badUsage(QStringLiteral("usage: airlockctl policy %1").arg(usage())));
        const QString sandbox = positionalArgs.at(1);
        if (sub == QLatin1String("show") && positionalArgs.size() == 2)
            return show(ctx, sandbox, parser.isSet(m_effective));
        if (sub == QLatin1String("set") && positionalArgs.size() == 3)
            return set(ctx, sandbox, positionalArgs.at(2));
        if (sub == QLatin1String("edit") && positionalArgs.size() == 2)
            return edit(ctx, sandbox);
        if (sub == QLatin1String("check") && parser.isSet(m_url))
            return check(ctx, sandbox, {{QStringLiteral("url"), parser.value(m_url)}});
        if (sub == QLatin1String("check") && parser.isSet(m_tool)) {
            QStringList rest = positionalArgs.mid(2);
            rest.removeAll(QStringLiteral("--"));
            QJsonParseError err{};
            const QJsonDocument arguments = QJsonDocument::fromJson(rest.value(0, QStringLiteral("{}")).toUtf8(), &err);
            if (err.error != QJsonParseError::NoError || !arguments.isObject() || rest.size() > 1)
                return fail(ctx,
                    badUsage(QStringLiteral("--tool NAME takes the call's arguments as one JSON object, e.g. '{\"to\": "
                                            "\"a@example.com\"}'")));
            return check(ctx, sandbox,
                {{QStringLiteral("tool"), parser.value(m_tool)}, {QStringLiteral("arguments"), arguments.object()}});
        }
        if (sub == QLatin1String("check")) {
            QStringList argv = positional.mid(2);
            if (!argv.isEmpty() && argv.first() == QLatin1String("--"))
                argv.removeFirst();
            if (argv.isEmpty())
                return fail(ctx,
                    badUsage(
                        QStringLiteral("policy check needs the command: airlockctl policy check SANDBOX -- CMD...")));
            return check(ctx, sandbox, {{QStringLiteral("argv"), QJsonArray::fromStringList(argv)}});
        }
        return fail(ctx, badUsage(QStringLiteral("usage: airlockctl policy %1").arg(usage())));
    }

private:
    // The answer to what `request` asks of the daemon (connecting first).
    Result<QJsonObject> ask(Context &ctx, const std::function<DaemonApi::Call<>(const DaemonApi &)> &request)
    {
        auto client = ctx.client();
        if (!client)
            return client.error();
        return request(DaemonApi(**client)).wait();
    }

    int presets(Context &ctx)
    {
        auto r = ask(ctx, [](const DaemonApi &api) { return api.policyPresets(); });
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json) {
            printJson(ctx, *r);
            return ExitOk;
        }
        Table table({QStringLiteral("PRESET"), QStringLiteral("NETWORK"), QStringLiteral("DESCRIPTION")});
        for (const QJsonValue &v : r->value(QStringLiteral("presets")).toArray()) {
            const QJsonObject p = v.toObject().value(QStringLiteral("policy")).toObject();
            const QString mode = p.value(QStringLiteral("network")).toObject().value(QStringLiteral("mode")).toString();
            table.add({v.toObject().value(QStringLiteral("name")).toString(),
                mode == QLatin1String("full") ? QStringLiteral("FULL (host network)") : mode,
                p.value(QStringLiteral("description")).toString()});
        }
        table.print(ctx.out);
        return ExitOk;
    }

    int show(Context &ctx, const QString &sandbox, bool effective)
    {
        auto r = ask(ctx, [&](const DaemonApi &api) { return api.policy(sandbox, effective); });
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json || !effective) {
            if (ctx.json)
                printJson(ctx, *r);
            else
                ctx.out << QString::fromUtf8(
                    QJsonDocument(r->value(QStringLiteral("policy")).toObject()).toJson(QJsonDocument::Indented));
            ctx.out.flush();
            return ExitOk;
        }
        QList<QPair<QString, QString>> leaves;
        flatten(r->value(QStringLiteral("policy")), QString(), leaves);
        const QJsonObject sources = r->value(QStringLiteral("sources")).toObject();
        Table table({QStringLiteral("SETTING"), QStringLiteral("VALUE"), QStringLiteral("FROM")});
        for (const auto &[pointer, value] : std::as_const(leaves)) {
            if (pointer == QLatin1String("/version"))
                continue;
            table.add({pointer, format::escaped(value, 80), layerOf(sources, pointer)});
        }
        ctx.out << "policy version " << r->value(QStringLiteral("version")).toInt() << " (preset "
                << r->value(QStringLiteral("preset")).toString() << ")\n";
        table.print(ctx.out);
        return ExitOk;
    }

    int set(Context &ctx, const QString &sandbox, const QString &file)
    {
        auto document = readPolicyFile(file);
        if (!document)
            return fail(ctx, document.error());
        auto r = ask(ctx, [&](const DaemonApi &api) { return api.setPolicy(sandbox, *document); });
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json)
            printJson(ctx, *r);
        else
            ctx.out << "policy of " << sandbox << " is now version " << r->value(QStringLiteral("version")).toInt()
                    << Qt::endl;
        return ExitOk;
    }

    int edit(Context &ctx, const QString &sandbox)
    {
        auto current = ask(ctx, [&](const DaemonApi &api) { return api.policy(sandbox); });
        if (!current)
            return fail(ctx, current.error());
        QTemporaryFile file(QDir::tempPath() + QStringLiteral("/airlock-policy-XXXXXX.json"));
        if (!file.open())
            return fail(ctx, makeError(ErrorCode::IoError, QStringLiteral("cannot create a temporary file")));
        const QByteArray before
            = QJsonDocument(current->value(QStringLiteral("policy")).toObject()).toJson(QJsonDocument::Indented);
        file.write(before);
        file.flush();
        const QString editor = qEnvironmentVariable("VISUAL", qEnvironmentVariable("EDITOR", QStringLiteral("vi")));
        // The editor is the user's own program on their own file: through their shell, like git does.
        if (QProcess::execute(QStringLiteral("/bin/sh"),
                {QStringLiteral("-c"), editor + QStringLiteral(" \"$1\""), QStringLiteral("sh"), file.fileName()})
            != 0)
            return fail(ctx,
                makeError(ErrorCode::IoError, QStringLiteral("the editor (%1) failed; nothing changed").arg(editor)));
        file.seek(0);
        if (file.readAll() == before) {
            ctx.err << "no change" << Qt::endl;
            return ExitOk;
        }
        return set(ctx, sandbox, file.fileName());
    }

    // A command, a URL or a tool call: one line with the decision and why.
    int check(Context &ctx, const QString &sandbox, const QJsonObject &question)
    {
        auto r = ask(ctx, [&](const DaemonApi &api) { return api.checkPolicy(sandbox, question); });
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json) {
            printJson(ctx, *r);
            return ExitOk;
        }
        ctx.out << r->value(QStringLiteral("decision")).toString() << ": "
                << format::escaped(r->value(QStringLiteral("reason")).toString()) << Qt::endl;
        return ExitOk;
    }

    QCommandLineOption m_tool{QStringLiteral("tool"),
        QStringLiteral("check: what the tool permissions say about a call (arguments as JSON)."),
        QStringLiteral("name")};
    QCommandLineOption m_url{QStringLiteral("url"), QStringLiteral("check: what the network rules say about this URL."),
        QStringLiteral("url")};
    QCommandLineOption m_effective{QStringLiteral("effective"),
        QStringLiteral("show: the policy in force, every value with the layer it came from.")};
};

void addPolicyCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<PolicyCommand>());
}

} // namespace airlock::cli
