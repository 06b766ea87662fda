// SPDX-License-Identifier: Apache-2.0
#include "SandboxModel.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include "model/Units.h"

#include <QColor>
#include <QDateTime>
#include <QIcon>
#include <QPainter>
#include <QPixmap>
#include <QPointer>
#include <QSet>
#include <QTextDocument>

namespace airlock::ui {

namespace {
QIcon stateDot(const QString &state);
constexpr quintptr kHostNode = 0; // internalId of a host row; sandbox rows carry their host's row + 1
} // namespace

SandboxModel::SandboxModel(QObject *parent)
    : QAbstractItemModel(parent)
{
}

SandboxModel::SandboxModel(DaemonClient &client, QObject *parent)
    : QAbstractItemModel(parent)
{
    addHost(tr("This computer"), client);
}

int SandboxModel::addHost(const QString &name, DaemonClient &client)
{
    const int row = int(m_hosts.size());
    beginInsertRows({}, row, row);
    m_hosts.append({name, &client, {}, false, false, false, {}, {}, {}, {}});
    endInsertRows();
    connect(&client, &DaemonClient::eventReceived, this, [this, row](const Event &event) {
        if (event.kind.startsWith(event::family::Sandbox) || event.kind == event::PolicyChanged)
            refreshHost(row);
    });
    // Gone: the host's row says so, and its sandboxes grey out (as last seen, not as they are).
    auto stateChanged = [this, row] {
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
        if (const int n = rowCount(index(row, 0)); n > 0)
            Q_EMIT dataChanged(index(0, 0, index(row, 0)), index(n - 1, ColumnCount - 1, index(row, 0)));
    };
    connect(&client, &DaemonClient::disconnected, this, stateChanged);
    return row;
}

void SandboxModel::setHostStatus(int host, const QString &address, const QString &status, const QString &detail)
{
    if (host < 0 || host >= m_hosts.size())
        return;
    m_hosts[host].address = address;
    m_hosts[host].status = status;
    m_hosts[host].detail = detail;
    Q_EMIT dataChanged(index(host, 0), index(host, ColumnCount - 1));
}

DaemonClient *SandboxModel::hostClient(const QModelIndex &i) const
{
    if (!i.isValid())
        return nullptr;
    const qsizetype host = i.internalId() == kHostNode ? i.row() : qsizetype(i.internalId()) - 1;
    return host < m_hosts.size() ? m_hosts[host].client : nullptr;
}

QColor SandboxModel::networkColor(const QString &mode)
{
    if (mode == QLatin1String("full"))
        return QColor(0xd0, 0x30, 0x30); // the host network: red everywhere
    if (mode == QLatin1String("allowlist"))
        return QColor(0xd0, 0x90, 0x10);
    return QColor(0x70, 0x70, 0x70);
}

void SandboxModel::refresh()
{
    for (int host = 0; host < m_hosts.size(); ++host)
        refreshHost(host);
}

void SandboxModel::retireHost(int host)
{
    if (host <= 0 || host >= m_hosts.size() || m_hosts[host].retired) // this computer stays
        return;
    Host &h = m_hosts[host];
    h.client->disconnect(this);
    if (!h.sandboxes.isEmpty()) {
        beginRemoveRows(index(host, 0), 0, int(h.sandboxes.size()) - 1);
        h.sandboxes.clear();
        endRemoveRows();
    }
    h.usage.clear();
    h.retired = true;
    Q_EMIT dataChanged(index(host, 0), index(host, ColumnCount - 1));
}

void SandboxModel::refreshHost(int host)
{
    Host &h = m_hosts[host];
    if (h.retired)
        return;
    if (h.refreshing) {
        h.again = true; // one more once this answer is in: nothing is missed, nothing piles up
        return;
    }
    h.refreshing = true;
    // The answer may come after this model is gone.
    DaemonApi(*h.client).listSandboxes().then([self = QPointer<SandboxModel>(this), host](Result<QJsonArray> r) {
        if (!self)
            return;
        Host &h = self->m_hosts[host];
        h.refreshing = false;
        if (h.retired)
            return;
        if (r)
            self->setSandboxes(host, *r);
        Q_EMIT self->dataChanged(self->index(host, State), self->index(host, State)); // connected or not
        if (std::exchange(h.again, false))
            self->refreshHost(host);
    });
}

SandboxModel::Entry SandboxModel::Entry::from(const QJsonObject &json)
{
    Entry e;
    e.json = json;
    e.id = json.value(QStringLiteral("id")).toString();
    e.name = json.value(QStringLiteral("name")).toString();
    e.state = json.value(QStringLiteral("state")).toString();
    e.network = json.value(QStringLiteral("network")).toString();
    e.gvisor = json.value(QStringLiteral("isolation")).toObject().value(QStringLiteral("runtime")).toString()
        == QLatin1String("gvisor");
    QStringList names;
    for (const QJsonValue &g : json.value(QStringLiteral("credentials")).toArray())
        names.append(display::escaped(g.toObject().value(QStringLiteral("secret")).toString(), 40));
    e.credentials = names.join(QStringLiteral(", "));
    const QDateTime created
        = QDateTime::fromString(json.value(QStringLiteral("createdAt")).toString(), Qt::ISODateWithMs);
    e.createdMs = created.isValid() ? created.toMSecsSinceEpoch() : 0;
    e.executions = json.value(QStringLiteral("executions")).toInt();
    e.agent = display::escaped(json.value(QStringLiteral("agent")).toString(), 40);
    e.run = display::escaped(json.value(QStringLiteral("run")).toString(), 60); // an agent's choice of name
    return e;
}

void SandboxModel::setSandboxes(int hostRow, const QJsonArray &list)
{
    QList<Entry> &sandboxes = m_hosts[hostRow].sandboxes;
    QList<Entry> next;
    for (const QJsonValue &v : list)
        next.append(Entry::from(v.toObject()));
    std::sort(next.begin(), next.end(), [](const Entry &a, const Entry &b) { return a.name < b.name; });
    QSet<QString> nextIds;
    for (const Entry &e : std::as_const(next))
        nextIds.insert(e.id);
    const QModelIndex host = index(hostRow, 0);
    // Rows that stay keep their place (and the selection); only what changed moves.
    for (qsizetype i = sandboxes.size() - 1; i >= 0; --i) {
        if (!nextIds.contains(sandboxes[i].id)) {
            beginRemoveRows(host, int(i), int(i));
            sandboxes.removeAt(i);
            endRemoveRows();
        }
    }
    for (qsizetype i = 0; i < next.size(); ++i) {
        const auto at
            = std::find_if(sandboxes.begin(), sandboxes.end(), [&](const Entry &e) { return e.id == next[i].id; });
        if (at == sandboxes.end()) {
            beginInsertRows(host, int(i), int(i));
            sandboxes.insert(i, next[i]);
            endInsertRows();
        } else {
            *at = next[i];
        }
    }
    if (!sandboxes.isEmpty())
        Q_EMIT dataChanged(index(0, 0, host), index(int(sandboxes.size()) - 1, ColumnCount - 1, host));
    Q_EMIT refreshed();
}

QModelIndex SandboxModel::sandboxIndex(const QString &nameOrId, int host) const
{
    for (int h = host < 0 ? 0 : host; h < (host < 0 ? m_hosts.size() : std::min<qsizetype>(host + 1, m_hosts.size()));
         ++h) {
        const QList<Entry> &sandboxes = m_hosts[h].sandboxes;
        for (qsizetype i = 0; i < sandboxes.size(); ++i)
            if (sandboxes[i].name == nameOrId || sandboxes[i].id == nameOrId)
                return index(int(i), 0, index(h, 0));
    }
    return {};
}

const SandboxModel::Entry *SandboxModel::entry(const QModelIndex &i) const
{
    if (!i.isValid() || i.internalId() == kHostNode)
        return nullptr;
    const qsizetype host = qsizetype(i.internalId()) - 1;
    return host < m_hosts.size() && i.row() < m_hosts[host].sandboxes.size() ? &m_hosts[host].sandboxes[i.row()]
                                                                             : nullptr;
}

QJsonObject SandboxModel::sandbox(const QModelIndex &i) const
{
    const Entry *e = entry(i);
    return e ? e->json : QJsonObject();
}

QModelIndex SandboxModel::index(int row, int column, const QModelIndex &parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    if (!parent.isValid())
        return row < m_hosts.size() ? createIndex(row, column, kHostNode) : QModelIndex();
    if (parent.internalId() == kHostNode && parent.column() == 0 && parent.row() < m_hosts.size()
        && row < m_hosts[parent.row()].sandboxes.size())
        return createIndex(row, column, quintptr(parent.row()) + 1);
    return {};
}

QModelIndex SandboxModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == kHostNode)
        return {};
    return createIndex(int(child.internalId() - 1), 0, kHostNode);
}

