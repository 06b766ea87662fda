// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"

#include <QObject>

#include <cstdint>
#include <deque>

namespace airlock {

class HistoryStore;

// The daemon's one event stream as its clients hear it: each event goes to the history first,
// and nobody hears of a fact before it is stored. A fact is committed at once (flush()); a
// batched fact (Event::batched, thousands in a build) waits, in order and with everything after
// it, for the writer's next batch, which is cut short for it (HistoryStore's
// batchedFactLatencyMs); output behind nothing passes at once and rides the 100 ms batch. While
// the history cannot be written, events pass (the daemon refuses new work meanwhile).
class HistoryGate final : public QObject {
    Q_OBJECT
public:
    explicit HistoryGate(HistoryStore &store, QObject *parent = nullptr);
    ~HistoryGate() override;

    void take(const airlock::Event &event);

Q_SIGNALS:
    void published(const airlock::Event &event);

private:
    // Publishes what waits and is now stored (all of it when `stored`).
    void release(bool stored = false);

    HistoryStore &m_store;
    struct Held {
        uint64_t batch;
        Event event;
    };
    std::deque<Held> m_held;
};

} // namespace airlock
