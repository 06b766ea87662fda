// SPDX-License-Identifier: Apache-2.0
#include "history/HistoryGate.h"

#include "history/HistoryStore.h"

#include <QMetaObject>

namespace airlock {

HistoryGate::HistoryGate(HistoryStore &store, QObject *parent) : QObject(parent), m_store(store)
{
    // Called on the writer thread: only a queued call crosses over (and is dropped with us).
    m_store.setBatchListener([this] { QMetaObject::invokeMethod(this, [this] { release(); }, Qt::QueuedConnection); });
}

HistoryGate::~HistoryGate()
{
    m_store.setBatchListener(nullptr);
}

void HistoryGate::take(const Event &event)
{
    const uint64_t batch = m_store.append(event);
    if (event.committedFirst()) {
        // Everything appended before it is committed with it.
        (void)m_store.flush();
        release(true);
        Q_EMIT published(event);
    } else if (event.batched || !m_held.empty()) {
        m_held.push_back({batch, event});
    } else {
        Q_EMIT published(event);
    }
}

void HistoryGate::release(bool stored)
{
    const uint64_t finished = m_store.finishedBatches();
    const bool writing = m_store.writable().ok();
    while (!m_held.empty() && (stored || !writing || m_held.front().batch <= finished)) {
        const Event event = std::move(m_held.front().event);
        m_held.pop_front();
        Q_EMIT published(event);
    }
}

} // namespace airlock
