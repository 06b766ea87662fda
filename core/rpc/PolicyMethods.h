// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

namespace airlock {
class Engine;
}

namespace airlock::rpc {

// policy.*: each sandbox's policy, the person's defaults, the presets and a dry check. None of
// them is an agent's to change.
class PolicyMethods final : public MethodGroup {
public:
    explicit PolicyMethods(Engine &engine);
    QList<Method> methods() override;

private:
    void presets(Call &call);
    void get(Call &call);
    void set(Call &call);
    void check(Call &call);
    void defaults(Call &call);
    void setDefaults(Call &call);

    Engine &m_engine;
};

} // namespace airlock::rpc
