// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStringList>
#include <QTextStream>

namespace airlock::cli {

// The whole of airlockctl: the global options, then one sub-command, with its output on `out` and
// `err`; returns the exit code. `args` leaves out the program name. The environment
// (AIRLOCK_RUN, AIRLOCK_AGENT, AIRLOCK_HOST, ...) is read as the installed program reads it, so a
// test runs a command in-process exactly as a shell would run it (a QCoreApplication must exist).
int runAirlockctl(QStringList args, QTextStream &out, QTextStream &err);

} // namespace airlock::cli
