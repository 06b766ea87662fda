// SPDX-License-Identifier: Apache-2.0
// hosts: the daemons this CLI can talk to, by name (add NAME URL, ls, rm NAME, use NAME|local).
// Kept in $XDG_CONFIG_HOME/airlock/hosts.json; no daemon is involved.
#include "SandboxCommands.h"
#include "client/HostTokens.h"
#include "client/Hosts.h"
#include "remote/TokenStore.h"

#include <QFile>

#include <QJsonArray>
#include <QJsonObject>

namespace airlock::cli {

class HostsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("hosts"); }
    QString summary() const override
    {
        return QStringLiteral("Name the daemons to talk to: add NAME URL, ls, rm NAME, use NAME|local.");
    }
    QString usage() const override
    {
        return QStringLiteral("add NAME URL [--token-file FILE] | ls | rm NAME | use NAME|local");
    }
    QList<QCommandLineOption> options() const override
    {
        return {QCommandLineOption(QStringLiteral("token-file"),
            QStringLiteral(
                "add: the token for a wss:// host, as 'airlockd token create' printed it ('-': stdin). Kept in "
                "the session keyring when one answers, else in a 0600 file."),
            QStringLiteral("file"))};
    }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        auto hosts = HostRegistry::load();
        if (!hosts)
            return fail(ctx, hosts.error());
        const QString sub = positional.value(0);
        Status done = Ok{};
        if (sub == QLatin1String("ls") && positional.size() == 1)
            return list(ctx, *hosts);
        if (sub == QLatin1String("add") && positional.size() == 3)
            done = add(ctx, *hosts, positional.at(1), positional.at(2), parser.value(QStringLiteral("token-file")));
        else if (sub == QLatin1String("rm") && positional.size() == 2)
            done = hosttokens::removeHost(*hosts, positional.at(1));
        else if (sub == QLatin1String("use") && positional.size() == 2)
            done = hosts->use(positional.at(1));
        else
            return fail(
                ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("usage: airlockctl hosts ") + usage()));
        if (!done)
            return fail(ctx, done.error());
        if (Status saved = hosts->save(); !saved)
            return fail(ctx, saved.error());
        return ExitOk;
    }

private:
    static Status add(
        Context &ctx, HostRegistry &hosts, const QString &name, const QString &url, const QString &tokenFile)
    {
        if (tokenFile.isEmpty())
            return hosts.add(name, url);
        // Checked before the token is read: nothing is stored for a host that is refused.
        if (Status checked = HostRegistry(hosts).add(name, url); !checked)
            return checked;
        QFile file;
        const bool opened = tokenFile == QLatin1String("-")
            ? file.open(stdin, QIODevice::ReadOnly)
            : (file.setFileName(tokenFile), file.open(QIODevice::ReadOnly));
        const QByteArray token = opened ? file.read(4096).trimmed() : QByteArray();
        if (!opened)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("--token-file %1: %2").arg(tokenFile, file.errorString()));
        if (!remote::isTokenShaped(token))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral(
                    "--token-file %1: not a token (expected one line, alk_…, as 'airlockd token create' printed it)")
                    .arg(tokenFile));
        QString fellBack;
        if (Status added = hosttokens::addHost(hosts, name, url, token, &fellBack); !added)
            return added;
        if (!fellBack.isEmpty())
            ctx.err << "airlockctl: " << hosttokens::fellBackNotice(name, fellBack) << Qt::endl;
        return Ok{};
    }

    int list(Context &ctx, const HostRegistry &hosts)
    {
        if (ctx.json) {
            QJsonArray out{QJsonObject{{QStringLiteral("name"), QStringLiteral("local")},
                {QStringLiteral("url"), QString()}, {QStringLiteral("current"), hosts.current().isEmpty()}}};
            for (const auto &e : hosts.entries())
                out.append(QJsonObject{{QStringLiteral("name"), e.name}, {QStringLiteral("url"), e.url},
                    {QStringLiteral("current"), e.name == hosts.current()}, {QStringLiteral("token"), e.token}});
            printJson(ctx, QJsonObject{{QStringLiteral("hosts"), out}});
            return ExitOk;
        }
        ctx.out << (hosts.current().isEmpty() ? "* " : "  ") << "local  (this machine's daemon)" << Qt::endl;
        for (const auto &e : hosts.entries())
            ctx.out << (e.name == hosts.current() ? "* " : "  ") << e.name << "  " << e.url
                    << (e.token.isEmpty() ? QString() : QStringLiteral("  (token in %1)").arg(e.token)) << Qt::endl;
        return ExitOk;
    }
};

void addHostCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<HostsCommand>());
}

} // namespace airlock::cli
