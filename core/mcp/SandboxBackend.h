// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "mcp/McpTools.h"
#include "mcp/ToolCall.h"
#include "model/Event.h"
#include "util/Result.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QSet>

#include <functional>

namespace airlock {
class DaemonClient;
}

namespace airlock::mcp {

class ExecCall;

// What an MCP session may do, and the calls that do it, over the daemon. The session acts as an
// agent (its commands go through the command rules and, when they ask, a person) and reaches only
// the sandboxes it created, or that the person shared with it. A sandbox's preset and network
// are the person's to give: the agent may ask only for what the session was started with.
class SandboxBackend final : public QObject {
    Q_OBJECT
public:
    struct Options {
        QString preset; // --preset: sandboxes are created with it
        QStringList allow; // --allow: hosts the agent may ask for (network allowlist)
        QStringList shared; // --sandbox: the person's own sandboxes this session may use
        qint64 leaseMs = 10'000; // executions die this long after the session's connection does
    };
    // Connects as the agent (for `client` calls) and, when a preset or hosts were given, as the
    // person who started the session (only to create sandboxes with them).
    using Connect = std::function<Result<DaemonClient *>(bool asAgent)>;

    SandboxBackend(Options options, Connect connect, QObject *parent = nullptr);
    ~SandboxBackend() override;

    Status open(); // the agent's connection; shared sandboxes looked up
    QList<ToolSpec> tools() const; // Airlock's own, then the host tools of the session's sandboxes

    using Cancel = std::function<void()>;
    // Runs a tool whose arguments already passed its schema; returns how to cancel it.
    Cancel call(const QString &tool, const QJsonObject &arguments, CallHooks hooks);
    // Kills every execution still running; then done.
    void shutdown(std::function<void()> done);

Q_SIGNALS:
    void toolsChanged(); // a sandbox with other host tools joined or left the session

private:
    struct Scoped {
        QString id, name;
        QList<ToolSpec> hostTools; // that its policy lets it call
    };
    Result<Scoped> resolve(const QString &ref) const;
    Cancel create(const QJsonObject &arguments, CallHooks hooks);
    Cancel exec(const QJsonObject &arguments, CallHooks hooks);
    void list(CallHooks hooks);
    void writeFile(const QJsonObject &arguments, CallHooks hooks);
    void readFile(const QJsonObject &arguments, CallHooks hooks);
    void remove(const QJsonObject &arguments, CallHooks hooks);
    Cancel callHostTool(const QString &tool, const QJsonObject &arguments, CallHooks hooks);
    void adopt(const QString &id, const QString &name); // into the session: events, host tools
    void onEvent(const Event &event);
    void onLost(const QString &why);

    Options m_options;
    Connect m_connect;
    QPointer<DaemonClient> m_client;
    QHash<QString, Scoped> m_scope; // by id
    QSet<QString> m_shared; // ids of the person's sandboxes in the scope
    QList<QPointer<ExecCall>> m_execs;
    // Host tool calls in flight, for news of their approvals: sandbox id, tool, progress.
    struct Waiting {
        QString sandbox, tool;
        std::function<void(const QString &)> progress;
        QSet<QString> approvals; // ids of its requests
    };
    QHash<quint64, Waiting> m_waiting;
    quint64 m_nextCall = 1;
};

} // namespace airlock::mcp
