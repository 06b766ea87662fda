// SPDX-License-Identifier: Apache-2.0
#include "engine/DiskGuard.h"

#include "sandbox/WorkspaceVolume.h"

#include <QFile>
#include <QTimer>

#include <sys/stat.h>

namespace airlock {

DiskGuard::DiskGuard(
    QString dir, uint64_t reserveBytes, std::function<QList<Image>()> images, int intervalMs, QObject *parent)
    : QObject(parent)
    , m_dir(std::move(dir))
    , m_reserve(reserveBytes)
    , m_images(std::move(images))
    , m_timer(new QTimer(this))
{
    m_timer->setTimerType(Qt::CoarseTimer);
    connect(m_timer, &QTimer::timeout, this, &DiskGuard::check);
    m_timer->start(intervalMs);
}

void DiskGuard::check()
{
    const std::optional<uint64_t> free = volume::freeBytes(m_dir);
    if (!free || *free >= 2 * m_reserve) {
        m_blocks.clear();
        return;
    }
    QHash<QString, qint64> now;
    for (const Image &image : m_images()) {
        struct stat st { };
        if (::stat(QFile::encodeName(image.path).constData(), &st) != 0)
            continue;
        const qint64 taken = qint64(st.st_blocks) * 512;
        now.insert(image.path, taken);
        const auto before = m_blocks.constFind(image.path);
        if (*free < m_reserve && before != m_blocks.cend() && taken > *before)
            Q_EMIT grewOnAFullDisk(image.sandboxId, *free);
    }
    m_blocks = std::move(now);
}

} // namespace airlock
