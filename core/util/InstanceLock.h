// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QString>

namespace airlock {

// One daemon per socket and per data directory: flocks on "<socket>.lock" and "<data>/daemon.lock"
// (each holding the owner's pid), taken before the daemon touches anything else, so a second
// daemon that is refused has changed nothing.
class InstanceLock {
public:
    static Result<InstanceLock> acquire(const QString &socketPath, const QString &dataDir);
    InstanceLock(InstanceLock &&other) noexcept;
    InstanceLock &operator=(InstanceLock &&) = delete;
    ~InstanceLock();

    // A short stable name for this daemon instance (hash of the data directory), used to keep its
    // cgroups apart from other daemons' on the same host.
    QString key() const { return m_key; }

private:
    InstanceLock(int socketFd, int dataFd, QString key)
        : m_socketFd(socketFd)
        , m_dataFd(dataFd)
        , m_key(std::move(key))
    {
    }
    int m_socketFd = -1;
    int m_dataFd = -1;
    QString m_key;
};

} // namespace airlock
