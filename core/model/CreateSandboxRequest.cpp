// SPDX-License-Identifier: Apache-2.0
#include "model/CreateSandboxRequest.h"

#include <QJsonArray>

namespace airlock {

void CreateSandboxRequest::allowHosts(const QStringList &hosts)
{
    QJsonObject layer = policy.value_or(QJsonObject());
    QJsonObject rules = layer.value(QStringLiteral("network")).toObject();
    QJsonArray allow = rules.value(QStringLiteral("allow")).toArray();
    for (const QString &host : hosts)
        allow.append(host);
    rules.insert(QStringLiteral("allow"), allow);
    layer.insert(QStringLiteral("network"), rules);
    policy = layer;
    network = NetworkMode::Allowlist;
}

QJsonObject CreateSandboxRequest::toJson() const
{
    // Only what was asked for: an absent field and its default are not the same to the daemon
    // (a network of its own overrides the policy's; an agent may not name one).
    QJsonObject spec = SandboxSpec{name, network.value_or(NetworkMode::None), mounts, limits, isolation}.toJson();
    if (!network)
        spec.remove(QStringLiteral("network"));
    if (mounts.isEmpty())
        spec.remove(QStringLiteral("mounts"));
    if (spec.value(QStringLiteral("limits")).toObject().isEmpty())
        spec.remove(QStringLiteral("limits"));
    QJsonObject json{{QStringLiteral("spec"), spec}};
    if (policy)
        json.insert(QStringLiteral("policy"), *policy);
    if (!preset.isEmpty())
        json.insert(QStringLiteral("preset"), preset);
    return json;
}

Result<CreateSandboxRequest> CreateSandboxRequest::fromJson(const QJsonObject &json)
{
    const QJsonValue specValue = json.value(QStringLiteral("spec"));
    if (!specValue.isUndefined() && !specValue.isObject())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("/spec: expected an object"));
    auto spec = SandboxSpec::fromJson(specValue.toObject(), HostPaths::Remote);
    if (!spec)
        return spec.error();
    CreateSandboxRequest request;
    request.name = spec->name;
    if (specValue.toObject().contains(QStringLiteral("network")))
        request.network = spec->network;
    request.mounts = spec->mounts;
    request.limits = spec->limits;
    request.isolation = spec->isolation;
    const QJsonValue policy = json.value(QStringLiteral("policy"));
    if (!policy.isUndefined() && !policy.isObject())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("/policy: expected a policy object"));
    if (policy.isObject())
        request.policy = policy.toObject();
    const QJsonValue preset = json.value(QStringLiteral("preset"));
    if (!preset.isUndefined() && !preset.isString())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("/preset: expected a string"));
    request.preset = preset.toString();
    return request;
}

} // namespace airlock
