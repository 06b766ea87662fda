// SPDX-License-Identifier: Apache-2.0
// agent: a whole agent CLI (Claude Code, Codex, Gemini CLI, any command) in a sandbox made for it,
// its API key kept outside by the credential broker.
#include "AgentReview.h"
#include "ExecOptions.h"
#include "ExecSession.h"
#include "SandboxCommands.h"
#include "SpecOptions.h"
#include "Table.h"

#include "agents/AgentProfile.h"

#include <QFileInfo>
#include <QJsonArray>

#include <csignal>
#include <unistd.h>

namespace airlock::cli {

using agents::AgentProfile;

class AgentCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("agent"); }
    QString summary() const override
    {
        return QStringLiteral(
            "Run a whole agent CLI in a sandbox made for it: claude, codex, gemini (profiles shipped with Airlock) "
            "or any other command. The agent's API key stays outside: the sandbox holds a placeholder that the "
            "egress proxy replaces on the way to the agent's API. With --project DIR it edits a copy-on-write view "
            "of DIR: its changes wait in its sandbox for your review (changes, diff), then apply (all or some "
            "paths) or discard. ls lists the profiles, show NAME prints one.");
    }
    QString usage() const override
    {
        return QStringLiteral("ls | show NAME | run NAME [--project DIR [--project-mode rw]] [--program PATH] "
                              "[--preset P] [--allow HOST]... [create options] -- AGENT ARGS... | changes SANDBOX | "
                              "diff SANDBOX [PATH]... | apply SANDBOX [PATH]... [--overwrite] | discard SANDBOX");
    }
    QList<QCommandLineOption> options() const override
    {
        return QList<QCommandLineOption>{m_project, m_projectMode, m_program, m_profile, m_overwrite} + m_spec.list()
            + m_exec.list();
    }
    // run NAME AGENT ARGS...; the others take paths and options in any order.
    int positionalsBeforeCommand(const QString &sub) const override { return sub == QLatin1String("run") ? 2 : -1; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        QStringList args = positional;
        const QString sub = args.isEmpty() ? QString() : args.takeFirst();
        if (sub == QLatin1String("ls") && args.isEmpty())
            return list(ctx);
        if (sub == QLatin1String("show") && args.size() == 1) {
            auto profile = load(parser, args.first());
            if (!profile)
                return fail(ctx, profile.error());
            printJson(ctx, profile->toJson());
            return ExitOk;
        }
        if (sub == QLatin1String("run") && !args.isEmpty() && args.first() != QLatin1String("--"))
            return runAgent(ctx, parser, args.takeFirst(), args);
        static const QStringList reviews{
            QStringLiteral("changes"), QStringLiteral("diff"), QStringLiteral("apply"), QStringLiteral("discard")};
        if (reviews.contains(sub) && !args.isEmpty()) {
            const QString sandbox = args.takeFirst();
            if ((sub == QLatin1String("changes") || sub == QLatin1String("discard")) && !args.isEmpty())
                return fail(ctx, badUsage(QStringLiteral("usage: airlockctl agent %1 SANDBOX").arg(sub)));
            auto client = ctx.client();
            if (!client)
                return fail(ctx, client.error());
            const DaemonApi api(**client);
            AgentReview review(ctx, api);
            if (sub == QLatin1String("changes"))
                return review.list(sandbox);
            if (sub == QLatin1String("diff"))
                return review.diff(sandbox, args);
            if (sub == QLatin1String("apply"))
                return review.apply(sandbox, args, parser.isSet(m_overwrite));
            return review.discard(sandbox);
        }
        return fail(ctx, badUsage(QStringLiteral("usage: airlockctl agent %1").arg(usage())));
    }

