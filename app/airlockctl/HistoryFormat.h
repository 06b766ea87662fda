// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/DisplayText.h"
#include "util/Result.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

// How the history commands read times and show executions.
namespace airlock::cli::format {

// Commands and free text as a person may see them (core/model/DisplayText).
using display::commandLine;
using display::escaped;
QString timestamp(qint64 ms);
// "0", "3", "SIG9" or "-" for an execution row.
QString exitText(const QJsonObject &execution);
QString duration(const QJsonObject &execution);
// "2h", "30m", "7d" (that long ago) or a local date/time "2026-11-30", "2026-11-30T14:05[:07]".
Result<qint64> parseTimePoint(const QString &text, const QString &option);

} // namespace airlock::cli::format
