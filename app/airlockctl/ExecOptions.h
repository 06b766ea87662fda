// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/ExecRequest.h"
#include "model/Units.h"

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QJsonArray>

#include <unistd.h>

namespace airlock::cli {

// The options that shape one execution, shared by exec, run and agent run.
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

} // namespace airlock::cli
