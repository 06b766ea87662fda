// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/CreateSandboxRequest.h"
#include "model/ExecRequest.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include <optional>

namespace airlock::agents {

// One agent CLI as Airlock runs it: shipped as data (resources/agents/NAME.json) or a file a
// person names. It says where the agent's API is and which credential it needs in which header
// (brokered: the sandbox gets a placeholder), the registries it installs from, how its own
// prompts and sandbox are switched off (Airlock is the boundary), where it keeps its state.
struct AgentProfile {
    struct Api {
        QString host; // empty: no credential brokered
        QString secret; // the name in Airlock's secret store
        QString env; // the variable the agent reads its key from (it gets the placeholder)
        QString header; // the request header the key goes in
    };
    QString name; // the file's base name: claude, codex, gemini
    QString title, description;
    QString command; // the program: a name looked up on this machine's PATH, or an absolute path
    QString install; // how to get the program, said when it is not found
    QStringList args; // before the person's own
    QStringList task; // before a task given as text, for a run without a terminal (claude -p TASK)
    QList<QPair<QString, QString>> env;
    Api api;
    QStringList registries; // hosts it installs packages from (host or host:port)
    QStringList state; // where it keeps config and caches: in the sandbox's home, fresh each run

    // Checked as a policy is: an error names the field and says what was expected.
    static Result<AgentProfile> fromJson(const QJsonObject &json, const QString &name);
    static Result<AgentProfile> fromFile(const QString &path);
    // A command without a profile: nothing brokered, no host allowed.
    static AgentProfile forCommand(const QString &command);
    QJsonObject toJson() const;
    QStringList hosts() const; // the API host and the registries, as the profile names them
    QJsonObject grant() const; // the brokered credential's grant ({} without an API)
    // The policy layer the profile adds: its hosts and its brokered key.
    QJsonObject policyLayer() const;
};

QStringList builtinAgentNames();
// A shipped profile, or NotFound naming the ones there are.
Result<AgentProfile> builtinAgent(const QString &name);

// Where the agent's program is and how the sandbox reaches it: as it is when this machine's
// /usr holds it (the sandbox sees /usr), else its package's root mounted read-only.
struct AgentProgram {
    QString hostPath; // the program itself, symlinks resolved
    QString sandboxPath; // what the sandbox runs
    std::optional<Mount> mount;
};
// `path` is the person's --program (a file on this machine), or empty to find the profile's
// command on PATH. Looked up here: the daemon it runs under must be this machine's.
Result<AgentProgram> locateProgram(const AgentProfile &profile, const QString &path = {});

// What `agent run` asks the daemon for.
struct AgentRunOptions {
    QString project; // a directory on this machine; empty: none
    bool projectWritable = false; // --project-mode rw
    QStringList args; // the person's, after the profile's
};
struct AgentRun {
    CreateSandboxRequest sandbox;
    ExecRequest exec;
    QString projectPath; // where the project is inside the sandbox ("" without one)
};
// `base` holds the person's own choices (preset, policy file, limits, hosts): the profile's hosts
// and key are added to its policy. What the agent starts is judged as an agent's (forAgent): the
// person's deny rules and the patterns judged everywhere (git push, ssh...) apply beneath it.
Result<AgentRun> planAgentRun(const AgentProfile &profile, const AgentProgram &program, const AgentRunOptions &options,
    CreateSandboxRequest base);

} // namespace airlock::agents
