// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "Theme.h"

#include <QTest>
#include <QWidget>

namespace airlock::test {

// When AIRLOCK_SCREENSHOT_DIR is set, a window as the README shows it: NAME.png at 1600×1000,
// NAME-small.png at 1024×700, and both again in the dark theme (NAME-dark, NAME-small-dark).
// The window is left at 1600×1000 in the light theme. False only when a file could not be saved.
inline bool saveScreenshots(QWidget &window, const QString &name)
{
    const QString dir = qEnvironmentVariable("AIRLOCK_SCREENSHOT_DIR");
    if (dir.isEmpty())
        return true;
    bool saved = true;
    for (const auto theme : {ui::Theme::Light, ui::Theme::Dark}) {
        ui::applyTheme(theme);
        const QString suffix = theme == ui::Theme::Dark ? QStringLiteral("-dark") : QString();
        for (const auto &[size, small] : {std::pair{QSize(1600, 1000), false}, {QSize(1024, 700), true}}) {
            window.resize(size);
            QTest::qWait(200);
            saved = window.grab().save(dir + QLatin1Char('/') + name + (small ? QStringLiteral("-small") : QString())
                        + suffix + QStringLiteral(".png"))
                && saved;
        }
    }
    ui::applyTheme(ui::Theme::Light);
    window.resize(1600, 1000);
    return saved;
}

} // namespace airlock::test
