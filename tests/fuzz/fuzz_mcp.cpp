// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what an agent writes to `airlockctl mcp`, one JSON-RPC message per line, read
// by an MCP server session (here with no daemon behind it: initialize is answered with an error),
// and tool arguments checked against the schemas of Airlock's tools. Every line must get a
// well-formed answer or none; never a crash or a hang.
#include "mcp/McpProtocol.h"
#include "mcp/McpServer.h"
#include "mcp/McpTools.h"
#include "tools/JsonSchema.h"

#include "FuzzApplication.h"

using namespace airlock;
using namespace airlock::mcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::ensureApplication();
    if (size > 65536)
        return 0;
    const QByteArray bytes = QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size));
    McpServer server(
        [](const QString &) -> Result<SandboxBackend *> {
            return Error{ErrorCode::DaemonUnavailable, QStringLiteral("no daemon in a fuzz target")};
        },
        [](const QJsonObject &message) {
            if (!message.contains(QStringLiteral("jsonrpc")))
                abort(); // an answer that is not JSON-RPC
        });
    for (const QByteArray &line : bytes.split('\n')) {
        server.receive(line);
        const protocol::Parsed parsed = protocol::parse(line);
        if (!parsed.message || parsed.message->method != QLatin1String("tools/call"))
            continue;
        const ToolSpec *tool = findSandboxTool(parsed.message->params.value(QStringLiteral("name")).toString());
        if (tool)
            (void)tools::JsonSchema::validate(
                tool->inputSchema, parsed.message->params.value(QStringLiteral("arguments")).toObject());
    }
    return 0;
}
