// SPDX-License-Identifier: Apache-2.0
#include "model/SandboxSpec.h"
#include "model/Units.h"

#include "model/SandboxHome.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QRegularExpression>

namespace airlock {

namespace {
Error invalid(const QString &pointer, const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1: %2").arg(pointer, what));
}

// Paths inside the sandbox that Airlock itself provides; a mount may not replace them.
bool isReservedSandboxPath(const QString &path)
{
    static const QStringList reserved = {QStringLiteral("/"), QStringLiteral("/proc"), QStringLiteral("/dev"),
        QStringLiteral("/.airlock"), QStringLiteral("/workspace"), QStringLiteral("/tmp")};
    for (const QString &r : reserved)
        if (path == r || (r != QLatin1String("/") && path.startsWith(r + QLatin1Char('/'))))
            return true;
    // The home may hold mounts (a cache, a project), but not over itself or its startup files.
    const QString home = QString::fromLatin1(kSandboxHome);
    if (path == QLatin1String("/home") || path == home)
        return true;
    for (const char *file : kHomeStartupFiles) {
        const QString f = home + QLatin1Char('/') + QLatin1String(file);
        if (path == f || f.startsWith(path + QLatin1Char('/')))
            return true;
    }
    for (const char *dir : kHomeStartupDirs) {
        const QString d = home + QLatin1Char('/') + QLatin1String(dir);
        if (path == d || path.startsWith(d + QLatin1Char('/')) || d.startsWith(path + QLatin1Char('/')))
            return true;
    }
    return false;
}

// What each limit may be: what the kernel takes (pids.max below PID_MAX_LIMIT, RLIMIT_NOFILE up
// to the default fs.nr_open), or a year, or 4 PiB (below what JSON numbers carry exactly). A
// value outside is an input error here, never a failure of the cgroup or rlimit that applies it.
enum class LimitUnit { Bytes, Count, Seconds, Ms };
struct LimitField {
    const char *key;
    std::optional<uint64_t> Limits::*member;
    uint64_t min, max;
    LimitUnit unit;
    bool zeroIsNone = false; // 0 asks for no limit at all
};
constexpr uint64_t kYearSeconds = 365ull * 86'400;
constexpr LimitField kLimitFields[] = {
    {"memoryBytes", &Limits::memoryBytes, 8ull << 20, 1ull << 52, LimitUnit::Bytes},
    {"pids", &Limits::pids, 2, 4'194'304, LimitUnit::Count},
    {"cpuSeconds", &Limits::cpuSeconds, 1, kYearSeconds, LimitUnit::Seconds},
    {"cpuMillicores", &Limits::cpuMillicores, 10, 1'024'000, LimitUnit::Count}, // a hundredth of a core to 1024
    {"tmpBytes", &Limits::tmpBytes, 1ull << 20, 1ull << 40, LimitUnit::Bytes},
    {"diskBytes", &Limits::diskBytes, 16ull << 20, 1ull << 50, LimitUnit::Bytes,
        true}, // ext4 takes up to 1 EiB; 1 PiB is plenty
    {"openFiles", &Limits::openFiles, 1, 1'048'576, LimitUnit::Count},
    {"fileSizeBytes", &Limits::fileSizeBytes, 1, 1ull << 52, LimitUnit::Bytes},
    {"wallMs", &Limits::wallMs, 1, kYearSeconds * 1000, LimitUnit::Ms},
    {"outputBytes", &Limits::outputBytes, 1, 1ull << 52, LimitUnit::Bytes},
};

QString formatLimit(uint64_t v, LimitUnit unit)
{
    switch (unit) {
    case LimitUnit::Bytes:
        return units::formatBytes(v);
    case LimitUnit::Count:
        return QString::number(v);
    case LimitUnit::Seconds:
        return units::formatDurationMs(v * 1000);
    case LimitUnit::Ms:
        return units::formatDurationMs(v);
    }
    return {};
}
} // namespace

QString limitRange(const QString &key)
{
    for (const LimitField &f : kLimitFields)
        if (key == QLatin1String(f.key))
            return QStringLiteral("%1from %2 to %3")
                .arg(f.zeroIsNone ? QStringLiteral("0 (no limit) or ") : QString(), formatLimit(f.min, f.unit),
                    formatLimit(f.max, f.unit));
    return {};
}

QString networkModeName(NetworkMode mode)
{
    switch (mode) {
    case NetworkMode::None:
        return QStringLiteral("none");
    case NetworkMode::Allowlist:
        return QStringLiteral("allowlist");
    case NetworkMode::Full:
        return QStringLiteral("full");
    }
    return {};
}

QString isolationName(Isolation isolation)
{
    return isolation == Isolation::Gvisor ? QStringLiteral("gvisor") : QStringLiteral("namespaces");
}

std::optional<Isolation> isolationFromName(const QString &name)
{
    if (name == QLatin1String("namespaces"))
        return Isolation::Namespaces;
    if (name == QLatin1String("gvisor"))
        return Isolation::Gvisor;
    return std::nullopt;
}

Status validateSandboxName(const QString &name)
{
    // Anchored at both ends ("$" alone would let a trailing newline through).
    static const QRegularExpression re(
        QRegularExpression::anchoredPattern(QStringLiteral("[a-z0-9][a-z0-9_.-]{0,62}")));
    if (!re.match(name).hasMatch())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("invalid sandbox name '%1': use 1-63 characters a-z 0-9 _ . -, "
                           "starting with a letter or digit")
                .arg(name));
    // Sandboxes are also found by id or id prefix: a name of hex digits could stand in for
    // another sandbox's id ('airlockctl rm 3fa9' reaching a sandbox named so).
    static const QRegularExpression idLike(QRegularExpression::anchoredPattern(QStringLiteral("[0-9a-f]{4,}")));
    if (idLike.match(name).hasMatch())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "invalid sandbox name '%1': hex digits alone look like a sandbox id; add a letter from g to z "
                "or a - . _")
                .arg(name));
    return Ok{};
}

