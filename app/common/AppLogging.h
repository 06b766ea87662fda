// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock::app {

struct LoggingOptions {
    QString appName; // log file name: <state dir>/<appName>.log
    bool verbose = false; // debug level everywhere
    bool toStderr = true; // CLI and daemon in the foreground
    bool toFile = true; // rotating file under the XDG state directory
};

// Attaches the sinks to spdlog's default logger (which every subsystem logger copies) and routes
// Qt's own messages into spdlog.
void setupLogging(const LoggingOptions &options);

} // namespace airlock::app
