// SPDX-License-Identifier: Apache-2.0
#include "SandboxModel.h"

#include "client/DaemonClient.h"
#include "model/DisplayText.h"

#include <QColor>
#include <QDateTime>
#include <QPointer>

namespace airlock::ui {

namespace {
constexpr quintptr kHostNode = 0; // internalId of a host row; sandbox rows carry host + 1
}

SandboxModel::SandboxModel(DaemonClient &client, QObject *parent) : QAbstractItemModel(parent), m_client(client) {}

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
    if (m_refreshing) {
        m_again = true; // one more once this answer is in: nothing is missed, nothing piles up
        return;
    }
    m_refreshing = true;
    // The answer may come after this model is gone.
    m_client.callAsync(QStringLiteral("sandbox.list"), {}, [self = QPointer<SandboxModel>(this)](Result<QJsonValue> r) {
        if (!self)
            return;
        self->m_refreshing = false;
        if (r)
            self->setSandboxes(r->toObject().value(QStringLiteral("sandboxes")).toArray());
        if (std::exchange(self->m_again, false))
            self->refresh();
    });
}

void SandboxModel::onEvent(const Event &event)
{
    if (event.kind.startsWith(QLatin1String("sandbox.")) || event.kind == QLatin1String("policy.changed"))
        refresh();
}

void SandboxModel::setSandboxes(const QJsonArray &list)
{
    QList<QJsonObject> next;
    for (const QJsonValue &v : list)
        next.append(v.toObject());
    std::sort(next.begin(), next.end(), [](const QJsonObject &a, const QJsonObject &b) {
        return a.value(QStringLiteral("name")).toString() < b.value(QStringLiteral("name")).toString();
    });
    const QModelIndex host = index(0, 0);
    // Rows that stay keep their place (and the selection); only what changed moves.
    for (qsizetype i = m_sandboxes.size() - 1; i >= 0; --i) {
        const QString id = m_sandboxes[i].value(QStringLiteral("id")).toString();
        if (std::none_of(next.cbegin(), next.cend(), [&](const QJsonObject &o) { return o.value(QStringLiteral("id")).toString() == id; })) {
            beginRemoveRows(host, int(i), int(i));
            m_sandboxes.removeAt(i);
            endRemoveRows();
        }
    }
    for (qsizetype i = 0; i < next.size(); ++i) {
        const QString id = next[i].value(QStringLiteral("id")).toString();
        const auto at = std::find_if(m_sandboxes.begin(), m_sandboxes.end(), [&](const QJsonObject &o) { return o.value(QStringLiteral("id")).toString() == id; });
        if (at == m_sandboxes.end()) {
            beginInsertRows(host, int(i), int(i));
            m_sandboxes.insert(i, next[i]);
            endInsertRows();
        } else {
            *at = next[i];
        }
    }
    if (!m_sandboxes.isEmpty())
        Q_EMIT dataChanged(index(0, 0, host), index(int(m_sandboxes.size()) - 1, ColumnCount - 1, host));
    Q_EMIT refreshed();
}

QModelIndex SandboxModel::sandboxIndex(const QString &nameOrId) const
{
    for (qsizetype i = 0; i < m_sandboxes.size(); ++i)
        if (m_sandboxes[i].value(QStringLiteral("name")).toString() == nameOrId || m_sandboxes[i].value(QStringLiteral("id")).toString() == nameOrId)
            return index(int(i), 0, index(0, 0));
    return {};
}

QJsonObject SandboxModel::sandbox(const QModelIndex &i) const
{
    if (!i.isValid() || i.internalId() == kHostNode || i.row() >= m_sandboxes.size())
        return {};
    return m_sandboxes.at(i.row());
}

QModelIndex SandboxModel::index(int row, int column, const QModelIndex &parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    if (!parent.isValid())
        return row == 0 ? createIndex(row, column, kHostNode) : QModelIndex();
    if (parent.internalId() == kHostNode && parent.column() == 0 && row < m_sandboxes.size())
        return createIndex(row, column, quintptr(1));
    return {};
}

QModelIndex SandboxModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == kHostNode)
        return {};
    return createIndex(0, 0, kHostNode);
}

int SandboxModel::rowCount(const QModelIndex &parent) const
{
    if (!parent.isValid())
        return 1;
    if (parent.internalId() == kHostNode && parent.column() == 0)
        return int(m_sandboxes.size());
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
        if (role == Qt::DisplayRole && index.column() == Name)
            return tr("This computer");
        if (role == Qt::DisplayRole && index.column() == State)
            return m_client.isConnected() ? tr("connected") : tr("not connected");
        return {};
    }
    const QJsonObject s = m_sandboxes.value(index.row());
    const QString network = s.value(QStringLiteral("network")).toString();
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name: return s.value(QStringLiteral("name")).toString();
        case State: return s.value(QStringLiteral("state")).toString();
        case Network: return network == QLatin1String("full") ? tr("FULL (host network)") : network;
        case Credentials: {
            QStringList names;
            for (const QJsonValue &g : s.value(QStringLiteral("credentials")).toArray())
                names.append(display::escaped(g.toObject().value(QStringLiteral("secret")).toString(), 40));
            return names.join(QStringLiteral(", "));
        }
        case Created: return QDateTime::fromString(s.value(QStringLiteral("createdAt")).toString(), Qt::ISODateWithMs).toLocalTime().toString(QStringLiteral("HH:mm:ss"));
        }
        return {};
    case Qt::ForegroundRole:
        return index.column() == Network ? QVariant(networkColor(network)) : index.column() == Credentials ? QVariant(QColor(0x2a, 0x7a, 0xc0)) : QVariant();
    case Qt::ToolTipRole:
        if (index.column() == Credentials) {
            QStringList lines;
            for (const QJsonValue &v : s.value(QStringLiteral("credentials")).toArray()) {
                const QJsonObject g = v.toObject();
                const bool file = g.contains(QStringLiteral("file"));
                lines.append(tr("%1 as %2 %3").arg(display::escaped(g.value(QStringLiteral("secret")).toString(), 60),
                                                   file ? tr("the file") : tr("the variable"),
                                                   display::escaped(g.value(file ? QStringLiteral("file") : QStringLiteral("env")).toString(), 120)));
            }
            return lines.isEmpty() ? tr("No credentials granted") : lines.join(QLatin1Char('\n'));
        }
        return index.column() == Network ? QVariant(network == QLatin1String("none")      ? tr("No network: an empty network namespace")
                                                    : network == QLatin1String("allowlist") ? tr("Only the destinations its policy allows, through the egress proxy")
                                                                                             : tr("The host's network, unrestricted"))
                                         : QVariant();
    case SandboxIdRole: return s.value(QStringLiteral("id")).toString();
    case NetworkModeRole: return network;
    }
    return {};
}

QVariant SandboxModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name: return tr("Sandbox");
    case State: return tr("State");
    case Network: return tr("Network");
    case Credentials: return tr("Credentials");
    case Created: return tr("Created");
    }
    return {};
}

} // namespace airlock::ui
