// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Event.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QObject>

#include <functional>
#include <memory>

#include <QLocalSocket>

namespace airlock::rpc {
class Connection;
}

namespace airlock {

struct HostAddress;

struct ConnectOptions {
    QString socketPath; // empty: the default per-user socket
    QString host; // a daemon's address (unix://PATH, …; see Hosts.h); empty: this machine's
    bool autostart = true; // start airlockd when nothing answers
    QString daemonProgram; // empty: airlockd next to this executable, then $PATH
    QString clientName = QStringLiteral("airlock");
    QString run;
    QString agent; // set: this client acts for an agent (command rules and approvals apply)
    QString token; // wss:// and ws://: the bearer token (empty: $AIRLOCK_TOKEN)
    int timeoutMs = 10000;
};

// The one client API every front end (CLI, GUI, MCP bridge) uses. Asynchronous with signals, plus a
// blocking call() for simple front ends that spins a local event loop.
class DaemonClient final : public QObject {
    Q_OBJECT
public:
    explicit DaemonClient(QObject *parent = nullptr);
    ~DaemonClient() override;

    // The connected, checked socket of the daemon these options name (starting it if allowed),
    // before any handshake: for a bridge that relays the protocol as bytes (airlockd --stdio).
    static Result<std::unique_ptr<QLocalSocket>> openDaemonSocket(
        const ConnectOptions &options, QString *startNotice = nullptr);

    // Connects (starting the daemon if allowed) and performs the version handshake.
    Status connectToDaemon(const ConnectOptions &options);
    // Over a socket already connected to the daemon, without waiting: the handshake's outcome goes
    // to `done`. For the daemon's own front ends (the Daytona API), which must not wait in its loop.
    void connectOver(QLocalSocket *socket, const ConnectOptions &options, std::function<void(Status)> done);
    bool isConnected() const;
    // What a daemon this client started said before it was ready (a damaged history set aside):
    // empty when it said nothing, or was already running.
    QString startNotice() const { return m_startNotice; }
    // The version the daemon said it is at the handshake.
    QString daemonVersion() const { return m_daemonVersion; }
    // Ends the connection on purpose: no disconnected() signal, and what waits for an answer gets
    // a DaemonUnavailable error now.
    void close();
    // The options of the last connectToDaemon, to connect again the same way after a drop.
    const ConnectOptions &options() const { return m_options; }

    using Callback = std::function<void(Result<QJsonValue>)>;
    // How far a long request has come (the daemon's "progress" notifications for it), before its
    // reply: {"phase", "done", "total"} for history.prune.
    using Progress = std::function<void(const QJsonObject &)>;
    // The request's id (0 when not connected: `done` was called with the error already).
    qint64 callAsync(const QString &method, const QJsonObject &params, Callback done, Progress progress = {});
    Result<QJsonObject> call(
        const QString &method, const QJsonObject &params = {}, int timeoutMs = 60000, Progress progress = {});

    // Fire-and-forget for requests whose failure is not actionable (stdin, resize).
    void notify(const QString &method, const QJsonObject &params);
    // Bytes of a file transfer that fs.upload opened (at most rpc::kMaxDataChunk per call),
    // written before it returns (it waits for the daemon to read when the socket is full).
    void sendData(quint32 transfer, const QByteArray &bytes);
    // What waits to be written to the daemon: a sender keeps it short (flow control).
    qint64 pendingBytes() const;

Q_SIGNALS:
    void eventReceived(const airlock::Event &event);
    // A data frame of a download (fs.download): `bytes` is valid only during the call.
    void dataReceived(quint32 transfer, QByteArrayView bytes);
    // A notification other than events and progress (fs.transfer: a download ended).
    void notified(const QString &method, const QJsonObject &params);
    // Something was written to the daemon (a sender waiting for pendingBytes() to go down).
    void bytesWritten();
    void disconnected(const airlock::Error &why);

private:
    QString m_daemonVersion;
    static Result<std::unique_ptr<QLocalSocket>> openSsh(const HostAddress &address);
    static Result<std::unique_ptr<QLocalSocket>> openWebSocket(
        const HostAddress &address, const QString &token, int timeoutMs);
    void attach(QLocalSocket *socket);
    // `statusFd`: the read end of the daemon's stderr (non-blocking), to hear an early exit.
    static Status startDaemon(const ConnectOptions &options, const QString &socketPath, int *statusFd);
    void onMessage(const QJsonObject &message);

    rpc::Connection *m_conn = nullptr;
    ConnectOptions m_options;
    qint64 m_nextId = 1;
    QHash<qint64, Callback> m_pending;
    QHash<qint64, Progress> m_progress; // of pending calls that asked for it
    Error m_lastServerError;
    QString m_startNotice;
};

} // namespace airlock
