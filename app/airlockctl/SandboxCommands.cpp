// SPDX-License-Identifier: Apache-2.0
// create, ls, info, rm: the sandbox lifecycle.
#include "SandboxCommands.h"

#include "SpecOptions.h"
#include "Table.h"
#include "model/Units.h"

#include "model/DisplayText.h"

#include <QDateTime>
#include <QJsonArray>
#include <QThread>

namespace airlock::cli {

namespace {
QString age(const QString &isoTime)
{
    const qint64 s = QDateTime::fromString(isoTime, Qt::ISODateWithMs).secsTo(QDateTime::currentDateTimeUtc());
    return s < 1 ? QStringLiteral("<1s") : units::formatDurationMs(uint64_t(s) * 1000);
}

// Host network is the one setting that removes the network boundary: every listing says so loudly.
QString networkLabel(const QJsonObject &sb)
{
    return sb.value(QStringLiteral("hostNetwork")).toBool() ? QStringLiteral("FULL (host network)")
                                                            : sb.value(QStringLiteral("network")).toString();
}

QString limitValue(const QString &key, const QJsonValue &v)
{
    if (v.isNull() || v.isUndefined())
        return QStringLiteral("unlimited");
    const auto n = uint64_t(v.toDouble());
    if (key.endsWith(QLatin1String("Bytes")))
        return units::formatBytes(n);
    if (key == QLatin1String("wallMs"))
        return units::formatDurationMs(n);
    if (key == QLatin1String("cpuMillicores"))
        return QStringLiteral("%1 CPUs").arg(double(n) / 1000);
    if (key == QLatin1String("cpuSeconds"))
        return units::formatDurationMs(n * 1000);
    return QString::number(n);
}
} // namespace

class CreateCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("create"); }
    QString summary() const override { return QStringLiteral("Create a sandbox and print its name."); }
    QString usage() const override
    {
        return QStringLiteral("[--name N] [--network none|full] [--mount HOST:PATH[:ro|rw|cow]]... [limits]");
    }
    QList<QCommandLineOption> options() const override { return m_spec.list(); }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(
                ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("create takes no arguments; use --name")));
        auto request = m_spec.read(parser);
        if (!request)
            return fail(ctx, request.error());
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto created = DaemonApi(**client).createSandbox(*request).wait();
        if (!created)
            return fail(ctx, created.error());
        if (ctx.json)
            printJson(ctx, created->info);
        else
            ctx.out << created->name << Qt::endl;
        if (!ctx.json && created->hostNetwork)
            ctx.err << "airlockctl: warning: this sandbox shares the host network (--network full)" << Qt::endl;
        else if (!ctx.json && created->network == QLatin1String("allowlist"))
            ctx.err << "airlockctl: network only through the egress proxy, to what its policy allows (airlockctl "
                       "policy show "
                    << created->name << " --effective)" << Qt::endl;
        return ExitOk;
    }

private:
    SpecOptions m_spec;
};

class LsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("ls"); }
    QString summary() const override { return QStringLiteral("List sandboxes."); }
    QString usage() const override { return {}; }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &) override
    {
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto listed = DaemonApi(**client).listSandboxes(!ctx.json).wait(); // the table needs the brief form
        if (!listed)
            return fail(ctx, listed.error());
        const QJsonArray &sandboxes = *listed;
        if (ctx.json) {
            printJson(ctx, sandboxes);
            return ExitOk;
        }
        Table table({QStringLiteral("NAME"), QStringLiteral("ID"), QStringLiteral("STATE"), QStringLiteral("NETWORK"),
            QStringLiteral("AGE"), QStringLiteral("EXECS")});
        for (const QJsonValue &v : sandboxes) {
            const QJsonObject sb = v.toObject();
            table.add({sb.value(QStringLiteral("name")).toString(), sb.value(QStringLiteral("id")).toString(),
                sb.value(QStringLiteral("state")).toString(), networkLabel(sb),
                age(sb.value(QStringLiteral("createdAt")).toString()),
                QString::number(sb.value(QStringLiteral("executions")).toInt())});
        }
        table.print(ctx.out);
        return ExitOk;
    }
};

