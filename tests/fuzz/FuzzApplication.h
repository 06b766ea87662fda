// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QCoreApplication>

namespace airlock::fuzz {

// The QCoreApplication a target needs for events, sockets and timers: made on the first input and
// kept for the rest of the run.
inline void ensureApplication()
{
    static int argc = 1;
    static char name[] = "fuzz";
    static char *argv[] = {name, nullptr};
    static QCoreApplication app(argc, argv);
}

} // namespace airlock::fuzz
