// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/Methods.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QList>

#include <cstdint>
#include <functional>

namespace airlock {
class Sandbox;
}

namespace airlock::rpc {

struct Session;

using Reply = std::function<void(Result<QJsonObject>)>;
// How far a long request has come ("progress" notifications before its reply).
using Progress = std::function<void(const QJsonObject &)>;

// Who may call a method. A person's local connection may call every method; the rest is declared
// here, once per method, and checked by the dispatcher (rpc/Access.cpp) before the handler runs.
struct Access {
    // An agent's connection (hello with "agent"): command rules and approvals gate what it asks.
    enum class Agent {
        Allowed,
        Refused, // with `refusal`
        OwnExecutions, // only the executions this connection started (params.exec)
        DefaultPolicyOnly, // creates with the person's defaults: no policy, preset, network or mounts
    };
    // A remote connection's token (remote/TokenStore.h).
    enum class Token {
        Full, // a token with full access only
        Read, // read-only tokens too: the method changes nothing
        Open, // any token; replies listing sandboxes keep only the token's (see `listed`)
    };
    // A token scoped to some sandboxes: where the sandbox the request acts on is named.
    enum class Scope {
        None, // daemon-wide (secrets, defaults, other runs' history): refused for such tokens
        Param, // params.sandbox (required), replaced by the id checked
        SpecName, // params.spec.name of a sandbox to create, with the default policy only
        Approval, // the sandbox of the approval params.id (without an id: this connection's own)
    };

    Agent agent = Agent::Allowed;
    const char *refusal = nullptr; // for Agent::Refused
    Token token = Token::Full;
    Scope scope = Scope::None;
    // For Token::Open replies: the array of sandboxes (or of things in sandboxes) to filter, and
    // the key of each element that holds its sandbox id.
    const char *listed = nullptr;
    const char *listedId = nullptr;
};

// What a method reads before its handler runs: resolved once, by the dispatcher.
enum Needs : unsigned {
    NeedsNothing = 0,
    NeedsSandbox = 1 << 0, // params.sandbox: a running sandbox (Call::sandbox)
    NeedsExec = 1 << 1, // params.exec: an execution id (Call::exec)
    WritesHistory = 1 << 2, // refused while the history cannot be written (nothing runs unrecorded)
};

// One request, as its handler gets it.
struct Call {
    Session &session;
    const QJsonObject &params;
    const Reply &reply;
    const Progress &progress;
    Sandbox *sandbox = nullptr; // NeedsSandbox
    uint32_t exec = 0; // NeedsExec
};

// A method's parameter reader: what makes a request malformed, checked before anything it names
// is looked up (a malformed request hears what is malformed, whatever sandbox it names).
using ParamCheck = Status (*)(const QJsonObject &params);

// A method of the protocol: declared once, with who may call it, what it needs and how its
// parameters are checked.
struct Method {
    method::Name name;
    Access access;
    unsigned needs = NeedsNothing;
    std::function<void(Call &)> handler;
    ParamCheck check = nullptr;
};

// A group of methods (sandboxes, executions, files, policies, approvals, secrets, tools, the
// history): declares each of its methods once, with a handler bound to the group.
class MethodGroup {
public:
    virtual ~MethodGroup() = default;
    virtual QList<Method> methods() = 0;
};

// Shorthands for declarations.
namespace access {
// Any connection; remote tokens with full access, and scoped ones for their sandbox's.
inline constexpr Access sandboxed{Access::Agent::Allowed, nullptr, Access::Token::Full, Access::Scope::Param};
// The same, and read-only tokens too.
inline constexpr Access sandboxedRead{Access::Agent::Allowed, nullptr, Access::Token::Read, Access::Scope::Param};
// A person's only (an agent's connection is refused with `why`), daemon-wide.
constexpr Access person(const char *why, Access::Token token = Access::Token::Full)
{
    return Access{Access::Agent::Refused, why, token, Access::Scope::None};
}
} // namespace access

} // namespace airlock::rpc
