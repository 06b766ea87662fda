// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QString>

namespace airlock {

// One daemon per socket: an flock on "<socket>.lock" (holding the owner's pid), taken before the
// daemon touches anything else, so a second daemon that is refused has changed nothing.
class InstanceLock {
public:
    static Result<InstanceLock> acquire(const QString &socketPath);
    InstanceLock(InstanceLock &&other) noexcept;
    InstanceLock &operator=(InstanceLock &&) = delete;
    ~InstanceLock();

    // A short stable name for this daemon instance (hash of the socket path), used to keep its
    // cgroups apart from other daemons' on the same host.
    QString key() const { return m_key; }

private:
    InstanceLock(int fd, QString key) : m_fd(fd), m_key(std::move(key)) {}
    int m_fd = -1;
    QString m_key;
};

} // namespace airlock
