// SPDX-License-Identifier: Apache-2.0
// HeapTrimmer: freed heap goes back to the system above the threshold, and not below it.
#include "util/HeapTrimmer.h"

#include <QFile>
#include <QTest>

#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <vector>

using namespace airlock;

namespace {
qint64 residentBytes()
{
    QFile statm(QStringLiteral("/proc/self/statm"));
    return statm.open(QIODevice::ReadOnly) ? statm.readAll().split(' ').value(1).toLongLong() * 4096 : 0;
}

// 256 MiB in 16 KiB blocks, touched; then 15 of every 16 freed, so that what is free lies in holes
// between blocks still held (what a flood of output frames leaves) and free() itself cannot hand
// it back from the top of the heap.
std::vector<void *> fragmentedHeap()
{
    std::vector<void *> blocks(16384);
    for (void *&b : blocks) {
        b = std::malloc(16 * 1024);
        std::memset(b, 0x5a, 16 * 1024);
    }
    std::vector<void *> kept;
    for (size_t i = 0; i < blocks.size(); ++i)
        if (i % 16 == 15)
            kept.push_back(blocks[i]);
        else
            std::free(blocks[i]);
    return kept;
}
} // namespace

class TstHeapTrimmer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void belowTheThresholdNothingIsDone()
    {
        std::vector<void *> kept = fragmentedHeap();
        const qint64 before = residentBytes();
        QCOMPARE(HeapTrimmer::trimIfAbove(qint64(1) << 40), qint64(0));
        QVERIFY(residentBytes() > before - (8 << 20)); // still there
        for (void *b : kept)
            std::free(b);
        ::malloc_trim(0);
    }

    void aboveItTheHolesGoBack()
    {
        std::vector<void *> kept = fragmentedHeap();
        QVERIFY(qint64(::mallinfo2().fordblks) > (200ll << 20));
        const qint64 before = residentBytes();
        const qint64 returned = HeapTrimmer::trimIfAbove(32ll << 20);
        QVERIFY2(returned > (150ll << 20), qPrintable(QString::number(returned >> 20) + QStringLiteral(" MiB")));
        QVERIFY(residentBytes() < before - (150ll << 20));
        // What is still held is intact.
        for (void *b : kept) {
            QCOMPARE(static_cast<unsigned char *>(b)[0], 0x5a);
            QCOMPARE(static_cast<unsigned char *>(b)[16 * 1024 - 1], 0x5a);
            std::free(b);
        }
    }
};

QTEST_GUILESS_MAIN(TstHeapTrimmer)
#include "tst_heap_trimmer.moc"