Status validateMount(const Mount &m, HostPaths hostPaths)
{
    if (!QDir::isAbsolutePath(m.hostPath))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("mount source '%1' must be an absolute host path").arg(m.hostPath));
    if (hostPaths == HostPaths::Local && !QFileInfo::exists(m.hostPath))
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("mount source '%1' does not exist").arg(m.hostPath));
    if (!m.sandboxPath.startsWith(QLatin1Char('/')) || QDir::cleanPath(m.sandboxPath) != m.sandboxPath
        || m.sandboxPath.contains(QLatin1String("/../")) || m.sandboxPath.endsWith(QLatin1String("/..")))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("mount target '%1' must be a clean absolute path such as /data").arg(m.sandboxPath));
    if (isReservedSandboxPath(m.sandboxPath))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("mount target '%1' is reserved by Airlock (/, /proc, /dev, /tmp, "
                           "/workspace, /.airlock, /home/sandbox and its startup files); choose another path")
                .arg(m.sandboxPath));
    return Ok{};
}

Result<Mount> parseMountArg(const QString &arg)
{
    const QStringList parts = arg.split(QLatin1Char(':'));
    if (parts.size() < 2 || parts.size() > 3)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("invalid mount '%1': expected HOST:PATH[:ro|rw|cow]").arg(arg));
    Mount m{QDir::cleanPath(parts[0]), parts[1], false};
    if (parts.size() == 3) {
        if (parts[2] == QLatin1String("rw"))
            m.writable = true;
        else if (parts[2] == QLatin1String("cow"))
            m.writable = m.copyOnWrite = true;
        else if (parts[2] != QLatin1String("ro"))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("invalid mount mode '%1' in '%2': expected ro, rw or cow").arg(parts[2], arg));
    }
    if (Status s = validateMount(m); !s)
        return s.error();
    return m;
}

QJsonObject SandboxSpec::toJson() const
{
    QJsonArray mountArray;
    for (const Mount &m : mounts) {
        // A copy-on-write mount says "writable": false, so that a daemon from before it (which
        // does not know the field) mounts the folder read-only rather than writable.
        QJsonObject one{{QStringLiteral("host"), m.hostPath}, {QStringLiteral("path"), m.sandboxPath},
            {QStringLiteral("writable"), m.writable && !m.copyOnWrite}};
        if (m.copyOnWrite)
            one.insert(QStringLiteral("copyOnWrite"), true);
        mountArray.append(one);
    }
    QJsonObject limitObject;
    for (const auto &field : kLimitFields)
        if (const auto &v = limits.*field.member)
            limitObject.insert(QLatin1String(field.key), static_cast<double>(*v));
    QJsonObject o{{QStringLiteral("network"), networkModeName(network)}, {QStringLiteral("mounts"), mountArray},
        {QStringLiteral("limits"), limitObject}};
    if (!name.isEmpty())
        o.insert(QStringLiteral("name"), name);
    if (isolation != Isolation::Namespaces) // what a daemon before it read stays readable there
        o.insert(QStringLiteral("isolation"), isolationName(isolation));
    return o;
}

