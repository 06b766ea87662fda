// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

namespace airlock {
class Engine;
struct SandboxCreation;
} // namespace airlock

namespace airlock::rpc {

// The sandbox that the params {spec, policy, preset} of sandbox.create (and sandbox.run) ask
// for, on behalf of `session`.
Result<SandboxCreation> creationFrom(const Session &session, const QJsonObject &params);

// sandbox.*: create, list, watch, describe, kill everything in and delete sandboxes, and what their
// copy-on-write mounts changed (for a person to review and apply).
class SandboxMethods final : public MethodGroup {
public:
    explicit SandboxMethods(Engine &engine);
    QList<Method> methods() override;

private:
    void create(Call &call);
    void list(Call &call);
    void stats(Call &call);
    void info(Call &call);
    void remove(Call &call);
    void kill(Call &call);
    void changes(Call &call);
    void readChange(Call &call);

    Engine &m_engine;
};

} // namespace airlock::rpc
