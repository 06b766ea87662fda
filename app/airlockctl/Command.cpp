// SPDX-License-Identifier: Apache-2.0
#include "Command.h"

#include <QFile>

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
    case ErrorCode::HistoryUnavailable:
    case ErrorCode::Denied:
    case ErrorCode::Conflict:
        return ExitRefused;
    default:
        return ExitFailure;
    }
}

int Command::fail(Context &ctx, const Error &error)
{
    if (ctx.json) {
        printJson(ctx,
            QJsonObject{{QStringLiteral("error"),
                QJsonObject{
                    {QStringLiteral("code"), errorCodeName(error.code)}, {QStringLiteral("message"), error.message}}}});
    } else {
        // Messages can quote what a sandbox or agent chose (names, paths): never as controls.
        QString message;
        for (const QChar c : error.message)
            message += c.unicode() < 0x20 || c.unicode() == 0x7f || (c.unicode() >= 0x80 && c.unicode() < 0xa0)
                ? QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QLatin1Char('0'))
                : QString(c);
        ctx.err << "airlockctl: " << message << Qt::endl;
    }
    return exitCodeFor(error.code);
}

void Command::printJson(Context &ctx, const QJsonValue &value)
{
    const QJsonDocument doc = value.isArray() ? QJsonDocument(value.toArray()) : QJsonDocument(value.toObject());
    ctx.out << QString::fromUtf8(doc.toJson(QJsonDocument::Indented));
    ctx.out.flush();
}

namespace {
// Index in args where the sandboxed command starts when no "--" marks it, or -1.
qsizetype commandStart(const QStringList &args, const QList<QCommandLineOption> &options, int positionalsBefore)
{
    int seen = 0;
    for (qsizetype i = 1; i < args.size(); ++i) {
        const QString &a = args[i];
        if (a.startsWith(QLatin1Char('-')) && a.size() > 1) {
            const QString name = a.mid(a.startsWith(QLatin1String("--")) ? 2 : 1);
            if (name.contains(QLatin1Char('=')))
                continue;
            for (const QCommandLineOption &o : options)
                if (o.names().contains(name) && !o.valueName().isEmpty())
                    ++i; // its value
            continue;
        }
        if (seen++ == positionalsBefore)
            return i;
    }
    return -1;
}
} // namespace

int Command::execute(Context &ctx, const QStringList &args)
{
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Machine-readable JSON output."));
    const QCommandLineOption verbose(QStringLiteral("verbose"), QStringLiteral("Log debug messages to stderr."));
    const QList<QCommandLineOption> all = QList<QCommandLineOption>{help, json, verbose} + options();
    // Options may appear anywhere before the sandboxed command; the command is everything after
    // "--", or else everything from its first word on (exec SB ls -la).
    qsizetype split = args.indexOf(QStringLiteral("--"));
    qsizetype resume = split + 1;
    const qsizetype first = commandStart(args, all, 0);
    const int before = positionalsBeforeCommand(first < 0 ? QString() : args[first]);
    if (split < 0 && before >= 0)
        resume = split = commandStart(args, all, before);
    QCommandLineParser parser;
    parser.setApplicationDescription(summary());
    parser.addOptions(all);
    if (!parser.parse(split < 0 ? args : args.first(split)))
        return fail(ctx,
            makeError(ErrorCode::InvalidArgument,
                parser.errorText() + QStringLiteral(" (see 'airlockctl %1 --help')").arg(name())));
    if (parser.isSet(help)) {
        ctx.out << "Usage: airlockctl " << name() << ' ' << usage() << "\n\n"
                << summary() << "\n\n"
                << parser.helpText().mid(parser.helpText().indexOf(QStringLiteral("Options:")));
        ctx.out.flush();
        return ExitOk;
    }
    ctx.json = ctx.json || parser.isSet(json);
    ctx.verbose = ctx.verbose || parser.isSet(verbose);
    QStringList positional = parser.positionalArguments();
    if (split >= 0)
        positional += QStringList{QStringLiteral("--")} + args.sliced(resume);
    return run(ctx, parser, positional);
}

Result<QByteArray> readToEnd(QFileDevice &in, qint64 cap, const QString &what)
{
    QByteArray data;
    for (;;) {
        // A pipe's read returns what its writer has written so far; only an empty read is its end.
        const QByteArray chunk = in.read(std::min<qint64>(cap + 1 - data.size(), 1 << 20));
        if (chunk.isEmpty()) {
            if (in.error() != QFileDevice::NoError)
                return makeError(ErrorCode::IoError, QStringLiteral("cannot read %1: %2").arg(what, in.errorString()));
            return data;
        }
        data += chunk;
        if (data.size() > cap)
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("%1 is larger than %2 bytes: refused (nothing was kept)").arg(what).arg(cap));
    }
}

Result<QByteArray> readStdin(qint64 cap, const QString &what)
{
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly | QIODevice::Unbuffered))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot read stdin"));
    return readToEnd(in, cap, what);
}

} // namespace airlock::cli
