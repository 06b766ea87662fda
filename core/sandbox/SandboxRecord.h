// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Certificates.h"

#include "model/SandboxSpec.h"
#include "util/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>

#include <optional>
#include <sys/types.h>

namespace airlock {

// A process named by its pid and its start time (field 22 of /proc/PID/stat, in clock ticks since
// boot): a pid that was reused by another process since does not match.
struct ProcessRef {
    pid_t pid = 0;
    quint64 startTime = 0;
    // The live process this names, as a pidfd; -1 when it is gone (or was never this one).
    int open() const;
    static std::optional<ProcessRef> of(pid_t pid);
};

// What a daemon keeps about each sandbox it runs, so that the next daemon (after a stop, a crash
// or an upgrade) can take the sandbox over. Read back strictly: a record that does not parse, or
// names processes that are not the sandbox's any more, is never acted on as it says.
struct SandboxRecord {
    static constexpr int kFormat = 1;

    QString id;
    SandboxSpec spec; // as launched: its network, mounts and limits are the policy's
    QString run;
    QString createdThrough; // SandboxSetup::createdThrough
    QString preset;
    std::optional<QJsonObject> userLayer; // the person's defaults as they were (none: no file)
    QJsonObject overrides; // its own layer
    int policyVersion = 1;
    QString workspaceDir;
    std::optional<uid_t> hostUid;
    ProcessRef bwrap; // the runtime's top process: bwrap, or runsc (the key keeps its first name)
    ProcessRef init; // the guest, PID 1 inside; none under gVisor (its tasks are not host processes)
    QByteArray token; // what the guest asks a daemon that resumes it for
    qint64 createdMs = 0;
    int landlockAbi = 0;
    QString daemonVersion;
    // Set once a daemon found the sandbox gone: it stays listed, with its workspace, until rm.
    QString ended;
    bool oneShot = false; // SandboxSetup::oneShot
    bool warm = false; // SandboxSetup::warm: nobody's yet, and removed by the next daemon
    // Its authority for brokered hosts (key and certificate) and those hosts: what it trusts is
    // fixed when it starts, so a daemon that takes it over goes on with the same one.
    x509::Pem brokerAuthority;
    QStringList brokerHosts;

    QJsonObject toJson() const;
    static Result<SandboxRecord> fromJson(const QJsonObject &json);
};

// <dir>/<id>/record.json (0600) and <dir>/<id>/guest.sock (the guest's resume socket), in a
// directory of the daemon's alone (0700).
class SandboxRecords {
public:
    explicit SandboxRecords(QString dir)
        : m_dir(std::move(dir))
    {
    }

    const QString &dir() const { return m_dir; }
    // Written aside and renamed into place: a reader sees the old record or the new, never a part.
    // Not synced: a daemon's crash keeps the page cache, and a machine's takes the sandbox along.
    Status write(const SandboxRecord &record) const;
    void remove(const QString &id) const;
    // Every record on disk, each parsed or with the reason it cannot be.
    QList<std::pair<QString, Result<SandboxRecord>>> readAll() const;
    // A listening socket for the guest of sandbox `id` (bound by path under this directory).
    Result<int> listen(const QString &id) const;
    // Connected to that socket (blocking connect, then non-blocking), or why not.
    Result<int> connect(const QString &id) const;

private:
    QString m_dir;
};

} // namespace airlock
