// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daytona/DaytonaSessions.h"
#include "daytona/DaytonaStore.h"
#include "daytona/HttpMessage.h"
#include "model/Event.h"
#include "remote/TokenStore.h"
#include "util/Result.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>

#include <functional>

namespace airlock {
class DaemonClient;
namespace mcp {
class ExecCall;
}
} // namespace airlock

namespace airlock::daytona {

// Daytona's REST API (under /api) and its sandboxes' toolbox API (under /toolbox/ID), the part the
// official SDKs use, answered for one API key over one agent connection to the daemon: every
// request is that agent's, so the command rules, approvals, egress policy and the history apply
// as they do to an MCP session. It reaches only the sandboxes made through this key.
class DaytonaApi final : public QObject {
    Q_OBJECT
public:
    struct Options {
        QString toolboxUrl; // what sandboxes give as toolboxProxyUrl: http://ADDR:PORT/toolbox
        QStringList networkHosts; // what networkAllowList may name (the person's --daytona-allow)
        DaemonClient *person = nullptr; // creates the sandboxes given hosts; set with networkHosts
    };
    using Reply = std::function<void(const HttpResponse &)>;
    using Cancel = std::function<void()>;

    // `client` is connected (hello done) as the key's agent and outlives this.
    DaytonaApi(
        Options options, DaytonaStore &store, remote::Grant grant, DaemonClient &client, QObject *parent = nullptr);
    ~DaytonaApi() override;

    // Ends what runs (its key was revoked): every command is killed, every session ends.
    void shutdown();
    // Answers one request (exactly once); what to call when its client has gone.
    // `stream` when the client asked for a WebSocket (a session command's logs, followed).
    Cancel handle(const HttpRequest &request, Reply reply, const std::optional<HttpStream> &stream = {});

private:
    using Entry = DaytonaStore::Entry;
    using Ran = std::function<void(Result<CommandOutcome>)>;

    Cancel api(const HttpRequest &request, const Reply &reply);
    Cancel toolbox(
        const Entry &entry, const HttpRequest &request, const Reply &reply, const std::optional<HttpStream> &stream);
    void create(const HttpRequest &request, const Reply &reply);
    void list(const HttpRequest &request, const Reply &reply);
    void describe(const Entry &entry, const Reply &reply, int status = 200);
    void remove(const Entry &entry, const Reply &reply);
    void stop(Entry entry, const Reply &reply);
    void sweep(); // auto-stop and auto-delete
    void update(Entry entry, const Reply &reply);
    Cancel execute(const Entry &entry, const HttpRequest &request, const Reply &reply);
    void upload(const Entry &entry, const HttpRequest &request, const Reply &reply);
    void download(const Entry &entry, const HttpRequest &request, const Reply &reply);
    void listFiles(const Entry &entry, const QString &path, bool infoOnly, const Reply &reply);
    void makeFolder(const Entry &entry, const QString &path, int mode, const Reply &reply);
    // Starts argv in the sandbox as the agent's command (the rules judge it) with these hooks.
    // `maxOutput`: what the call itself collects of each stream (its result's stdout and stderr).
    Cancel launch(const Entry &entry, const QStringList &argv, const QString &cwd, const QJsonObject &env,
        qint64 timeoutMs, mcp::CallHooks hooks, qint64 maxOutput);
    // The same, its output collected.
    Cancel run(const Entry &entry, const QStringList &argv, const QString &cwd, const QJsonObject &env,
        qint64 timeoutMs, Ran done);
    // A file command (rm, mv, chmod, find, grep) whose non-zero exit is the request's failure.
    Cancel fileCommand(const Entry &entry, const QStringList &argv, const Reply &reply,
        std::function<HttpResponse(const CommandOutcome &)> answer = {});
    // Creates each missing folder on the way to `path` (a workspace path), then calls done.
    void makeParents(const QString &sandbox, const QString &path, std::function<void(Status)> done);
    QJsonObject dto(const Entry &entry, const QJsonObject &sandbox) const;
    std::optional<Entry> find(const QString &idOrName) const { return m_store.find(m_grant.tokenId, idOrName); }
    void forget(const QString &sandbox); // it is gone: its record, sessions and activity go
    void onEvent(const Event &event);
    void watch(const QString &sandbox); // subscribed to its events, once

    Options m_options;
    DaytonaStore &m_store;
    remote::Grant m_grant;
    DaemonClient &m_client;
    QList<QPointer<mcp::ExecCall>> m_execs;
    QSet<QString> m_watched; // sandboxes whose events this connection subscribed to
    QHash<QString, qint64> m_lastActive; // sandbox id → ms of its last toolbox request
    DaytonaSessions m_sessions;
};

// The HTTP status that says an Airlock error to the SDK (its error classes go by status).
int httpStatusOf(ErrorCode code);
HttpResponse errorResponse(const Error &error);
// A path the SDK gave ("a/b", "/workspace/a/b") as the workspace path the file methods take.
Result<QString> workspacePath(const QString &path);

} // namespace airlock::daytona
