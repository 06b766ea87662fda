// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QObject>
#include <QTimer>

namespace airlock {

// Gives the daemon's freed heap back to the system after a burst. A flood of output leaves glibc's
// arenas holding memory nothing uses any more: the daemon's RSS stays high, and so does the cost of
// anything that copies its page tables. Every interval it looks at what the heap holds free
// (mallinfo2, cheap) and trims when that is above the threshold.
class HeapTrimmer final : public QObject {
    Q_OBJECT
public:
    HeapTrimmer(qint64 thresholdBytes, int intervalMs, QObject *parent = nullptr);

    // Trims now if more than thresholdBytes are free in the heap; how many bytes that gave back
    // (RSS before less after, 0 when nothing was done).
    static qint64 trimIfAbove(qint64 thresholdBytes);

private:
    QTimer m_timer;
    qint64 m_threshold;
    qint64 m_lastShape = -1; // the heap's size and free bytes as the last look left them
};

} // namespace airlock
