// SPDX-License-Identifier: Apache-2.0
#include "AppLogging.h"

#include "log/Log.h"
#include "util/Paths.h"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <QtGlobal>

namespace airlock::app {

namespace {
void qtMessageToSpdlog(QtMsgType type, const QMessageLogContext &, const QString &message)
{
    static auto logger = log::get("qt");
    const std::string text = message.toStdString();
    switch (type) {
    case QtDebugMsg:
        logger->debug(text);
        break;
    case QtInfoMsg:
        logger->info(text);
        break;
    case QtWarningMsg:
        logger->warn(text);
        break;
    default:
        logger->error(text);
        break;
    }
}
} // namespace

void setupLogging(const LoggingOptions &options)
{
    std::vector<spdlog::sink_ptr> sinks;
    if (options.toStderr) {
        auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        sink->set_pattern("%^%n: %v%$");
        sink->set_level(options.verbose ? spdlog::level::debug : spdlog::level::warn);
        sinks.push_back(sink);
    }
    if (options.toFile && paths::ensurePrivateDir(paths::stateDir())) {
        try {
            auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
                QString(paths::stateDir() + QLatin1Char('/') + options.appName + QStringLiteral(".log")).toStdString(),
                5 * 1024 * 1024, 3);
            sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %P %l %n: %v");
            sink->set_level(options.verbose ? spdlog::level::debug : spdlog::level::info);
            sinks.push_back(sink);
        } catch (const spdlog::spdlog_ex &) {
            // An unwritable state directory must not stop the program; stderr still works.
        }
    }
    auto logger = std::make_shared<spdlog::logger>(options.appName.toStdString(), sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::debug);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
    qInstallMessageHandler(qtMessageToSpdlog);
}

} // namespace airlock::app
