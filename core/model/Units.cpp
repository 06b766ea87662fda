// SPDX-License-Identifier: Apache-2.0
#include "model/Units.h"

#include <QLocale>
#include <QRegularExpression>

#include <cmath>
#include <limits>

namespace airlock::units {

namespace {
// A number ("512", "1.5", "1e9") and a unit, scaled. Decimals and exponents are read exactly
// enough for sizes and durations; whole numbers of 19 digits or fewer are exact. `whole`: the
// scaled value must be a whole number (a count).
Result<uint64_t> parseScaled(const QString &text, const QString &what,
    std::initializer_list<std::pair<const char *, uint64_t>> suffixes, const QString &example, bool whole = false)
{
    const QString t = text.trimmed();
    auto bad = [&](const QString &why) {
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("invalid %1 '%2': %3 (example: %4)").arg(what, text.left(100), why, example));
    };
    static const QRegularExpression shape(
        QStringLiteral("^([0-9]+)(?:\\.([0-9]+))?(?:[eE]\\+?([0-9]{1,3}))?([A-Za-z]*)$"));
    const auto m = shape.match(t);
    if (!m.hasMatch())
        return bad(t.startsWith(QLatin1Char('-')) ? QStringLiteral("must be greater than zero")
                                                  : QStringLiteral("expected a positive number"));
    const QString suffix = m.captured(4);
    uint64_t scale = 0;
    for (const auto &[name, factor] : suffixes)
        if (suffix.compare(QLatin1String(name), Qt::CaseInsensitive) == 0)
            scale = factor;
    if (scale == 0)
        return bad(QStringLiteral("unknown unit '%1'").arg(suffix.left(20)));
    if (m.captured(2).isEmpty() && m.captured(3).isEmpty()) { // a whole number: exact
        const QString digits = m.captured(1);
        bool ok = false;
        const uint64_t number = digits.size() <= 19 ? digits.toULongLong(&ok) : 0;
        if (!ok)
            return bad(QStringLiteral("too large"));
        if (number == 0)
            return bad(QStringLiteral("must be greater than zero"));
        if (number > std::numeric_limits<uint64_t>::max() / scale)
            return bad(QStringLiteral("too large"));
        return number * scale;
    }
    // QLocale::c(): a decimal point whatever the user's locale says.
    const long double value = static_cast<long double>(QLocale::c().toDouble(t.left(t.size() - suffix.size())))
        * static_cast<long double>(scale);
    if (!std::isfinite(value) || value >= 18446744073709551615.0L)
        return bad(QStringLiteral("too large"));
    const long double rounded = std::round(value);
    if (whole && rounded != value)
        return bad(QStringLiteral("expected a whole number"));
    if (rounded < 1)
        return bad(QStringLiteral("must be greater than zero"));
    return static_cast<uint64_t>(rounded);
}
} // namespace

Result<uint64_t> parseBytes(const QString &text)
{
    return parseScaled(text, QStringLiteral("size"),
        {{"", 1}, {"b", 1}, {"k", 1ull << 10}, {"kib", 1ull << 10}, {"m", 1ull << 20}, {"mib", 1ull << 20},
            {"g", 1ull << 30}, {"gib", 1ull << 30}, {"t", 1ull << 40}, {"tib", 1ull << 40}},
        QStringLiteral("512M"));
}

Result<uint64_t> parseDurationMs(const QString &text)
{
    return parseScaled(text, QStringLiteral("duration"),
        {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}},
        QStringLiteral("30s"));
}

Result<uint64_t> parseCount(const QString &text)
{
    return parseScaled(text, QStringLiteral("count"), {{"", 1}}, QStringLiteral("256"), true);
}

Result<uint64_t> parseMillicores(const QString &text)
{
    static const QRegularExpression re(
        QRegularExpression::anchoredPattern(QStringLiteral("([0-9]{1,6})(?:\\.([0-9]{1,3}))?")));
    const QRegularExpressionMatch m = re.match(text.trimmed());
    const uint64_t millicores = m.hasMatch()
        ? m.captured(1).toULongLong() * 1000 + m.captured(2).leftJustified(3, QLatin1Char('0')).toULongLong()
        : 0;
    if (millicores == 0)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "invalid number of cores '%1': expected a positive number with up to three decimals (example: 0.5)")
                .arg(text));
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
    if (ms < 172'800'000)
        return QStringLiteral("%1h").arg(ms / 3'600'000);
    return QStringLiteral("%1d").arg(ms / 86'400'000);
}

} // namespace airlock::units
