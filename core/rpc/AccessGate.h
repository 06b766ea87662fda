// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

namespace airlock {
class ApprovalBroker;
class Engine;
} // namespace airlock

namespace airlock::remote {
struct Grant;
}

namespace airlock::rpc {

// Who may call what: checks a request against its method's declared Access (an agent's
// connection, a remote connection's token) before dispatch, and leaves out of listings and events
// what lies outside a token's sandboxes.
class AccessGate {
public:
    AccessGate(const Engine &engine, const ApprovalBroker &approvals);

    // Everything that can be decided from the request itself. A sandbox named in params is
    // replaced by its id: the method acts on the sandbox checked.
    Status permitted(const Session &session, const Method &method, QJsonObject &params) const;
    // Agent::OwnExecutions, once the sandbox and execution are known.
    Status ownsExecution(const Session &session, const Method &method, const QString &sandboxId, uint32_t exec) const;
    // The events of this sandbox reach this session (a token scoped to sandboxes sees only its own).
    bool covers(const Session &session, const QString &sandboxId) const;
    // The reply, with a listing cut to the token's sandboxes (Access::listed).
    Reply filtered(const Session &session, const Method &method, Reply reply) const;

    // A sandbox.create that asks for more than the person's defaults (a policy, preset, network
    // or mounts of its own): what agents and scoped tokens may not.
    static bool asksBeyondDefaults(const QJsonObject &params);

private:
    Status permittedByToken(const Session &session, const Method &method, QJsonObject &params) const;
    bool reaches(const remote::Grant &grant, const QString &sandboxId) const; // a running sandbox, by id

    const Engine &m_engine;
    const ApprovalBroker &m_approvals;
};

} // namespace airlock::rpc