int SandboxModel::rowCount(const QModelIndex &parent) const
{
    if (!parent.isValid())
        return int(m_hosts.size());
    if (parent.internalId() == kHostNode && parent.column() == 0 && parent.row() < m_hosts.size())
        return int(m_hosts[parent.row()].sandboxes.size());
    return 0;
}

int SandboxModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant SandboxModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    if (index.internalId() == kHostNode) {
        const Host &host = m_hosts.at(index.row());
        if (role == Qt::DisplayRole && index.column() == Name)
            return host.name;
        if (role == Qt::DecorationRole && index.column() == Name)
            return stateDot(host.client->isConnected() ? QStringLiteral("running") : QStringLiteral("stopped"));
        if (role == SortRole)
            return index.row();
        if (role == Qt::DisplayRole && index.column() == State)
            return !host.status.isEmpty()    ? host.status
                : host.client->isConnected() ? tr("connected")
                                             : tr("not connected");
        if (role == Qt::DisplayRole && index.column() == Network)
            return host.address;
        if (role == Qt::ToolTipRole)
            return host.detail.isEmpty()
                ? QVariant()
                : QVariant(Qt::convertFromPlainText(host.detail)); // a remote daemon's words: never rich text
        if (role == HostRole)
            return index.row();
        if (role == RetiredRole)
            return host.retired;
        return {};
    }
    return sandboxData(index, role);
}

