// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonObject>
#include <QList>
#include <QString>

#include <cstdint>
#include <optional>

namespace airlock {

// None: an empty network namespace. Allowlist: the same, plus the daemon's egress proxy at
// 127.0.0.1:kEgressProxyPort inside. Full: the host's network.
enum class NetworkMode { None, Allowlist, Full };
inline constexpr quint16 kEgressProxyPort = 3128;
QString networkModeName(NetworkMode mode);

// What stands between the sandbox and the host kernel (decision 6). Namespaces: bubblewrap's
// namespaces with seccomp and Landlock on the host kernel (the default). Gvisor: gVisor's runsc,
// a kernel in user space that the sandbox's system calls reach instead of the host's.
enum class Isolation { Namespaces, Gvisor };
QString isolationName(Isolation isolation);
std::optional<Isolation> isolationFromName(const QString &name);

struct Mount {
    QString hostPath; // absolute, must exist
    QString sandboxPath; // absolute inside the sandbox
    bool writable = false;
    // Writable in the sandbox, the host folder untouched: an overlay whose changes are kept apart
    // (decision 9); implies writable.
    bool copyOnWrite = false;
    friend bool operator==(const Mount &, const Mount &) = default;
};

// Unset optionals mean "no limit requested". Provider defaults fill the gaps; an explicitly
// requested limit that the host cannot enforce makes creation fail (fail closed).
struct Limits {
    std::optional<uint64_t> memoryBytes;
    std::optional<uint64_t> pids;
    std::optional<uint64_t> cpuSeconds; // per process, RLIMIT_CPU
    std::optional<uint64_t> cpuMillicores; // CPU bandwidth of the whole sandbox, 1000 = one core (cgroup cpu)
    std::optional<uint64_t> openFiles; // RLIMIT_NOFILE
    std::optional<uint64_t> fileSizeBytes; // RLIMIT_FSIZE
    std::optional<uint64_t> wallMs; // default per-exec timeout
    std::optional<uint64_t> outputBytes; // per exec, stdout+stderr; beyond it the exec is killed
    std::optional<uint64_t> tmpBytes; // size of each writable tmpfs: /tmp, /var/tmp, the home
    std::optional<uint64_t> diskBytes; // size of the workspace (an ext4 image); 0 = no limit, a plain folder
    friend bool operator==(const Limits &, const Limits &) = default;
};

// Where the host folders of mounts are: on this machine (each must exist), or on a daemon's that
// may be another machine (a client reading a request for it leaves that check to the daemon).
// Whether a mount's source must exist on this host now: a request made here (Local), one from
// another host (Remote), or a spec as a sandbox's record keeps it (Recorded: checked when the
// sandbox was made; a source removed since does not make the running sandbox unknown).
enum class HostPaths { Local, Remote, Recorded };

struct SandboxSpec {
    QString name;
    NetworkMode network = NetworkMode::None;
    QList<Mount> mounts;
    Limits limits;
    Isolation isolation = Isolation::Namespaces; // written to JSON only when not the default

    QJsonObject toJson() const;
    // Validates everything; errors name the field (as a JSON pointer) and what was expected.
    static Result<SandboxSpec> fromJson(const QJsonObject &json, HostPaths hostPaths = HostPaths::Local);
    friend bool operator==(const SandboxSpec &, const SandboxSpec &) = default;
};

Status validateSandboxName(const QString &name);
// "HOST:PATH[:ro|rw|cow]" as given on the command line.
Result<Mount> parseMountArg(const QString &arg);
Status validateMount(const Mount &mount, HostPaths hostPaths = HostPaths::Local);
// The values a limit (by its key in "limits": memoryBytes, pids, …) may take: "from 2 to 4194304".
QString limitRange(const QString &key);

} // namespace airlock
