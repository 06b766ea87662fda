// SPDX-License-Identifier: Apache-2.0
#include "model/Units.h"

#include <QRegularExpression>

#include <limits>

namespace airlock::units {

namespace {
Result<uint64_t> parseScaled(const QString &text, const QString &what,
                             std::initializer_list<std::pair<const char *, uint64_t>> suffixes,
                             const QString &example)
{
    const QString t = text.trimmed();
    qsizetype digits = 0;
    while (digits < t.size() && t.at(digits).isDigit() && t.at(digits).unicode() < 128)
        ++digits;
    const QString suffix = t.mid(digits);
    auto bad = [&](const QString &why) {
        return makeError(ErrorCode::InvalidArgument,
                         QStringLiteral("invalid %1 '%2': %3 (example: %4)").arg(what, text, why, example));
    };
    if (digits == 0)
        return bad(QStringLiteral("expected a positive number"));
    if (digits > 18)
        return bad(QStringLiteral("too large"));
    const uint64_t number = t.left(digits).toULongLong();
    uint64_t scale = 0;
    for (const auto &[name, factor] : suffixes)
        if (suffix.compare(QLatin1String(name), Qt::CaseInsensitive) == 0)
            scale = factor;
    if (scale == 0)
        return bad(QStringLiteral("unknown unit '%1'").arg(suffix));
    if (number == 0)
        return bad(QStringLiteral("must be greater than zero"));
    if (number > std::numeric_limits<uint64_t>::max() / scale)
        return bad(QStringLiteral("too large"));
    return number * scale;
}
} // namespace

Result<uint64_t> parseBytes(const QString &text)
{
    return parseScaled(text, QStringLiteral("size"),
                       {{"", 1}, {"b", 1}, {"k", 1ull << 10}, {"kib", 1ull << 10}, {"m", 1ull << 20},
                        {"mib", 1ull << 20}, {"g", 1ull << 30}, {"gib", 1ull << 30}, {"t", 1ull << 40}},
                       QStringLiteral("512M"));
}

Result<uint64_t> parseDurationMs(const QString &text)
{
    return parseScaled(text, QStringLiteral("duration"),
                       {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}},
                       QStringLiteral("30s"));
}

Result<uint64_t> parseCount(const QString &text)
{
    return parseScaled(text, QStringLiteral("count"), {{"", 1}}, QStringLiteral("256"));
}

Result<uint64_t> parseMillicores(const QString &text)
{
    static const QRegularExpression re(QRegularExpression::anchoredPattern(QStringLiteral("([0-9]{1,6})(?:\\.([0-9]{1,3}))?")));
    const QRegularExpressionMatch m = re.match(text.trimmed());
    const uint64_t millicores = m.hasMatch() ? m.captured(1).toULongLong() * 1000 + m.captured(2).leftJustified(3, QLatin1Char('0')).toULongLong() : 0;
    if (millicores == 0)
        return makeError(ErrorCode::InvalidArgument,
                         QStringLiteral("invalid number of cores '%1': expected a positive number with up to three decimals (example: 0.5)").arg(text));
    return millicores;
}

QString formatBytes(uint64_t bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    double v = static_cast<double>(bytes);
    while (v >= 1024 && unit < 4) {
        v /= 1024;
        ++unit;
    }
    if (unit == 0)
        return QStringLiteral("%1 B").arg(bytes);
    return QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 1 : 0).arg(QLatin1String(units[unit]));
}

QString formatDurationMs(uint64_t ms)
{
    if (ms < 1000)
        return QStringLiteral("%1ms").arg(ms);
    if (ms < 120'000)
        return QStringLiteral("%1s").arg(ms / 1000.0, 0, 'f', ms % 1000 ? 1 : 0);
    if (ms < 7'200'000)
        return QStringLiteral("%1m").arg(ms / 60'000);
    return QStringLiteral("%1h").arg(ms / 3'600'000);
}

} // namespace airlock::units
