// SPDX-License-Identifier: Apache-2.0
#include "SpecOptions.h"
#include "Command.h"

#include "model/Units.h"
#include "policy/Policy.h"

#include <QFile>
#include <QJsonDocument>

namespace airlock::cli {

namespace {
// --disk none: a workspace with no size of its own (0 in the spec's limits).
Result<uint64_t> parseBytesOrNone(const QString &text)
{
    return text == QLatin1String("none") || text == QLatin1String("0") ? Result<uint64_t>(uint64_t(0))
                                                                       : units::parseBytes(text);
}
} // namespace

QList<QCommandLineOption> SpecOptions::list() const
{
    return {m_name, m_preset, m_policy, m_network, m_allow, m_isolation, m_mount, m_memory, m_tmp, m_disk, m_pids,
        m_cpus, m_cpu, m_wall, m_files, m_fsize, m_output};
}

Result<CreateSandboxRequest> SpecOptions::read(const QCommandLineParser &parser) const
{
    CreateSandboxRequest request;
    if (parser.isSet(m_policy)) {
        auto document = readPolicyFile(parser.value(m_policy));
        if (!document)
            return document.error();
        request.policy = *document;
    }
    if (parser.isSet(m_preset)) {
        auto preset = readPreset(parser.value(m_preset));
        if (!preset)
            return preset.error();
        request.preset = *preset;
    }
    auto spec = readSpec(parser);
    if (!spec)
        return spec.error();
    request.name = spec->name;
    request.mounts = spec->mounts;
    request.limits = spec->limits;
    request.isolation = spec->isolation;
    if (parser.isSet(m_network)) // otherwise the policy decides
        request.network = spec->network;
    if (parser.isSet(m_allow)) {
        if (parser.isSet(m_network) && spec->network != NetworkMode::Allowlist)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("--allow goes with --network allowlist (or no --network)"));
        auto hosts = readAllowedHosts(parser.values(m_allow));
        if (!hosts)
            return hosts.error();
        request.allowHosts(*hosts);
    }
    return request;
}

Result<QString> readPreset(const QString &name)
{
    if (!policy::presetNames().contains(name))
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("--preset: '%1' is not a preset (%2)")
                .arg(name, policy::presetNames().join(QStringLiteral(", "))));
    return name;
}

Result<QStringList> readAllowedHosts(const QStringList &hosts)
{
    QStringList normal;
    for (const QString &host : hosts) {
        auto pattern = policy::normaliseHostPattern(host);
        if (!pattern)
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("--allow: %1").arg(pattern.error().message));
        normal.append(*pattern);
    }
    return normal;
}

Result<QJsonObject> readPolicyFile(const QString &path)
{
    QFile file;
    const bool opened = path == QLatin1String("-") ? file.open(stdin, QIODevice::ReadOnly)
                                                   : (file.setFileName(path), file.open(QIODevice::ReadOnly));
    if (!opened)
        return makeError(
            ErrorCode::NotFound, QStringLiteral("cannot read the policy %1: %2").arg(path, file.errorString()));
    auto text = readToEnd(file, 1024 * 1024, QStringLiteral("the policy %1").arg(path));
    if (!text)
        return text.error();
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(*text, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("the policy %1 is not a JSON object (%2 at offset %3)")
                .arg(path, err.error != QJsonParseError::NoError ? err.errorString() : QStringLiteral("not an object"))
                .arg(err.offset));
    if (Status valid = policy::validate(doc.object()); !valid)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("the policy %1: %2").arg(path, valid.error().message));
    return doc.object();
}

Result<SandboxSpec> SpecOptions::readSpec(const QCommandLineParser &parser) const
{
    SandboxSpec spec;
    if (parser.isSet(m_name)) {
        spec.name = parser.value(m_name);
        if (Status s = validateSandboxName(spec.name); !s)
            return s.error();
    }
    if (parser.isSet(m_network)) {
        const QString mode = parser.value(m_network);
        if (mode == QLatin1String("full"))
            spec.network = NetworkMode::Full;
        else if (mode == QLatin1String("allowlist"))
            spec.network = NetworkMode::Allowlist;
        else if (mode != QLatin1String("none"))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("invalid --network '%1': expected none, allowlist or full").arg(mode));
    }
    if (parser.isSet(m_isolation)) {
        const auto isolation = isolationFromName(parser.value(m_isolation));
        if (!isolation)
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("invalid --isolation '%1': expected namespaces or gvisor")
                    .arg(parser.value(m_isolation)));
        spec.isolation = *isolation;
    }
    for (const QString &m : parser.values(m_mount)) {
        auto mount = parseMountArg(m);
        if (!mount)
            return mount.error();
        spec.mounts.append(*mount);
    }
    struct Field {
        const QCommandLineOption &option;
        Result<uint64_t> (*parse)(const QString &);
        std::optional<uint64_t> Limits::*member;
        uint64_t divisor;
        const char *key; // in the spec's "limits"
    };
    const Field fields[] = {
        {m_memory, units::parseBytes, &Limits::memoryBytes, 1, "memoryBytes"},
        {m_pids, units::parseCount, &Limits::pids, 1, "pids"},
        {m_tmp, units::parseBytes, &Limits::tmpBytes, 1, "tmpBytes"},
        {m_disk, parseBytesOrNone, &Limits::diskBytes, 1, "diskBytes"},
        {m_cpus, units::parseMillicores, &Limits::cpuMillicores, 1, "cpuMillicores"},
        {m_cpu, units::parseDurationMs, &Limits::cpuSeconds, 1000, "cpuSeconds"},
        {m_wall, units::parseDurationMs, &Limits::wallMs, 1, "wallMs"},
        {m_files, units::parseCount, &Limits::openFiles, 1, "openFiles"},
        {m_fsize, units::parseBytes, &Limits::fileSizeBytes, 1, "fileSizeBytes"},
        {m_output, units::parseBytes, &Limits::outputBytes, 1, "outputBytes"},
    };
    for (const Field &f : fields) {
        if (!parser.isSet(f.option))
            continue;
        const QString flag = QStringLiteral("--") + f.option.names().constFirst();
        const QString range = limitRange(QLatin1String(f.key));
        auto v = f.parse(parser.value(f.option));
        if (!v)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("%1: %2; it takes %3").arg(flag, v.error().message, range));
        const uint64_t value = f.parse == parseBytesOrNone ? *v : std::max<uint64_t>(1, *v / f.divisor);
        // The daemon's own validator, one limit at a time, so that a range error names its flag.
        const QJsonObject one{{QStringLiteral("limits"), QJsonObject{{QLatin1String(f.key), double(value)}}}};
        if (auto checked = SandboxSpec::fromJson(one); !checked)
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral("%1 %2: %3")
                    .arg(flag, parser.value(f.option).left(100),
                        checked.error().message.section(QStringLiteral(": "), 1)));
        spec.limits.*(f.member) = value;
    }
    // Let the one validator (the same the daemon runs) check the rest.
    return SandboxSpec::fromJson(spec.toJson());
}

} // namespace airlock::cli
