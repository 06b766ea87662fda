// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace airlock::log {

// One named logger per subsystem ("core.sandbox", "core.rpc", "daemon.rpc", ...). Core never
// chooses sinks: a logger created here shares the sinks and level of spdlog's default logger,
// which each app/ main configures once at start-up.
std::shared_ptr<spdlog::logger> get(const char *subsystem);

} // namespace airlock::log
