// SPDX-License-Identifier: Apache-2.0
// The person's settings over RPC: policies (each sandbox's, the defaults, the presets, a dry
// check) and secrets. None of them is an agent's to change.
#include "rpc/RpcServer.h"

#include "engine/Engine.h"
#include "policy/Policy.h"
#include "remote/TokenStore.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
#include "secrets/SecretStore.h"

#include <QJsonArray>

#include <algorithm>

namespace airlock::rpc {

void RpcServer::registerSettingsHandlers()
{
    m_handlers.insert(QStringLiteral("policy.presets"), [](Session &, const QJsonObject &, const Reply &reply) {
        QJsonArray presets;
        for (const QString &name : policy::presetNames())
            presets.append(
                QJsonObject{{QStringLiteral("name"), name}, {QStringLiteral("policy"), *policy::preset(name)}});
        reply(QJsonObject{{QStringLiteral("presets"), presets}});
    });
    m_handlers.insert(QStringLiteral("policy.get"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        auto policy = m_engine.policy(*ref, p.value(QStringLiteral("effective")).toBool());
        // What the layers below say includes the person's defaults as they are now: not for a
        // token limited to some sandboxes (it may not read the defaults).
        if (policy && s.grant && !s.grant->sandboxes.isEmpty())
            policy->remove(QStringLiteral("below"));
        reply(policy);
    });
    m_handlers.insert(QStringLiteral("policy.set"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        if (!s.agent.isEmpty()) // the rules that gate an agent are not the agent's to change
            return reply(makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot change policies")));
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        if (!p.value(QStringLiteral("policy")).isObject())
            return reply(invalid(QStringLiteral("params.policy: expected a policy object")));
        if (Status recording = historyWritable(); !recording)
            return reply(recording.error());
        reply(m_engine.setPolicy(*ref, p.value(QStringLiteral("policy")).toObject(), s.client, s.run));
    });
    // The person's defaults for every new sandbox (their layer, $XDG_CONFIG_HOME/airlock/policy.json).
    m_handlers.insert(QStringLiteral("policy.defaults.get"),
        [this](Session &, const QJsonObject &, const Reply &reply) { reply(m_engine.userDefaults()); });
    m_handlers.insert(
        QStringLiteral("policy.defaults.set"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
            if (!s.agent.isEmpty())
                return reply(
                    makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot change policies")));
            if (!p.value(QStringLiteral("policy")).isObject())
                return reply(invalid(QStringLiteral("params.policy: expected a policy object")));
            const Status set = m_engine.setUserDefaults(p.value(QStringLiteral("policy")).toObject(), s.client);
            reply(set ? m_engine.userDefaults() : Result<QJsonObject>(set.error()));
        });
    // Secrets: a person's business. Values come in and are never sent back out.
    const auto secretStore = [this](const Session &s) -> Result<SecretStore *> {
        if (!s.agent.isEmpty())
            return makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot manage secrets"));
        if (!m_engine.secrets())
            return makeError(ErrorCode::BoundaryUnavailable, QStringLiteral("this daemon has no secret store"));
        return m_engine.secrets();
    };
    m_handlers.insert(
        QStringLiteral("secrets.set"), [secretStore](Session &s, const QJsonObject &p, const Reply &reply) {
            auto store = secretStore(s);
            auto name = stringParam(p, "name");
            auto value = base64Param(p, "value");
            if (!store || !name || !value)
                return reply(!store ? store.error() : !name ? name.error() : value.error());
            const Status set = (*store)->set(*name, *value);
            reply(set ? Result<QJsonObject>(QJsonObject{{QStringLiteral("name"), *name},
                      {QStringLiteral("backend"), (*store)->backend()}, {QStringLiteral("weaker"), (*store)->weaker()}})
                      : Result<QJsonObject>(set.error()));
        });
    m_handlers.insert(
        QStringLiteral("secrets.list"), [secretStore](Session &s, const QJsonObject &, const Reply &reply) {
            auto store = secretStore(s);
            if (!store)
                return reply(store.error());
            auto listed = (*store)->list();
            if (!listed)
                return reply(listed.error());
            QJsonArray secrets;
            for (const SecretInfo &i : *listed)
                secrets.append(QJsonObject{{QStringLiteral("name"), i.name},
                    {QStringLiteral("updated"), i.updated.toString(Qt::ISODateWithMs)},
                    {QStringLiteral("bytes"), double(i.size)}});
            reply(QJsonObject{{QStringLiteral("secrets"), secrets}, {QStringLiteral("backend"), (*store)->backend()},
                {QStringLiteral("weaker"), (*store)->weaker()}});
        });
    m_handlers.insert(
        QStringLiteral("secrets.remove"), [secretStore](Session &s, const QJsonObject &p, const Reply &reply) {
            auto store = secretStore(s);
            auto name = stringParam(p, "name");
            if (!store || !name)
                return reply(!store ? store.error() : name.error());
            const Status removed = (*store)->remove(*name);
            reply(removed ? Result<QJsonObject>(QJsonObject{{QStringLiteral("name"), *name}})
                          : Result<QJsonObject>(removed.error()));
        });
    m_handlers.insert(QStringLiteral("policy.check"), [this](Session &s, const QJsonObject &p, const Reply &reply) {
        auto ref = stringParam(p, "sandbox");
        if (!ref)
            return reply(ref.error());
        QJsonObject request;
        if (p.contains(QStringLiteral("url"))) {
            request.insert(QStringLiteral("url"), p.value(QStringLiteral("url")).toString().left(8192));
        } else if (p.contains(QStringLiteral("tool"))) {
            if (!p.value(QStringLiteral("arguments")).isObject() && !p.value(QStringLiteral("arguments")).isUndefined())
                return reply(invalid(QStringLiteral("params.arguments: expected a JSON object")));
            request.insert(QStringLiteral("tool"), p.value(QStringLiteral("tool")).toString().left(100));
            request.insert(QStringLiteral("arguments"), p.value(QStringLiteral("arguments")).toObject());
        } else {
            const QJsonArray a = p.value(QStringLiteral("argv")).toArray();
            if (a.isEmpty() || a.size() > 4096
                || std::any_of(a.begin(), a.end(), [](const QJsonValue &v) { return !v.isString(); }))
                return reply(invalid(
                    QStringLiteral("params.argv: expected the command to check, an array of at most 4096 strings")));
            request.insert(QStringLiteral("argv"), a);
        }
        std::optional<QJsonObject> draft;
        if (p.contains(QStringLiteral("policy"))) {
            // A draft is a person's edit before they apply it: the caller writes the rules and
            // what they are tried on, so it is theirs only (an agent's or a limited token's
            // draft could try patterns for as long as the daemon would spend on them).
            if (!s.agent.isEmpty())
                return reply(
                    makeError(ErrorCode::Denied, QStringLiteral("an agent connection cannot try policy drafts")));
            if (s.grant && (s.grant->readOnly || !s.grant->sandboxes.isEmpty()))
                return reply(makeError(ErrorCode::Denied,
                    QStringLiteral("token '%1' (%2): policy drafts need a token with full access")
                        .arg(s.grant->tokenName, s.grant->describe())));
            if (!p.value(QStringLiteral("policy")).isObject())
                return reply(invalid(
                    QStringLiteral("params.policy: expected the draft of the sandbox's own layer, a policy object")));
            draft = p.value(QStringLiteral("policy")).toObject();
        }
        reply(m_engine.check(*ref, request, draft));
    });
}

} // namespace airlock::rpc
