// SPDX-License-Identifier: Apache-2.0
#include "engine/WorkspaceSpare.h"

#include "log/Log.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QPointer>

#include <sys/stat.h>
#include <unistd.h>

namespace airlock {

namespace {
std::shared_ptr<spdlog::logger> logger()
{
    static auto l = log::get("core.volume");
    return l;
}

QString markerOf(const QString &dir)
{
    return dir + QStringLiteral(".spare");
}

void removeSpare(const QString &dir)
{
    volume::removeWorkspace(dir);
    QFile::remove(markerOf(dir));
}
} // namespace

WorkspaceSpare::WorkspaceSpare(QString workspacesDir, volume::Driver driver, std::function<uint64_t()> defaultBytes,
    std::function<QString()> newId, QObject *parent)
    : QObject(parent)
    , m_dir(std::move(workspacesDir))
    , m_driver(driver)
    , m_defaultBytes(std::move(defaultBytes))
    , m_newId(std::move(newId))
{
    m_pool.setMaxThreadCount(2);
}

WorkspaceSpare::~WorkspaceSpare()
{
    m_pool.waitForDone(); // what it made last never reached m_ready: removed with the rest
    removeLeftovers(m_dir);
}

void WorkspaceSpare::removeLeftovers(const QString &workspacesDir)
{
    const QDir dir(workspacesDir);
    for (const QString &marker : dir.entryList({QStringLiteral("*.spare")}, QDir::Files))
        removeSpare(dir.filePath(marker.chopped(6)));
}

std::optional<QString> WorkspaceSpare::take(uint64_t bytes)
{
    // Made for another default (the disk's free space changed): made again.
    for (qsizetype i = m_ready.size() - 1; i >= 0; --i)
        if (m_ready.at(i).bytes != bytes)
            removeSpare(m_dir + QLatin1Char('/') + m_ready.takeAt(i).id);
    if (m_ready.isEmpty()) {
        refill();
        return std::nullopt;
    }
    const QString id = m_ready.takeFirst().id;
    QFile::remove(markerOf(m_dir + QLatin1Char('/') + id));
    refill();
    return id;
}

void WorkspaceSpare::refill()
{
    if (m_driver == volume::Driver::None)
        return;
    while (m_ready.size() + m_making < spares()) {
        const uint64_t bytes = m_defaultBytes();
        if (bytes == 0)
            return;
        ++m_making;
        const QString id = m_newId();
        const QString dir = m_dir + QLatin1Char('/') + id;
        QPointer<WorkspaceSpare> self(this);
        m_pool.start([self, dir, id, bytes, driver = m_driver] {
            // The marker first: a daemon killed meanwhile leaves something removeLeftovers finds.
            QFile marker(markerOf(dir));
            Status made = marker.open(QIODevice::WriteOnly) ? Status(Ok{})
                                                            : makeError(ErrorCode::IoError, marker.errorString());
            if (made && ::mkdir(QFile::encodeName(dir).constData(), 0700) != 0)
                made = makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(dir));
            if (made)
                made = volume::create(driver, dir, bytes, ::getuid(), ::getgid());
            if (!made) {
                logger()->warn("no spare workspace ahead of time: {}", made.error().message.toStdString());
                removeSpare(dir);
            }
            QMetaObject::invokeMethod(
                self,
                [self, id, bytes, ok = made.ok()] {
                    if (!self)
                        return;
                    --self->m_making;
                    if (ok)
                        self->m_ready.append(Ready{id, bytes});
                },
                Qt::QueuedConnection);
        });
    }
}

} // namespace airlock
