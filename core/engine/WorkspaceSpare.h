// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/WorkspaceVolume.h"

#include <QObject>
#include <QString>
#include <QThreadPool>

#include <functional>
#include <optional>

namespace airlock {

// A few workspaces of the default size made ahead of time, so that creating a sandbox does not
// wait for its image and the mount. Each is made on a thread (two at most) under the id of the
// sandbox that will take it ("ID" with its image "ID.ext4" beside, and "ID.spare" saying it is
// nobody's yet), and another is started after each take, so that a burst of creates finds them
// ready. What a daemon that was killed left of them is removed at the next start (removeLeftovers).
class WorkspaceSpare final : public QObject {
    Q_OBJECT
public:
    // `defaultBytes` is the size a default workspace has now (0: none can be made).
    WorkspaceSpare(QString workspacesDir, volume::Driver driver, std::function<uint64_t()> defaultBytes,
        std::function<QString()> newId, QObject *parent = nullptr);
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
    // A loop device costs nothing while it waits; a fuse2fs image is a process of the user's.
    int spares() const { return m_driver == volume::Driver::Loop ? 4 : 1; }
    QList<Ready> m_ready;
    int m_making = 0;
    QThreadPool m_pool;
};

} // namespace airlock
