// SPDX-License-Identifier: Apache-2.0
// What a remote connection's token allows: RpcServer checks every request against it before
// dispatch, and leaves out of listings and events what lies outside it.
#include "approval/ApprovalBroker.h"
#include "engine/Engine.h"
#include "rpc/RpcSession.h"
#include "sandbox/Sandbox.h"

#include <QJsonArray>

namespace airlock::rpc {

namespace {
// Answered for any token; their results are filtered to the token's sandboxes.
bool isOpen(const QString &method)
{
    static const QSet<QString> open{QStringLiteral("hello"), QStringLiteral("daemon.info"),
        QStringLiteral("policy.presets"), QStringLiteral("sandbox.list"), QStringLiteral("approvals.list"),
        QStringLiteral("events.subscribe"), QStringLiteral("sandbox.stats")};
    return open.contains(method);
}

// Change nothing: a read-only token may call these.
bool isRead(const QString &method)
{
    static const QSet<QString> reads{QStringLiteral("sandbox.info"), QStringLiteral("policy.get"),
        QStringLiteral("policy.check"), QStringLiteral("tools.list"), QStringLiteral("policy.defaults.get"),
        QStringLiteral("secrets.list"), QStringLiteral("history.list"), QStringLiteral("history.show"),
        QStringLiteral("history.output"), QStringLiteral("history.runs"), QStringLiteral("history.events"),
        QStringLiteral("history.export")};
    return reads.contains(method);
}
} // namespace

bool RpcServer::covers(const Session &s, const QString &sandboxId) const
{
    return !s.grant || s.grant->sandboxes.isEmpty() || reaches(*s.grant, sandboxId);
}

bool RpcServer::reaches(const remote::Grant &g, const QString &sandboxId) const
{
    auto sandbox = m_engine.find(sandboxId);
    return sandbox && (*sandbox)->id() == sandboxId
        && g.coversSandbox(sandboxId, (*sandbox)->name(), (*sandbox)->createdThrough());
}

Status RpcServer::permitted(const Session &s, const QString &method, QJsonObject &p) const
{
    if (!s.grant)
        return Ok{};
    const remote::Grant &g = *s.grant;
    const auto deny = [&](const QString &why) {
        return makeError(ErrorCode::Denied, QStringLiteral("token '%1' (%2): %3").arg(g.tokenName, g.describe(), why));
    };
    if (g.readOnly && !isOpen(method) && !isRead(method))
        return deny(QStringLiteral("%1 is not allowed: the token is read-only").arg(method.left(100)));
    const bool namesSandbox
        = p.value(QStringLiteral("sandbox")).isString() && !p.value(QStringLiteral("sandbox")).toString().isEmpty();
    if (g.sandboxes.isEmpty()
        || (isOpen(method) && !(method == QLatin1String("events.subscribe") && p.contains(QStringLiteral("sandbox")))))
        return Ok{};

    // Scoped to sandboxes: only the methods below, each with the sandbox it acts on. Anything
    // daemon-wide (secrets, defaults, other runs' history, pruning) or that widens a sandbox's
    // reach (policies, mounts, networks) is refused.
    enum class From { Param, SpecName, Approval };
    static const QHash<QString, From> scoped{{QStringLiteral("sandbox.info"), From::Param},
        {QStringLiteral("sandbox.delete"), From::Param}, {QStringLiteral("sandbox.kill"), From::Param},
        {QStringLiteral("exec.start"), From::Param}, {QStringLiteral("exec.stdin"), From::Param},
        {QStringLiteral("exec.signal"), From::Param}, {QStringLiteral("exec.resize"), From::Param},
        {QStringLiteral("fs.write"), From::Param}, {QStringLiteral("fs.read"), From::Param},
        {QStringLiteral("policy.get"), From::Param}, {QStringLiteral("fs.upload"), From::Param},
        {QStringLiteral("fs.download"), From::Param}, {QStringLiteral("fs.finish"), From::Param},
        {QStringLiteral("fs.mkdir"), From::Param}, {QStringLiteral("fs.list"), From::Param},
        {QStringLiteral("policy.check"), From::Param}, {QStringLiteral("tools.list"), From::Param},
        {QStringLiteral("tools.call"), From::Param}, {QStringLiteral("history.list"), From::Param},
        {QStringLiteral("history.events"), From::Param}, {QStringLiteral("events.subscribe"), From::Param},
        {QStringLiteral("sandbox.create"), From::SpecName}, {QStringLiteral("approvals.decide"), From::Approval},
        {QStringLiteral("approvals.withdraw"), From::Approval}};
    const auto how = scoped.constFind(method);
    if (how == scoped.cend())
        return deny(QStringLiteral("%1 reaches beyond its sandboxes").arg(method.left(100)));
    QString name;
    const Sandbox *sandbox = nullptr;
    switch (*how) {
    case From::SpecName: {
        const QJsonObject spec = p.value(QStringLiteral("spec")).toObject();
        if (p.contains(QStringLiteral("policy")) || !p.value(QStringLiteral("preset")).toString().isEmpty()
            || spec.contains(QStringLiteral("network")) || !spec.value(QStringLiteral("mounts")).toArray().isEmpty())
            return deny(QStringLiteral(
                "sandboxes are created with the default policy only (no policy, preset, network or mounts)"));
        // What it creates is marked as created through this token (RpcServer's sandbox.create).
        name = spec.value(QStringLiteral("name")).toString();
        if (!g.mayCreate(name))
            return deny(QStringLiteral("sandbox '%1' is outside it").arg(name.left(100)));
        return Ok{};
    }
    case From::Approval: {
        // Without an id: this connection's own requests, whatever their sandbox.
        if (method == QLatin1String("approvals.withdraw") && !p.contains(QStringLiteral("id")))
            return Ok{};
        QString sandboxId;
        for (const ApprovalRequest &r : m_approvals->pending())
            if (r.id == p.value(QStringLiteral("id")).toString())
                sandboxId = r.sandbox;
        if (auto found = m_engine.find(sandboxId); found && !sandboxId.isEmpty())
            sandbox = *found;
        else
            return deny(QStringLiteral("approval '%1' waits in none of its sandboxes")
                            .arg(p.value(QStringLiteral("id")).toString().left(100)));
        break;
    }
    case From::Param: {
        if (!namesSandbox || (method == QLatin1String("history.events") && p.contains(QStringLiteral("run"))))
            return deny(QStringLiteral("%1 must name one of its sandboxes (params.sandbox)").arg(method.left(100)));
        const QString ref = p.value(QStringLiteral("sandbox")).toString();
        auto found = m_engine.find(ref);
        if (!found) {
            // A gone sandbox's history could be anyone's of that name: only running ones are read.
            if (method.startsWith(QLatin1String("history.")))
                return deny(QStringLiteral(
                    "sandbox '%1' is not running: a token scoped to sandboxes reads the history of its running "
                    "sandboxes only")
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

RpcServer::Reply RpcServer::filtered(const Session &s, const QString &method, Reply reply) const
{
    if (!s.grant || s.grant->sandboxes.isEmpty())
        return reply;
    const QString key = method == QLatin1String("sandbox.list") || method == QLatin1String("sandbox.stats")
        ? QStringLiteral("sandboxes")
        : method == QLatin1String("approvals.list") ? QStringLiteral("approvals")
                                                    : QString();
    if (key.isEmpty())
        return reply;
    const QString idKey = key == QLatin1String("sandboxes") ? QStringLiteral("id") : QStringLiteral("sandbox");
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
