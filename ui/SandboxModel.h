// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractItemModel>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>

namespace airlock {
class DaemonClient;
struct Event;
} // namespace airlock

namespace airlock::ui {

// Hosts and their sandboxes, as each host's daemon reports them: a tree whose top level is the
// hosts (this computer first; remote ones are added the same way) and whose children are
// sandboxes with a state dot, running commands, CPU and memory (with their last minute as a
// sparkline), network mode (coloured: none, allowlist, full), the credentials granted to it, age,
// the agent and run of its newest command and its last line of output. Each host's list is
// refreshed from its own sandbox.list whenever one of its events says something changed; what
// changes all the time comes from sandbox.stats samples (setUsage, fed by a FleetSampler).
// SortRole gives every column's raw value.
class SandboxModel final : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, State, Running, Cpu, Memory, Network, Credentials, Age, Agent, Run, LastOutput, ColumnCount };
    enum Role {
        SandboxIdRole = Qt::UserRole + 1,
        NetworkModeRole,
        HostRole,
        SortRole, // the raw value: numbers for numbers, lower-case text otherwise
        SparklineRole, // Cpu, Memory: QList<float> of the last samples, oldest first, each 0..1
        RetiredRole, // a host row: removed from the console (its row stays, hidden, so rows keep their numbers)
    };
    static constexpr int kSparklineSamples = 60;

    explicit SandboxModel(QObject *parent = nullptr);
    // The usual console: this computer's daemon as the one host.
    explicit SandboxModel(DaemonClient &client, QObject *parent = nullptr);

    int addHost(const QString &name, DaemonClient &client); // its row; follows its events
    // What a host row says besides its name: where it is, and its state ("connected", or why
    // not), with details (round trip, version, machine) in the tooltip.
    void setHostStatus(int host, const QString &address, const QString &status, const QString &detail = {});
    // A host taken out of the console (Remove host, or gone from hosts.json): its sandboxes go,
    // its client is no longer followed, and views hide its row (FleetFilter); its number stays.
    void retireHost(int host);
    bool isRetired(int host) const { return m_hosts.value(host).retired; }
    QString hostName(int host) const { return m_hosts.value(host).retired ? QString() : m_hosts.value(host).name; }
    int hostCount() const { return int(m_hosts.size()); }
    DaemonClient *hostClient(const QModelIndex &index) const; // of a host row or of a sandbox under it
    void refresh(); // every host
    // One sandbox.stats answer of a host, taken at nowMs: CPU is the share of one core since the
    // previous sample. Only the columns that change are announced.
    void setUsage(int host, const QJsonArray &stats, qint64 nowMs);
    // What its stats said last: running commands ("execution 3: make test"), for a confirmation.
    QStringList runningCommands(const QModelIndex &index) const;

    QModelIndex sandboxIndex(const QString &nameOrId, int host = -1) const; // -1: the first host that has it
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
    struct Usage {
        qint64 cpuNs = -1, sampledMs = 0, memoryBytes = 0;
        double cpuPercent = 0;
        int processes = 0, executions = 0;
        QString lastOutput, agent, run; // as shown: escaped once, when sampled
        QStringList commands;
        QList<float> cpu, memory; // percent and bytes, newest last
    };
    // A sandbox as sandbox.list gave it, with what every paint and sort asks for worked out once.
    struct Entry {
        QJsonObject json;
        QString id, name, state, network, credentials; // credentials: the names, as shown
        bool gvisor = false; // held by gVisor (--isolation gvisor), not bubblewrap
        qint64 createdMs = 0;
        int executions = 0;
        QString agent, run; // as shown
        static Entry from(const QJsonObject &json);
    };
    struct Host {
        QString name;
        DaemonClient *client = nullptr;
        QList<Entry> sandboxes;
        bool refreshing = false, again = false, retired = false;
        QString address, status, detail;
        QHash<QString, Usage> usage; // by sandbox id
    };
    const Usage *usage(const QModelIndex &index) const;
    const Entry *entry(const QModelIndex &index) const;
    QVariant sandboxData(const QModelIndex &index, int role) const;
    void refreshHost(int host);
    void setSandboxes(int host, const QJsonArray &list);

    QList<Host> m_hosts;
};

} // namespace airlock::ui
