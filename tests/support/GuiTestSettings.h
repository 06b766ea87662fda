// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "TestDaemon.h"

#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

namespace airlock::test {

// A GUI test keeps its settings (window state, the command history, the theme) in a directory of
// its own, made fresh for each run: never the user's ~/.config, and never what an earlier run left.
// Call it first in initTestCase, before anything reads a QSettings.
inline void isolateSettings()
{
    static QTemporaryDir dir;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir.path());
    QStandardPaths::setTestModeEnabled(true);
}

// How a console test starts: settings of its own, a real daemon (with `options`), a client of it.
inline bool startConsoleTest(
    std::unique_ptr<TestDaemon> &daemon, std::unique_ptr<DaemonClient> &client, const QStringList &options = {})
{
    isolateSettings();
    daemon = std::make_unique<TestDaemon>(options);
    if (!daemon->start())
        return false;
    client = daemon->connect();
    return client != nullptr;
}

} // namespace airlock::test
