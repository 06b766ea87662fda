// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"

#include <QObject>

#include <cstdint>
#include <deque>

namespace airlock {

class HistoryStore;

// The daemon's one event stream as its clients hear it: each event goes to the history first,
// and nobody hears of anything before it is stored. A fact is committed at once (flush()); output
// and a batched fact (Event::batched, thousands in a build) wait, in order and with everything
// after them, for the writer's next batch, which is cut short for them (HistoryStore's
// batchedFactLatencyMs). Output past its execution's head waits for no batch: none stores it in
// order (its tail is written apart, once a second), so it is heard in its turn. What waits is
// bounded: past kMaxHeldOutput bytes of output (a writer that lags), the history is flushed, and
// the daemon's main loop, which reads the sandboxes' output, waits for the disk like a slow
// client's socket would make it (the guests' own window,
// wire::kRetainedOutputLimit, is what normally holds a flood back). While the history cannot be
// written, events pass (the daemon refuses new work meanwhile).
//
// Events are published in the order taken, also when a subscriber's handling of one leads to
// another (it is queued behind and published by the same loop).
class HistoryGate final : public QObject {
    Q_OBJECT
public:
    static constexpr qint64 kMaxHeldOutput = 64 << 20;

    explicit HistoryGate(HistoryStore &store, QObject *parent = nullptr);
    ~HistoryGate() override;

    void take(const airlock::Event &event);
    qsizetype heldCount() const { return qsizetype(m_held.size()); }

Q_SIGNALS:
    void published(const airlock::Event &event);

private:
    // Publishes, in order, what waits and may now be heard.
    void release();
    // Everything taken so far is stored.
    void flush();

    HistoryStore &m_store;
    struct Held {
        uint64_t batch; // the writer's batch that stores it
        bool waits; // for that batch (a batched fact not known to be stored yet)
        Event event;
    };
    std::deque<Held> m_held;
    qint64 m_heldOutput = 0;
    bool m_publishing = false;
};

} // namespace airlock
