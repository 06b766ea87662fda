// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QString>

#include <cstdint>

namespace airlock::units {

// "512M", "1.5G", "64K", "1048576", "1e6" (binary multiples). Rejects zero, negatives, overflow, junk.
Result<uint64_t> parseBytes(const QString &text);
// "30s", "5m", "1.5h", "1d", "250ms", "2" (seconds). Returns milliseconds.
Result<uint64_t> parseDurationMs(const QString &text);
// "256", "1e3": a whole number.
Result<uint64_t> parseCount(const QString &text);
// A number of cores ("0.5", "2") in thousandths of a core.
Result<uint64_t> parseMillicores(const QString &text);

QString formatBytes(uint64_t bytes);
QString formatDurationMs(uint64_t ms);

} // namespace airlock::units
