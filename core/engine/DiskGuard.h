// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QObject>
#include <QString>

#include <functional>

class QTimer;

namespace airlock {

// Keeps the disk that holds the workspaces and the history from filling. Workspace images are
// sparse, so their sizes together may promise more than the disk has; what bounds them together is
// this watch, as a hypervisor pauses a guest whose thin disk meets a full host disk. It reads what
// is free every interval; once that falls below twice the reserve it also notes how much of the
// disk each image takes, and while less than the reserve is free, a sandbox whose image grew since
// the last look is reported (the engine ends it and keeps its workspace). A full look costs one
// statvfs while the disk has room, and one stat per image only when it has not.
class DiskGuard final : public QObject {
    Q_OBJECT
public:
    struct Image {
        QString sandboxId;
        QString path;
    };
    DiskGuard(QString dir, uint64_t reserveBytes, std::function<QList<Image>()> images, int intervalMs,
        QObject *parent = nullptr);

    void check(); // one look now (the timer calls it)

Q_SIGNALS:
    void grewOnAFullDisk(const QString &sandboxId, uint64_t freeBytes);

private:
    QString m_dir;
    uint64_t m_reserve;
    std::function<QList<Image>()> m_images;
    QHash<QString, qint64> m_blocks; // bytes each image took at the last look, while watching
    QTimer *m_timer;
};

} // namespace airlock
