// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock {

// A copy of the guest on a tmpfs (/dev/shm), for sandboxes to mount instead of the binary itself.
// A bind mount shows its source's path on its filesystem in the sandbox's /proc/self/mountinfo,
// however it was bound; the binary's own path can name a home or a build tree, this one names
// nothing but the daemon instance's key. Removed when it goes (sandboxes that outlive the daemon
// keep theirs: a mount holds the file).
class GuestImage {
public:
    // Empty path() (and `why` says so) when no copy can be made or run from there: then sandboxes
    // mount the binary itself.
    GuestImage(const QString &guestPath, const QString &instanceKey, QString *why = nullptr,
        const QString &dir = QStringLiteral("/dev/shm"));
    ~GuestImage();
    GuestImage(const GuestImage &) = delete;
    GuestImage &operator=(const GuestImage &) = delete;
    QString path() const { return m_path; }

private:
    QString m_path;
};

} // namespace airlock
