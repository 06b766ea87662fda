// SPDX-License-Identifier: Apache-2.0
#include "Cli.h"

#include "AppLogging.h"
#include "Command.h"
#include "Manual.h"
#include "SandboxCommands.h"
#include "client/HostTokens.h"
#include "client/Hosts.h"
#include "util/Version.h"

namespace airlock::cli {

std::vector<std::unique_ptr<Command>> allCommands()
{
    std::vector<std::unique_ptr<Command>> commands;
    addSandboxCommands(commands);
    addExecCommands(commands);
    addAgentCommands(commands);
    addFileCommands(commands);
    addHistoryCommands(commands);
    addPolicyCommands(commands);
    addSecretCommands(commands);
    addToolCommands(commands);
    addApprovalCommands(commands);
    addHostCommands(commands);
    addMcpCommands(commands);
    return commands;
}

int runAirlockctl(QStringList args, QTextStream &out, QTextStream &err)
{
    Context ctx{out, err, false, false, {}, {}, {}};
    ctx.connect.clientName = QStringLiteral("airlockctl/") + version();
    // The run this invocation's work belongs to (an agent session); without one, it is its own run.
    ctx.connect.run = qEnvironmentVariable("AIRLOCK_RUN");
    // Acting for an agent: its commands go through the command rules and, when they ask, a person.
    ctx.connect.agent = qEnvironmentVariable("AIRLOCK_AGENT");
    ctx.host = qEnvironmentVariable("AIRLOCK_HOST");
    // Global options come before the command.
    while (!args.isEmpty() && args.first().startsWith(QLatin1String("--"))) {
        const QString opt = args.takeFirst();
        if (opt == QLatin1String("--socket") && !args.isEmpty())
            ctx.connect.socketPath = args.takeFirst();
        else if (opt == QLatin1String("--run") && !args.isEmpty())
            ctx.connect.run = args.takeFirst();
        else if (opt == QLatin1String("--agent") && !args.isEmpty())
            ctx.connect.agent = args.takeFirst();
        else if (opt == QLatin1String("--host") && !args.isEmpty())
            ctx.host = args.takeFirst();
        else if (opt == QLatin1String("--no-autostart"))
            ctx.connect.autostart = false;
        else if (opt == QLatin1String("--json"))
            ctx.json = true;
        else if (opt == QLatin1String("--verbose"))
            ctx.verbose = true;
        else if (opt == QLatin1String("--version")) {
            out << "airlockctl " << version() << Qt::endl;
            return 0;
        } else if (opt == QLatin1String("--man")) { // the manual page, from the same tables as --help
            out << manualPage(allCommands());
            return 0;
        } else if (opt == QLatin1String("--completion") && !args.isEmpty()) {
            const QString script = completionScript(args.takeFirst(), allCommands());
            if (script.isEmpty()) {
                err << "airlockctl: --completion takes bash or zsh" << Qt::endl;
                return ExitUsage;
            }
            out << script;
            return 0;
        } else if (opt == QLatin1String("--help")) {
            args.prepend(QStringLiteral("help"));
            break;
        } else {
            err << "airlockctl: unknown option " << opt << " (see 'airlockctl --help')" << Qt::endl;
            return ExitUsage;
        }
    }
    const auto commands = allCommands();
    if (args.isEmpty() || args.first() == QLatin1String("help") || args.first() == QLatin1String("-h")) {
        printHelp(out, commands);
        return args.isEmpty() ? ExitUsage : ExitOk;
    }
    const auto command
        = std::find_if(commands.begin(), commands.end(), [&](const auto &c) { return c->name() == args.first(); });
    if (command == commands.end()) {
        err << "airlockctl: unknown command '" << args.first() << "' (see 'airlockctl --help')" << Qt::endl;
        return ExitUsage;
    }
    const bool verbose = ctx.verbose || args.contains(QStringLiteral("--verbose"));
    app::setupLogging({QStringLiteral("airlockctl"), verbose, true, true});

    DaemonClient client;
    ctx.client = [&]() -> Result<DaemonClient *> {
        if (client.isConnected())
            return &client;
        // Which daemon: --host or AIRLOCK_HOST, else the saved choice, else this machine's.
        if (ctx.connect.socketPath.isEmpty()) {
            auto hosts = HostRegistry::load();
            if (!hosts)
                return hosts.error();
            auto entry = hosts->resolve(ctx.host.isEmpty() ? hosts->current() : ctx.host);
            if (!entry)
                return entry.error();
            ctx.connect.host = entry->url;
            // A saved host's own token; AIRLOCK_TOKEN only for a URL given as such (never sent to
            // a host that has a token of its own).
            if (!entry->token.isEmpty()) {
                auto token = hosttokens::load(entry->name, entry->token);
                if (!token)
                    return token.error();
                ctx.connect.token = QString::fromLatin1(*token);
            }
        }
        if (Status s = client.connectToDaemon(ctx.connect); !s)
            return s.error();
        if (!client.startNotice().isEmpty()) // the daemon this started had something to say
            ctx.err << client.startNotice() << Qt::endl;
        // An upgrade installed a new airlockctl while the old daemon runs on (its sandboxes with
        // it): said, not refused; the protocol's own version was checked at the handshake.
        if (client.daemonVersion() != airlock::version() && ctx.connect.host.isEmpty())
            ctx.err << "airlockctl: airlockd is version " << client.daemonVersion() << ", this airlockctl "
                    << airlock::version()
                    << "; restart it to run the new one (systemctl --user restart airlockd): sandboxes go on"
                    << Qt::endl;
        return &client;
    };
    return (*command)->execute(ctx, args);
}

} // namespace airlock::cli
