// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

class QPalette;

namespace airlock::ui {

// Light and dark, following the system unless the person chose one (View → Theme, remembered).
// Qt 6.4 has no colour-scheme hint, so "the system" is read from what the desktop exposes: a
// GTK_THEME ending in ":dark", else whether the platform's own palette is dark.
enum class Theme { System, Light, Dark };

Theme themeFromName(const QString &name); // "light", "dark", anything else: System
QString themeName(Theme theme);
bool systemPrefersDark();
bool isDark(const QPalette &palette); // light text on a dark window
// Fusion with a light or a dark palette; the output view stays a dark terminal either way.
void applyTheme(Theme theme);

} // namespace airlock::ui
