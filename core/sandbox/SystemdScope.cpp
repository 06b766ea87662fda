// SPDX-License-Identifier: Apache-2.0
#include "sandbox/SystemdScope.h"

#include "model/SandboxSpec.h"

#include <QDBusArgument>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusMetaType>
#include <QDBusObjectPath>
#include <QDBusVariant>
#include <QElapsedTimer>
#include <QFile>
#include <QThread>

#include <csignal>
#include <unistd.h>

namespace airlock::systemd {

namespace {
// StartTransientUnit's a(sv) properties and a(sa(sv)) auxiliary units.
struct Property {
    QString name;
    QDBusVariant value;
};
struct AuxUnit {
    QString name;
    QList<Property> properties;
};

QDBusArgument &operator<<(QDBusArgument &arg, const Property &p)
{
    arg.beginStructure();
    arg << p.name << p.value;
    arg.endStructure();
    return arg;
}
const QDBusArgument &operator>>(const QDBusArgument &arg, Property &p)
{
    arg.beginStructure();
    arg >> p.name >> p.value;
    arg.endStructure();
    return arg;
}
QDBusArgument &operator<<(QDBusArgument &arg, const AuxUnit &u)
{
    arg.beginStructure();
    arg << u.name << u.properties;
    arg.endStructure();
    return arg;
}
const QDBusArgument &operator>>(const QDBusArgument &arg, AuxUnit &u)
{
    arg.beginStructure();
    arg >> u.name >> u.properties;
    arg.endStructure();
    return arg;
}
} // namespace
} // namespace airlock::systemd

Q_DECLARE_METATYPE(airlock::systemd::Property)
Q_DECLARE_METATYPE(airlock::systemd::AuxUnit)

