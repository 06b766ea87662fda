// SPDX-License-Identifier: Apache-2.0
#include "util/ThreadDeadline.h"

#include <csignal>
#include <ctime>
#include <pthread.h>
#include <unistd.h>

namespace airlock {

namespace {
int deadlineSignal()
{
    static const int signal = [] {
        const int sig = SIGRTMIN + 7;
        struct sigaction action { };
        action.sa_handler = [](int) {};
        action.sa_flags = 0; // with SA_RESTART the kernel would restart the call it interrupts
        sigemptyset(&action.sa_mask);
        ::sigaction(sig, &action, nullptr);
        return sig;
    }();
    return signal;
}

struct ThreadTimer {
    timer_t timer{};
    bool made = false;
    ~ThreadTimer()
    {
        if (made)
            ::timer_delete(timer);
    }
    void set(int ms) const
    {
        itimerspec at{};
        at.it_value.tv_sec = ms / 1000;
        at.it_value.tv_nsec = long(ms % 1000) * 1000000L;
        at.it_interval = at.it_value;
        ::timer_settime(timer, 0, &at, nullptr);
    }
};

ThreadTimer &thisThreadsTimer()
{
    thread_local ThreadTimer t;
    return t;
}
} // namespace

bool ThreadDeadline::prepare()
{
    ThreadTimer &t = thisThreadsTimer();
    if (t.made)
        return true;
    const int signal = deadlineSignal();
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = signal;
    event._sigev_un._tid = ::gettid();
    t.made = ::timer_create(CLOCK_MONOTONIC, &event, &t.timer) == 0;
    return t.made;
}

ThreadDeadline::Armed::Armed(int ms)
    : m_usable(prepare())
{
    if (m_usable)
        thisThreadsTimer().set(ms);
}

ThreadDeadline::Armed::~Armed()
{
    if (m_usable)
        thisThreadsTimer().set(0);
}

} // namespace airlock
