// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

// How the history commands read times and show executions.
namespace airlock::cli::format {

// A command line as a person would type it: arguments quoted where needed, control characters
// shown as \xNN (an argv is data; it must not drive the terminal). Elided past maxWidth.
QString commandLine(const QJsonArray &argv, int maxWidth = 0);
// Free text (a reason, a value) with control, bidi and format characters shown as \xNN / \u{NNNN}.
QString escaped(const QString &text, int maxWidth = 0);
QString timestamp(qint64 ms);
// "0", "3", "SIG9" or "-" for an execution row.
QString exitText(const QJsonObject &execution);
QString duration(const QJsonObject &execution);
// "2h", "30m", "7d" (that long ago) or a local date/time "2026-11-30", "2026-11-30T14:05[:07]".
Result<qint64> parseTimePoint(const QString &text, const QString &option);

} // namespace airlock::cli::format
