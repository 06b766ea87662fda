// SPDX-License-Identifier: Apache-2.0
// export: a run as a self-contained bundle (run, sandboxes with their spec snapshots, executions,
// events, output), with a SHA-256 over its content; and --verify to check one.
#include "SandboxCommands.h"
#include "history/ExportBundle.h"

#include <QFile>
#include <QJsonArray>
#include <QSaveFile>

namespace airlock::cli {

namespace {
Error failure(const QString &what)
{
    return makeError(ErrorCode::IoError, what);
}
} // namespace

class ExportCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("export"); }
    QString summary() const override
    {
        return QStringLiteral("Write a run as a self-contained bundle with its SHA-256, or --verify one.");
    }
    QString usage() const override
    {
        return QStringLiteral("RUN [--format jsonl|json] [--output FILE] | --verify FILE");
    }
    QList<QCommandLineOption> options() const override { return {m_format, m_output, m_verify}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (parser.isSet(m_verify))
            return verifyFile(ctx, parser.value(m_verify));
        if (positional.size() != 1)
            return fail(ctx,
                makeError(
                    ErrorCode::InvalidArgument, QStringLiteral("export takes one run name (see 'airlockctl runs')")));
        const QString format = parser.value(m_format).isEmpty() ? QStringLiteral("jsonl") : parser.value(m_format);
        if (format != QLatin1String("jsonl") && format != QLatin1String("json"))
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("--format: expected jsonl or json")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());

        ExportBundle writer(positional.first(),
            format == QLatin1String("jsonl") ? ExportBundle::Format::Jsonl : ExportBundle::Format::Json);
        QByteArray bundle;
        for (QJsonValue cursor = QJsonObject{}; cursor.isObject();) {
            auto page = DaemonApi(**client).historyExport(positional.first(), cursor).wait();
            if (!page)
                return fail(ctx, page.error());
            for (const QJsonValue &r : page->value(QStringLiteral("records")).toArray())
                writer.add(r.toObject());
            bundle += writer.take();
            cursor = page->value(QStringLiteral("cursor"));
        }
        bundle += writer.finish();
        const QString digest = writer.digest();
        if (!parser.isSet(m_output)) {
            ctx.out.flush();
            QFile out;
            if (!out.open(stdout, QIODevice::WriteOnly) || out.write(bundle) != bundle.size())
                return fail(ctx, failure(QStringLiteral("cannot write the bundle to stdout")));
            return ExitOk;
        }
        // All or nothing: a failed export leaves no partial bundle behind.
        QSaveFile file(parser.value(m_output));
        if (!file.open(QIODevice::WriteOnly) || file.write(bundle) != bundle.size() || !file.commit())
            return fail(
                ctx, failure(QStringLiteral("cannot write %1: %2").arg(parser.value(m_output), file.errorString())));
        ctx.err << "wrote " << parser.value(m_output) << " (" << bundle.size() << " bytes, sha256 " << digest << ")"
                << Qt::endl;
        return ExitOk;
    }

private:
    int verifyFile(Context &ctx, const QString &path)
    {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly))
            return fail(ctx,
                makeError(ErrorCode::NotFound, QStringLiteral("cannot read %1: %2").arg(path, file.errorString())));
        auto checked = ExportBundle::verify(file.readAll());
        if (!checked)
            return fail(ctx, checked.error());
        if (ctx.json)
            printJson(ctx,
                QJsonObject{{QStringLiteral("records"), double(checked->records)},
                    {QStringLiteral("sha256"), checked->sha256}});
        else
            ctx.out << "ok: " << checked->records << " records, sha256 " << checked->sha256 << Qt::endl;
        return ExitOk;
    }

    QCommandLineOption m_format{QStringLiteral("format"),
        QStringLiteral("jsonl (default: one record per line, the last one its "
                       "sha256) or json (one document)."),
        QStringLiteral("format")};
    QCommandLineOption m_output{{QStringLiteral("o"), QStringLiteral("output")},
        QStringLiteral("Write to FILE instead of stdout."), QStringLiteral("file")};
    QCommandLineOption m_verify{QStringLiteral("verify"), QStringLiteral("Check that a bundle is whole and unchanged."),
        QStringLiteral("file")};
};

void addExportCommand(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ExportCommand>());
}

} // namespace airlock::cli
