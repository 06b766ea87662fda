// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QLatin1StringView>

// The kinds of event the daemon records, each written once: the emitters (sandbox, engine, egress
// proxy, tool gateway, RPC server) and every reader (history, trace, console, CLI, MCP) name them
// from here.
namespace airlock::event {

using Kind = QLatin1StringView;

// A sandbox's life.
inline constexpr Kind SandboxCreated{"sandbox.created"};
inline constexpr Kind SandboxAdopted{"sandbox.adopted"}; // a restarted daemon took it back
inline constexpr Kind SandboxFailed{"sandbox.failed"};
inline constexpr Kind SandboxDeleted{"sandbox.deleted"};
// Its executions.
inline constexpr Kind ExecStarted{"exec.started"};
inline constexpr Kind ExecOutput{"exec.output"};
inline constexpr Kind ExecTruncated{"exec.truncated"};
inline constexpr Kind ExecExited{"exec.exited"};
inline constexpr Kind ExecProgram{"exec.program"}; // a program an execution started (the exec check)
inline constexpr Kind ExecUnknown{"exec.unknown"}; // its end was not seen (the daemon was away)
inline constexpr Kind ExecGap{"exec.gap"}; // output lost while the daemon was away
inline constexpr Kind ExecLeaseExpired{"exec.lease_expired"};
inline constexpr Kind CommandDenied{"command.denied"}; // refused before it ran
// What the sandbox's copy-on-write folders hold changed, as an execution ended (for review).
inline constexpr Kind FilesChanged{"files.changed"};
// Approvals.
inline constexpr Kind ApprovalRequested{"approval.requested"};
inline constexpr Kind ApprovalDecided{"approval.decided"};
// Credentials.
inline constexpr Kind CredentialInjected{"credential.injected"};
inline constexpr Kind CredentialRedacted{"credential.redacted"};
// Policy.
inline constexpr Kind PolicyChanged{"policy.changed"};
// The network, through the egress proxy.
inline constexpr Kind NetworkLookup{"network.lookup"};
inline constexpr Kind NetworkOpened{"network.opened"};
inline constexpr Kind NetworkClosed{"network.closed"};
inline constexpr Kind NetworkDenied{"network.denied"};
inline constexpr Kind NetworkRequest{"network.request"}; // one request through the credential broker
// Host tools.
inline constexpr Kind ToolRequested{"tool.requested"};
inline constexpr Kind ToolDenied{"tool.denied"};
inline constexpr Kind ToolFinished{"tool.finished"};
// Events left out when a sandbox emitted too many (their number).
inline constexpr Kind EventsSuppressed{"events.suppressed"};

// The families, as prefixes of their kinds.
namespace family {
inline constexpr Kind Sandbox{"sandbox."};
inline constexpr Kind Command{"command."};
inline constexpr Kind Approval{"approval."};
inline constexpr Kind Credential{"credential."};
inline constexpr Kind Policy{"policy."};
inline constexpr Kind Network{"network."};
inline constexpr Kind Tool{"tool."};
} // namespace family

} // namespace airlock::event