private:
    // --profile FILE, else a shipped profile, else any command by its name or path.
    Result<AgentProfile> load(const QCommandLineParser &parser, const QString &name) const
    {
        if (parser.isSet(m_profile))
            return AgentProfile::fromFile(parser.value(m_profile));
        if (agents::builtinAgentNames().contains(name))
            return agents::builtinAgent(name);
        return AgentProfile::forCommand(name);
    }

    int list(Context &ctx) const
    {
        QJsonArray all;
        Table table({QStringLiteral("NAME"), QStringLiteral("AGENT"), QStringLiteral("API (KEY BROKERED)"),
            QStringLiteral("SECRET"), QStringLiteral("INSTALLED")});
        for (const QString &name : agents::builtinAgentNames()) {
            auto p = agents::builtinAgent(name);
            if (!p)
                return fail(ctx, p.error());
            auto program = agents::locateProgram(*p);
            QJsonObject o = p->toJson();
            o.insert(QStringLiteral("program"), program ? program->hostPath : QString());
            all.append(o);
            table.add({name, p->title, p->api.host, p->api.secret,
                program ? program->hostPath : QStringLiteral("no (") + p->install + QLatin1Char(')')});
        }
        if (ctx.json)
            printJson(ctx, QJsonObject{{QStringLiteral("agents"), all}});
        else
            table.print(ctx.out);
        return ExitOk;
    }

    // The agent's key in the daemon's store, or an error that says how to put it there.
    static Status checkSecret(const DaemonApi &api, const AgentProfile &p)
    {
        if (p.api.host.isEmpty())
            return Ok{};
        auto secrets = api.listSecrets().wait();
        if (!secrets)
            return secrets.error();
        for (const QJsonValue &s : secrets->value(QStringLiteral("secrets")).toArray())
            if (s.toObject().value(QStringLiteral("name")).toString() == p.api.secret)
                return Ok{};
        return makeError(ErrorCode::NotFound,
            QStringLiteral("%1 needs its API key as the secret '%2': airlockctl secret set %2 (for example "
                           "printenv %3 | airlockctl secret set %2). It stays outside the sandbox: the agent gets a "
                           "placeholder in %3, replaced on the way to %4")
                .arg(p.title, p.api.secret, p.api.env, p.api.host));
    }

    int runAgent(Context &ctx, const QCommandLineParser &parser, const QString &name, const QStringList &rest)
    {
        auto profile = load(parser, name);
        if (!profile)
            return fail(ctx, profile.error());
        auto program = agents::locateProgram(*profile, parser.value(m_program));
        if (!program)
            return fail(ctx, program.error());
        auto base = m_spec.read(parser);
        if (!base)
            return fail(ctx, base.error());
        agents::AgentRunOptions options;
        options.project = parser.value(m_project);
        const QString mode = parser.value(m_projectMode);
        if (parser.isSet(m_projectMode) && mode != QLatin1String("rw") && mode != QLatin1String("cow"))
            return fail(ctx, badUsage(QStringLiteral("--project-mode: expected cow or rw, not '%1'").arg(mode)));
        if (parser.isSet(m_projectMode) && options.project.isEmpty())
            return fail(ctx, badUsage(QStringLiteral("--project-mode goes with --project DIR")));
        options.projectWritable = mode == QLatin1String("rw");
        // The person's execution options (tty, timeout, env) shape the agent's command.
        QStringList command = rest;
        if (!command.isEmpty() && command.first() == QLatin1String("--"))
            command.removeFirst();
        auto exec = m_exec.read(parser, QStringList{QStringLiteral("--"), program->sandboxPath} + command);
        if (!exec)
            return fail(ctx, exec.error());
        options.args = command;
        auto planned = agents::planAgentRun(*profile, *program, options, *base);
        if (!planned)
            return fail(ctx, planned.error());
        ExecRequest request = planned->exec;
        request.tty = exec->tty || (::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO));
        request.timeoutMs = exec->timeoutMs;
        request.leaseMs = exec->leaseMs;
        for (const auto &kv : std::as_const(exec->env))
            request.env.append(kv);
        if (parser.isSet(QStringLiteral("cwd")))
            request.cwd = exec->cwd;

        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        // The program and the project are this machine's files: another host's daemon would mount
        // whatever its own paths hold.
        if (!ctx.connect.host.isEmpty())
            return fail(ctx,
                makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("agent run starts an agent installed on this machine, with this machine's "
                                   "project: it runs with this machine's airlockd, not %1")
                        .arg(ctx.connect.host)));
        const DaemonApi api(**client);
        if (Status s = checkSecret(api, *profile); !s)
            return fail(ctx, s.error());
        if (!ctx.json) {
            ctx.err << "airlockctl: " << profile->title << " in a sandbox";
            if (!profile->api.host.isEmpty())
                ctx.err << "; its key for " << profile->api.host << " stays outside";
            if (program->mount)
                ctx.err << "; its package " << program->mount->hostPath << " is at " << program->mount->sandboxPath
                        << " (read-only)";
            if (!planned->projectPath.isEmpty())
                ctx.err << "; the project " << QFileInfo(options.project).canonicalFilePath() << " is at "
                        << planned->projectPath
                        << (options.projectWritable ? " (read-write: its edits are direct)"
                                                    : " (copy-on-write: its edits wait for your review)");
            ctx.err << Qt::endl;
        }
        ExecSession session(**client, ctx.out, ctx.err, ctx.json);
        const bool stdinToo = m_exec.forwardStdin(parser) || request.tty;
        // Without a project to review, the sandbox ends with the agent.
        if (options.project.isEmpty() || options.projectWritable) {
            const auto start = [&](const ExecRequest &r) {
                return api.runOneShot(planned->sandbox, r).wait(ExecSession::kStartWaitMs);
            };
            const Result<int> ran = session.run(start, request, stdinToo, m_exec.raw(parser));
            return ran ? *ran : fail(ctx, ran.error());
        }
        // A project seen copy-on-write: the sandbox stays after the agent, holding its changes.
        auto made = api.createSandbox(planned->sandbox).wait();
        if (!made)
            return fail(ctx, made.error());
        const Result<int> ran = session.run(made->name, request, stdinToo, m_exec.raw(parser));
        // What the agent left running stops with it: what the person reviews stays what they apply.
        (void)api.killSandbox(made->name, SIGKILL).wait();
        AgentReview(ctx, api).summarize(made->name, profile->title);
        return ran ? *ran : fail(ctx, ran.error());
    }

    QCommandLineOption m_project{QStringLiteral("project"),
        QStringLiteral("The project directory the agent works on (its working directory in the sandbox)."),
        QStringLiteral("dir")};
    QCommandLineOption m_projectMode{QStringLiteral("project-mode"),
        QStringLiteral("cow (the default): the agent edits a copy-on-write view of the project and its changes wait "
                       "for your review (agent diff, apply, discard). rw: it writes to the project directly."),
        QStringLiteral("cow|rw")};
    QCommandLineOption m_program{QStringLiteral("program"),
        QStringLiteral("Where the agent's program is on this machine (default: its command on PATH); its package is "
                       "mounted read-only."),
        QStringLiteral("path")};
    QCommandLineOption m_profile{QStringLiteral("profile"),
        QStringLiteral("An agent profile of your own (JSON, as in resources/agents) instead of the shipped one."),
        QStringLiteral("file")};
    QCommandLineOption m_overwrite{QStringLiteral("overwrite"),
        QStringLiteral(
            "apply: the sandbox's version also over paths changed on this machine since the sandbox was made "
            "(refused without it, and nothing applied).")};
    SpecOptions m_spec;
    ExecOptions m_exec;
};

void addAgentCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<AgentCommand>());
}

} // namespace airlock::cli
