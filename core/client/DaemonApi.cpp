// SPDX-License-Identifier: Apache-2.0
#include "client/DaemonApi.h"

namespace airlock {

namespace method = rpc::method;

namespace {
QJsonObject onSandbox(const QString &sandbox, QJsonObject params = {})
{
    params.insert(QStringLiteral("sandbox"), sandbox);
    return params;
}

QJsonObject onExec(const QString &sandbox, uint32_t exec, QJsonObject params = {})
{
    params.insert(QStringLiteral("exec"), double(exec));
    return onSandbox(sandbox, std::move(params));
}

QJsonArray sandboxesOf(const QJsonObject &answer)
{
    return answer.value(QStringLiteral("sandboxes")).toArray();
}

QJsonArray approvalsOf(const QJsonObject &answer)
{
    return answer.value(QStringLiteral("approvals")).toArray();
}
} // namespace

CreatedSandbox CreatedSandbox::fromJson(const QJsonObject &json)
{
    return {json.value(QStringLiteral("id")).toString(), json.value(QStringLiteral("name")).toString(),
        json.value(QStringLiteral("network")).toString(), json.value(QStringLiteral("hostNetwork")).toBool(), json};
}

ExecStarted ExecStarted::fromJson(const QJsonObject &json)
{
    return {json.value(QStringLiteral("sandbox")).toString(), uint32_t(json.value(QStringLiteral("exec")).toDouble())};
}

DaemonApi::Call<> DaemonApi::daemonInfo() const
{
    return request(method::DaemonInfo);
}

DaemonApi::Call<> DaemonApi::subscribe(const QString &sandbox) const
{
    return request(method::EventsSubscribe, sandbox.isEmpty() ? QJsonObject() : onSandbox(sandbox));
}

DaemonApi::Call<CreatedSandbox> DaemonApi::createSandbox(const CreateSandboxRequest &created) const
{
    return request(method::SandboxCreate, created.toJson(), &CreatedSandbox::fromJson);
}

DaemonApi::Call<QJsonArray> DaemonApi::listSandboxes(bool brief) const
{
    return request(
        method::SandboxList, brief ? QJsonObject{{QStringLiteral("brief"), true}} : QJsonObject{}, &sandboxesOf);
}

DaemonApi::Call<> DaemonApi::sandboxStats() const
{
    return request(method::SandboxStats);
}

DaemonApi::Call<> DaemonApi::sandboxInfo(const QString &sandbox) const
{
    return request(method::SandboxInfo, onSandbox(sandbox));
}

DaemonApi::Call<> DaemonApi::deleteSandbox(const QString &sandbox, bool keep) const
{
    return request(
        method::SandboxDelete, onSandbox(sandbox, keep ? QJsonObject{{QStringLiteral("keep"), true}} : QJsonObject()));
}

DaemonApi::Call<> DaemonApi::killSandbox(const QString &sandbox, int signal) const
{
    return request(method::SandboxKill, onSandbox(sandbox, {{QStringLiteral("signal"), signal}}));
}

DaemonApi::Call<> DaemonApi::sandboxChanges(const QString &sandbox) const
{
    return request(method::SandboxChanges, onSandbox(sandbox, {}));
}

DaemonApi::Call<> DaemonApi::readChange(const QString &sandbox, int mount, const QString &path, qint64 offset) const
{
    return request(method::SandboxChangesRead,
        onSandbox(sandbox,
            {{QStringLiteral("mount"), mount}, {QStringLiteral("path"), path},
                {QStringLiteral("offset"), double(offset)}}));
}

DaemonApi::Call<ExecStarted> DaemonApi::startExec(const QString &sandbox, const ExecRequest &exec) const
{
    return request(method::ExecStart, onSandbox(sandbox, exec.toJson()), &ExecStarted::fromJson);
}

DaemonApi::Call<ExecStarted> DaemonApi::runOneShot(const CreateSandboxRequest &created, const ExecRequest &exec) const
{
    QJsonObject params = created.toJson();
    params.insert(QStringLiteral("exec"), exec.toJson());
    return request(method::SandboxRun, params, &ExecStarted::fromJson);
}

DaemonApi::Call<> DaemonApi::writeStdin(const QString &sandbox, uint32_t exec, const QByteArray &data, bool eof) const
{
    return request(method::ExecStdin,
        onExec(sandbox, exec,
            {{QStringLiteral("data"), QString::fromLatin1(data.toBase64())}, {QStringLiteral("eof"), eof}}));
}

DaemonApi::Call<> DaemonApi::signalExec(const QString &sandbox, uint32_t exec, int signal) const
{
    return request(method::ExecSignal, onExec(sandbox, exec, {{QStringLiteral("signal"), signal}}));
}

DaemonApi::Call<> DaemonApi::resizeExec(const QString &sandbox, uint32_t exec, int rows, int cols) const
{
    return request(
        method::ExecResize, onExec(sandbox, exec, {{QStringLiteral("rows"), rows}, {QStringLiteral("cols"), cols}}));
}

DaemonApi::Call<> DaemonApi::writeFile(
    const QString &sandbox, const QString &path, const QByteArray &chunk, qint64 offset, int mode) const
{
    return request(method::FsWrite,
        onSandbox(sandbox,
            {{QStringLiteral("path"), path}, {QStringLiteral("data"), QString::fromLatin1(chunk.toBase64())},
                {QStringLiteral("offset"), double(offset)}, {QStringLiteral("truncate"), offset == 0},
                {QStringLiteral("mode"), mode}}));
}

DaemonApi::Call<> DaemonApi::readFile(const QString &sandbox, const QString &path, qint64 offset, qint64 length) const
{
    return request(method::FsRead,
        onSandbox(sandbox,
            {{QStringLiteral("path"), path}, {QStringLiteral("offset"), double(offset)},
                {QStringLiteral("length"), double(length)}}));
}

DaemonApi::Call<> DaemonApi::openUpload(
    const QString &sandbox, const QString &path, const QString &name, int mode) const
{
    return request(method::FsUpload,
        onSandbox(
            sandbox, {{QStringLiteral("path"), path}, {QStringLiteral("name"), name}, {QStringLiteral("mode"), mode}}));
}

DaemonApi::Call<> DaemonApi::finishUpload(const QString &sandbox, quint32 transfer, qint64 bytes) const
{
    return request(method::FsFinish,
        onSandbox(sandbox, {{QStringLiteral("transfer"), double(transfer)}, {QStringLiteral("bytes"), double(bytes)}}));
}

DaemonApi::Call<> DaemonApi::openDownload(const QString &sandbox, const QString &path) const
{
    return request(method::FsDownload, onSandbox(sandbox, {{QStringLiteral("path"), path}}));
}

DaemonApi::Call<> DaemonApi::makeDirectory(const QString &sandbox, const QString &path, int mode) const
{
    return request(
        method::FsMkdir, onSandbox(sandbox, {{QStringLiteral("path"), path}, {QStringLiteral("mode"), mode}}));
}

DaemonApi::Call<> DaemonApi::listDirectory(const QString &sandbox, const QString &path) const
{
    return request(method::FsList, onSandbox(sandbox, {{QStringLiteral("path"), path}}));
}

DaemonApi::Call<> DaemonApi::policyPresets() const
{
    return request(method::PolicyPresets);
}

DaemonApi::Call<> DaemonApi::policy(const QString &sandbox, bool effective) const
{
    return request(method::PolicyGet,
        onSandbox(sandbox, effective ? QJsonObject{{QStringLiteral("effective"), true}} : QJsonObject()));
}

DaemonApi::Call<> DaemonApi::setPolicy(const QString &sandbox, const QJsonObject &layer) const
{
    return request(method::PolicySet, onSandbox(sandbox, {{QStringLiteral("policy"), layer}}));
}

DaemonApi::Call<> DaemonApi::checkPolicy(const QString &sandbox, QJsonObject question) const
{
    return request(method::PolicyCheck, onSandbox(sandbox, std::move(question)));
}

DaemonApi::Call<> DaemonApi::userDefaults() const
{
    return request(method::PolicyDefaultsGet);
}

DaemonApi::Call<> DaemonApi::setUserDefaults(const QJsonObject &layer) const
{
    return request(method::PolicyDefaultsSet, {{QStringLiteral("policy"), layer}});
}

DaemonApi::Call<QJsonArray> DaemonApi::pendingApprovals() const
{
    return request(method::ApprovalsList, {}, &approvalsOf);
}

DaemonApi::Call<> DaemonApi::decideApproval(
    const QString &id, const QString &nonce, bool allow, bool always, const QString &reason) const
{
    return request(method::ApprovalsDecide,
        {{QStringLiteral("id"), id}, {QStringLiteral("nonce"), nonce},
            {QStringLiteral("decision"), allow ? QStringLiteral("allow") : QStringLiteral("deny")},
            {QStringLiteral("always"), always}, {QStringLiteral("reason"), reason}});
}

DaemonApi::Call<> DaemonApi::withdrawApproval(const QString &id) const
{
    return request(method::ApprovalsWithdraw, {{QStringLiteral("id"), id}});
}

DaemonApi::Call<> DaemonApi::withdrawApprovals(const QString &reason) const
{
    return request(method::ApprovalsWithdraw, {{QStringLiteral("reason"), reason}});
}

DaemonApi::Call<> DaemonApi::setSecret(const QString &name, const QByteArray &value) const
{
    return request(method::SecretsSet,
        {{QStringLiteral("name"), name}, {QStringLiteral("value"), QString::fromLatin1(value.toBase64())}});
}

DaemonApi::Call<> DaemonApi::listSecrets() const
{
    return request(method::SecretsList);
}

DaemonApi::Call<> DaemonApi::removeSecret(const QString &name) const
{
    return request(method::SecretsRemove, {{QStringLiteral("name"), name}});
}

DaemonApi::Call<> DaemonApi::listTools(const QString &sandbox) const
{
    return request(method::ToolsList, onSandbox(sandbox));
}

DaemonApi::Call<> DaemonApi::callTool(const QString &sandbox, const QString &tool, const QJsonValue &arguments) const
{
    return request(method::ToolsCall,
        onSandbox(sandbox, {{QStringLiteral("tool"), tool}, {QStringLiteral("arguments"), arguments}}));
}

DaemonApi::Call<> DaemonApi::historyList(const QJsonObject &query) const
{
    return request(method::HistoryList, query);
}

DaemonApi::Call<> DaemonApi::historyShow(const QString &execution) const
{
    return request(method::HistoryShow, {{QStringLiteral("execution"), execution}});
}

DaemonApi::Call<> DaemonApi::historyOutput(const QJsonValue &execution, const QJsonValue &after) const
{
    return request(method::HistoryOutput, {{QStringLiteral("execution"), execution}, {QStringLiteral("after"), after}});
}

DaemonApi::Call<> DaemonApi::historyRuns(int limit) const
{
    return request(method::HistoryRuns, {{QStringLiteral("limit"), limit}});
}

DaemonApi::Call<> DaemonApi::historyEvents(const QJsonObject &query) const
{
    return request(method::HistoryEvents, query);
}

DaemonApi::Call<> DaemonApi::historyExport(const QString &run, const QJsonValue &cursor) const
{
    return request(method::HistoryExport, {{QStringLiteral("run"), run}, {QStringLiteral("cursor"), cursor}});
}

DaemonApi::Call<> DaemonApi::pruneHistory(const QJsonObject &what) const
{
    return request(method::HistoryPrune, what);
}

} // namespace airlock
