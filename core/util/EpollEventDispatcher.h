// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractEventDispatcher>
#include <QHash>

#include <atomic>
#include <set>
#include <utility>

struct epoll_event;

namespace airlock {

// An event dispatcher whose cost per wake-up does not grow with what it watches. Qt's own (glib's,
// or its poll()-based one) hands every registered descriptor to the kernel on every iteration, so
// a daemon with a thousand sandboxes (three or four descriptors each) spends most of its time
// listing descriptors that have nothing to say. Here each descriptor is registered once with an
// epoll instance, and a wake-up costs what is ready. Timers are kept ordered by deadline, so the
// next one is found in O(log n). Semantics are QSocketNotifier's and QTimer's: level-triggered
// notifiers, timers that never fire early and skip rather than catch up when late.
//
// For one thread (the one that creates it): airlockd installs it for its main thread before the
// application object exists.
class EpollEventDispatcher final : public QAbstractEventDispatcher {
    Q_OBJECT
public:
    explicit EpollEventDispatcher(QObject *parent = nullptr);
    ~EpollEventDispatcher() override;

    // False when the kernel refused an epoll or eventfd descriptor; then it must not be installed.
    bool isValid() const { return m_epoll >= 0 && m_wake >= 0; }

    bool processEvents(QEventLoop::ProcessEventsFlags flags) override;

    void registerSocketNotifier(QSocketNotifier *notifier) override;
    void unregisterSocketNotifier(QSocketNotifier *notifier) override;

    void registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object) override;
    bool unregisterTimer(int timerId) override;
    bool unregisterTimers(QObject *object) override;
    QList<TimerInfo> registeredTimers(QObject *object) const override;
    int remainingTime(int timerId) override;

    void wakeUp() override;
    void interrupt() override;

private:
    struct Watched {
        QSocketNotifier *read = nullptr;
        QSocketNotifier *write = nullptr;
        QSocketNotifier *exception = nullptr;
        // Which registration of the descriptor this is: an event the kernel reported for an
        // earlier one (closed, its number since reused) is not this one's.
        uint32_t generation = 0;
        uint32_t events() const;
    };
    struct Timer {
        qint64 intervalMs;
        Qt::TimerType type;
        QObject *object;
        qint64 deadlineNs;
        bool firing = false; // its event is being delivered: a nested loop does not deliver it again
    };

    void updateInterest(int fd);
    int activateNotifiers(const epoll_event *ready, int count);
    int activateTimers();
    int waitMs(bool mayBlock) const;
    void drainWakeUp();

    int m_epoll = -1;
    int m_wake = -1; // an eventfd: wakeUp() from any thread
    std::atomic<bool> m_wakePending{false};
    std::atomic<bool> m_interrupted{false};
    QHash<int, Watched> m_watched; // by descriptor
    uint32_t m_lastGeneration = 0; // the wake-up eventfd's is 0
    QHash<int, Timer> m_timers; // by timer id
    std::set<std::pair<qint64, int>> m_deadlines; // (deadline, timer id), soonest first
};

} // namespace airlock
