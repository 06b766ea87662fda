// SPDX-License-Identifier: Apache-2.0
#include "rpc/SandboxMethods.h"

#include "engine/Engine.h"
#include "policy/Policy.h"
#include "rpc/Connection.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>
#include <QPointer>

namespace airlock::rpc {

SandboxMethods::SandboxMethods(Engine &engine)
    : m_engine(engine)
{
}

QList<Method> SandboxMethods::methods()
{
    using A = Access;
    // Listings are open to every token, cut to its sandboxes.
    constexpr Access listing{A::Agent::Allowed, nullptr, A::Token::Open, A::Scope::None, "sandboxes", "id"};
    return {
        {method::SandboxCreate, {A::Agent::DefaultPolicyOnly, nullptr, A::Token::Full, A::Scope::SpecName},
            WritesHistory, [this](Call &c) { create(c); }},
        {method::SandboxList, listing, NeedsNothing, [this](Call &c) { list(c); }},
        {method::SandboxStats, listing, NeedsNothing, [this](Call &c) { stats(c); }},
        {method::SandboxInfo, access::sandboxedRead, NeedsSandbox, [this](Call &c) { info(c); }},
        {method::SandboxDelete, access::sandboxed, NeedsSandbox, [this](Call &c) { remove(c); }},
        // Everything running in a sandbox, which stays: for a person (an agent signals only its own).
        {method::SandboxKill,
            {A::Agent::Refused, "an agent connection can only signal the executions it started", A::Token::Full,
                A::Scope::Param},
            NeedsSandbox, [this](Call &c) { kill(c); }, Engine::signalCheck},
    };
}

Result<SandboxCreation> creationFrom(const Session &session, const QJsonObject &params)
{
    const QJsonObject specJson = params.value(QStringLiteral("spec")).toObject();
    auto spec = SandboxSpec::fromJson(specJson);
    if (!spec)
        return spec.error();
    const QJsonValue policyValue = params.value(QStringLiteral("policy"));
    if (!policyValue.isUndefined() && !policyValue.isObject())
        return invalid(QStringLiteral("params.policy: expected a policy object"));
    if (Status valid = policy::validate(policyValue.toObject()); !valid)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("policy: %1").arg(valid.error().message));
    SandboxCreation creation;
    creation.spec = *spec;
    creation.run = session.run;
    creation.policyOverrides = policy::withSpecFields(policyValue.toObject(), specJson);
    creation.preset = params.value(QStringLiteral("preset")).toString().left(100);
    creation.createdThrough = session.grant ? session.grant->tokenId : QString();
    return creation;
}

void SandboxMethods::create(Call &c)
{
    auto creation = creationFrom(c.session, c.params);
    if (!creation)
        return c.reply(creation.error());
    m_engine.createSandbox(*creation, c.reply);
}

void SandboxMethods::list(Call &c)
{
    const QJsonValue brief = c.params.value(QStringLiteral("brief"));
    if (!brief.isUndefined() && !brief.isBool())
        return c.reply(invalid(QStringLiteral("params.brief: expected true or false")));
    c.reply(QJsonObject{{QStringLiteral("sandboxes"), m_engine.listSandboxes(brief.toBool())}});
}

void SandboxMethods::stats(Call &c)
{
    QPointer<Connection> conn = c.session.conn;
    m_engine.sampleUsage([conn, reply = c.reply](const QJsonArray &sandboxes, qint64 sampledMs) {
        if (conn)
            reply(QJsonObject{
                {QStringLiteral("sandboxes"), sandboxes}, {QStringLiteral("sampledMs"), double(sampledMs)}});
    });
}

void SandboxMethods::info(Call &c)
{
    c.reply(m_engine.describe(*c.sandbox));
}

void SandboxMethods::remove(Call &c)
{
    c.reply(m_engine.removeSandbox(*c.sandbox, c.params.value(QStringLiteral("keep")).toBool()));
}

void SandboxMethods::kill(Call &c)
{
    auto killed = m_engine.signalAll(*c.sandbox, c.params.value(QStringLiteral("signal")).toInt(9));
    c.reply(killed ? Result<QJsonObject>(QJsonObject{{QStringLiteral("executions"), *killed}})
                   : Result<QJsonObject>(killed.error()));
}

} // namespace airlock::rpc
