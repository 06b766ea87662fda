// SPDX-License-Identifier: Apache-2.0
// hosts: the daemons this CLI can talk to, by name (add NAME URL, ls, rm NAME, use NAME|local).
// Kept in $XDG_CONFIG_HOME/airlock/hosts.json; no daemon is involved.
#include "SandboxCommands.h"
#include "client/Hosts.h"

#include <QJsonArray>
#include <QJsonObject>

namespace airlock::cli {

class HostsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("hosts"); }
    QString summary() const override { return QStringLiteral("Name the daemons to talk to: add NAME URL, ls, rm NAME, use NAME|local."); }
    QString usage() const override { return QStringLiteral("add NAME URL | ls | rm NAME | use NAME|local"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        auto hosts = HostRegistry::load();
        if (!hosts)
            return fail(ctx, hosts.error());
        const QString sub = positional.value(0);
        Status done = Ok{};
        if (sub == QLatin1String("ls") && positional.size() == 1)
            return list(ctx, *hosts);
        if (sub == QLatin1String("add") && positional.size() == 3)
            done = hosts->add(positional.at(1), positional.at(2));
        else if (sub == QLatin1String("rm") && positional.size() == 2)
            done = hosts->remove(positional.at(1));
        else if (sub == QLatin1String("use") && positional.size() == 2)
            done = hosts->use(positional.at(1));
        else
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("usage: airlockctl hosts ") + usage()));
        if (!done)
            return fail(ctx, done.error());
        if (Status saved = hosts->save(); !saved)
            return fail(ctx, saved.error());
        return ExitOk;
    }

private:
    int list(Context &ctx, const HostRegistry &hosts)
    {
        if (ctx.json) {
            QJsonArray out{QJsonObject{{QStringLiteral("name"), QStringLiteral("local")}, {QStringLiteral("url"), QString()},
                                       {QStringLiteral("current"), hosts.current().isEmpty()}}};
            for (const auto &e : hosts.entries())
                out.append(QJsonObject{{QStringLiteral("name"), e.name}, {QStringLiteral("url"), e.url}, {QStringLiteral("current"), e.name == hosts.current()}});
            printJson(ctx, QJsonObject{{QStringLiteral("hosts"), out}});
            return ExitOk;
        }
        ctx.out << (hosts.current().isEmpty() ? "* " : "  ") << "local  (this machine's daemon)" << Qt::endl;
        for (const auto &e : hosts.entries())
            ctx.out << (e.name == hosts.current() ? "* " : "  ") << e.name << "  " << e.url << Qt::endl;
        return ExitOk;
    }
};

void addHostCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<HostsCommand>());
}

} // namespace airlock::cli
