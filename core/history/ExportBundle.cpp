// SPDX-License-Identifier: Apache-2.0
#include "history/ExportBundle.h"

#include <QDateTime>
#include <QJsonDocument>

namespace airlock {

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
} // namespace

ExportBundle::ExportBundle(const QString &run, Format format)
    : m_run(run)
    , m_format(format)
{
    add({{QStringLiteral("type"), QStringLiteral("bundle")}, {QStringLiteral("format"), QLatin1String(kFormat)},
        {QStringLiteral("version"), kVersion}, {QStringLiteral("run"), run},
        {QStringLiteral("exportedMs"), double(QDateTime::currentMSecsSinceEpoch())}});
}

void ExportBundle::add(const QJsonObject &record)
{
    const QByteArray l = line(record);
    m_hash.addData(l);
    ++m_count;
    if (m_format == Format::Jsonl)
        m_pending += l;
    else
        m_records.append(record);
}

QByteArray ExportBundle::take()
{
    return std::exchange(m_pending, {});
}

QByteArray ExportBundle::finish()
{
    m_digest = QString::fromLatin1(m_hash.result().toHex());
    if (m_format == Format::Jsonl)
        return take()
            + line({{QStringLiteral("type"), QStringLiteral("sha256")}, {QStringLiteral("sha256"), m_digest}});
    return QJsonDocument(QJsonObject{{QStringLiteral("format"), QLatin1String(kFormat)},
                             {QStringLiteral("version"), kVersion}, {QStringLiteral("run"), m_run},
                             {QStringLiteral("records"), m_records}, {QStringLiteral("sha256"), m_digest}})
        .toJson(QJsonDocument::Compact);
}

Result<ExportBundle::Checked> ExportBundle::verify(const QByteArray &bundle)
{
    QJsonParseError err{};
    const QJsonDocument whole = QJsonDocument::fromJson(bundle, &err);
    QCryptographicHash hash(QCryptographicHash::Sha256);
    QByteArray claimed;
    qsizetype records = 0;
    if (err.error == QJsonParseError::NoError && whole.isObject()
        && whole.object().contains(QStringLiteral("records"))) {
        // json: the digest covers the records as JSON lines, so both formats share one digest.
        const QJsonObject doc = whole.object();
        if (doc.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
            return failure(
                QStringLiteral("not an Airlock history export (format is not %1)").arg(QLatin1String(kFormat)));
        const QJsonArray all = doc.value(QStringLiteral("records")).toArray();
        for (const QJsonValue &r : all) {
            if (!r.isObject())
                return failure(
                    QStringLiteral("not an Airlock history export: record %1 is not an object").arg(records));
            hash.addData(line(r.toObject()));
            ++records;
        }
        // The document's own run must be the one its (hashed) header names.
        if (all.isEmpty() || all.first().toObject().value(QStringLiteral("run")) != doc.value(QStringLiteral("run")))
            return failure(QStringLiteral("the bundle was changed: its run does not match its header record"));
        claimed = doc.value(QStringLiteral("sha256")).toString().toLatin1();
    } else {
        // jsonl: the last line holds the SHA-256 of every byte before it.
        const qsizetype lastLine = bundle.lastIndexOf('\n', bundle.size() - 2) + 1;
        const QJsonObject last = QJsonDocument::fromJson(bundle.mid(lastLine)).object();
        if (last.value(QStringLiteral("type")).toString() != QLatin1String("sha256"))
            return failure(
                QStringLiteral("not a complete bundle: the last line is not its sha256 record (cut short?)"));
        const QByteArray body = bundle.left(lastLine);
        const QJsonObject first = QJsonDocument::fromJson(body.left(body.indexOf('\n'))).object();
        if (first.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
            return failure(
                QStringLiteral("not an Airlock history export (format is not %1)").arg(QLatin1String(kFormat)));
        hash.addData(body);
        records = body.count('\n');
        claimed = last.value(QStringLiteral("sha256")).toString().toLatin1();
    }
    const QByteArray computed = hash.result().toHex();
    if (claimed != computed)
        return failure(QStringLiteral(
            "the bundle was changed or damaged: its content hashes to %1, it claims %2 (the digest catches "
            "damage and careless edits, not someone who recomputes it)")
                           .arg(QString::fromLatin1(computed), QString::fromLatin1(claimed)));
    return Checked{records, QString::fromLatin1(computed)};
}

} // namespace airlock
