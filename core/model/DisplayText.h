// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonArray>
#include <QString>

// How untrusted text (an argv, a reason, a host name) is shown to a person, in the CLI and the GUI
// alike: nothing in it can drive a terminal or reorder what is read.
namespace airlock::display {

// What a person cannot see or could misread (controls, bidi and other format characters, tag
// characters, odd spaces, unassigned code points) shown by code point as \xNN / \u{NNNN};
// elided past maxWidth.
QString escaped(const QString &text, int maxWidth = 0);
// A command line as a person would type it: arguments quoted where needed, each one escaped.
QString commandLine(const QJsonArray &argv, int maxWidth = 0);
// A duration as a person reads it: "350 ms", "1.2 s", "40 s", "4 min 5 s", "2 h 10 min".
QString duration(qint64 ms);
// A moment as every view shows it: "2026-12-04 22:14:22 UTC" in this machine's time zone (its
// abbreviation), with milliseconds when asked ("…22.041 UTC").
QString timestamp(qint64 msSinceEpoch, bool milliseconds = false);
// A count and its noun in English: "1 command", "3 commands" (many defaults to one + "s").
QString count(qint64 n, const QString &one, const QString &many = {});

} // namespace airlock::display
