// SPDX-License-Identifier: Apache-2.0
#include "RemoteHosts.h"
#include "model/DisplayText.h"
#include "util/Version.h"

#include "ApprovalsDock.h"
#include "MainWindow.h"
#include "SandboxModel.h"
#include "client/DaemonApi.h"
#include "client/HostTokens.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QPointer>
#include <QTimer>

namespace airlock::ui {

namespace {
constexpr int kProbeMs = 10'000;
constexpr int kMaxRetryMs = 30'000;
} // namespace

namespace {
// The row shows where the host is; the pinned fingerprint is in the tooltip (it is long).
QString shownAddress(const QString &url)
{
    return url.section(QLatin1Char('#'), 0, 0);
}
} // namespace

struct RemoteHosts::Host {
    HostRegistry::Entry entry;
    DaemonClient client;
    int row = -1;
    int retryMs = 1000;
    QTimer retry, probe;
    bool connecting = false;
    bool removed = false;
};

RemoteHosts::RemoteHosts(MainWindow &window, QObject *parent)
    : QObject(parent)
    , m_window(window)
{
}

RemoteHosts::~RemoteHosts() = default;

DaemonClient *RemoteHosts::client(const QString &name) const
{
    for (const auto &h : m_hosts)
        if (!h->removed && h->entry.name == name)
            return &h->client;
    return nullptr;
}

int RemoteHosts::count() const
{
    return int(std::count_if(m_hosts.cbegin(), m_hosts.cend(), [](const auto &h) { return !h->removed; }));
}

std::optional<HostRegistry::Entry> RemoteHosts::entry(int row) const
{
    for (const auto &h : m_hosts)
        if (!h->removed && h->row == row)
            return h->entry;
    return std::nullopt;
}

bool RemoteHosts::remove(const QString &name)
{
    for (const auto &host : m_hosts) {
        Host &h = *host;
        if (h.removed || h.entry.name != name)
            continue;
        h.removed = true; // kept (the fleet's row numbers stay), never connected again
        h.retry.stop();
        h.probe.stop();
        h.client.disconnect(this);
        h.client.close();
        m_window.retireHost(h.row);
        Q_EMIT hostRemoved(name);
        return true;
    }
    return false;
}

QStringList RemoteHosts::sync(const QList<HostRegistry::Entry> &entries)
{
    for (const auto &host : m_hosts) {
        if (host->removed)
            continue;
        const auto now = std::find_if(
            entries.cbegin(), entries.cend(), [&](const HostRegistry::Entry &e) { return e.name == host->entry.name; });
        if (now == entries.cend() || now->url != host->entry.url || now->token != host->entry.token)
            remove(host->entry.name);
    }
    QStringList problems;
    for (const HostRegistry::Entry &e : entries) {
        if (client(e.name))
            continue;
        if (Status added = add(e); !added) // hosts.json edited by hand: the first of a name is kept
            problems.append(tr("Host %1 left out: %2").arg(display::escaped(e.name, 64), added.error().message));
    }
    return problems;
}

QStringList RemoteHosts::follow(const QString &path)
{
    m_path = path;
    if (!m_watcher) {
        // The file and its folder: a save replaces the file (a new inode the file's watch misses).
        m_watcher = new QFileSystemWatcher(this);
        m_reread = new QTimer(this);
        m_reread->setSingleShot(true);
        m_reread->setInterval(150); // one read for the burst of changes a save makes
        connect(m_watcher, &QFileSystemWatcher::fileChanged, m_reread, qOverload<>(&QTimer::start));
        connect(m_watcher, &QFileSystemWatcher::directoryChanged, m_reread, qOverload<>(&QTimer::start));
        connect(m_reread, &QTimer::timeout, this, [this] { Q_EMIT followed(follow(m_path)); });
    }
    const QString dir = QFileInfo(path).absolutePath();
    QDir().mkpath(dir);
    for (const QString &watched : {dir, path})
        if (QFileInfo::exists(watched) && !m_watcher->files().contains(watched)
            && !m_watcher->directories().contains(watched))
            m_watcher->addPath(watched);
    auto hosts = HostRegistry::load(path);
    if (!hosts)
        return {hosts.error().message};
    return sync(hosts->entries());
}

Status RemoteHosts::add(const HostRegistry::Entry &entry)
{
    for (int row = 0; row < m_window.sandboxModel()->hostCount(); ++row)
        if (m_window.sandboxModel()->hostName(row) == entry.name)
            return makeError(ErrorCode::AlreadyExists,
                tr("a host named '%1' is in the console already").arg(display::escaped(entry.name, 64)));
    auto host = std::make_unique<Host>();
    Host &h = *host;
    h.entry = entry;
    m_hosts.push_back(std::move(host));
    h.row = m_window.addHost(entry.name, h.client);
    m_window.sandboxModel()->setHostStatus(h.row, shownAddress(entry.url), tr("connecting…"), entry.url);
    h.retry.setSingleShot(true);
    connect(&h.retry, &QTimer::timeout, this, [this, &h] { connectHost(h); });
    connect(&h.probe, &QTimer::timeout, this, [this, &h] { probe(h); });
    connect(&h.client, &DaemonClient::disconnected, this, [this, &h](const Error &why) { lost(h, why.message); });
    // After the window is up: a slow or unreachable host never holds the console back.
    QTimer::singleShot(0, this, [this, &h] { connectHost(h); });
    return Ok{};
}

void RemoteHosts::connectHost(Host &h)
{
    if (h.removed || h.connecting || h.client.isConnected())
        return;
    h.connecting = true;
    ConnectOptions options;
    options.host = h.entry.url;
    options.autostart = false;
    options.timeoutMs = 5000;
    options.clientName = QStringLiteral("airlock/") + version();
    Status connected = Ok{};
    if (!h.entry.token.isEmpty()) {
        auto token = hosttokens::load(h.entry.name, h.entry.token);
        if (token)
            options.token = QString::fromLatin1(*token);
        else
            connected = token.error();
    }
    if (connected)
        connected = h.client.connectToDaemon(options);
    h.connecting = false;
    if (h.removed) { // taken out while the handshake waited (a nested event loop): not connected after all
        h.client.close();
        return;
    }
    if (!connected)
        return lost(h, connected.error().message);
    h.retryMs = 1000;
    DaemonApi(h.client).subscribe().then([](Result<QJsonObject>) {});
    m_window.sandboxModel()->refresh();
    m_window.approvals()->refresh();
    probe(h);
    h.probe.start(kProbeMs);
    Q_EMIT hostConnected(&h.client);
}

void RemoteHosts::probe(Host &h)
{
    if (!h.client.isConnected())
        return;
    auto timer = std::make_shared<QElapsedTimer>();
    timer->start();
    DaemonApi(h.client).daemonInfo().then([self = QPointer<RemoteHosts>(this), &h, timer](Result<QJsonObject> r) {
        if (!self || !r || h.removed)
            return;
        const QJsonObject &info = *r;
        const double ms = double(timer->nsecsElapsed()) / 1e6;
        self->m_window.sandboxModel()->setHostStatus(h.row, shownAddress(h.entry.url),
            // The column says the state; the round trip, version and machine are in the tooltip.
            tr("connected"),
            tr("Round trip %1 ms, airlockd %2\n%3 (kernel %4), %6\n%5")
                .arg(ms, 0, 'f', ms < 10 ? 1 : 0)
                .arg(display::escaped(info.value(QStringLiteral("version")).toString(), 40),
                    display::escaped(info.value(QStringLiteral("host")).toString(), 80),
                    display::escaped(info.value(QStringLiteral("kernel")).toString(), 80), h.entry.url,
                    display::count(info.value(QStringLiteral("sandboxes")).toInt(), tr("sandbox"), tr("sandboxes"))));
        Q_EMIT self->hostChanged(h.entry.name);
    });
}

void RemoteHosts::lost(Host &h, const QString &why)
{
    if (h.removed)
        return;
    h.probe.stop();
    m_window.sandboxModel()->setHostStatus(h.row, shownAddress(h.entry.url),
        tr("unreachable, retrying in %1 s").arg(h.retryMs / 1000), QStringLiteral("%1\n%2").arg(why, h.entry.url));
    m_window.sandboxModel()->refresh();
    m_window.approvals()->refresh();
    h.retry.start(h.retryMs);
    h.retryMs = std::min(h.retryMs * 2, kMaxRetryMs);
    Q_EMIT hostChanged(h.entry.name);
    Q_EMIT hostLost(&h.client, why);
}

} // namespace airlock::ui
