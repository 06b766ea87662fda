// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QLatin1StringView>

// The protocol's method names, each written once: the daemon's method tables (rpc/MethodTable.h)
// declare each one, the client's DaemonApi calls them, and resources/docs/protocol.md describes them (a
// test checks that the three agree).
namespace airlock::rpc::method {

using Name = QLatin1StringView;

// The connection.
inline constexpr Name Hello{"hello"};
inline constexpr Name DaemonInfo{"daemon.info"};
inline constexpr Name EventsSubscribe{"events.subscribe"};
// Sandboxes.
inline constexpr Name SandboxCreate{"sandbox.create"};
inline constexpr Name SandboxList{"sandbox.list"};
inline constexpr Name SandboxStats{"sandbox.stats"};
inline constexpr Name SandboxInfo{"sandbox.info"};
inline constexpr Name SandboxDelete{"sandbox.delete"};
inline constexpr Name SandboxKill{"sandbox.kill"};
inline constexpr Name SandboxRun{"sandbox.run"};
inline constexpr Name SandboxChanges{"sandbox.changes"};
inline constexpr Name SandboxChangesRead{"sandbox.changes.read"};
// Executions.
inline constexpr Name ExecStart{"exec.start"};
inline constexpr Name ExecStdin{"exec.stdin"};
inline constexpr Name ExecSignal{"exec.signal"};
inline constexpr Name ExecResize{"exec.resize"};
// Files.
inline constexpr Name FsWrite{"fs.write"};
inline constexpr Name FsRead{"fs.read"};
inline constexpr Name FsUpload{"fs.upload"};
inline constexpr Name FsDownload{"fs.download"};
inline constexpr Name FsFinish{"fs.finish"};
inline constexpr Name FsMkdir{"fs.mkdir"};
inline constexpr Name FsList{"fs.list"};
// Policies.
inline constexpr Name PolicyPresets{"policy.presets"};
inline constexpr Name PolicyGet{"policy.get"};
inline constexpr Name PolicySet{"policy.set"};
inline constexpr Name PolicyCheck{"policy.check"};
inline constexpr Name PolicyDefaultsGet{"policy.defaults.get"};
inline constexpr Name PolicyDefaultsSet{"policy.defaults.set"};
// Approvals.
inline constexpr Name ApprovalsList{"approvals.list"};
inline constexpr Name ApprovalsDecide{"approvals.decide"};
inline constexpr Name ApprovalsWithdraw{"approvals.withdraw"};
// Secrets.
inline constexpr Name SecretsSet{"secrets.set"};
inline constexpr Name SecretsList{"secrets.list"};
inline constexpr Name SecretsRemove{"secrets.remove"};
// Host tools.
inline constexpr Name ToolsList{"tools.list"};
inline constexpr Name ToolsCall{"tools.call"};
// The history.
inline constexpr Name HistoryList{"history.list"};
inline constexpr Name HistoryShow{"history.show"};
inline constexpr Name HistoryOutput{"history.output"};
inline constexpr Name HistoryRuns{"history.runs"};
inline constexpr Name HistoryEvents{"history.events"};
inline constexpr Name HistoryExport{"history.export"};
inline constexpr Name HistoryPrune{"history.prune"};

// Notifications from the daemon.
inline constexpr Name EventNotification{"event"};
inline constexpr Name ProgressNotification{"progress"};
inline constexpr Name TransferNotification{"fs.transfer"};

} // namespace airlock::rpc::method
