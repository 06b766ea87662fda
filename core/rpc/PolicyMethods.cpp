// SPDX-License-Identifier: Apache-2.0
#include "rpc/PolicyMethods.h"

#include "engine/Engine.h"
#include "policy/Policy.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"

#include <QJsonArray>

#include <algorithm>

namespace airlock::rpc {

namespace {
constexpr const char *kNotAgents = "an agent connection cannot change policies"; // the rules that gate it

Status policyObjectCheck(const QJsonObject &p)
{
    if (!p.value(QStringLiteral("policy")).isObject())
        return invalid(QStringLiteral("params.policy: expected a policy object"));
    return Ok{};
}
// policy.check: one question (a URL, a tool call, or a command), well formed.
Status questionCheck(const QJsonObject &p)
{
    if (p.contains(QStringLiteral("url")))
        return Ok{};
    if (p.contains(QStringLiteral("tool"))) {
        if (!p.value(QStringLiteral("arguments")).isObject() && !p.value(QStringLiteral("arguments")).isUndefined())
            return invalid(QStringLiteral("params.arguments: expected a JSON object"));
        return Ok{};
    }
    const QJsonArray a = p.value(QStringLiteral("argv")).toArray();
    if (a.isEmpty() || a.size() > 4096
        || std::any_of(a.begin(), a.end(), [](const QJsonValue &v) { return !v.isString(); }))
        return invalid(QStringLiteral("params.argv: expected the command to check, an array of at most 4096 strings"));
    return Ok{};
}
} // namespace

PolicyMethods::PolicyMethods(Engine &engine)
    : m_engine(engine)
{
}

QList<Method> PolicyMethods::methods()
{
    using A = Access;
    return {
        {method::PolicyPresets, {A::Agent::Allowed, nullptr, A::Token::Open}, NeedsNothing,
            [this](Call &c) { presets(c); }},
        {method::PolicyGet, access::sandboxedRead, NeedsSandbox, [this](Call &c) { get(c); }},
        {method::PolicySet, {A::Agent::Refused, kNotAgents, A::Token::Full, A::Scope::None},
            NeedsSandbox | WritesHistory, [this](Call &c) { set(c); }, policyObjectCheck},
        {method::PolicyCheck, access::sandboxedRead, NeedsSandbox, [this](Call &c) { check(c); }, questionCheck},
        // The person's defaults for every new sandbox (their layer, $XDG_CONFIG_HOME/airlock/policy.json).
        {method::PolicyDefaultsGet, {A::Agent::Allowed, nullptr, A::Token::Read}, NeedsNothing,
            [this](Call &c) { defaults(c); }},
        {method::PolicyDefaultsSet, access::person(kNotAgents), NeedsNothing, [this](Call &c) { setDefaults(c); },
            policyObjectCheck},
    };
}

void PolicyMethods::presets(Call &c)
{
    QJsonArray presets;
    for (const QString &name : policy::presetNames())
        presets.append(QJsonObject{{QStringLiteral("name"), name}, {QStringLiteral("policy"), *policy::preset(name)}});
    c.reply(QJsonObject{{QStringLiteral("presets"), presets}});
}

void PolicyMethods::get(Call &c)
{
    QJsonObject policy = m_engine.policy(*c.sandbox, c.params.value(QStringLiteral("effective")).toBool());
    // What the layers below say includes the person's defaults as they are now: not for a token
    // limited to some sandboxes (it may not read the defaults).
    if (c.session.scoped())
        policy.remove(QStringLiteral("below"));
    c.reply(policy);
}

void PolicyMethods::set(Call &c)
{
    c.reply(m_engine.setPolicy(
        *c.sandbox, c.params.value(QStringLiteral("policy")).toObject(), c.session.client, c.session.run));
}

void PolicyMethods::defaults(Call &c)
{
    c.reply(m_engine.userDefaults());
}

void PolicyMethods::setDefaults(Call &c)
{
    const Status set = m_engine.setUserDefaults(c.params.value(QStringLiteral("policy")).toObject(), c.session.client);
    c.reply(set ? m_engine.userDefaults() : Result<QJsonObject>(set.error()));
}

void PolicyMethods::check(Call &c)
{
    const QJsonObject &p = c.params;
    QJsonObject request;
    if (p.contains(QStringLiteral("url"))) {
        request.insert(QStringLiteral("url"), p.value(QStringLiteral("url")).toString().left(8192));
    } else if (p.contains(QStringLiteral("tool"))) { // checked: questionCheck
        request.insert(QStringLiteral("tool"), p.value(QStringLiteral("tool")).toString().left(100));
        request.insert(QStringLiteral("arguments"), p.value(QStringLiteral("arguments")).toObject());
    } else {
        const QJsonArray a = p.value(QStringLiteral("argv")).toArray();
        request.insert(QStringLiteral("argv"), a);
    }
    std::optional<QJsonObject> draft;
    if (p.contains(QStringLiteral("policy"))) {
        // A draft is a person's edit before they apply it: the caller writes the rules and what
        // they are tried on, so it is theirs only (an agent's or a limited token's draft could try
        // patterns for as long as the daemon would spend on them).
        const Session &s = c.session;
        if (s.isAgent())
            return c.reply(
                makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot try policy drafts")));
        if (s.grant && (s.grant->readOnly || !s.grant->sandboxes.isEmpty()))
            return c.reply(makeError(ErrorCode::Denied,
                QStringLiteral("token '%1' (%2): policy drafts need a token with full access")
                    .arg(s.grant->tokenName, s.grant->describe())));
        if (!p.value(QStringLiteral("policy")).isObject())
            return c.reply(invalid(
                QStringLiteral("params.policy: expected the draft of the sandbox's own layer, a policy object")));
        draft = p.value(QStringLiteral("policy")).toObject();
    }
    c.reply(m_engine.check(*c.sandbox, request, draft));
}

} // namespace airlock::rpc
