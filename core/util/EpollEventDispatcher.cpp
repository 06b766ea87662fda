// SPDX-License-Identifier: Apache-2.0
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QSocketNotifier>
#include <QTimerEvent>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <vector>

namespace airlock {

namespace {
constexpr qint64 kNsPerMs = 1'000'000;

qint64 nowNs()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What activates a notifier of each type, as for Qt's poll()-based dispatcher: a hang-up or an
// error is news to a reader and to a writer alike.
constexpr uint32_t kReadable = EPOLLIN | EPOLLHUP | EPOLLERR;
constexpr uint32_t kWritable = EPOLLOUT | EPOLLHUP | EPOLLERR;

uint64_t tag(int fd, uint32_t generation)
{
    return (uint64_t(generation) << 32) | uint32_t(fd);
}
} // namespace

uint32_t EpollEventDispatcher::Watched::events() const
{
    return (read ? EPOLLIN : 0u) | (write ? EPOLLOUT : 0u) | (exception ? EPOLLPRI : 0u);
}

EpollEventDispatcher::EpollEventDispatcher(QObject *parent)
    : QAbstractEventDispatcher(parent)
    , m_epoll(::epoll_create1(EPOLL_CLOEXEC))
    , m_wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
{
    if (m_epoll < 0 || m_wake < 0)
        return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag(m_wake, 0);
    if (::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wake, &ev) != 0) {
        ::close(m_wake);
        m_wake = -1;
    }
}

EpollEventDispatcher::~EpollEventDispatcher()
{
    if (m_wake >= 0)
        ::close(m_wake);
    if (m_epoll >= 0)
        ::close(m_epoll);
}

void EpollEventDispatcher::updateInterest(int fd)
{
    auto it = m_watched.find(fd);
    const uint32_t events = it == m_watched.end() ? 0 : it->events();
    if (!events) {
        if (it != m_watched.end())
            m_watched.erase(it);
        (void)::epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr); // it may be closed already: then it is gone
        return;
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag(fd, it->generation);
    if (::epoll_ctl(m_epoll, EPOLL_CTL_MOD, fd, &ev) == 0)
        return;
    if (errno == ENOENT && ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev) == 0)
        return;
    qWarning("EpollEventDispatcher: cannot watch descriptor %d: %s", fd, strerror(errno));
    m_watched.erase(it);
}

void EpollEventDispatcher::registerSocketNotifier(QSocketNotifier *notifier)
{
    const int fd = int(notifier->socket());
    Watched &w = m_watched[fd];
    if (!w.generation) {
        if (++m_lastGeneration == 0) // 0 is the wake-up's
            ++m_lastGeneration;
        w.generation = m_lastGeneration;
    }
    QSocketNotifier *&slot = notifier->type() == QSocketNotifier::Read ? w.read
        : notifier->type() == QSocketNotifier::Write                   ? w.write
                                                                       : w.exception;
    if (slot && slot != notifier)
        qWarning("EpollEventDispatcher: a second notifier of one type for descriptor %d replaces the first", fd);
    slot = notifier;
    updateInterest(fd);
}

void EpollEventDispatcher::unregisterSocketNotifier(QSocketNotifier *notifier)
{
    const int fd = int(notifier->socket());
    auto it = m_watched.find(fd);
    if (it == m_watched.end())
        return;
    for (QSocketNotifier **slot : {&it->read, &it->write, &it->exception})
        if (*slot == notifier)
            *slot = nullptr;
    updateInterest(fd);
}

void EpollEventDispatcher::registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object)
{
    const qint64 deadline = nowNs() + interval * kNsPerMs;
    m_timers.insert(timerId, Timer{interval, timerType, object, deadline});
    m_deadlines.emplace(deadline, timerId);
}

bool EpollEventDispatcher::unregisterTimer(int timerId)
{
    auto it = m_timers.find(timerId);
    if (it == m_timers.end())
        return false;
    m_deadlines.erase({it->deadlineNs, timerId});
    m_timers.erase(it);
    return true;
}

bool EpollEventDispatcher::unregisterTimers(QObject *object)
{
    bool any = false;
    for (auto it = m_timers.begin(); it != m_timers.end();) {
        if (it->object != object) {
            ++it;
            continue;
        }
        m_deadlines.erase({it->deadlineNs, it.key()});
        it = m_timers.erase(it);
        any = true;
    }
    return any;
}

QList<QAbstractEventDispatcher::TimerInfo> EpollEventDispatcher::registeredTimers(QObject *object) const
{
    QList<TimerInfo> timers;
    for (auto it = m_timers.cbegin(); it != m_timers.cend(); ++it)
        if (it->object == object)
            timers.append(TimerInfo(it.key(), int(it->intervalMs), it->type));
    return timers;
}

int EpollEventDispatcher::remainingTime(int timerId)
{
    auto it = m_timers.constFind(timerId);
    if (it == m_timers.cend())
        return -1;
    const qint64 left = it->deadlineNs - nowNs();
    return left <= 0 ? 0 : int((left + kNsPerMs - 1) / kNsPerMs);
}

