// SPDX-License-Identifier: Apache-2.0
#include "rpc/AccessGate.h"

#include "approval/ApprovalBroker.h"
#include "engine/Engine.h"
#include "rpc/RpcSession.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>

namespace airlock::rpc {

namespace {
const QString kDefaultPolicyOnly
    = QStringLiteral("sandboxes with the default policy only (no policy, preset, network or mounts of its own)");
}

AccessGate::AccessGate(const Engine &engine, const ApprovalBroker &approvals)
    : m_engine(engine)
    , m_approvals(approvals)
{
}

bool AccessGate::asksBeyondDefaults(const QJsonObject &p)
{
    const QJsonObject spec = p.value(QStringLiteral("spec")).toObject();
    return p.contains(QStringLiteral("policy")) || !p.value(QStringLiteral("preset")).toString().isEmpty()
        || spec.contains(QStringLiteral("network")) || !spec.value(QStringLiteral("mounts")).toArray().isEmpty();
}

Status AccessGate::permitted(const Session &s, const Method &method, QJsonObject &p) const
{
    if (s.isAgent()) {
        if (method.access.agent == Access::Agent::Refused)
            return makeError(ErrorCode::Denied, QString::fromUtf8(method.access.refusal));
        if (method.access.agent == Access::Agent::DefaultPolicyOnly && asksBeyondDefaults(p))
            return makeError(
                ErrorCode::Denied, QStringLiteral("an agent connection creates %1").arg(kDefaultPolicyOnly));
    }
    return s.grant ? permittedByToken(s, method, p) : Status(Ok{});
}

Status AccessGate::ownsExecution(const Session &s, const Method &method, const QString &sandboxId, uint32_t exec) const
{
    if (!s.isAgent() || method.access.agent != Access::Agent::OwnExecutions || s.execs.contains({sandboxId, exec}))
        return Ok{};
    return makeError(
        ErrorCode::Denied, QStringLiteral("an agent connection can only feed or signal the executions it started"));
}

bool AccessGate::covers(const Session &s, const QString &sandboxId) const
{
    return !s.scoped() || reaches(*s.grant, sandboxId);
}

bool AccessGate::reaches(const remote::Grant &g, const QString &sandboxId) const
{
    auto sandbox = m_engine.find(sandboxId);
    return sandbox && (*sandbox)->id() == sandboxId
        && g.coversSandbox(sandboxId, (*sandbox)->name(), (*sandbox)->createdThrough());
}

Status AccessGate::permittedByToken(const Session &s, const Method &m, QJsonObject &p) const
{
    const remote::Grant &g = *s.grant;
    const Access &a = m.access;
    const QString name = m.name;
    const auto deny = [&](const QString &why) {
        return makeError(ErrorCode::Denied, QStringLiteral("token '%1' (%2): %3").arg(g.tokenName, g.describe(), why));
    };
    if (g.readOnly && a.token == Access::Token::Full)
        return deny(QStringLiteral("%1 is not allowed: the token is read-only").arg(name));
    if (g.sandboxes.isEmpty())
        return Ok{};
    // An open method acts on no sandbox in particular (its listing is filtered), unless it names one.
    if (a.token == Access::Token::Open && !(a.scope == Access::Scope::Param && p.contains(QStringLiteral("sandbox"))))
        return Ok{};

    // Scoped to sandboxes: only methods that say which sandbox they act on. Anything daemon-wide
    // (secrets, defaults, other runs' history, pruning) or that widens a sandbox's reach
    // (policies, mounts, networks) is refused.
    const Sandbox *sandbox = nullptr;
    switch (a.scope) {
    case Access::Scope::None:
        return deny(QStringLiteral("%1 reaches beyond its sandboxes").arg(name));
    case Access::Scope::SpecName: {
        if (asksBeyondDefaults(p))
            return deny(QStringLiteral("it creates %1").arg(kDefaultPolicyOnly));
        // What it creates is marked as created through this token (sandbox.create).
        const QString created = p.value(QStringLiteral("spec")).toObject().value(QStringLiteral("name")).toString();
        if (!g.mayCreate(created))
            return deny(QStringLiteral("sandbox '%1' is outside it").arg(created.left(100)));
        return Ok{};
    }
    case Access::Scope::Approval: {
        // Without an id: this connection's own requests, whatever their sandbox (withdraw only;
        // a decision without one names no approval in its sandboxes).
        if (m.name == method::ApprovalsWithdraw && !p.contains(QStringLiteral("id")))
            return Ok{};
        const QString id = p.value(QStringLiteral("id")).toString();
        QString sandboxId;
        for (const ApprovalRequest &r : m_approvals.pending())
            if (r.id == id)
                sandboxId = r.sandbox;
        auto found = m_engine.find(sandboxId);
        if (!found || sandboxId.isEmpty())
            return deny(QStringLiteral("approval '%1' waits in none of its sandboxes").arg(id.left(100)));
        sandbox = *found;
        break;
    }
    case Access::Scope::Param: {
        const QString ref = p.value(QStringLiteral("sandbox")).toString();
        if (ref.isEmpty() || (m.name == method::HistoryEvents && p.contains(QStringLiteral("run"))))
            return deny(QStringLiteral("%1 must name one of its sandboxes (params.sandbox)").arg(name));
        auto found = m_engine.find(ref);
        if (!found) {
            // A gone sandbox's history could be anyone's of that name: only running ones are read.
            if (name.startsWith(QLatin1String("history.")))
                return deny(QStringLiteral("sandbox '%1' is not running: a token scoped to sandboxes reads the history "
                                           "of its running sandboxes only")
                                .arg(ref.left(100)));
            if (!g.mayCreate(ref))
                return deny(QStringLiteral("sandbox '%1' is outside it").arg(ref.left(100)));
            return Ok{}; // the method says it is not there
        }
        sandbox = *found;
        // The method acts on the sandbox checked here, whatever else the reference could name.
        p.insert(QStringLiteral("sandbox"), sandbox->id());
        break;
    }
    }
    if (const QString why = g.outside(sandbox->id(), sandbox->name(), sandbox->createdThrough()); !why.isEmpty())
        return deny(why);
    return Ok{};
}

Reply AccessGate::filtered(const Session &s, const Method &method, Reply reply) const
{
    if (!s.scoped() || !method.access.listed)
        return reply;
    const QString key = QString::fromLatin1(method.access.listed);
    const QString idKey = QString::fromLatin1(method.access.listedId);
    return [this, grant = *s.grant, key, idKey, reply](Result<QJsonObject> r) {
        if (r) {
            QJsonArray kept;
            for (const QJsonValue &v : r->value(key).toArray())
                if (reaches(grant, v.toObject().value(idKey).toString()))
                    kept.append(v);
            r->insert(key, kept);
        }
        reply(std::move(r));
    };
}

} // namespace airlock::rpc
