// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractItemModel>
#include <QJsonArray>
#include <QJsonObject>

namespace airlock {
class DaemonClient;
struct Event;
}

namespace airlock::ui {

// Hosts and their sandboxes, as the daemon reports them: a tree whose top level is the hosts
// (this computer now; remote ones later) and whose children are sandboxes with name, state,
// network mode (coloured: none, allowlist, full), the credentials granted to it, and age. Refreshed from sandbox.list whenever a
// sandbox event says something changed.
class SandboxModel final : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, State, Network, Credentials, Created, ColumnCount };
    enum Role { SandboxIdRole = Qt::UserRole + 1, NetworkModeRole };

    explicit SandboxModel(DaemonClient &client, QObject *parent = nullptr);
    void refresh();
    void onEvent(const Event &event);
    QModelIndex sandboxIndex(const QString &nameOrId) const;
    QJsonObject sandbox(const QModelIndex &index) const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QColor networkColor(const QString &mode);

Q_SIGNALS:
    void refreshed();

private:
    void setSandboxes(const QJsonArray &list);

    DaemonClient &m_client;
    QList<QJsonObject> m_sandboxes; // of the one host for now
    bool m_refreshing = false, m_again = false;
};

} // namespace airlock::ui
