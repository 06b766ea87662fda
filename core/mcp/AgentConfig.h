// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace airlock::mcp {

// What "Connect an agent" hands a person: the exact configuration that makes an agent start
// `airlockctl mcp` with the preset, network hosts and daemon they chose, for each client that
// knows MCP. Pure text, so a test reads exactly what the console would have copied.
struct AgentSetup {
    QString program = QStringLiteral("airlockctl"); // the full path where it is known
    QString preset; // empty: the default policy
    QStringList allow; // hosts the agent may ask for, normalised
    QString host; // a saved host name or URL; empty: this computer
    QStringList arguments() const; // mcp --preset … --allow … --host …
};

enum class AgentClient { ClaudeCode, Codex, Cursor, VsCode, Generic };
struct AgentConfig {
    AgentClient client;
    QString label; // "Claude Code"
    QString where; // what to do with the text ("Run in a terminal", "In ~/.codex/config.toml")
    QString text; // exactly what to copy
};
QList<AgentConfig> agentConfigs(const AgentSetup &setup);

// Hosts as a person types or pastes them: separated by spaces or commas; a URL becomes its
// host:port (https://pypi.org/simple → pypi.org:443). Each is checked as a policy pattern; the
// error names the one that is not a host and why.
Result<QStringList> parseAllowedHosts(const QString &text);

} // namespace airlock::mcp
