// SPDX-License-Identifier: Apache-2.0
#include "history/HistoryGate.h"

#include "history/HistoryStore.h"

#include <QMetaObject>

namespace airlock {

HistoryGate::HistoryGate(HistoryStore &store, QObject *parent)
    : QObject(parent)
    , m_store(store)
{
    // Called on the writer thread: only a queued call crosses over (and is dropped with us).
    m_store.setBatchListener([this] {
        QMetaObject::invokeMethod(
            this, [this] { release(); }, Qt::QueuedConnection);
    });
}

HistoryGate::~HistoryGate()
{
    m_store.setBatchListener(nullptr);
}

void HistoryGate::take(const Event &event)
{
    const uint64_t batch = m_store.append(event);
    if (event.committedFirst())
        flush(); // everything taken before it is committed with it
    // Output waits for its batch like a batched fact: what a client is shown is stored.
    const bool waits = event.batched || event.isOutput();
    if (m_held.empty() && !m_publishing && !waits) {
        m_publishing = true;
        Q_EMIT published(event);
        m_publishing = false;
    } else {
        m_held.push_back({batch, waits, event});
        m_heldOutput += event.data.size();
        if (m_heldOutput > kMaxHeldOutput)
            flush();
    }
    release();
}

void HistoryGate::flush()
{
    (void)m_store.flush();
    for (Held &h : m_held)
        h.waits = false;
}

void HistoryGate::release()
{
    if (m_publishing || m_held.empty())
        return; // (publishing: the loop below, further up the stack, publishes it in its turn)
    m_publishing = true;
    const bool writing = m_store.writable().ok();
    const uint64_t finished = m_store.finishedBatches();
    while (!m_held.empty()) {
        if (m_held.front().waits && writing && m_held.front().batch > finished)
            break;
        const Event event = std::move(m_held.front().event);
        m_held.pop_front();
        m_heldOutput -= event.data.size();
        Q_EMIT published(event);
    }
    m_publishing = false;
}

} // namespace airlock
