// SPDX-License-Identifier: Apache-2.0
#include "SpecOptions.h"

#include "model/Units.h"

namespace airlock::cli {

QList<QCommandLineOption> SpecOptions::list() const
{
    return {m_name, m_network, m_mount, m_memory, m_pids, m_cpu, m_wall, m_files, m_fsize, m_output};
}

Result<SandboxSpec> SpecOptions::read(const QCommandLineParser &parser) const
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
        else if (mode != QLatin1String("none"))
            return makeError(ErrorCode::InvalidArgument,
                             QStringLiteral("invalid --network '%1': expected none or full").arg(mode));
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
    };
    const Field fields[] = {
        {m_memory, units::parseBytes, &Limits::memoryBytes, 1},
        {m_pids, units::parseCount, &Limits::pids, 1},
        {m_cpu, units::parseDurationMs, &Limits::cpuSeconds, 1000},
        {m_wall, units::parseDurationMs, &Limits::wallMs, 1},
        {m_files, units::parseCount, &Limits::openFiles, 1},
        {m_fsize, units::parseBytes, &Limits::fileSizeBytes, 1},
        {m_output, units::parseBytes, &Limits::outputBytes, 1},
    };
    for (const Field &f : fields) {
        if (!parser.isSet(f.option))
            continue;
        auto v = f.parse(parser.value(f.option));
        if (!v)
            return makeError(ErrorCode::InvalidArgument,
                             QStringLiteral("--%1: %2").arg(f.option.names().constFirst(), v.error().message));
        spec.limits.*(f.member) = std::max<uint64_t>(1, *v / f.divisor);
    }
    // Let the one validator (the same the daemon runs) check ranges.
    return SandboxSpec::fromJson(spec.toJson());
}

} // namespace airlock::cli
