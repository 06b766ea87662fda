// SPDX-License-Identifier: Apache-2.0
#include "sandbox/ProcStatus.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <unistd.h>
#include <utility>

namespace airlock {

namespace {

// The last number of a line that starts with `key`, or 0 when the line has none.
pid_t lastNumber(std::string_view line, std::string_view key)
{
    const size_t lastDigit = line.find_last_of("0123456789");
    if (lastDigit == std::string_view::npos || lastDigit < key.size())
        return 0;
    const size_t first = line.find_last_not_of("0123456789", lastDigit) + 1;
    int value = 0;
    std::from_chars(line.data() + first, line.data() + lastDigit + 1, value);
    return pid_t(value);
}

} // namespace

StatusPids statusPids(pid_t pid)
{
    char path[32];
    std::snprintf(path, sizeof path, "/proc/%d/status", int(pid));
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    constexpr std::string_view kNsPid = "NSpid:", kPPid = "PPid:";
    StatusPids out;
    bool haveNsPid = false, havePPid = false;
    char buf[4096];
    size_t used = 0;
    bool skipping = false; // inside a line longer than the buffer: none that is read here
    while (!(haveNsPid && havePPid)) {
        const ssize_t n = ::read(fd, buf + used, sizeof buf - used);
        if (n <= 0)
            break; // a last line without its newline is a cut one: not read
        used += size_t(n);
        size_t start = 0;
        for (const char *nl; (nl = static_cast<const char *>(std::memchr(buf + start, '\n', used - start)));) {
            const std::string_view line(buf + start, size_t(nl - (buf + start)));
            start = size_t(nl - buf) + 1;
            if (std::exchange(skipping, false))
                continue;
            if (!haveNsPid && line.starts_with(kNsPid))
                out.nsPid = lastNumber(line, kNsPid), haveNsPid = true;
            else if (!havePPid && line.starts_with(kPPid))
                out.parentHostPid = lastNumber(line, kPPid), havePPid = true;
        }
        if (start == 0 && used == sizeof buf) {
            skipping = true;
            used = 0;
        } else {
            std::memmove(buf, buf + start, used - start);
            used -= start;
        }
    }
    ::close(fd);
    return out;
}

} // namespace airlock
