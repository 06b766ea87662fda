// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daytona/DaytonaStore.h"
#include "daytona/HttpMessage.h"
#include "mcp/ToolCall.h"
#include "util/Result.h"

#include <QHash>

#include <functional>
#include <memory>
#include <optional>

namespace airlock::daytona {

// How a command ended, as the toolbox says it: its exit code (128+N for signal N, -124 when its
// timeout killed it) and its output.
struct CommandOutcome {
    int exitCode = 0;
    QString stdoutText, stderrText;
    static Result<CommandOutcome> of(const mcp::ToolResult &result); // a refusal is the error
};

// Daytona's process sessions over Airlock's executions. Each session command is an execution of
// its own, so that the command rules judge every command (one shell kept between them would hide
// them from the rules): it runs in /workspace with the sandbox's environment, and `cd` or `export`
// do not carry over to the next. The first MiB of a command's output is kept for its logs (64 MiB
// for all of a key's, the finished commands started first forgotten first) and all of it is sent as it
// comes to whoever follows them (the SDK's WebSocket, each chunk after its stream's
// marker: 01 01 01 for stdout, 02 02 02 for stderr).
class DaytonaSessions {
public:
    using Cancel = std::function<void()>;
    using Reply = std::function<void(const HttpResponse &)>;
    using Launch = std::function<Cancel(const DaytonaStore::Entry &, const QString &command, mcp::CallHooks)>;

    explicit DaytonaSessions(Launch launch)
        : m_launch(std::move(launch))
    {
    }
    ~DaytonaSessions();

    // A request under /toolbox/ID/process/session; `s` is what follows "session". `stream` when
    // the client asked for a WebSocket (logs?follow=true).
    Cancel handle(const DaytonaStore::Entry &entry, const QStringList &s, const HttpRequest &request,
        const Reply &reply, const std::optional<HttpStream> &stream);
    // The sandbox is gone: its sessions end, what they run is ended and their followers closed.
    void forget(const QString &sandbox);
    void forgetAll();

private:
    struct Command;
    struct Session {
        QString id;
        QList<std::shared_ptr<Command>> commands;
    };
    void execute(const DaytonaStore::Entry &entry, Session &session, const HttpRequest &request, const Reply &reply,
        Cancel *cancel);
    static QJsonObject describe(const Session &session);
    void end(Session &session);
    // How much of `wanted` bytes of output may be kept, within the key's budget.
    qsizetype reserve(qsizetype wanted);

    Launch m_launch;
    qsizetype m_kept = 0; // output kept for all commands
    QList<std::weak_ptr<Command>> m_commands; // in the order they started: whose output goes first
    QHash<QString, QHash<QString, Session>> m_sessions; // sandbox id → session id → session
};

} // namespace airlock::daytona
