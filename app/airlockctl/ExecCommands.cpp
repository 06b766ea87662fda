// SPDX-License-Identifier: Apache-2.0
// exec and run: a command in a sandbox, attached to this terminal.
#include "ExecSession.h"
#include "SandboxCommands.h"
#include "SpecOptions.h"
#include "model/Units.h"

#include <QJsonArray>

#include <unistd.h>

namespace airlock::cli {

namespace {
// The options that shape one execution, shared by exec and run.
class ExecOptions {
public:
    QList<QCommandLineOption> list() const
    {
        return {m_interactive, m_tty, m_cwd, m_env, m_timeout, m_lease, m_noStdin, m_raw};
    }
    Result<ExecRequest> read(const QCommandLineParser &parser, QStringList command) const
    {
        // Command::execute puts a "--" in front of the sandboxed command; anything before it is
        // an argument this command does not take.
        if (!command.isEmpty() && command.first() != QLatin1String("--"))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("unexpected argument '%1' before the command").arg(command.first()));
        if (!command.isEmpty())
            command.removeFirst();
        if (command.isEmpty())
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("no command given: put it after --, e.g. -- ls -la"));
        QJsonObject json{{QStringLiteral("argv"), QJsonArray::fromStringList(command)},
            {QStringLiteral("tty"), parser.isSet(m_tty)}};
        if (parser.isSet(m_cwd))
            json.insert(QStringLiteral("cwd"), parser.value(m_cwd));
        QJsonObject env;
        for (const QString &assignment : parser.values(m_env)) {
            auto kv = parseEnvAssignment(assignment);
            if (!kv)
                return kv.error();
            env.insert(kv->first, kv->second);
        }
        json.insert(QStringLiteral("env"), env);
        if (parser.isSet(m_timeout)) {
            auto ms = units::parseDurationMs(parser.value(m_timeout));
            if (!ms)
                return makeError(ErrorCode::InvalidArgument, QStringLiteral("--timeout: ") + ms.error().message);
            json.insert(QStringLiteral("timeoutMs"), double(*ms));
        }
        if (parser.isSet(m_lease)) {
            auto ms = units::parseDurationMs(parser.value(m_lease));
            if (!ms)
                return makeError(ErrorCode::InvalidArgument, QStringLiteral("--lease: ") + ms.error().message);
            json.insert(QStringLiteral("leaseMs"), double(*ms));
        }
        return ExecRequest::fromJson(json);
    }
    // A terminal's input goes to the command; a pipe's or a file's only when asked for (-i), so that
    // `while read x; do airlockctl exec sb -- echo $x; done < list` reads the list, not the command.
    bool forwardStdin(const QCommandLineParser &parser) const
    {
        return !parser.isSet(m_noStdin) && (parser.isSet(m_interactive) || ::isatty(STDIN_FILENO));
    }
    bool raw(const QCommandLineParser &parser) const { return parser.isSet(m_raw); }

private:
    QCommandLineOption m_interactive{{QStringLiteral("i"), QStringLiteral("interactive")},
        QStringLiteral("Forward stdin to the command also when it is a pipe or a file (a terminal always is); "
                       "-it for a shell.")};
    QCommandLineOption m_tty{{QStringLiteral("t"), QStringLiteral("tty")}, QStringLiteral("Run in a pseudo-terminal.")};
    QCommandLineOption m_cwd{QStringLiteral("cwd"),
        QStringLiteral("Working directory inside the sandbox (default /workspace)."), QStringLiteral("dir")};
    QCommandLineOption m_env{{QStringLiteral("e"), QStringLiteral("env")},
        QStringLiteral("Set a variable (repeatable). Nothing else from this shell is passed."), QStringLiteral("K=V")};
    QCommandLineOption m_timeout{QStringLiteral("timeout"),
        QStringLiteral("Kill the command after this long, e.g. 30s (exit 124)."), QStringLiteral("duration")};
    QCommandLineOption m_lease{QStringLiteral("lease"),
        QStringLiteral("Kill the command this long after this client's connection is lost, e.g. 60s (recorded "
                       "as lease expired). Without it, the command keeps running while nobody is connected."),
        QStringLiteral("duration")};
    QCommandLineOption m_noStdin{{QStringLiteral("n"), QStringLiteral("no-stdin")},
        QStringLiteral("Do not forward stdin, not even a terminal's (the command reads EOF).")};
    QCommandLineOption m_raw{QStringLiteral("raw"),
        QStringLiteral("Pass control sequences to this terminal unchanged (by default only colours do; "
                       "the rest is shown as text).")};
};
} // namespace

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
    int positionalsBeforeCommand() const override { return 1; }
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
    int positionalsBeforeCommand() const override { return 0; }
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
