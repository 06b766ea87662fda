// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/Hosts.h"

#include <QObject>

#include <memory>
#include <optional>
#include <vector>

class QFileSystemWatcher;
class QTimer;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

class MainWindow;

// The saved hosts (hosts.json, as `airlockctl hosts add` or the Add host dialog left them) in the
// console: each a row of the sandbox tree and a source of the approvals dock, connected in the
// background and again with backoff (1 s doubling to 30 s) when it drops. Its row says where it
// is, its state, the round trip of a daemon.info (measured every 10 s) and the daemon's version.
class RemoteHosts final : public QObject {
    Q_OBJECT
public:
    explicit RemoteHosts(MainWindow &window, QObject *parent = nullptr);
    ~RemoteHosts() override;

    // Refused (AlreadyExists) when a host of that name is in the window already: a name picks the
    // host a decision, a command or a history query goes to.
    Status add(const HostRegistry::Entry &entry);
    // Takes a host out of the console: its connection is closed, its row and requests go.
    bool remove(const QString &name);
    // Makes the console's hosts those of `entries`: new ones added, gone ones removed, one whose
    // address or token changed connected again. What could not be added is said, one line each.
    QStringList sync(const QList<HostRegistry::Entry> &entries);
    // Loads hosts.json at `path` and follows it: what `airlockctl hosts add/rm` (or another
    // console) writes there is picked up within a moment.
    QStringList follow(const QString &path);
    int count() const;
    DaemonClient *client(const QString &name) const;
    std::optional<HostRegistry::Entry> entry(int row) const; // of a fleet row

Q_SIGNALS:
    void hostChanged(const QString &name); // connected, lost, measured
    void hostConnected(airlock::DaemonClient *client); // first time, or back after a drop
    void hostLost(airlock::DaemonClient *client, const QString &why);
    void hostRemoved(const QString &name);
    void followed(const QStringList &problems); // hosts.json was read again

private:
    struct Host;
    void connectHost(Host &host);
    void probe(Host &host);
    void lost(Host &host, const QString &why);

    MainWindow &m_window;
    std::vector<std::unique_ptr<Host>> m_hosts;
    QFileSystemWatcher *m_watcher = nullptr;
    QTimer *m_reread = nullptr;
    QString m_path;
};

} // namespace airlock::ui
