// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QCommandLineOption>
#include <QStringList>

namespace airlock::app {

// `airlockd token create --name NAME [--scope S]… | ls | revoke NAME`: the bearer tokens remote
// clients present to airlockd --listen. Works whether or not the daemon runs (it reads the file
// again when it changes). Exit 0, 1 (could not write) or 2 (bad arguments).
int runTokenCommand(const QStringList &arguments);
QList<QCommandLineOption> tokenOptions(); // for its help and the manual page

} // namespace airlock::app
