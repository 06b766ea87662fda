// SPDX-License-Identifier: Apache-2.0
// export: a run as a self-contained bundle (run, sandboxes with their spec snapshots, executions,
// events, output), with a SHA-256 over its content; and --verify to check one.
#include "SandboxCommands.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace airlock::cli {

namespace {
constexpr const char *kFormat = "airlock-history-export";
constexpr int kVersion = 1;

QByteArray line(const QJsonObject &record)
{
    return QJsonDocument(record).toJson(QJsonDocument::Compact) + '\n';
}

Error failure(const QString &what)
{
    return makeError(ErrorCode::IoError, what);
}

// Checks a bundle in either format; returns the number of records and the digest.
Result<QPair<qsizetype, QByteArray>> verify(const QByteArray &bundle)
{
    QJsonParseError err{};
    const QJsonDocument whole = QJsonDocument::fromJson(bundle, &err);
    QCryptographicHash hash(QCryptographicHash::Sha256);
    QByteArray claimed;
    qsizetype records = 0;
    if (err.error == QJsonParseError::NoError && whole.isObject() && whole.object().contains(QStringLiteral("records"))) {
        // json: the digest covers the records as JSON lines, so both formats share one digest.
        const QJsonObject doc = whole.object();
        if (doc.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
            return failure(QStringLiteral("not an Airlock history export (format is not %1)").arg(QLatin1String(kFormat)));
        for (const QJsonValue &r : doc.value(QStringLiteral("records")).toArray()) {
            hash.addData(line(r.toObject()));
            ++records;
        }
        claimed = doc.value(QStringLiteral("sha256")).toString().toLatin1();
    } else {
        // jsonl: the last line holds the SHA-256 of every byte before it.
        const qsizetype lastLine = bundle.lastIndexOf('\n', bundle.size() - 2) + 1;
        const QJsonObject last = QJsonDocument::fromJson(bundle.mid(lastLine)).object();
        if (last.value(QStringLiteral("type")).toString() != QLatin1String("sha256"))
            return failure(QStringLiteral("not a complete bundle: the last line is not its sha256 record (cut short?)"));
        const QByteArray body = bundle.left(lastLine);
        const QJsonObject first = QJsonDocument::fromJson(body.left(body.indexOf('\n'))).object();
        if (first.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
            return failure(QStringLiteral("not an Airlock history export (format is not %1)").arg(QLatin1String(kFormat)));
        hash.addData(body);
        records = body.count('\n');
        claimed = last.value(QStringLiteral("sha256")).toString().toLatin1();
    }
    const QByteArray computed = hash.result().toHex();
    if (claimed != computed)
        return failure(QStringLiteral("the bundle was changed: its content hashes to %1, it claims %2")
                           .arg(QString::fromLatin1(computed), QString::fromLatin1(claimed)));
    return qMakePair(records, computed);
}
} // namespace

class ExportCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("export"); }
    QString summary() const override { return QStringLiteral("Write a run as a self-contained bundle with its SHA-256, or --verify one."); }
    QString usage() const override { return QStringLiteral("RUN [--format jsonl|json] [--output FILE] | --verify FILE"); }
    QList<QCommandLineOption> options() const override { return {m_format, m_output, m_verify}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (parser.isSet(m_verify))
            return verifyFile(ctx, parser.value(m_verify));
        if (positional.size() != 1)
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("export takes one run name (see 'airlockctl runs')")));
        const QString format = parser.value(m_format).isEmpty() ? QStringLiteral("jsonl") : parser.value(m_format);
        if (format != QLatin1String("jsonl") && format != QLatin1String("json"))
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("--format: expected jsonl or json")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());

        const QJsonObject header{{QStringLiteral("type"), QStringLiteral("bundle")},
                                 {QStringLiteral("format"), QLatin1String(kFormat)},
                                 {QStringLiteral("version"), kVersion},
                                 {QStringLiteral("run"), positional.first()},
                                 {QStringLiteral("exportedMs"), double(QDateTime::currentMSecsSinceEpoch())}};
        QCryptographicHash hash(QCryptographicHash::Sha256);
        QByteArray jsonl = line(header);
        QJsonArray records{header};
        hash.addData(jsonl);
        for (QJsonValue cursor = QJsonObject{}; cursor.isObject();) {
            auto page = (*client)->call(QStringLiteral("history.export"),
                                        {{QStringLiteral("run"), positional.first()}, {QStringLiteral("cursor"), cursor}});
            if (!page)
                return fail(ctx, page.error());
            for (const QJsonValue &r : page->value(QStringLiteral("records")).toArray()) {
                const QByteArray l = line(r.toObject());
                hash.addData(l);
                if (format == QLatin1String("jsonl"))
                    jsonl += l;
                else
                    records.append(r);
            }
            cursor = page->value(QStringLiteral("cursor"));
        }
        const QString digest = QString::fromLatin1(hash.result().toHex());
        const QByteArray bundle = format == QLatin1String("jsonl")
            ? jsonl + line({{QStringLiteral("type"), QStringLiteral("sha256")}, {QStringLiteral("sha256"), digest}})
            : QJsonDocument(QJsonObject{{QStringLiteral("format"), QLatin1String(kFormat)},
                                        {QStringLiteral("version"), kVersion},
                                        {QStringLiteral("run"), positional.first()},
                                        {QStringLiteral("records"), records},
                                        {QStringLiteral("sha256"), digest}})
                  .toJson(QJsonDocument::Compact);
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
            return fail(ctx, failure(QStringLiteral("cannot write %1: %2").arg(parser.value(m_output), file.errorString())));
        ctx.err << "wrote " << parser.value(m_output) << " (" << bundle.size() << " bytes, sha256 " << digest << ")" << Qt::endl;
        return ExitOk;
    }

private:
    int verifyFile(Context &ctx, const QString &path)
    {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly))
            return fail(ctx, makeError(ErrorCode::NotFound, QStringLiteral("cannot read %1: %2").arg(path, file.errorString())));
        auto checked = verify(file.readAll());
        if (!checked)
            return fail(ctx, checked.error());
        if (ctx.json)
            printJson(ctx, QJsonObject{{QStringLiteral("records"), double(checked->first)},
                                       {QStringLiteral("sha256"), QString::fromLatin1(checked->second)}});
        else
            ctx.out << "ok: " << checked->first << " records, sha256 " << checked->second << Qt::endl;
        return ExitOk;
    }

    QCommandLineOption m_format{QStringLiteral("format"), QStringLiteral("jsonl (default: one record per line, the last one its "
                                                                         "sha256) or json (one document)."),
                                QStringLiteral("format")};
    QCommandLineOption m_output{{QStringLiteral("o"), QStringLiteral("output")}, QStringLiteral("Write to FILE instead of stdout."),
                                QStringLiteral("file")};
    QCommandLineOption m_verify{QStringLiteral("verify"), QStringLiteral("Check that a bundle is whole and unchanged."), QStringLiteral("file")};
};

void addExportCommand(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ExportCommand>());
}

} // namespace airlock::cli
