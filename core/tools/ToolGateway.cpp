// SPDX-License-Identifier: Apache-2.0
#include "tools/ToolGateway.h"

#include "model/EventKinds.h"
#include "sandbox/Sandbox.h"
#include "secrets/Redactor.h"
#include "tools/JsonSchema.h"
#include "tools/ToolRunner.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>

namespace airlock::tools {

ToolGateway::ToolGateway(ToolRegistry registry, SecretStore *secrets, Ask ask, QObject *parent)
    : QObject(parent)
    , m_registry(std::move(registry))
    , m_runner(new ToolRunner(secrets, this))
    , m_ask(std::move(ask))
{
}

QJsonArray ToolGateway::list(const Sandbox &sandbox) const
{
    QJsonArray out;
    for (const ToolDeclaration &t : m_registry.all()) {
        QJsonObject o = t.toJson();
        const auto permission = sandbox.policy().tools.constFind(t.name);
        o.insert(QStringLiteral("decision"),
            permission == sandbox.policy().tools.cend() ? QStringLiteral("deny")
                                                        : policy::decisionName(permission->decision));
        if (permission != sandbox.policy().tools.cend() && !permission->constraints.isEmpty()) {
            QJsonObject constraints;
            for (auto it = permission->constraints.cbegin(); it != permission->constraints.cend(); ++it)
                constraints.insert(it.key(), it.value());
            o.insert(QStringLiteral("constraints"), constraints);
        }
        out.append(o);
    }
    return out;
}

void ToolGateway::call(Sandbox *sandbox, ToolCall call, Done done)
{
    const quint64 id = m_nextCall++;
    const ToolDeclaration *tool = m_registry.find(call.tool);
    if (!tool)
        return done(makeError(ErrorCode::NotFound,
            QStringLiteral("no tool named '%1' is declared on this host (see 'airlockctl tool ls %2')")
                .arg(call.tool.left(100), sandbox->name())));
    const auto refuse = [sandbox, id, call, done](ErrorCode code, const QString &by, const QString &why) {
        sandbox->record(event::ToolDenied,
            {{QStringLiteral("call"), double(id)}, {QStringLiteral("tool"), call.tool}, {QStringLiteral("by"), by},
                {QStringLiteral("reason"), why}},
            call.run);
        done(makeError(code, why));
    };
    // Arguments up to 4 KiB are recorded as they are; larger ones by size, hash and a preview, so
    // that a sandbox cannot fill the history with refused calls.
    const QByteArray argumentsJson
        = QJsonDocument(QJsonArray{call.arguments}).toJson(QJsonDocument::Compact).mid(1).chopped(1);
    const QJsonValue recordedArguments = argumentsJson.size() <= 4096
        ? call.arguments
        : QJsonValue(QJsonObject{{QStringLiteral("bytes"), double(argumentsJson.size())},
            {QStringLiteral("sha256"),
                QString::fromLatin1(QCryptographicHash::hash(argumentsJson, QCryptographicHash::Sha256).toHex())},
            {QStringLiteral("preview"), QString::fromUtf8(argumentsJson.left(1024))}});
    sandbox->record(event::ToolRequested,
        {{QStringLiteral("call"), double(id)}, {QStringLiteral("tool"), call.tool},
            {QStringLiteral("arguments"), recordedArguments},
            {QStringLiteral("argumentsTruncated"), argumentsJson.size() > 4096},
            {QStringLiteral("requester"), call.requester}},
        call.run);
    // A tool the policy does not give is refused before anything about it is told.
    if (!sandbox->policy().tools.contains(call.tool))
        return refuse(ErrorCode::Denied, QStringLiteral("policy"),
            QStringLiteral("denied by policy: %1").arg(policy::evaluateTool(sandbox->policy(), call.tool, {}).reason));
    if (!call.arguments.isObject())
        return refuse(
            ErrorCode::InvalidArgument, QStringLiteral("schema"), QStringLiteral("arguments: expected a JSON object"));
    if (Status valid = JsonSchema::validate(tool->schema, call.arguments); !valid)
        return refuse(ErrorCode::InvalidArgument, QStringLiteral("schema"),
            QStringLiteral("%1: %2").arg(call.tool, valid.error().message));
    const policy::ToolVerdict verdict = policy::evaluateTool(sandbox->policy(), call.tool, call.arguments.toObject());
    if (verdict.decision == policy::Decision::Deny)
        return refuse(
            ErrorCode::Denied, QStringLiteral("policy"), QStringLiteral("denied by policy: %1").arg(verdict.reason));
    if (verdict.decision == policy::Decision::Allow)
        return execute(sandbox, *tool, call, id, done);
    QPointer<Sandbox> alive(sandbox);
    QPointer<ToolGateway> self(this);
    const QString name = tool->name;
    m_ask(sandbox, call, verdict, [self, alive, name, call, id, done, refuse](bool allowed, const QString &why) {
        if (!self || !alive)
            return done(
                makeError(ErrorCode::SandboxNotRunning, QStringLiteral("the sandbox went away while the call waited")));
        if (!allowed)
            return refuse(ErrorCode::Denied, QStringLiteral("person"), why);
        // What was approved is what runs: these arguments. A deny rule added meanwhile still wins.
        const policy::ToolVerdict now = policy::evaluateTool(alive->policy(), call.tool, call.arguments.toObject());
        if (now.decision == policy::Decision::Deny)
            return refuse(
                ErrorCode::Denied, QStringLiteral("policy"), QStringLiteral("denied by policy: %1").arg(now.reason));
        const ToolDeclaration *tool = self->m_registry.find(name);
        self->execute(alive, *tool, call, id, done);
    });
}

void ToolGateway::execute(
    Sandbox *sandbox, const ToolDeclaration &tool, const ToolCall &call, quint64 id, const Done &done)
{
    QPointer<Sandbox> alive(sandbox);
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    const QString name = tool.name;
    m_runner->run(tool, call.arguments.toObject(), [alive, name, call, id, done, clock](ToolRunner::Outcome outcome) {
        // The tool's own credentials stay the tool's: masked in the answer and in the record.
        Redactor toolSecrets;
        for (const auto &[secret, value] : outcome.secretsUsed) {
            toolSecrets.add(secret, value);
            if (alive)
                alive->addSecret(secret, value);
        }
        Result<QJsonObject> result = outcome.result;
        if (result && !toolSecrets.isEmpty()) {
            Redactor::Hits hits;
            result = toolSecrets.redactJson(*result, &hits);
        }
        QJsonObject finished{{QStringLiteral("call"), double(id)}, {QStringLiteral("tool"), name},
            {QStringLiteral("durationMs"), double(clock->elapsed())}};
        if (result) {
            for (const char *key : {"exitCode", "status", "truncated"})
                if (result->contains(QLatin1String(key)))
                    finished.insert(QLatin1String(key), result->value(QLatin1String(key)));
        } else {
            finished.insert(QStringLiteral("error"), result.error().message);
        }
        if (alive)
            alive->record(event::ToolFinished, finished, call.run);
        done(result);
    });
}

} // namespace airlock::tools
