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
    static const QSet<QString> open{QStringLiteral("hello"),         QStringLiteral("daemon.info"),    QStringLiteral("policy.presets"),
                                    QStringLiteral("sandbox.list"),  QStringLiteral("approvals.list"), QStringLiteral("events.subscribe")};
    return open.contains(method);
}

// Change nothing: a read-only token may call these.
bool isRead(const QString &method)
{
    static const QSet<QString> reads{QStringLiteral("sandbox.info"),   QStringLiteral("policy.get"),     QStringLiteral("policy.check"),
                                     QStringLiteral("tools.list"),     QStringLiteral("policy.defaults.get"),
                                     QStringLiteral("secrets.list"),   QStringLiteral("history.list"),   QStringLiteral("history.show"),
                                     QStringLiteral("history.output"), QStringLiteral("history.runs"),   QStringLiteral("history.events"),
                                     QStringLiteral("history.export")};
    return reads.contains(method);
}
} // namespace

bool RpcServer::covers(const Session &s, const QString &sandboxId) const
{
    if (!s.grant || s.grant->sandboxes.isEmpty())
        return true;
    auto sandbox = m_engine.find(sandboxId);
    return sandbox && s.grant->coversSandbox((*sandbox)->name());
}

Status RpcServer::permitted(const Session &s, const QString &method, const QJsonObject &p) const
{
    if (!s.grant)
        return Ok{};
    const remote::Grant &g = *s.grant;
    const auto deny = [&](const QString &why) {
        return makeError(ErrorCode::Denied, QStringLiteral("token '%1' (%2): %3").arg(g.tokenName, g.describe(), why));
    };
    if (g.readOnly && !isOpen(method) && !isRead(method))
        return deny(QStringLiteral("%1 is not allowed: the token is read-only").arg(method.left(100)));
    if (g.sandboxes.isEmpty() || (isOpen(method) && !(method == QLatin1String("events.subscribe") && p.contains(QStringLiteral("sandbox")))))
        return Ok{};
    // Scoped to sandboxes: the request must name one of them.
    QString name;
    if (method == QLatin1String("sandbox.create")) {
        name = p.value(QStringLiteral("spec")).toObject().value(QStringLiteral("name")).toString();
    } else if (method == QLatin1String("approvals.decide")) {
        const QString id = p.value(QStringLiteral("id")).toString();
        for (const ApprovalRequest &r : m_approvals->pending())
            if (r.id == id)
                name = r.sandboxName;
    } else if (p.value(QStringLiteral("sandbox")).isString()) {
        const QString ref = p.value(QStringLiteral("sandbox")).toString();
        auto sandbox = m_engine.find(ref);
        name = sandbox ? (*sandbox)->name() : ref; // a gone sandbox's history: by the name given
    } else {
        return deny(QStringLiteral("%1 reaches beyond its sandboxes").arg(method.left(100)));
    }
    if (!g.coversSandbox(name))
        return deny(QStringLiteral("sandbox '%1' is outside it").arg(name.left(100)));
    return Ok{};
}

RpcServer::Reply RpcServer::filtered(const Session &s, const QString &method, Reply reply) const
{
    if (!s.grant || s.grant->sandboxes.isEmpty())
        return reply;
    const QString key = method == QLatin1String("sandbox.list") ? QStringLiteral("sandboxes")
        : method == QLatin1String("approvals.list")             ? QStringLiteral("approvals")
                                                                : QString();
    if (key.isEmpty())
        return reply;
    const QString nameKey = key == QLatin1String("sandboxes") ? QStringLiteral("name") : QStringLiteral("sandboxName");
    return [grant = *s.grant, key, nameKey, reply](Result<QJsonObject> r) {
        if (r) {
            QJsonArray kept;
            for (const QJsonValue &v : r->value(key).toArray())
                if (grant.coversSandbox(v.toObject().value(nameKey).toString()))
                    kept.append(v);
            r->insert(key, kept);
        }
        reply(std::move(r));
    };
}

} // namespace airlock::rpc
