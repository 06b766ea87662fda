// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/WorkspaceVolume.h"

#include <QObject>
#include <QString>
#include <QThreadPool>

#include <functional>
#include <optional>

namespace airlock {

// One workspace of the default size made ahead of time, so that creating a sandbox does not wait
// for mkfs and the mount (about 25 ms of the 40 a create would take). It is made on a thread of
// its own under the id of the sandbox that will take it ("ID" with its image "ID.ext4" beside,
// and "ID.spare" saying it is nobody's yet), and made again after each take. What a daemon that
// was killed left of one is removed at the next start (removeLeftovers).
class WorkspaceSpare final : public QObject {
    Q_OBJECT
public:
    // `defaultBytes` is the size a default workspace has now (0: none can be made).
    WorkspaceSpare(QString workspacesDir, volume::Driver driver, std::function<uint64_t()> defaultBytes, std::function<QString()> newId,
                   QObject *parent = nullptr);
    ~WorkspaceSpare() override; // waits for one being made, and removes it

    // The id of a ready spare of exactly `bytes`, now the caller's (its folder is
    // workspacesDir/ID, 0700, the daemon user's: chown it for another uid); a new one is started.
    std::optional<QString> take(uint64_t bytes);
    void refill();

    static void removeLeftovers(const QString &workspacesDir);

private:
    QString m_dir;
    volume::Driver m_driver;
    std::function<uint64_t()> m_defaultBytes;
    std::function<QString()> m_newId;
    struct Ready {
        QString id;
        uint64_t bytes = 0;
    };
    std::optional<Ready> m_ready;
    bool m_making = false;
    QThreadPool m_pool;
};

} // namespace airlock
