// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QSet>
#include <QString>

#include <sys/types.h>

namespace airlock {

// The host uids (and equal gids) a root daemon gives its sandboxes, one each.
struct HostUidRange {
    uid_t first = 0;
    uid_t count = 0;
    uid_t last() const { return first + count - 1; }
    bool contains(uid_t uid) const { return uid >= first && uid - first < count; }
    QString describe() const; // "FIRST-LAST"
};

// Above Debian's useradd subordinate ids (SUB_UID_MIN..SUB_UID_MAX, 100000..600100000) and
// systemd's container range (524288..1879048191), below its foreign range (0x7FFE0000): no account
// or subordinate range a stock host hands out reaches them.
inline constexpr HostUidRange kDefaultHostUids{0x70000000, 65536};

// "FIRST-LAST": at least 16 ids, none of them 0, 65534 or beyond 2^31 - 2.
Result<HostUidRange> parseHostUidRange(const QString &text);

// Refused (HostIdsTaken, naming the entry and the fix) when any line of the subordinate id files,
// or any passwd or group entry, reaches into the range: whoever holds it could become a sandbox's
// uid (read and plant files in its workspace, signal its processes).
Status checkHostUidRange(const HostUidRange &range, const QString &subuidFile = QStringLiteral("/etc/subuid"),
    const QString &subgidFile = QStringLiteral("/etc/subgid"));
// Only the subordinate id files (cheap enough to read before every sandbox).
Status checkSubordinateIds(const HostUidRange &range, const QString &subuidFile = QStringLiteral("/etc/subuid"),
    const QString &subgidFile = QStringLiteral("/etc/subgid"));

// Which uid of the range each sandbox holds, host-wide: one file per uid in a root-only folder
// (made with O_EXCL, holding "INSTANCE SANDBOX"), so two root daemons never hand out the same uid.
// In /run: every claim goes with a reboot, as every sandbox does.
class HostUidClaims {
public:
    HostUidClaims(HostUidRange range, QString instanceKey, QString dir = QStringLiteral("/run/airlock/host-uids"));
    const HostUidRange &range() const { return m_range; }
    // The next free uid of the range after the one this daemon claimed last (wrapping), now this
    // sandbox's: a claim costs the same with a thousand held, and a uid just let go of is not the
    // next one handed out.
    Result<uid_t> claim(const QString &sandboxId);
    // A sandbox taken over: its uid is still its own (claimed again if the claim went).
    bool reclaim(uid_t uid, const QString &sandboxId);
    void release(uid_t uid, const QString &sandboxId);
    // Claims of this daemon instance for sandboxes it no longer has.
    void releaseAllBut(const QSet<QString> &sandboxIds);

private:
    QString claimPath(uid_t uid) const;
    QByteArray claimText(const QString &sandboxId) const;
    bool ensureDir() const;
    // Makes the claim file: 0, or the errno (EEXIST: the uid is another sandbox's).
    int create(uid_t uid, const QString &sandboxId) const;

    HostUidRange m_range;
    QString m_key;
    QString m_dir;
    uid_t m_next = 0; // where the next claim starts looking, as an offset into the range
};

} // namespace airlock
