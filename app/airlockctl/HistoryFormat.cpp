// SPDX-License-Identifier: Apache-2.0
#include "HistoryFormat.h"

#include "model/Units.h"

#include <QDateTime>
#include <QRegularExpression>

namespace airlock::cli::format {

QString timestamp(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

QString exitText(const QJsonObject &e)
{
    const QJsonValue sig = e.value(QStringLiteral("signal"));
    const QJsonValue code = e.value(QStringLiteral("exitCode"));
    return sig.isDouble() ? QStringLiteral("SIG%1").arg(sig.toInt())
        : code.isDouble() ? QString::number(code.toInt())
                          : QStringLiteral("-");
}

QString duration(const QJsonObject &e)
{
    const QJsonValue ended = e.value(QStringLiteral("endedMs"));
    const qint64 started = qint64(e.value(QStringLiteral("startedMs")).toDouble());
    return ended.isDouble() ? units::formatDurationMs(uint64_t(std::max<qint64>(0, qint64(ended.toDouble()) - started)))
                            : QStringLiteral("-");
}

Result<qint64> parseTimePoint(const QString &text, const QString &option)
{
    static const QRegularExpression ago(QStringLiteral("^(\\d{1,9})([smhdw])$"));
    if (const auto m = ago.match(text); m.hasMatch()) {
        static const QHash<QString, qint64> unit{{QStringLiteral("s"), 1000}, {QStringLiteral("m"), 60'000},
            {QStringLiteral("h"), 3'600'000}, {QStringLiteral("d"), 86'400'000}, {QStringLiteral("w"), 604'800'000}};
        return QDateTime::currentMSecsSinceEpoch() - m.captured(1).toLongLong() * unit.value(m.captured(2));
    }
    for (const QString &form : {QStringLiteral("yyyy-MM-ddTHH:mm:ss"), QStringLiteral("yyyy-MM-ddTHH:mm"),
             QStringLiteral("yyyy-MM-dd HH:mm:ss"), QStringLiteral("yyyy-MM-dd HH:mm"), QStringLiteral("yyyy-MM-dd")}) {
        const QDateTime t = QDateTime::fromString(text, form);
        if (t.isValid())
            return t.toMSecsSinceEpoch();
    }
    return makeError(ErrorCode::InvalidArgument,
        QStringLiteral("%1: '%2' is no time; use an age like 30m, 2h, 7d or a local time like 2026-11-30 or "
                       "2026-11-30T14:05")
            .arg(option, text.left(100)));
}

} // namespace airlock::cli::format
