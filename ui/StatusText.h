// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QLabel>
#include <QStatusBar>

namespace airlock::ui {

// One way to say how something went, in every window: errors in red, the rest plain.
inline QString statusStyle(bool error)
{
    return error ? QStringLiteral("color: #d03030") : QString();
}

inline void showStatus(QStatusBar *bar, const QString &text, bool error)
{
    bar->setStyleSheet(statusStyle(error));
    bar->showMessage(text);
}

inline void showStatus(QLabel *label, const QString &text, bool error)
{
    label->setStyleSheet(statusStyle(error));
    label->setText(text);
}

} // namespace airlock::ui
