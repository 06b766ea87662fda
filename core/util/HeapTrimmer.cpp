// SPDX-License-Identifier: Apache-2.0
#include "util/HeapTrimmer.h"

#include "log/Log.h"

#include <QFile>

#include <malloc.h>

namespace airlock {

namespace {
std::shared_ptr<spdlog::logger> logger()
{
    static auto l = log::get("core.heap");
    return l;
}

qint64 residentBytes()
{
    QFile statm(QStringLiteral("/proc/self/statm"));
    if (!statm.open(QIODevice::ReadOnly))
        return 0;
    return statm.readAll().split(' ').value(1).toLongLong() * 4096;
}
} // namespace

HeapTrimmer::HeapTrimmer(qint64 thresholdBytes, int intervalMs, QObject *parent)
    : QObject(parent)
    , m_threshold(thresholdBytes)
{
    m_timer.setTimerType(Qt::VeryCoarseTimer);
    connect(&m_timer, &QTimer::timeout, this, [this] {
        // Once per change: a heap left as it was trimmed has nothing more to give.
        const struct mallinfo2 heap = ::mallinfo2();
        const qint64 shape = qint64(heap.arena) ^ (qint64(heap.fordblks) << 1);
        if (shape == m_lastShape)
            return;
        if (const qint64 returned = trimIfAbove(m_threshold); returned > 0)
            logger()->debug("gave {} MiB of freed heap back to the system", returned >> 20);
        const struct mallinfo2 after = ::mallinfo2();
        m_lastShape = qint64(after.arena) ^ (qint64(after.fordblks) << 1);
    });
    m_timer.start(intervalMs);
}

qint64 HeapTrimmer::trimIfAbove(qint64 thresholdBytes)
{
    const struct mallinfo2 heap = ::mallinfo2();
    if (qint64(heap.fordblks) <= thresholdBytes)
        return 0;
    const qint64 before = residentBytes();
    ::malloc_trim(0);
    return std::max<qint64>(0, before - residentBytes());
}

} // namespace airlock
