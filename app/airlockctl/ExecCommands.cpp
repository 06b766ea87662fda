// SPDX-License-Identifier: Apache-2.0
// exec and run: a command in a sandbox, attached to this terminal.
#include "ExecOptions.h"
#include "ExecSession.h"
#include "SandboxCommands.h"
#include "SpecOptions.h"

namespace airlock::cli {

class ExecCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("exec"); }
    QString summary() const override
    {
        return QStringLiteral(
            "Run a command in a sandbox with live output; exits with its exit code (128+N when killed by "
            "signal N). Ctrl-C interrupts it, a second Ctrl-C kills it; while it waits for a person, Ctrl-C or SIGTERM "
            "withdraws the request (exit 128+N).");
    }
    QString usage() const override
    {
        return QStringLiteral("SANDBOX [-i] [--tty] [--cwd DIR] [--env K=V]... [--timeout 30s] -- CMD ARGS...");
    }
    QList<QCommandLineOption> options() const override { return m_exec.list(); }
    int positionalsBeforeCommand(const QString &) const override { return 1; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        QStringList args = positional;
        if (args.isEmpty())
            return fail(
                ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("exec needs a sandbox and a command")));
        const QString sandbox = args.takeFirst();
        auto request = m_exec.read(parser, args);
        if (!request)
            return fail(ctx, request.error());
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        ExecSession session(**client, ctx.out, ctx.err, ctx.json);
        const Result<int> code = session.run(sandbox, *request, m_exec.forwardStdin(parser), m_exec.raw(parser));
        return code ? *code : fail(ctx, code.error());
    }

private:
    ExecOptions m_exec;
};

class RunCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("run"); }
    QString summary() const override
    {
        return QStringLiteral("Run one command in a sandbox made for it, which goes when the command ends.");
    }
    QString usage() const override { return QStringLiteral("[create options] [exec options] -- CMD ARGS..."); }
    QList<QCommandLineOption> options() const override { return m_spec.list() + m_exec.list(); }
    int positionalsBeforeCommand(const QString &) const override { return 0; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        auto creating = m_spec.read(parser);
        if (!creating)
            return fail(ctx, creating.error());
        auto request = m_exec.read(parser, positional);
        if (!request)
            return fail(ctx, request.error());
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        const DaemonApi api(**client);
        // One request: the sandbox is made for the command and goes when it ends.
        bool older = false; // a daemon from before sandbox.run: three requests, as it had them
        {
            ExecSession session(**client, ctx.out, ctx.err, ctx.json);
            const auto start = [&](const ExecRequest &r) {
                auto started = api.runOneShot(*creating, r).wait(ExecSession::kStartWaitMs);
                older = !started && started.error().code == ErrorCode::InvalidArgument
                    && started.error().message.startsWith(QLatin1String("unknown method"));
                return started;
            };
            const Result<int> ran = session.run(start, *request, m_exec.forwardStdin(parser), m_exec.raw(parser));
            if (!older || session.abandoned())
                return ran ? *ran : fail(ctx, ran.error());
        }
        auto created = api.createSandbox(*creating).wait();
        if (!created)
            return fail(ctx, created.error());
        const QString id = created->id;
        int code;
        {
            ExecSession session(**client, ctx.out, ctx.err, ctx.json);
            const Result<int> ran = session.run(id, *request, m_exec.forwardStdin(parser), m_exec.raw(parser));
            code = ran ? *ran : fail(ctx, ran.error());
        }
        if (auto removed = api.deleteSandbox(id).wait(); !removed)
            ctx.err << "airlockctl: could not delete sandbox " << id << ": " << removed.error().message << Qt::endl;
        return code;
    }

private:
    SpecOptions m_spec;
    ExecOptions m_exec;
};

void addExecCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ExecCommand>());
    commands.push_back(std::make_unique<RunCommand>());
}

} // namespace airlock::cli
