// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

namespace airlock {
class ApprovalBroker;
class Engine;
} // namespace airlock

namespace airlock::rpc {

// approvals.*: what waits for a person, their decisions, and a requester taking its question back.
class ApprovalMethods final : public MethodGroup {
public:
    ApprovalMethods(Engine &engine, ApprovalBroker &approvals);
    QList<Method> methods() override;

private:
    void list(Call &call);
    void decide(Call &call);
    void withdraw(Call &call);

    Engine &m_engine;
    ApprovalBroker &m_approvals;
};

// secrets.*: a person's business. Values come in and are never sent back out.
class SecretMethods final : public MethodGroup {
public:
    explicit SecretMethods(Engine &engine);
    QList<Method> methods() override;

private:
    void set(Call &call);
    void list(Call &call);
    void remove(Call &call);

    Engine &m_engine;
};

// tools.*: the host tools a sandbox's policy lets it call, and a call (gated and recorded).
class ToolMethods final : public MethodGroup {
public:
    explicit ToolMethods(Engine &engine);
    QList<Method> methods() override;

private:
    Engine &m_engine;
};

} // namespace airlock::rpc
