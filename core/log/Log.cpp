// SPDX-License-Identifier: Apache-2.0
#include "log/Log.h"

#include <mutex>

namespace airlock::log {

std::shared_ptr<spdlog::logger> get(const char *subsystem)
{
    static std::mutex mutex;
    const std::lock_guard lock(mutex);
    if (auto existing = spdlog::get(subsystem))
        return existing;
    const auto base = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>(subsystem, base->sinks().begin(), base->sinks().end());
    logger->set_level(base->level());
    logger->flush_on(base->flush_level()); // what the default logger writes at once, so does this one
    spdlog::register_logger(logger);
    return logger;
}

} // namespace airlock::log
