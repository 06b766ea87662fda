// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/DaemonApi.h"
#include "util/Result.h"

#include <QCommandLineParser>
#include <QFileDevice>
#include <QJsonObject>
#include <QStringList>
#include <QTextStream>

#include <functional>
#include <memory>
#include <vector>

namespace airlock::cli {

// Exit codes shared by every sub-command (documented in `airlockctl --help`). `exec` and `run`
// return the command's own code instead (128+N when it died of signal N).
enum ExitCode {
    ExitOk = 0,
    ExitFailure = 1,
    ExitUsage = 2, // bad option, invalid name, bad limit
    ExitNotFound = 3, // unknown sandbox or file
    ExitNoDaemon = 4, // no daemon answers and none could be started
    ExitNoBoundary = 5, // the host cannot enforce the sandbox (bwrap, userns, seccomp, limits)
    ExitRefused = 6, // path escape, protocol error, history not writable (fail closed)
};
int exitCodeFor(ErrorCode code);

// Everything `in` holds up to its end (a pipe read until its writer closes it, however slowly it
// writes), at most `cap` bytes: past that, an error naming `what` and the cap; nothing is cut
// short silently.
Result<QByteArray> readToEnd(QFileDevice &in, qint64 cap, const QString &what);
// The same from standard input.
Result<QByteArray> readStdin(qint64 cap, const QString &what);

// Everything a command may touch, injected so tests can run commands in-process.
struct Context {
    QTextStream &out;
    QTextStream &err;
    bool json = false;
    bool verbose = false;
    ConnectOptions connect;
    QString host; // --host or AIRLOCK_HOST: a saved host's name or a URL; empty: the saved choice
    std::function<Result<DaemonClient *>()> client; // connects lazily (starting the daemon)
};

class Command {
public:
    virtual ~Command() = default;
    virtual QString name() const = 0;
    virtual QString summary() const = 0;
    // "SANDBOX [--keep]..." shown after the command name.
    virtual QString usage() const = 0;
    virtual QList<QCommandLineOption> options() const { return {}; }
    // For commands that end with a command to run in the sandbox (exec, run): how many positional
    // arguments come before it. Everything from there on belongs to that command, "--" or not.
    // `first` is the first positional argument (a subcommand's name), or empty.
    virtual int positionalsBeforeCommand(const QString &first) const
    {
        Q_UNUSED(first);
        return -1;
    }
    // `positional` holds the arguments, with everything after a literal "--" appended after a "--".
    virtual int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) = 0;

    // Parses args (which start with the command name) and runs; usage errors exit 2.
    int execute(Context &ctx, const QStringList &args);

    // Prints an error (or {"error": ...} with --json) and returns its exit code.
    static int fail(Context &ctx, const Error &error);
    static void printJson(Context &ctx, const QJsonValue &value);
    // A usage error (exit 2) that says what was expected.
    static Error badUsage(const QString &what) { return makeError(ErrorCode::InvalidArgument, what); }
};

std::vector<std::unique_ptr<Command>> allCommands();

} // namespace airlock::cli
