// SPDX-License-Identifier: Apache-2.0
#include "rpc/MethodGroups.h"

#include "approval/ApprovalBroker.h"
#include "engine/Engine.h"
#include "rpc/Connection.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
#include "secrets/SecretStore.h"
#include "tools/ToolGateway.h"

#include <QJsonArray>
#include <QPointer>

#include <algorithm>

namespace airlock::rpc {

using A = Access;

ApprovalMethods::ApprovalMethods(Engine &engine, ApprovalBroker &approvals)
    : m_engine(engine)
    , m_approvals(approvals)
{
}

QList<Method> ApprovalMethods::methods()
{
    return {
        // Open to every token, cut to its sandboxes; an agent sees what waits, never how to decide it.
        {method::ApprovalsList, {A::Agent::Allowed, nullptr, A::Token::Open, A::Scope::None, "approvals", "sandbox"},
            NeedsNothing, [this](Call &c) { list(c); }},
        // An agent must not approve its own requests (nor anyone's).
        {method::ApprovalsDecide,
            {A::Agent::Refused, "an agent connection cannot decide approvals", A::Token::Full, A::Scope::Approval},
            NeedsNothing, [this](Call &c) { decide(c); }},
        // A requester that no longer wants what it asked for takes the question back from the
        // person (an agent's cancelled call): answered as denied, and recorded as withdrawn.
        // Without an id: every request of this connection (a client that is ending).
        {method::ApprovalsWithdraw, {A::Agent::Allowed, nullptr, A::Token::Full, A::Scope::Approval}, NeedsNothing,
            [this](Call &c) { withdraw(c); }},
    };
}

void ApprovalMethods::list(Call &c)
{
    QJsonArray pending;
    for (const ApprovalRequest &r : m_approvals.pending()) {
        QJsonObject request = r.toJson();
        if (c.session.isAgent())
            request.remove(QStringLiteral("nonce"));
        pending.append(request);
    }
    c.reply(QJsonObject{{QStringLiteral("approvals"), pending}});
}

void ApprovalMethods::decide(Call &c)
{
    const QJsonObject &p = c.params;
    auto id = stringParam(p, "id");
    auto nonce = stringParam(p, "nonce");
    const QString decision = p.value(QStringLiteral("decision")).toString();
    if (!id || !nonce)
        return c.reply(!id ? id.error() : nonce.error());
    if (decision != QLatin1String("allow") && decision != QLatin1String("deny"))
        return c.reply(invalid(QStringLiteral("params.decision: expected \"allow\" or \"deny\"")));
    const bool always = decision == QLatin1String("allow") && p.value(QStringLiteral("always")).toBool();
    const QString &by = c.session.client;
    if (always) {
        // The rule goes in first: if it could not cover the command, nothing is decided. Only for
        // a decision that will be taken: check it first (one thread: it still holds after).
        if (Status valid = m_approvals.check(*id, *nonce); !valid)
            return c.reply(valid.error());
        const auto pending = m_approvals.pending();
        const auto it
            = std::find_if(pending.cbegin(), pending.cend(), [&](const ApprovalRequest &r) { return r.id == *id; });
        auto added = m_engine.allowAlways(*it, by);
        if (!added)
            return c.reply(added.error());
    }
    const Status decided = m_approvals.decide(*id, *nonce,
        {decision == QLatin1String("allow"), always, by, p.value(QStringLiteral("reason")).toString().left(1000)});
    c.reply(decided
            ? Result<QJsonObject>(QJsonObject{{QStringLiteral("id"), *id}, {QStringLiteral("decision"), decision}})
            : Result<QJsonObject>(decided.error()));
}

void ApprovalMethods::withdraw(Call &c)
{
    Session &s = c.session;
    const QString by = QStringLiteral("withdrawn by %1").arg(s.requester());
    if (!c.params.contains(QStringLiteral("id"))) {
        QJsonArray withdrawn;
        for (const ApprovalRequest &r : m_approvals.pending())
            if (r.owner == &s)
                withdrawn.append(r.id);
        const QString why = c.params.value(QStringLiteral("reason")).toString().left(200);
        m_approvals.cancelIf([&](const ApprovalRequest &r) { return r.owner == &s; },
            why.isEmpty() ? by : QStringLiteral("%1: %2").arg(by, why));
        return c.reply(QJsonObject{{QStringLiteral("withdrawn"), withdrawn}});
    }
    auto id = stringParam(c.params, "id");
    if (!id)
        return c.reply(id.error());
    const auto pending = m_approvals.pending();
    const auto it
        = std::find_if(pending.cbegin(), pending.cend(), [&](const ApprovalRequest &r) { return r.id == *id; });
    if (it == pending.cend())
        return c.reply(makeError(ErrorCode::NotFound, QStringLiteral("no approval %1 is waiting").arg(id->left(40))));
    if (it->owner != &s)
        return c.reply(
            makeError(ErrorCode::Denied, QStringLiteral("approval %1 is not this connection's to withdraw").arg(*id)));
    m_approvals.cancelIf([&](const ApprovalRequest &r) { return r.id == *id; }, by);
    c.reply(QJsonObject{{QStringLiteral("withdrawn"), *id}});
}

SecretMethods::SecretMethods(Engine &engine)
    : m_engine(engine)
{
}

QList<Method> SecretMethods::methods()
{
    constexpr const char *kNotAgents = "an agent connection cannot manage secrets";
    return {
        {method::SecretsSet, access::person(kNotAgents), NeedsNothing, [this](Call &c) { set(c); }},
        {method::SecretsList, access::person(kNotAgents, A::Token::Read), NeedsNothing, [this](Call &c) { list(c); }},
        {method::SecretsRemove, access::person(kNotAgents), NeedsNothing, [this](Call &c) { remove(c); }},
    };
}

namespace {
Result<SecretStore *> storeOf(const Engine &engine)
{
    if (!engine.secrets())
        return makeError(ErrorCode::BoundaryUnavailable, QStringLiteral("this daemon has no secret store"));
    return engine.secrets();
}
} // namespace

void SecretMethods::set(Call &c)
{
    auto store = storeOf(m_engine);
    auto name = stringParam(c.params, "name");
    auto value = base64Param(c.params, "value");
    if (!store || !name || !value)
        return c.reply(!store ? store.error() : !name ? name.error() : value.error());
    const Status set = (*store)->set(*name, *value);
    m_engine.forgetMadeAhead();
    c.reply(set ? Result<QJsonObject>(QJsonObject{{QStringLiteral("name"), *name},
                {QStringLiteral("backend"), (*store)->backend()}, {QStringLiteral("weaker"), (*store)->weaker()}})
                : Result<QJsonObject>(set.error()));
}

void SecretMethods::list(Call &c)
{
    auto store = storeOf(m_engine);
    if (!store)
        return c.reply(store.error());
    auto listed = (*store)->list();
    if (!listed)
        return c.reply(listed.error());
    QJsonArray secrets;
    for (const SecretInfo &i : *listed)
        secrets.append(QJsonObject{{QStringLiteral("name"), i.name},
            {QStringLiteral("updated"), i.updated.toString(Qt::ISODateWithMs)},
            {QStringLiteral("bytes"), double(i.size)}});
    c.reply(QJsonObject{{QStringLiteral("secrets"), secrets}, {QStringLiteral("backend"), (*store)->backend()},
        {QStringLiteral("weaker"), (*store)->weaker()}});
}

void SecretMethods::remove(Call &c)
{
    auto store = storeOf(m_engine);
    auto name = stringParam(c.params, "name");
    if (!store || !name)
        return c.reply(!store ? store.error() : name.error());
    const Status removed = (*store)->remove(*name);
    m_engine.forgetMadeAhead();
    c.reply(removed ? Result<QJsonObject>(QJsonObject{{QStringLiteral("name"), *name}})
                    : Result<QJsonObject>(removed.error()));
}

ToolMethods::ToolMethods(Engine &engine)
    : m_engine(engine)
{
}

QList<Method> ToolMethods::methods()
{
    return {
        {method::ToolsList, access::sandboxedRead, NeedsSandbox,
            [this](Call &c) {
                c.reply(QJsonObject{{QStringLiteral("tools"), m_engine.listTools(*c.sandbox)}});
            }},
        {method::ToolsCall, access::sandboxed, NeedsSandbox | WritesHistory,
            [this](Call &c) {
                tools::ToolCall call;
                call.tool = c.params.value(QStringLiteral("tool")).toString().left(100); // checked below
                call.arguments = c.params.value(QStringLiteral("arguments"));
                call.requester = c.session.requester();
                call.run = c.session.run;
                call.owner = &c.session;
                QPointer<Connection> conn = c.session.conn;
                m_engine.callTool(*c.sandbox, call, [conn, reply = c.reply](Result<QJsonObject> result) {
                    if (conn)
                        reply(result);
                });
            },
            [](const QJsonObject &p) {
                auto tool = stringParam(p, "tool");
                return tool ? Status(Ok{}) : Status(tool.error());
            }},
    };
}

} // namespace airlock::rpc
