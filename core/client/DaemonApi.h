// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/DaemonClient.h"
#include "model/CreateSandboxRequest.h"
#include "model/ExecRequest.h"
#include "rpc/Methods.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QLatin1StringView>

#include <cstdint>
#include <functional>

namespace airlock {

// A sandbox as sandbox.create answers it: what its callers read, and the whole answer (what
// sandbox.info says of it) for those that show or keep it.
struct CreatedSandbox {
    QString id;
    QString name;
    QString network; // none | allowlist | full
    bool hostNetwork = false; // the host's own network: no boundary there
    QJsonObject info;

    static CreatedSandbox fromJson(const QJsonObject &json);
};

// An execution exec.start started: its sandbox's id (the request may have named it otherwise)
// and its number there.
struct ExecStarted {
    QString sandbox;
    uint32_t exec = 0;

    static ExecStarted fromJson(const QJsonObject &json);
};

// A request of the protocol, ready to go: wait() for its answer (spinning a local event loop, as
// DaemonClient::call does), have it later with then(), or send() it without listening. `read`
// makes the answer's object the Reply.
template<typename Reply> class DaemonCall {
public:
    using Done = std::function<void(Result<Reply>)>;
    using Read = Reply (*)(const QJsonObject &);

    DaemonCall(DaemonClient &client, rpc::method::Name method, QJsonObject params, Read read)
        : m_client(client)
        , m_method(method)
        , m_params(std::move(params))
        , m_read(read)
    {
    }

    // How far it came before the answer (the daemon's progress notifications: history.prune).
    DaemonCall &&reporting(DaemonClient::Progress progress) &&
    {
        m_progress = std::move(progress);
        return std::move(*this);
    }

    Result<Reply> wait(int timeoutMs = 60000) &&
    {
        auto answer = m_client.call(m_method, m_params, timeoutMs, std::move(m_progress));
        if (!answer)
            return answer.error();
        return m_read(*answer);
    }

    void then(Done done) &&
    {
        m_client.callAsync(
            m_method, m_params,
            [read = m_read, done = std::move(done)](Result<QJsonValue> answer) {
                if (!answer)
                    return done(answer.error());
                done(read(answer->toObject()));
            },
            std::move(m_progress));
    }

    // Without waiting, for requests whose failure is not actionable (stdin, resize, signals).
    void send() && { m_client.notify(m_method, m_params); }

private:
    DaemonClient &m_client;
    rpc::method::Name m_method;
    QJsonObject m_params;
    Read m_read;
    DaemonClient::Progress m_progress;
};

// The protocol as the front ends (GUI, CLI, MCP bridge) speak it: one function per method, each
// naming its method once (rpc/Methods.h) and building its parameters from typed values. Answers
// are typed where callers read them field by field; a QJsonObject where they show or pass it on.
// Cheap to make: it only holds the client it speaks through.
class DaemonApi {
public:
    explicit DaemonApi(DaemonClient &client)
        : m_client(client)
    {
    }
    DaemonClient &client() const { return m_client; }

    template<typename Reply = QJsonObject> using Call = DaemonCall<Reply>;

    // The daemon and its events.
    Call<> daemonInfo() const;
    // Events of every sandbox (an empty `sandbox`), or of one, from now on.
    Call<> subscribe(const QString &sandbox = {}) const;

    // Sandboxes.
    Call<CreatedSandbox> createSandbox(const CreateSandboxRequest &request) const;
    // As sandbox.info describes each; `brief`: only what sandbox.list's brief form holds.
    Call<QJsonArray> listSandboxes(bool brief = false) const;
    Call<> sandboxStats() const;
    Call<> sandboxInfo(const QString &sandbox) const;
    // `keep`: its workspace is kept.
    Call<> deleteSandbox(const QString &sandbox, bool keep = false) const;
    Call<> killSandbox(const QString &sandbox, int signal) const;
    // What its copy-on-write mounts changed (cow::SandboxChanges), and a part of a changed file
    // (cow::ViewChunk, its data in base64) from `offset`.
    Call<> sandboxChanges(const QString &sandbox) const;
    Call<> readChange(const QString &sandbox, int mount, const QString &path, qint64 offset) const;

