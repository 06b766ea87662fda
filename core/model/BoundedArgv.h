// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

#include <algorithm>

namespace airlock {

// What a record keeps of an argument list an agent chose: enough to see what ran (64 arguments,
// 16 KiB in all), never the megabyte it can pass. {"argv": [...]}, with "argc" and "argvChars"
// (how many there were) when it was cut.
inline QJsonObject boundedArgv(const QStringList &argv)
{
    constexpr qsizetype kShownArgs = 64, kShownChars = 16 * 1024;
    QJsonArray shown;
    qsizetype chars = 0, shownChars = 0;
    for (const QString &arg : argv) {
        chars += arg.size();
        if (shown.size() < kShownArgs && shownChars < kShownChars) {
            shown.append(arg.left(kShownChars - shownChars));
            shownChars += std::min(arg.size(), kShownChars - shownChars);
        }
    }
    QJsonObject out{{QStringLiteral("argv"), shown}};
    if (shown.size() < argv.size() || shownChars < chars) {
        out.insert(QStringLiteral("argc"), double(argv.size()));
        out.insert(QStringLiteral("argvChars"), double(chars));
    }
    return out;
}

} // namespace airlock