const SandboxModel::Usage *SandboxModel::usage(const QModelIndex &index) const
{
    const qsizetype host = qsizetype(index.internalId()) - 1;
    if (host < 0 || host >= m_hosts.size())
        return nullptr;
    if (index.row() >= m_hosts[host].sandboxes.size())
        return nullptr;
    const auto it = m_hosts[host].usage.constFind(m_hosts[host].sandboxes[index.row()].id);
    return it == m_hosts[host].usage.cend() ? nullptr : &*it;
}

namespace {

QIcon stateDot(const QString &state)
{
    // One small round dot per state, drawn once.
    static QHash<QString, QIcon> dots;
    QIcon &dot = dots[state];
    if (dot.isNull()) {
        const QColor colour = state == QLatin1String("running") ? QColor(0x2e, 0x9e, 0x44)
            : state == QLatin1String("starting")                ? QColor(0xd0, 0x90, 0x10)
            : state == QLatin1String("failed")                  ? QColor(0xd0, 0x30, 0x30)
                                                                : QColor(0x90, 0x90, 0x90);
        QPixmap pixmap(12, 12);
        pixmap.fill(Qt::transparent);
        QPainter painter(&pixmap);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setPen(Qt::NoPen);
        painter.setBrush(colour);
        painter.drawEllipse(QRectF(2, 2, 8, 8));
        dot = QIcon(pixmap);
    }
    return dot;
}

QString age(qint64 ms)
{
    if (ms < 60'000)
        return SandboxModel::tr("%1 s").arg(std::max<qint64>(0, ms / 1000));
    if (ms < 3'600'000)
        return SandboxModel::tr("%1 min").arg(ms / 60'000);
    if (ms < 86'400'000)
        return SandboxModel::tr("%1 h").arg(ms / 3'600'000);
    return SandboxModel::tr("%1 d").arg(ms / 86'400'000);
}

QList<float> scaled(const QList<float> &samples, float floor)
{
    float top = floor;
    for (float v : samples)
        top = std::max(top, v);
    QList<float> out;
    out.reserve(samples.size());
    for (float v : samples)
        out.append(top > 0 ? v / top : 0);
    return out;
}

} // namespace

QVariant SandboxModel::sandboxData(const QModelIndex &index, int role) const
{
    const Entry *e = entry(index);
    if (!e)
        return {};
    const QJsonObject &s = e->json;
    const QString &network = e->network;
    const Usage *u = usage(index);
    const DaemonClient *client = m_hosts.at(qsizetype(index.internalId()) - 1).client;
    if (!client->isConnected()) { // what was last seen, marked as such
        if (role == Qt::ForegroundRole)
            return QColor(0x99, 0x99, 0x99);
        if (role == Qt::DecorationRole)
            return index.column() == Name ? QVariant(stateDot(QStringLiteral("stopped"))) : QVariant();
        if (role == Qt::ToolTipRole && (index.column() == Name || index.column() == State))
            return tr("As last seen: its host is not connected");
    }
    const int running = u ? u->executions : e->executions;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name:
            return e->name;
        case State:
            return e->state;
        case Running:
            return running > 0 ? QVariant(running) : QVariant();
        case Cpu:
            return u && u->cpuNs >= 0 && !u->cpu.isEmpty()
                ? QVariant(QStringLiteral("%1 %").arg(u->cpuPercent, 0, 'f', u->cpuPercent < 10 ? 1 : 0))
                : QVariant();
        case Memory:
            return u && u->memoryBytes > 0 ? QVariant(units::formatBytes(uint64_t(u->memoryBytes))) : QVariant();
        case Network: // and what holds the sandbox, where it is not the default
            return network == QLatin1String("full") ? tr("FULL (host network)")
                : e->gvisor                         ? tr("%1 · gVisor").arg(network)
                                                    : network;
        case Credentials:
            return e->credentials;
        case Age:
            return e->createdMs ? age(QDateTime::currentMSecsSinceEpoch() - e->createdMs) : QString();
        case Agent:
            return u ? u->agent : e->agent;
        case Run:
            return u ? u->run : e->run;
        case LastOutput:
            return u ? u->lastOutput : QString();
        }
        return {};
    case Qt::DecorationRole:
        return index.column() == Name ? QVariant(stateDot(e->state)) : QVariant();
    case Qt::TextAlignmentRole:
        return index.column() == Running || index.column() == Cpu || index.column() == Memory
            ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
            : QVariant();
    case Qt::ForegroundRole:
        return index.column() == Network    ? QVariant(networkColor(network))
            : index.column() == Credentials ? QVariant(QColor(0x2a, 0x7a, 0xc0))
                                            : QVariant();
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Credentials: {
            QStringList lines;
            for (const QJsonValue &v : s.value(QStringLiteral("credentials")).toArray()) {
                const QJsonObject g = v.toObject();
                const bool file = g.contains(QStringLiteral("file"));
                lines.append(
                    tr("%1 as %2 %3")
                        .arg(display::escaped(g.value(QStringLiteral("secret")).toString(), 60),
                            file ? tr("the file") : tr("the variable"),
                            display::escaped(
                                g.value(file ? QStringLiteral("file") : QStringLiteral("env")).toString(), 120)));
            }
            return Qt::convertFromPlainText(
                lines.isEmpty() ? tr("No credentials granted") : lines.join(QLatin1Char('\n')));
        }
        case Network: {
            const QString mode = network == QLatin1String("none")
                ? (e->gvisor ? tr("No network: gVisor's own loopback alone")
                             : tr("No network: an empty network namespace"))
                : network == QLatin1String("allowlist")
                ? tr("Only the destinations its policy allows, through the egress proxy")
                : tr("The host's network, unrestricted");
            return e->gvisor ? tr("%1\nHeld by %2")
                                   .arg(mode,
                                       s.value(QStringLiteral("isolation"))
                                           .toObject()
                                           .value(QStringLiteral("enforcedBy"))
                                           .toString())
                             : mode;
        }
        case Name:
        case State:
            return s.value(QStringLiteral("failure")).isString()
                ? Qt::convertFromPlainText(display::escaped(s.value(QStringLiteral("failure")).toString(), 400))
                : QVariant(Qt::convertFromPlainText(
                    tr("%1 — %2").arg(display::escaped(e->name, 60), display::escaped(e->state, 20))));
        case Running:
            return u && !u->commands.isEmpty() ? QVariant(Qt::convertFromPlainText(u->commands.join(QLatin1Char('\n'))))
                                               : QVariant(tr("Nothing running"));
        case Cpu:
            return tr("CPU over the last second, as a share of one core; the line is the last minute");
        case Memory:
            return u ? QVariant(
                       tr("Resident memory of its %n process(es); the line is the last minute", nullptr, u->processes))
                     : QVariant();
        case Age:
            return tr("made %1").arg(display::timestamp(e->createdMs));
        case LastOutput:
            return u ? QVariant(Qt::convertFromPlainText(u->lastOutput)) : QVariant();
        }
        return {};
    case SortRole:
        switch (index.column()) {
        case Running:
            return running;
        case Cpu:
            return u ? u->cpuPercent : 0.0;
        case Memory:
            return u ? u->memoryBytes : qint64(0);
        case Age:
            return -e->createdMs; // ascending: youngest first
        default:
            return data(index, Qt::DisplayRole).toString().toLower();
        }
    case SparklineRole:
        if (!u)
            return {};
        if (index.column() == Cpu)
            return QVariant::fromValue(scaled(u->cpu, 100));
        if (index.column() == Memory)
            return QVariant::fromValue(scaled(u->memory, 1));
        return {};
    case SandboxIdRole:
        return e->id;
    case HostRole:
        return int(index.internalId() - 1);
    case NetworkModeRole:
        return network;
    }
    return {};
}

