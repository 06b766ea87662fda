// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>

namespace airlock::mcp {

// A tool as MCP lists it: its name, what it is for, and the JSON Schema of its arguments (and of
// its structured result). Schemas use only the keywords tools::JsonSchema enforces, so what a
// schema says is what is checked.
struct ToolSpec {
    QString name, title, description;
    QJsonObject inputSchema, outputSchema;

    QJsonObject toJson(bool structured) const; // structured: with title and outputSchema
};

// Airlock's own tools: sandbox_create, sandbox_list, sandbox_exec, sandbox_write_file,
// sandbox_read_file, sandbox_delete.
const QList<ToolSpec> &sandboxTools();
const ToolSpec *findSandboxTool(const QString &name);

// A host tool that a sandbox's policy lets it call (tools.list), as an MCP tool: the sandbox to
// call it for, and its own arguments under "arguments", checked against its declared schema.
ToolSpec hostTool(const QJsonObject &declaration);

} // namespace airlock::mcp