Result<SandboxSpec> SandboxSpec::fromJson(const QJsonObject &json, HostPaths hostPaths)
{
    static const QStringList known = {QStringLiteral("name"), QStringLiteral("network"), QStringLiteral("mounts"),
        QStringLiteral("limits"), QStringLiteral("isolation")};
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!known.contains(it.key()))
            return invalid(QStringLiteral("/%1").arg(it.key()),
                QStringLiteral("unknown field (expected one of: %1)").arg(known.join(QStringLiteral(", "))));

    SandboxSpec spec;
    if (json.contains(QStringLiteral("name"))) {
        if (!json.value(QStringLiteral("name")).isString())
            return invalid(QStringLiteral("/name"), QStringLiteral("expected a string"));
        spec.name = json.value(QStringLiteral("name")).toString();
        if (Status s = validateSandboxName(spec.name); !s)
            return s.error();
    }
    if (json.contains(QStringLiteral("network"))) {
        const QString mode = json.value(QStringLiteral("network")).toString();
        if (mode == QLatin1String("none"))
            spec.network = NetworkMode::None;
        else if (mode == QLatin1String("allowlist"))
            spec.network = NetworkMode::Allowlist;
        else if (mode == QLatin1String("full"))
            spec.network = NetworkMode::Full;
        else
            return invalid(QStringLiteral("/network"), QStringLiteral("expected \"none\", \"allowlist\" or \"full\""));
    }
    if (json.contains(QStringLiteral("isolation"))) {
        const auto isolation = isolationFromName(json.value(QStringLiteral("isolation")).toString());
        if (!isolation)
            return invalid(QStringLiteral("/isolation"), QStringLiteral("expected \"namespaces\" or \"gvisor\""));
        spec.isolation = *isolation;
    }
    const QJsonValue mounts = json.value(QStringLiteral("mounts"));
    if (!mounts.isUndefined() && !mounts.isArray())
        return invalid(QStringLiteral("/mounts"), QStringLiteral("expected an array"));
    const QJsonArray mountArray = mounts.toArray();
    if (mountArray.size() > 64)
        return invalid(QStringLiteral("/mounts"), QStringLiteral("at most 64 mounts"));
    for (qsizetype i = 0; i < mountArray.size(); ++i) {
        const QJsonObject m = mountArray.at(i).toObject();
        const QString ptr = QStringLiteral("/mounts/%1").arg(i);
        if (!m.value(QStringLiteral("host")).isString() || !m.value(QStringLiteral("path")).isString())
            return invalid(ptr, QStringLiteral("expected {\"host\": string, \"path\": string, \"writable\": bool}"));
        Mount mount{m.value(QStringLiteral("host")).toString(), m.value(QStringLiteral("path")).toString(),
            m.value(QStringLiteral("writable")).toBool(false)};
        if (const QJsonValue cow = m.value(QStringLiteral("copyOnWrite")); !cow.isUndefined()) {
            if (!cow.isBool())
                return invalid(ptr + QStringLiteral("/copyOnWrite"), QStringLiteral("expected a bool"));
            mount.copyOnWrite = cow.toBool();
            mount.writable = mount.writable || mount.copyOnWrite;
        }
        if (Status s = validateMount(mount, hostPaths); !s)
            return invalid(ptr, s.error().message);
        for (const Mount &other : std::as_const(spec.mounts))
            if (other.sandboxPath == mount.sandboxPath)
                return invalid(ptr, QStringLiteral("duplicate mount target '%1'").arg(mount.sandboxPath));
        spec.mounts.append(mount);
    }
    const QJsonValue limits = json.value(QStringLiteral("limits"));
    if (!limits.isUndefined() && !limits.isObject())
        return invalid(QStringLiteral("/limits"), QStringLiteral("expected an object"));
    const QJsonObject limitObject = limits.toObject();
    for (auto it = limitObject.begin(); it != limitObject.end(); ++it) {
        const auto field = std::find_if(std::begin(kLimitFields), std::end(kLimitFields),
            [&](const LimitField &f) { return it.key() == QLatin1String(f.key); });
        const QString ptr = QStringLiteral("/limits/%1").arg(it.key());
        if (field == std::end(kLimitFields))
            return invalid(ptr, QStringLiteral("unknown limit"));
        const double v = it.value().toDouble(-1);
        if (!it.value().isDouble() || v < (field->zeroIsNone ? 0 : 1) || v > 9.0e15
            || v != static_cast<double>(static_cast<uint64_t>(v)))
            return invalid(ptr, QStringLiteral("expected a whole number %1").arg(limitRange(it.key())));
        const bool none = v == 0 && field->zeroIsNone;
        if (!none && (static_cast<uint64_t>(v) < field->min || static_cast<uint64_t>(v) > field->max))
            return invalid(ptr,
                QStringLiteral("%1 is out of range: %2")
                    .arg(formatLimit(static_cast<uint64_t>(v), field->unit), limitRange(it.key())));
        spec.limits.*(field->member) = static_cast<uint64_t>(v);
    }
    return spec;
}

} // namespace airlock