void SandboxModel::setUsage(int hostRow, const QJsonArray &stats, qint64 nowMs)
{
    if (hostRow < 0 || hostRow >= m_hosts.size())
        return;
    Host &host = m_hosts[hostRow];
    if (host.retired)
        return;
    QHash<QString, Usage> next;
    for (const QJsonValue &v : stats) {
        const QJsonObject o = v.toObject();
        const QString id = o.value(QStringLiteral("id")).toString();
        Usage u = host.usage.value(id);
        const qint64 cpuNs = qint64(o.value(QStringLiteral("cpuNs")).toDouble());
        if (u.cpuNs >= 0 && nowMs > u.sampledMs)
            u.cpuPercent
                = std::max(0.0, double(cpuNs - u.cpuNs) / 1e4 / double(nowMs - u.sampledMs)); // ns per ms → percent
        if (u.cpuNs >= 0) {
            u.cpu.append(float(u.cpuPercent));
            u.memory.append(float(o.value(QStringLiteral("memoryBytes")).toDouble()));
        }
        if (u.cpu.size() > kSparklineSamples) {
            u.cpu.removeFirst();
            u.memory.removeFirst();
        }
        u.cpuNs = cpuNs;
        u.sampledMs = nowMs;
        u.memoryBytes = qint64(o.value(QStringLiteral("memoryBytes")).toDouble());
        u.processes = o.value(QStringLiteral("processes")).toInt();
        u.executions = o.value(QStringLiteral("executions")).toInt();
        u.lastOutput = display::escaped(o.value(QStringLiteral("lastOutput")).toString().left(300), 200);
        u.agent = display::escaped(o.value(QStringLiteral("agent")).toString().left(200), 40);
        u.run = display::escaped(o.value(QStringLiteral("run")).toString().left(200), 60);
        u.commands.clear();
        for (const QJsonValue &c : o.value(QStringLiteral("commands")).toArray())
            if (u.commands.size() < 5)
                u.commands.append(display::escaped(c.toString(), 240));
        next.insert(id, std::move(u));
    }
    host.usage = std::move(next);
    if (!host.sandboxes.isEmpty()) {
        const QModelIndex parent = index(hostRow, 0);
        Q_EMIT dataChanged(index(0, Running, parent), index(int(host.sandboxes.size()) - 1, ColumnCount - 1, parent),
            {Qt::DisplayRole, Qt::ToolTipRole, SortRole, SparklineRole});
    }
}

QStringList SandboxModel::runningCommands(const QModelIndex &index) const
{
    const Usage *u = index.isValid() && index.internalId() != kHostNode ? usage(index) : nullptr;
    return u ? u->commands : QStringList();
}

QVariant SandboxModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Sandbox");
    case State:
        return tr("State");
    case Running:
        return tr("Running");
    case Cpu:
        return tr("CPU");
    case Memory:
        return tr("Memory");
    case Network:
        return tr("Network");
    case Credentials:
        return tr("Credentials");
    case Age:
        return tr("Age");
    case Agent:
        return tr("Agent");
    case Run:
        return tr("Run");
    case LastOutput:
        return tr("Last output");
    }
    return {};
}

} // namespace airlock::ui