void EpollEventDispatcher::wakeUp()
{
    // Once until the loop has seen it: a flood of posted events costs one write.
    if (m_wakePending.exchange(true, std::memory_order_acq_rel))
        return;
    const uint64_t one = 1;
    (void)!::write(m_wake, &one, sizeof one);
}

void EpollEventDispatcher::interrupt()
{
    m_interrupted.store(true, std::memory_order_release);
    wakeUp();
}

void EpollEventDispatcher::drainWakeUp()
{
    // Read first, then let the next wakeUp() write: the other order could eat a write made in
    // between and leave every later wakeUp() thinking one is still pending.
    uint64_t count = 0;
    (void)!::read(m_wake, &count, sizeof count);
    m_wakePending.store(false, std::memory_order_release);
}

int EpollEventDispatcher::waitMs(bool mayBlock) const
{
    if (!mayBlock)
        return 0;
    if (m_deadlines.empty())
        return -1;
    // Rounded up: a timer is never early, and a wait a little short of it would spin.
    const qint64 left = m_deadlines.begin()->first - nowNs();
    return left <= 0 ? 0 : int(std::min<qint64>((left + kNsPerMs - 1) / kNsPerMs, INT_MAX));
}

int EpollEventDispatcher::activateNotifiers(const epoll_event *ready, int count)
{
    int activated = 0;
    for (int i = 0; i < count; ++i) {
        const int fd = int(uint32_t(ready[i].data.u64));
        const uint32_t generation = uint32_t(ready[i].data.u64 >> 32);
        const uint32_t events = ready[i].events;
        if (fd == m_wake && generation == 0) {
            drainWakeUp();
            continue;
        }
        // Looked up again for each type: what a notifier's slot does may remove or replace any of them.
        const std::pair<QSocketNotifier * Watched::*, uint32_t> types[] = {{&Watched::read, kReadable},
            {&Watched::write, kWritable}, {&Watched::exception, EPOLLPRI | EPOLLHUP | EPOLLERR}};
        for (const auto &[member, mask] : types) {
            auto it = m_watched.constFind(fd);
            if (it == m_watched.cend() || it->generation != generation)
                break; // gone, or a new registration of a reused number: this event is not its
            QSocketNotifier *notifier = (*it).*member;
            if (!notifier || !(events & mask))
                continue;
            QEvent activation(QEvent::SockAct);
            QCoreApplication::sendEvent(notifier, &activation);
            ++activated;
        }
    }
    return activated;
}

int EpollEventDispatcher::activateTimers()
{
    if (m_deadlines.empty())
        return 0;
    const qint64 now = nowNs();
    // Only those due now: a zero-interval timer fires once per pass, and others get their turn.
    std::vector<int> due;
    for (auto it = m_deadlines.begin(); it != m_deadlines.end() && it->first <= now; ++it)
        due.push_back(it->second);
    int fired = 0;
    for (const int id : due) {
        auto it = m_timers.find(id);
        if (it == m_timers.end() || it->firing || it->deadlineNs > now)
            continue;
        // Armed again before its event, as Qt does; a late timer skips what it missed.
        m_deadlines.erase({it->deadlineNs, id});
        qint64 next = it->deadlineNs + it->intervalMs * kNsPerMs;
        if (next < now)
            next = now + it->intervalMs * kNsPerMs;
        it->deadlineNs = next;
        m_deadlines.emplace(next, id);
        it->firing = true;
        QObject *object = it->object;
        QTimerEvent event(id);
        QCoreApplication::sendEvent(object, &event);
        ++fired;
        if (auto again = m_timers.find(id); again != m_timers.end())
            again->firing = false;
    }
    return fired;
}

bool EpollEventDispatcher::processEvents(QEventLoop::ProcessEventsFlags flags)
{
    m_interrupted.store(false, std::memory_order_release);
    Q_EMIT awake();
    QCoreApplication::sendPostedEvents();

    const bool includeNotifiers = !(flags & QEventLoop::ExcludeSocketNotifiers);
    const bool includeTimers = !(flags & QEventLoop::X11ExcludeTimers);
    const bool mayBlock = (flags & QEventLoop::WaitForMoreEvents) && !m_interrupted.load(std::memory_order_acquire);
    if (mayBlock)
        Q_EMIT aboutToBlock();
    if (m_interrupted.load(std::memory_order_acquire))
        return false;

    int timeout = waitMs(mayBlock);
    if (!includeTimers && mayBlock)
        timeout = -1;
    int activated = 0;
    if (includeNotifiers) {
        epoll_event ready[256];
        const int count = ::epoll_wait(m_epoll, ready, 256, timeout);
        if (count > 0)
            activated += activateNotifiers(ready, count);
    } else {
        // Only the wake-up counts: a ready notifier must not end the wait, nor be told.
        pollfd wake{m_wake, POLLIN, 0};
        if (::poll(&wake, 1, timeout) > 0)
            drainWakeUp();
    }
    if (includeTimers)
        activated += activateTimers();
    return activated > 0;
}

} // namespace airlock
