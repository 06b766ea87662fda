// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace airlock {

// A deadline for one system call of this thread that no file flag bounds and a sandbox's guest can
// make wait: a seccomp listener's receive (the guest keeps a copy and can take the notification
// first), the close() of a TCP socket the guest handed over with SO_LINGER set (Linux lingers in
// close() whatever O_NONBLOCK says). A POSIX timer of the thread's own interrupts it: its signal
// has a handler that does nothing and no SA_RESTART, and it fires only while armed, every period,
// so a thread kept from running past the first expiry, before it entered the call, is interrupted
// by the next.
class ThreadDeadline {
public:
    static constexpr int kMs = 50;

    // Makes this thread's timer. Called where a thread starts, before any sandbox can exhaust the
    // user's pending-signal allowance (RLIMIT_SIGPENDING, which timers count against); false when
    // it cannot be made.
    static bool prepare();

    // Armed for the scope of one call; usable() is false when the timer could not be made.
    class Armed {
    public:
        explicit Armed(int ms = kMs);
        ~Armed();
        Armed(const Armed &) = delete;
        Armed &operator=(const Armed &) = delete;
        bool usable() const { return m_usable; }

    private:
        bool m_usable;
    };
};

} // namespace airlock
