// SPDX-License-Identifier: Apache-2.0
#include "client/Recreate.h"
#include "model/EventKinds.h"

namespace airlock {

Result<Recreation> recreateParameters(const QJsonArray &events)
{
    QJsonObject created;
    QJsonValue overrides;
    for (const QJsonValue &v : events) {
        const QJsonObject event = v.toObject();
        const QString kind = event.value(QStringLiteral("kind")).toString();
        const QJsonObject payload = event.value(QStringLiteral("payload")).toObject();
        if (kind == event::SandboxCreated) {
            created = payload;
            overrides = payload.value(QStringLiteral("overrides"));
        } else if (kind == event::PolicyChanged && !created.isEmpty()) {
            overrides = payload.value(QStringLiteral("new"));
        }
    }
    if (created.isEmpty())
        return makeError(
            ErrorCode::NotFound, QStringLiteral("its creation is not in the history (pruned, or another host's)"));
    const QJsonObject spec = created.value(QStringLiteral("spec")).toObject();
    const QString name = created.value(QStringLiteral("name")).toString(spec.value(QStringLiteral("name")).toString());
    if (name.isEmpty())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("its creation in the history names no sandbox"));
    CreateSandboxRequest request;
    if (overrides.isObject()) {
        request.name = name;
        request.policy = overrides.toObject();
    } else { // network, mounts and limits as it was created
        auto asCreated = CreateSandboxRequest::fromJson({{QStringLiteral("spec"), spec}});
        if (!asCreated)
            return asCreated.error();
        request = *asCreated;
    }
    request.preset = created.value(QStringLiteral("preset")).toString();
    return Recreation{request, overrides.isObject()};
}

} // namespace airlock