    // Executions.
    Call<ExecStarted> startExec(const QString &sandbox, const ExecRequest &request) const;
    // A sandbox made for one command, removed when it ends (sandbox.run).
    Call<ExecStarted> runOneShot(const CreateSandboxRequest &created, const ExecRequest &request) const;
    Call<> writeStdin(const QString &sandbox, uint32_t exec, const QByteArray &data, bool eof) const;
    Call<> signalExec(const QString &sandbox, uint32_t exec, int signal) const;
    Call<> resizeExec(const QString &sandbox, uint32_t exec, int rows, int cols) const;

    // Files in a sandbox (paths as the sandbox sees them).
    Call<> writeFile(
        const QString &sandbox, const QString &path, const QByteArray &chunk, qint64 offset, int mode) const;
    Call<> readFile(const QString &sandbox, const QString &path, qint64 offset, qint64 length) const;
    // A transfer of one file, its bytes then sent with DaemonClient::sendData.
    Call<> openUpload(const QString &sandbox, const QString &path, const QString &name, int mode) const;
    // `bytes`: how many were sent; -1 when the source failed (the file is dropped).
    Call<> finishUpload(const QString &sandbox, quint32 transfer, qint64 bytes) const;
    // A transfer of one file, its bytes then arriving as DaemonClient::dataReceived.
    Call<> openDownload(const QString &sandbox, const QString &path) const;
    Call<> makeDirectory(const QString &sandbox, const QString &path, int mode) const;
    Call<> listDirectory(const QString &sandbox, const QString &path) const;

    // Policies.
    Call<> policyPresets() const;
    // A sandbox's own layer, or (`effective`) what is enforced, with each value's layer.
    Call<> policy(const QString &sandbox, bool effective = false) const;
    Call<> setPolicy(const QString &sandbox, const QJsonObject &layer) const;
    // How the policy decides `question` (argv, url, or tool with arguments; with a draft
    // layer as policy, how it would).
    Call<> checkPolicy(const QString &sandbox, QJsonObject question) const;
    Call<> userDefaults() const;
    Call<> setUserDefaults(const QJsonObject &layer) const;

    // Approvals.
    Call<QJsonArray> pendingApprovals() const;
    Call<> decideApproval(
        const QString &id, const QString &nonce, bool allow, bool always, const QString &reason) const;
    Call<> withdrawApproval(const QString &id) const;
    // Every request of this connection, saying why.
    Call<> withdrawApprovals(const QString &reason) const;

    // Secrets.
    Call<> setSecret(const QString &name, const QByteArray &value) const;
    Call<> listSecrets() const;
    Call<> removeSecret(const QString &name) const;

    // Host tools.
    Call<> listTools(const QString &sandbox) const;
    Call<> callTool(const QString &sandbox, const QString &tool, const QJsonValue &arguments) const;

    // The history. `query`: the filters, order and page of history.list and history.events.
    Call<> historyList(const QJsonObject &query) const;
    // An execution by its number in the history, or SANDBOX:EXEC.
    Call<> historyShow(const QString &execution) const;
    Call<> historyOutput(const QJsonValue &execution, const QJsonValue &after) const;
    Call<> historyRuns(int limit) const;
    Call<> historyEvents(const QJsonObject &query) const;
    Call<> historyExport(const QString &run, const QJsonValue &cursor) const;
    Call<> pruneHistory(const QJsonObject &what) const;

private:
    static QJsonObject asIs(const QJsonObject &answer) { return answer; }
    Call<> request(rpc::method::Name method, QJsonObject params = {}) const
    {
        return Call<>(m_client, method, std::move(params), &asIs);
    }
    template<typename Reply>
    Call<Reply> request(rpc::method::Name method, QJsonObject params, Reply (*read)(const QJsonObject &)) const
    {
        return Call<Reply>(m_client, method, std::move(params), read);
    }

    DaemonClient &m_client;
};

} // namespace airlock