namespace airlock::systemd {

namespace {
constexpr int kCallTimeoutMs = 5000;
constexpr int kPlacementTimeoutMs = 5000;
const QString kService = QStringLiteral("org.freedesktop.systemd1");
const QString kPath = QStringLiteral("/org/freedesktop/systemd1");
const QString kManager = QStringLiteral("org.freedesktop.systemd1.Manager");

QDBusConnection bus()
{
    static const bool registered = [] {
        qDBusRegisterMetaType<Property>();
        qDBusRegisterMetaType<QList<Property>>();
        qDBusRegisterMetaType<AuxUnit>();
        qDBusRegisterMetaType<QList<AuxUnit>>();
        return true;
    }();
    Q_UNUSED(registered);
    return ::geteuid() == 0 ? QDBusConnection::systemBus() : QDBusConnection::sessionBus();
}

Result<QDBusMessage> call(const QString &method, const QVariantList &args)
{
    QDBusMessage message = QDBusMessage::createMethodCall(kService, kPath, kManager, method);
    message.setArguments(args);
    const QDBusMessage reply = bus().call(message, QDBus::Block, kCallTimeoutMs);
    if (reply.type() == QDBusMessage::ErrorMessage)
        return makeError(ErrorCode::LimitUnsupported,
            QStringLiteral("systemd %1: %2 (%3)").arg(method, reply.errorMessage(), reply.errorName()));
    return reply;
}

Property property(const char *name, const QVariant &value)
{
    return {QLatin1String(name), QDBusVariant(value)};
}

QString cgroupOf(pid_t pid)
{
    QFile f(QStringLiteral("/proc/%1/cgroup").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("0::"))
            return QString::fromUtf8(line.mid(3));
    return {};
}
} // namespace

Status reachable()
{
    const QDBusConnection connection = bus();
    const QString fix = ::geteuid() == 0
        ? QStringLiteral("run airlockd on a host whose PID 1 is systemd")
        : QStringLiteral(
            "log in through systemd-logind (or 'sudo loginctl enable-linger %1') so that 'systemd --user' and its "
            "bus run, and start airlockd with 'systemctl --user start airlockd.socket'")
              .arg(QString::fromLocal8Bit(qgetenv("USER")));
    if (!connection.isConnected())
        return makeError(ErrorCode::LimitUnsupported,
            QStringLiteral("cgroup v2 limits come from systemd (a scope per sandbox), and airlockd has no bus to "
                           "it (%1): %2")
                .arg(connection.lastError().message(), fix));
    QDBusMessage get = QDBusMessage::createMethodCall(
        kService, kPath, QStringLiteral("org.freedesktop.DBus.Properties"), QStringLiteral("Get"));
    get.setArguments({kManager, QStringLiteral("Version")});
    const QDBusMessage reply = connection.call(get, QDBus::Block, kCallTimeoutMs);
    if (reply.type() == QDBusMessage::ErrorMessage)
        return makeError(ErrorCode::LimitUnsupported,
            QStringLiteral("cgroup v2 limits come from systemd (a scope per sandbox), and no systemd answers on "
                           "airlockd's bus (%1): %2")
                .arg(reply.errorMessage(), fix));
    return Ok{};
}

QStringList controllers()
{
    const QString dir = ::geteuid() == 0
        ? QStringLiteral("/sys/fs/cgroup")
        : QStringLiteral("/sys/fs/cgroup/user.slice/user-%1.slice/user@%1.service").arg(::geteuid());
    QFile f(dir + QStringLiteral("/cgroup.controllers"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromLatin1(f.readAll()).simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

QString scopeName(const QString &instanceKey, const QString &sandboxId)
{
    return QStringLiteral("airlock-%1-%2.scope").arg(instanceKey, sandboxId);
}

Status startScope(const QString &unit, pid_t pid, const Limits &limits, bool memory, bool pids, bool cpu)
{
    QList<Property> properties{
        property("Description", QStringLiteral("Airlock sandbox")),
        property("PIDs", QVariant::fromValue(QList<uint>{uint(pid)})),
        property("Delegate", true),
        // rm and the daemon end it by stopping the unit: everything in it, at once.
        property("KillSignal", int(SIGKILL)),
        property("CollectMode", QStringLiteral("inactive-or-failed")),
    };
    if (memory) {
        properties.append(property("MemoryMax", quint64(limits.memoryBytes.value_or(0))));
        properties.append(property("MemorySwapMax", quint64(0))); // a limit that swaps is no limit
    }
    if (pids)
        properties.append(property("TasksMax", quint64(limits.pids.value_or(0))));
    if (cpu) // microseconds of CPU per second of wall time
        properties.append(property("CPUQuotaPerSecUSec", quint64(limits.cpuMillicores.value_or(0) * 1000)));
    auto started = call(QStringLiteral("StartTransientUnit"),
        {unit, QStringLiteral("fail"), QVariant::fromValue(properties), QVariant::fromValue(QList<AuxUnit>{})});
    if (!started)
        return started.error();
    // The start job moves the process; wait until the kernel shows it in the scope.
    const QString suffix = QLatin1Char('/') + unit;
    QElapsedTimer waited;
    waited.start();
    while (!cgroupOf(pid).endsWith(suffix)) {
        if (waited.elapsed() > kPlacementTimeoutMs) {
            stopScope(unit);
            return makeError(ErrorCode::LimitUnsupported,
                QStringLiteral("systemd did not move the sandbox into %1 within %2 s (it is in %3)")
                    .arg(unit)
                    .arg(kPlacementTimeoutMs / 1000)
                    .arg(cgroupOf(pid)));
        }
        QThread::usleep(500);
    }
    return Ok{};
}

void stopScope(const QString &unit)
{
    (void)call(QStringLiteral("StopUnit"), {unit, QStringLiteral("replace")});
}

QStringList scopes(const QString &instanceKey)
{
    auto listed = call(QStringLiteral("ListUnitsByPatterns"),
        {QStringList{}, QStringList{QStringLiteral("airlock-%1-*.scope").arg(instanceKey)}});
    QStringList names;
    if (!listed)
        return names;
    // a(ssssssouso): the name is each structure's first member.
    const QDBusArgument units = listed->arguments().value(0).value<QDBusArgument>();
    units.beginArray();
    while (!units.atEnd()) {
        QString name, description, load, active, sub, following, jobType;
        QDBusObjectPath path, jobPath;
        uint jobId = 0;
        units.beginStructure();
        units >> name >> description >> load >> active >> sub >> following >> path >> jobId >> jobType >> jobPath;
        units.endStructure();
        names.append(name);
    }
    units.endArray();
    return names;
}

} // namespace airlock::systemd
