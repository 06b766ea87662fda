// SPDX-License-Identifier: Apache-2.0
#include "client/Recreate.h"

namespace airlock {

Result<Recreation> recreateParameters(const QJsonArray &events)
{
    QJsonObject created;
    QJsonValue overrides;
    for (const QJsonValue &v : events) {
        const QJsonObject event = v.toObject();
        const QString kind = event.value(QStringLiteral("kind")).toString();
        const QJsonObject payload = event.value(QStringLiteral("payload")).toObject();
        if (kind == QLatin1String("sandbox.created")) {
            created = payload;
            overrides = payload.value(QStringLiteral("overrides"));
        } else if (kind == QLatin1String("policy.changed") && !created.isEmpty()) {
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
    QJsonObject parameters;
    if (overrides.isObject()) {
        parameters.insert(QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), name}});
        parameters.insert(QStringLiteral("policy"), overrides);
    } else {
        parameters.insert(QStringLiteral("spec"), spec); // network, mounts and limits as it was created
    }
    if (const QString preset = created.value(QStringLiteral("preset")).toString(); !preset.isEmpty())
        parameters.insert(QStringLiteral("preset"), preset);
    return Recreation{parameters, overrides.isObject()};
}

} // namespace airlock
