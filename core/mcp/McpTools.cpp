// SPDX-License-Identifier: Apache-2.0
#include "mcp/McpTools.h"

#include <QJsonArray>

namespace airlock::mcp {

namespace {
QJsonObject object(const QJsonObject &properties, const QStringList &required = {})
{
    QJsonObject o{{QStringLiteral("type"), QStringLiteral("object")}, {QStringLiteral("properties"), properties},
        {QStringLiteral("additionalProperties"), false}};
    if (!required.isEmpty())
        o.insert(QStringLiteral("required"), QJsonArray::fromStringList(required));
    return o;
}

QJsonObject text(const QString &description, int maxLength = 4096)
{
    QJsonObject o{{QStringLiteral("type"), QStringLiteral("string")}, {QStringLiteral("maxLength"), maxLength}};
    if (!description.isEmpty())
        o.insert(QStringLiteral("description"), description);
    return o;
}

// A string in a result: no length limit (a result is what it is).
QJsonObject textOut()
{
    return {{QStringLiteral("type"), QStringLiteral("string")}};
}

QJsonObject integer(const QString &description, double minimum, double maximum)
{
    return {{QStringLiteral("type"), QStringLiteral("integer")}, {QStringLiteral("description"), description},
        {QStringLiteral("minimum"), minimum}, {QStringLiteral("maximum"), maximum}};
}

QJsonObject sandboxArgument()
{
    return text(QStringLiteral("The sandbox: its name or id (from sandbox_create or sandbox_list)."), 100);
}

QJsonObject pathArgument()
{
    return text(
        QStringLiteral("A file in the sandbox's workspace: /workspace/… or a path relative to it. Paths that leave the "
                       "workspace (.., symlinks out) are refused."),
        4096);
}

QList<ToolSpec> build()
{
    const QJsonObject names{{QStringLiteral("type"), QStringLiteral("string")},
        {QStringLiteral("description"),
            QStringLiteral("1-63 characters a-z 0-9 _ . -, starting with a letter or digit.")},
        {QStringLiteral("pattern"), QStringLiteral("^[a-z0-9][a-z0-9_.-]{0,62}$")}};
    const QJsonObject limits = object({
        {QStringLiteral("memory_mb"), integer(QStringLiteral("Memory limit in MiB."), 16, 65536)},
        {QStringLiteral("pids"), integer(QStringLiteral("Most processes at once."), 1, 65536)},
        {QStringLiteral("disk_mb"),
            integer(QStringLiteral("Size of the workspace in MiB (writes beyond it fail with ENOSPC)."), 16, 1048576)},
        {QStringLiteral("cpus"),
            QJsonObject{{QStringLiteral("type"), QStringLiteral("number")}, {QStringLiteral("minimum"), 0.01},
                {QStringLiteral("maximum"), 1024},
                {QStringLiteral("description"),
                    QStringLiteral("CPU bandwidth of the whole sandbox, in cores (0.5 = half a core).")}}},
        {QStringLiteral("cpu_seconds"), integer(QStringLiteral("CPU time limit per execution, in seconds."), 1, 86400)},
        {QStringLiteral("wall_seconds"),
            integer(QStringLiteral("Wall-clock limit per execution, in seconds."), 1, 86400)},
        {QStringLiteral("output_mb"),
            integer(QStringLiteral("Output limit per execution, in MiB (the command is killed beyond it)."), 1, 4096)},
    });
    const QJsonObject execution = object({
        {QStringLiteral("status"),
            QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                {QStringLiteral("description"), QStringLiteral("succeeded, failed, killed or timed_out")}}},
        {QStringLiteral("exit_code"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
        {QStringLiteral("signal"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
        {QStringLiteral("stdout"), QJsonObject{{QStringLiteral("type"), QStringLiteral("string")}}},
        {QStringLiteral("stderr"), QJsonObject{{QStringLiteral("type"), QStringLiteral("string")}}},
        {QStringLiteral("stdout_bytes"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
        {QStringLiteral("stderr_bytes"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
        {QStringLiteral("truncated"), QJsonObject{{QStringLiteral("type"), QStringLiteral("boolean")}}},
        {QStringLiteral("duration_ms"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
        {QStringLiteral("execution"),
            QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                {QStringLiteral("description"), QStringLiteral("SANDBOX:N, for 'airlockctl show'")}}},
    });
    return {
        {QStringLiteral("sandbox_create"), QStringLiteral("Create a sandbox"),
            QStringLiteral("Create an isolated Linux sandbox (bubblewrap, seccomp, its own /workspace) to run commands "
                           "in. Its policy is the "
                           "person's: the network is off unless they allowed it, and commands, network destinations "
                           "and tools may need their "
                           "approval. Returns the sandbox's id and what it can do."),
            object({{QStringLiteral("name"), names},
                {QStringLiteral("preset"),
                    text(QStringLiteral("A policy preset the person allowed for this session (e.g. package-install)."),
                        100)},
                {QStringLiteral("network"),
                    QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                        {QStringLiteral("enum"), QJsonArray{QStringLiteral("none"), QStringLiteral("allowlist")}},
                        {QStringLiteral("description"),
                            QStringLiteral("none (default) or allowlist: only hosts the person allowed.")}}},
                {QStringLiteral("isolation"),
                    QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                        {QStringLiteral("enum"), QJsonArray{QStringLiteral("namespaces"), QStringLiteral("gvisor")}},
                        {QStringLiteral("description"),
                            QStringLiteral("namespaces (default: bubblewrap on the host's kernel) or gvisor (gVisor's "
                                           "kernel in user space, a stronger boundary where the host has runsc).")}}},
                {QStringLiteral("allow"),
                    QJsonObject{{QStringLiteral("type"), QStringLiteral("array")}, {QStringLiteral("maxItems"), 64},
                        {QStringLiteral("items"), text(QStringLiteral("A host (pypi.org, *.github.com)"), 253)},
                        {QStringLiteral("description"),
                            QStringLiteral(
                                "Hosts to reach with network allowlist; each must be one the person allowed.")}}},
                {QStringLiteral("limits"), limits}}),
            object({{QStringLiteral("id"), textOut()}, {QStringLiteral("name"), textOut()},
                {QStringLiteral("capabilities"), QJsonObject{{QStringLiteral("type"), QStringLiteral("object")}}}})},
        {QStringLiteral("sandbox_list"), QStringLiteral("List sandboxes"),
            QStringLiteral("List the sandboxes of this session (and those the person shared with it): name, id, state, "
                           "network, running commands."),
            object({}),
            object({{QStringLiteral("sandboxes"), QJsonObject{{QStringLiteral("type"), QStringLiteral("array")}}}})},
        {QStringLiteral("sandbox_exec"), QStringLiteral("Run a command in a sandbox"),
            QStringLiteral("Run a command in a sandbox and return its exit code and output. Give either command (a "
                           "shell line, run with sh -c) or "
                           "argv (no shell). The command may wait for a person's approval; a denial is returned as an "
                           "error with their reason. "
                           "Output beyond max_output_bytes keeps its beginning and end, with a marker between; the "
                           "whole output stays in the "
                           "Airlock history."),
            object(
                {{QStringLiteral("sandbox"), sandboxArgument()},
                    {QStringLiteral("command"),
                        text(QStringLiteral("A shell command line, run as sh -c COMMAND."), 65536)},
                    {QStringLiteral("argv"),
                        QJsonObject{{QStringLiteral("type"), QStringLiteral("array")}, {QStringLiteral("minItems"), 1},
                            {QStringLiteral("maxItems"), 4096}, {QStringLiteral("items"), text({}, 65536)},
                            {QStringLiteral("description"),
                                QStringLiteral("The program and its arguments, run without a shell.")}}},
                    {QStringLiteral("cwd"), text(QStringLiteral("Working directory (default /workspace)."))},
                    {QStringLiteral("env"),
                        QJsonObject{{QStringLiteral("type"), QStringLiteral("object")},
                            {QStringLiteral("description"),
                                QStringLiteral(
                                    "Environment variables (NAME: value); nothing else from the host is passed.")}}},
                    {QStringLiteral("timeout_ms"),
                        integer(QStringLiteral("Kill the command after this long."), 1, 86400000)},
                    {QStringLiteral("stdin"),
                        text(QStringLiteral("Text for the command's standard input (it reads end of file after it)."),
                            16 * 1024 * 1024)},
                    {QStringLiteral("max_output_bytes"),
                        integer(QStringLiteral("Most bytes of stdout and of stderr to return (default 65536)."), 256,
                            4 * 1024 * 1024)}},
                {QStringLiteral("sandbox")}),
            execution},
        {QStringLiteral("sandbox_write_file"), QStringLiteral("Write a file into a sandbox"),
            QStringLiteral(
                "Create or replace a file in a sandbox's workspace, from text (content) or bytes (content_base64)."),
            object({{QStringLiteral("sandbox"), sandboxArgument()}, {QStringLiteral("path"), pathArgument()},
                       {QStringLiteral("content"),
                           text(QStringLiteral("The file's text (UTF-8), at most 32 MiB."), 32 * 1024 * 1024)},
                       {QStringLiteral("content_base64"),
                           text(QStringLiteral("The file's bytes, base64 (at most 32 MiB of bytes)."), 44739244)},
                       {QStringLiteral("mode"),
                           integer(QStringLiteral("Permission bits, e.g. 493 for 0755 (default 420, 0644)."), 0, 511)}},
                {QStringLiteral("sandbox"), QStringLiteral("path")}),
            object({{QStringLiteral("path"), textOut()},
                {QStringLiteral("bytes"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}}})},
        {QStringLiteral("sandbox_read_file"), QStringLiteral("Read a file from a sandbox"),
            QStringLiteral("Read a file from a sandbox's workspace, as text (invalid UTF-8 is replaced) or as base64."),
            object(
                {{QStringLiteral("sandbox"), sandboxArgument()}, {QStringLiteral("path"), pathArgument()},
                    {QStringLiteral("max_bytes"),
                        integer(
                            QStringLiteral("Read at most this many bytes (default 1048576)."), 1, 32 * 1024 * 1024)},
                    {QStringLiteral("encoding"),
                        QJsonObject{{QStringLiteral("type"), QStringLiteral("string")},
                            {QStringLiteral("enum"), QJsonArray{QStringLiteral("text"), QStringLiteral("base64")}}}}},
                {QStringLiteral("sandbox"), QStringLiteral("path")}),
            object({{QStringLiteral("content"), textOut()},
                {QStringLiteral("size"), QJsonObject{{QStringLiteral("type"), QStringLiteral("integer")}}},
                {QStringLiteral("truncated"), QJsonObject{{QStringLiteral("type"), QStringLiteral("boolean")}}}})},
        {QStringLiteral("sandbox_delete"), QStringLiteral("Delete a sandbox"),
            QStringLiteral("Delete a sandbox of this session: every process in it is killed and its workspace removed. "
                           "Its history stays."),
            object({{QStringLiteral("sandbox"), sandboxArgument()}}, {QStringLiteral("sandbox")}),
            object({{QStringLiteral("deleted"), textOut()}})},
    };
}
} // namespace

QJsonObject ToolSpec::toJson(bool structured) const
{
    QJsonObject o{{QStringLiteral("name"), name}, {QStringLiteral("description"), description},
        {QStringLiteral("inputSchema"), inputSchema}};
    if (structured) {
        o.insert(QStringLiteral("title"), title);
        if (!outputSchema.isEmpty())
            o.insert(QStringLiteral("outputSchema"), outputSchema);
    }
    return o;
}

const QList<ToolSpec> &sandboxTools()
{
    static const QList<ToolSpec> tools = build();
    return tools;
}

const ToolSpec *findSandboxTool(const QString &name)
{
    for (const ToolSpec &t : sandboxTools())
        if (t.name == name)
            return &t;
    return nullptr;
}

ToolSpec hostTool(const QJsonObject &declaration)
{
    const QString name = declaration.value(QStringLiteral("name")).toString();
    QString description = declaration.value(QStringLiteral("description")).toString();
    description += QStringLiteral(
        " (A host tool: it runs outside the sandbox with the host's credentials, within what the sandbox's "
        "policy allows%1.)")
                       .arg(declaration.value(QStringLiteral("decision")).toString() == QLatin1String("ask")
                               ? QStringLiteral("; each call waits for a person's approval")
                               : QString());
    return {name, name, description,
        object({{QStringLiteral("sandbox"), sandboxArgument()},
                   {QStringLiteral("arguments"), declaration.value(QStringLiteral("inputSchema")).toObject()}},
            {QStringLiteral("sandbox"), QStringLiteral("arguments")}),
        {}};
}

} // namespace airlock::mcp
