// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace airlock {

// How a command was decided, for the programs it starts (the exec check).
struct ExecCover {
    bool judged = false; // an agent's command: the programs it starts are judged
    QString requester; // the agent
    QString decidedBy; // "rule 'ls' (preset:locked)", "approved by alice"
    QString approval; // the approval a person decided it by, if one did
    QList<QStringList> programs; // what the decision named (the argv, the commands of its script)
};

struct ExecRequest {
    QStringList argv;
    QString cwd = QStringLiteral("/workspace");
    QList<QPair<QString, QString>> env; // only these (plus PATH/HOME/LANG defaults) reach the process
    bool tty = false;
    bool stdinOpen = false;
    uint16_t rows = 0, cols = 0;
    std::optional<uint64_t> timeoutMs; // overrides the sandbox's wall limit
    // Killed this long after the requesting connection goes away (and recorded so); without it an
    // execution keeps running while no client is connected.
    std::optional<uint64_t> leaseMs;
    // A person starting an agent (agent run): the programs it starts are judged as this agent's,
    // by the command rules. Only ever stricter: an agent's own request keeps its own name.
    QString forAgent;
    QString run; // set by the daemon from the requesting connection, never from the request body
    ExecCover cover; // set by the daemon once the command is decided, never from the request body

    QJsonObject toJson() const;
    // Bounded and validated: the request may come from any client.
    static Result<ExecRequest> fromJson(const QJsonObject &json);
    // The environment the process gets: defaults first, then the request's own entries.
    QStringList effectiveEnvironment() const;
};

Result<QPair<QString, QString>> parseEnvAssignment(const QString &text);

} // namespace airlock
