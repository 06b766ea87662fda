// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

namespace airlock {
class Engine;
}

namespace airlock::rpc {

// sandbox.*: create, list, watch, describe, kill everything in and delete sandboxes.
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

    Engine &m_engine;
};

} // namespace airlock::rpc
