// SPDX-License-Identifier: Apache-2.0
#include "Command.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace airlock::cli {

int exitCodeFor(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::AlreadyExists:
        return ExitUsage;
    case ErrorCode::NotFound:
        return ExitNotFound;
    case ErrorCode::DaemonUnavailable:
    case ErrorCode::DaemonRunning:
        return ExitNoDaemon;
    case ErrorCode::BoundaryUnavailable:
    case ErrorCode::LimitUnsupported:
        return ExitNoBoundary;
    case ErrorCode::PathEscape:
    case ErrorCode::ProtocolError:
    case ErrorCode::FrameTooLarge:
    case ErrorCode::VersionMismatch:
    case ErrorCode::HandshakeRequired:
        return ExitRefused;
    default:
        return ExitFailure;
    }
}

int Command::fail(Context &ctx, const Error &error)
{
    if (ctx.json) {
        printJson(ctx, QJsonObject{{QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), errorCodeName(error.code)},
                                                                         {QStringLiteral("message"), error.message}}}});
    } else {
        ctx.err << "airlockctl: " << error.message << Qt::endl;
    }
    return exitCodeFor(error.code);
}

void Command::printJson(Context &ctx, const QJsonValue &value)
{
    const QJsonDocument doc = value.isArray() ? QJsonDocument(value.toArray()) : QJsonDocument(value.toObject());
    ctx.out << QString::fromUtf8(doc.toJson(QJsonDocument::Indented));
    ctx.out.flush();
}

int Command::execute(Context &ctx, const QStringList &args)
{
    // Options may appear anywhere before a "--"; everything after it is the sandboxed command's.
    // Without "--", options end at the first argument that is not one (exec SB ls -la).
    const qsizetype dashes = args.indexOf(QStringLiteral("--"));
    const QStringList own = dashes < 0 ? args : args.first(dashes);
    QCommandLineParser parser;
    parser.setApplicationDescription(summary());
    if (dashes < 0)
        parser.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Machine-readable JSON output."));
    const QCommandLineOption verbose(QStringLiteral("verbose"), QStringLiteral("Log debug messages to stderr."));
    parser.addOptions({help, json, verbose});
    addOptions(parser);
    if (!parser.parse(own))
        return fail(ctx, makeError(ErrorCode::InvalidArgument,
                                   parser.errorText() + QStringLiteral(" (see 'airlockctl %1 --help')").arg(name())));
    if (parser.isSet(help)) {
        ctx.out << "Usage: airlockctl " << name() << ' ' << usage() << "\n\n" << summary() << "\n\n"
                << parser.helpText().mid(parser.helpText().indexOf(QStringLiteral("Options:")));
        ctx.out.flush();
        return ExitOk;
    }
    ctx.json = ctx.json || parser.isSet(json);
    ctx.verbose = ctx.verbose || parser.isSet(verbose);
    QStringList positional = parser.positionalArguments();
    if (dashes >= 0)
        positional += args.sliced(dashes);
    return run(ctx, parser, positional);
}

} // namespace airlock::cli
