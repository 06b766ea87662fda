// SPDX-License-Identifier: Apache-2.0
// Diagnostics for airlock-guest. The guest's stderr is the daemon's sandbox log, so every line
// carries a fixed prefix and nothing is printed unless --verbose was given.
#pragma once

#include <cstdarg>
#include <cstdio>

namespace airlock::guest {

inline bool g_verbose = false;

[[gnu::format(printf, 1, 2)]] inline void logv(const char *fmt, ...)
{
    if (!g_verbose)
        return;
    std::fputs("airlock-guest: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

} // namespace airlock::guest
