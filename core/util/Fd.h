// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <utility>

#include <unistd.h>

namespace airlock {

// An owned descriptor.
struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f)
        : fd(f)
    {
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    Fd(Fd &&o) noexcept
        : fd(std::exchange(o.fd, -1))
    {
    }
    Fd &operator=(Fd &&o) noexcept
    {
        if (this != &o) {
            if (fd >= 0)
                ::close(fd);
            fd = std::exchange(o.fd, -1);
        }
        return *this;
    }
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

} // namespace airlock