// `docker stats --no-stream`: two samples half a second apart, so CPU is a rate.
class StatsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("stats"); }
    QString summary() const override
    {
        return QStringLiteral(
            "Show what each sandbox uses now: running commands, CPU (share of one core over half a second), "
            "resident memory, processes, its newest command's agent and its last line of output.");
    }
    QString usage() const override { return QStringLiteral("[SANDBOX...]"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        const DaemonApi api(**client);
        auto first = api.sandboxStats().wait();
        if (!first)
            return fail(ctx, first.error());
        QThread::msleep(500);
        auto second = api.sandboxStats().wait();
        if (!second)
            return fail(ctx, second.error());
        // Between the two samples, by the daemon's clock.
        const double elapsedMs = std::max(1.0,
            second->value(QStringLiteral("sampledMs")).toDouble()
                - first->value(QStringLiteral("sampledMs")).toDouble());
        QHash<QString, double> before;
        for (const QJsonValue &v : first->value(QStringLiteral("sandboxes")).toArray())
            before.insert(v.toObject().value(QStringLiteral("id")).toString(),
                v.toObject().value(QStringLiteral("cpuNs")).toDouble());
        QJsonArray shown;
        for (const QJsonValue &v : second->value(QStringLiteral("sandboxes")).toArray()) {
            QJsonObject sb = v.toObject();
            const QString id = sb.value(QStringLiteral("id")).toString();
            if (!positional.isEmpty() && !positional.contains(id)
                && !positional.contains(sb.value(QStringLiteral("name")).toString()))
                continue;
            if (before.contains(id))
                sb.insert(QStringLiteral("cpuPercent"),
                    std::max(0.0, (sb.value(QStringLiteral("cpuNs")).toDouble() - before.value(id)) / 1e4 / elapsedMs));
            shown.append(sb);
        }
        for (const QString &ref : positional)
            if (std::none_of(shown.cbegin(), shown.cend(), [&](const QJsonValue &v) {
                    return v.toObject().value(QStringLiteral("id")).toString() == ref
                        || v.toObject().value(QStringLiteral("name")).toString() == ref;
                }))
                return fail(ctx,
                    makeError(ErrorCode::NotFound,
                        QStringLiteral("no sandbox '%1' (airlockctl ls lists them)").arg(display::escaped(ref, 100))));
        if (ctx.json) {
            printJson(ctx, shown);
            return ExitOk;
        }
        Table table({QStringLiteral("NAME"), QStringLiteral("RUNNING"), QStringLiteral("CPU"), QStringLiteral("MEMORY"),
            QStringLiteral("PROCS"), QStringLiteral("AGENT"), QStringLiteral("LAST OUTPUT")});
        for (const QJsonValue &v : std::as_const(shown)) {
            const QJsonObject sb = v.toObject();
            table.add({sb.value(QStringLiteral("name")).toString(),
                QString::number(sb.value(QStringLiteral("executions")).toInt()),
                sb.contains(QStringLiteral("cpuPercent"))
                    ? QStringLiteral("%1%").arg(sb.value(QStringLiteral("cpuPercent")).toDouble(), 0, 'f', 1)
                    : QStringLiteral("-"),
                units::formatBytes(uint64_t(sb.value(QStringLiteral("memoryBytes")).toDouble())),
                QString::number(sb.value(QStringLiteral("processes")).toInt()),
                display::escaped(sb.value(QStringLiteral("agent")).toString(), 30),
                display::escaped(sb.value(QStringLiteral("lastOutput")).toString().simplified(),
                    80)}); // runs of spaces could fake a wrapped row
        }
        table.print(ctx.out);
        return ExitOk;
    }
};

class InfoCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("info"); }
    QString summary() const override
    {
        return QStringLiteral("Show a sandbox: isolation, mounts, and every limit with what enforces it. "
                              "Without a sandbox, show the daemon and what this host can enforce.");
    }
    QString usage() const override { return QStringLiteral("[SANDBOX]"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        const QStringList args = positional;
        if (args.size() > 1)
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("info takes at most one sandbox")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        const DaemonApi api(**client);
        auto info = args.isEmpty() ? api.daemonInfo().wait() : api.sandboxInfo(args.first()).wait();
        if (!info)
            return fail(ctx, info.error());
        if (ctx.json) {
            printJson(ctx, *info);
            return ExitOk;
        }
        args.isEmpty() ? printDaemon(ctx, *info) : printSandbox(ctx, *info);
        return ExitOk;
    }

private:
    static void printDaemon(Context &ctx, const QJsonObject &d)
    {
        const QJsonObject caps = d.value(QStringLiteral("capabilities")).toObject();
        ctx.out << "daemon:      airlockd " << d.value(QStringLiteral("version")).toString() << " (pid "
                << qint64(d.value(QStringLiteral("pid")).toDouble()) << ") on "
                << d.value(QStringLiteral("host")).toString()
                << "\nsocket:      " << d.value(QStringLiteral("socket")).toString()
                << "\nsandboxes:   " << d.value(QStringLiteral("sandboxes")).toInt()
                << "\nbubblewrap:  " << caps.value(QStringLiteral("bwrap")).toString()
                << "\ngVisor:      " << caps.value(QStringLiteral("runsc")).toString()
                << "\nuser ns:     " << (caps.value(QStringLiteral("userNamespaces")).toBool() ? "yes" : "NO")
                << "\nseccomp:     " << (caps.value(QStringLiteral("seccomp")).toBool() ? "yes" : "NO")
                << "\nlandlock:    ABI " << caps.value(QStringLiteral("landlockAbi")).toInt()
                << "\ncgroup:      " << caps.value(QStringLiteral("cgroup")).toString()
                << " (memory: " << (caps.value(QStringLiteral("cgroupMemory")).toBool() ? "yes" : "no")
                << ", pids: " << (caps.value(QStringLiteral("cgroupPids")).toBool() ? "yes" : "no")
                << ", cpu: " << (caps.value(QStringLiteral("cgroupCpu")).toBool() ? "yes" : "no") << ")\n";
        if (const QString why = caps.value(QStringLiteral("cgroupError")).toString(); !why.isEmpty())
            ctx.out << "             " << display::escaped(why) << "\n";
        for (const QJsonValue &notice : d.value(QStringLiteral("notices")).toArray()) // what a person should know
            ctx.out << "NOTICE:      " << display::escaped(notice.toString()) << "\n";
        ctx.out.flush();
    }

    static void printSandbox(Context &ctx, const QJsonObject &sb)
    {
        const QJsonObject iso = sb.value(QStringLiteral("isolation")).toObject();
        QStringList ns;
        for (const QJsonValue &n : iso.value(QStringLiteral("namespaces")).toArray())
            ns.append(n.toString());
        ctx.out << "name:        " << sb.value(QStringLiteral("name")).toString()
                << "\nid:          " << sb.value(QStringLiteral("id")).toString()
                << "\nstate:       " << sb.value(QStringLiteral("state")).toString();
        if (sb.value(QStringLiteral("failure")).isString())
            ctx.out << " (" << sb.value(QStringLiteral("failure")).toString() << ')';
        ctx.out << "\ncreated:     " << sb.value(QStringLiteral("createdAt")).toString() << " ("
                << age(sb.value(QStringLiteral("createdAt")).toString()) << " ago)"
                << "\nisolation:   " << iso.value(QStringLiteral("runtime")).toString() << " ("
                << iso.value(QStringLiteral("enforcedBy")).toString() << ')' << "\nnetwork:     " << networkLabel(sb)
                << "\nworkspace:   /workspace (host: " << sb.value(QStringLiteral("workspace")).toString() << ")";
        if (const QJsonObject disk = sb.value(QStringLiteral("disk")).toObject(); !disk.isEmpty())
            ctx.out << "\ndisk:        "
                    << units::formatBytes(uint64_t(disk.value(QStringLiteral("usedBytes")).toDouble())) << " used of "
                    << units::formatBytes(uint64_t(disk.value(QStringLiteral("sizeBytes")).toDouble()));
        // The runtime says what holds the sandbox in its own words; an older daemon's, as it was.
        const QString hostUid = QString::number(qint64(iso.value(QStringLiteral("hostUid")).toDouble()));
        if (!ns.isEmpty())
            ctx.out << "\nnamespaces:  " << ns.join(QStringLiteral(", "));
        ctx.out
            << "\nidentity:    "
            << iso.value(QStringLiteral("identity"))
                   .toString(QStringLiteral("uid 1000 inside, host uid %1, no capabilities, no_new_privs").arg(hostUid))
            << "\nfilters:     "
            << iso.value(QStringLiteral("filters"))
                   .toString(
                       QStringLiteral("seccomp, landlock ABI %1").arg(iso.value(QStringLiteral("landlockAbi")).toInt()))
            << "\nexecutions:  " << sb.value(QStringLiteral("executions")).toInt() << " running\n";
        for (const QJsonValue &m : sb.value(QStringLiteral("mounts")).toArray()) {
            const QJsonObject mo = m.toObject();
            ctx.out << "mount:       " << mo.value(QStringLiteral("path")).toString() << " <- "
                    << mo.value(QStringLiteral("host")).toString()
                    << (mo.value(QStringLiteral("writable")).toBool() ? " (read-write)" : " (read-only)") << '\n';
        }
        ctx.out << "\n";
        Table limits({QStringLiteral("LIMIT"), QStringLiteral("VALUE"), QStringLiteral("ENFORCED BY")});
        const QJsonObject l = sb.value(QStringLiteral("limits")).toObject();
        for (auto it = l.begin(); it != l.end(); ++it) {
            const QJsonObject entry = it.value().toObject();
            limits.add({it.key(), limitValue(it.key(), entry.value(QStringLiteral("value"))),
                entry.value(QStringLiteral("enforcedBy")).toString()});
        }
        limits.print(ctx.out);
    }
};

class RmCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("rm"); }
    QString summary() const override
    {
        return QStringLiteral("Delete sandboxes: kill every process in them and remove their workspaces.");
    }
    QString usage() const override { return QStringLiteral("SANDBOX... [--keep]"); }
    QList<QCommandLineOption> options() const override { return {m_keep}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        const QStringList refs = positional;
        if (refs.isEmpty())
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("rm needs at least one sandbox")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        int code = ExitOk;
        QJsonArray removed;
        for (const QString &ref : refs) {
            auto r = DaemonApi(**client).deleteSandbox(ref, parser.isSet(m_keep)).wait();
            if (!r) {
                code = fail(ctx, r.error());
                continue;
            }
            removed.append(*r);
            if (!ctx.json) {
                ctx.out << r->value(QStringLiteral("name")).toString();
                if (r->value(QStringLiteral("workspace")).isString())
                    ctx.out << " (workspace kept at " << r->value(QStringLiteral("workspace")).toString() << ')';
                ctx.out << Qt::endl;
            }
        }
        if (ctx.json && code == ExitOk)
            printJson(ctx, removed);
        return code;
    }

private:
    QCommandLineOption m_keep{
        QStringLiteral("keep"), QStringLiteral("Keep the workspace (moved under the data directory).")};
};

void addSandboxCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<CreateCommand>());
    commands.push_back(std::make_unique<LsCommand>());
    commands.push_back(std::make_unique<StatsCommand>());
    commands.push_back(std::make_unique<InfoCommand>());
    commands.push_back(std::make_unique<RmCommand>());
}

} // namespace airlock::cli
