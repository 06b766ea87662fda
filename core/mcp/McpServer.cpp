// SPDX-License-Identifier: Apache-2.0
#include "mcp/McpServer.h"
#include "util/Version.h"

#include "log/Log.h"
#include "mcp/McpTools.h"
#include "mcp/SandboxBackend.h"
#include "tools/JsonSchema.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QTimer>

namespace airlock::mcp {

using namespace protocol;

namespace {
auto logger()
{
    static auto l = log::get("mcp");
    return l;
}

// Calls in progress at once: each may hold a file or a command's output in memory.
constexpr int kMaxCalls = 8;

constexpr char kInstructions[] = "Airlock runs your commands in isolated Linux sandboxes on the user's machine. Create "
                                 "a sandbox with sandbox_create, run "
                                 "commands with sandbox_exec, move files with sandbox_write_file and "
                                 "sandbox_read_file, and delete it when done. The user's "
                                 "policy decides what each sandbox can reach: commands, network destinations and host "
                                 "tools may wait for the user's "
                                 "approval, and a denial comes back as an error with their reason. Everything you do "
                                 "is recorded in Airlock's history.";
} // namespace

McpServer::McpServer(Open open, Send send, QObject *parent)
    : QObject(parent)
    , m_open(std::move(open))
    , m_send(std::move(send))
{
}

QString McpServer::key(const QJsonValue &id)
{
    return id.isString() ? QStringLiteral("s:") + id.toString() : QStringLiteral("n:%1").arg(qint64(id.toDouble()));
}

void McpServer::receive(QByteArrayView line)
{
    if (line.trimmed().isEmpty() || m_closing)
        return;
    const Parsed parsed = parse(line);
    if (!parsed.message) {
        logger()->warn("refused a message: {}", parsed.fault.message.toStdString());
        return m_send(error(parsed.fault.id, parsed.fault.code, parsed.fault.message));
    }
    const Message &m = *parsed.message;
    switch (m.kind) {
    case Message::Kind::Response:
        return; // this server asks the client nothing
    case Message::Kind::Notification:
        if (m.method == QLatin1String("notifications/cancelled"))
            cancel(m.params.value(QStringLiteral("requestId")));
        return; // notifications/initialized and the rest need nothing from here
    case Message::Kind::Request:
        return onRequest(m);
    }
}

void McpServer::refuseLongLine(qint64 limit)
{
    m_send(error(
        QJsonValue::Null, InvalidRequest, QStringLiteral("a message longer than %1 bytes was dropped").arg(limit)));
}

void McpServer::onRequest(const Message &m)
{
    // An id is a call's until it is answered; a request reusing it is refused on no id (the
    // call keeps its own).
    if (m_calls.contains(key(m.id)))
        return m_send(error(QJsonValue::Null, InvalidRequest,
            QStringLiteral("request id %1 is already in use by a call in progress").arg(key(m.id).mid(2))));
    if (m.method == QLatin1String("initialize"))
        return initialize(m);
    if (m.method == QLatin1String("ping"))
        return m_send(result(m.id, {}));
    if (!m_backend)
        return m_send(error(m.id, InvalidRequest, QStringLiteral("send initialize first")));
    if (m.method == QLatin1String("tools/list"))
        return listTools(m);
    if (m.method == QLatin1String("tools/call"))
        return callTool(m);
    m_send(error(m.id, MethodNotFound,
        QStringLiteral("unknown method '%1' (this server has tools only)").arg(m.method.left(100))));
}

void McpServer::initialize(const Message &m)
{
    if (m_backend || m_initializing)
        return m_send(error(m.id, InvalidRequest, QStringLiteral("already initialized")));
    const QJsonValue requested = m.params.value(QStringLiteral("protocolVersion"));
    if (!requested.isString())
        return m_send(error(m.id, InvalidParams,
            QStringLiteral("params.protocolVersion: expected a protocol revision such as \"%1\"")
                .arg(QLatin1String(kLatestVersion))));
    const QJsonValue name = m.params.value(QStringLiteral("clientInfo")).toObject().value(QStringLiteral("name"));
    if (!name.isString() || name.toString().trimmed().isEmpty())
        return m_send(error(m.id, InvalidParams, QStringLiteral("params.clientInfo.name: expected the client's name")));
    m_clientName = name.toString().trimmed().left(100);
    m_initializing = true;
    auto backend = m_open(m_clientName);
    m_initializing = false;
    if (!backend)
        return m_send(
            error(m.id, InternalError, QStringLiteral("cannot reach Airlock: %1").arg(backend.error().message)));
    m_backend = *backend;
    m_version = negotiate(requested.toString());
    connect(m_backend, &SandboxBackend::toolsChanged, this, [this] {
        if (!m_closing)
            m_send(notification(QStringLiteral("notifications/tools/list_changed"), {}));
    });
    logger()->info("MCP session for {} (protocol {}, asked {})", m_clientName.toStdString(), m_version.toStdString(),
        requested.toString().toStdString());
    m_send(result(m.id,
        {{QStringLiteral("protocolVersion"), m_version},
            {QStringLiteral("capabilities"),
                QJsonObject{{QStringLiteral("tools"), QJsonObject{{QStringLiteral("listChanged"), true}}}}},
            {QStringLiteral("serverInfo"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("airlock")},
                    {QStringLiteral("title"), QStringLiteral("Airlock")},
                    {QStringLiteral("version"), airlock::version()}}},
            {QStringLiteral("instructions"), QLatin1String(kInstructions)}}));
}

void McpServer::listTools(const Message &m)
{
    QJsonArray tools;
    for (const ToolSpec &t : m_backend->tools())
        tools.append(t.toJson(hasStructuredResults(m_version)));
    m_send(result(m.id, {{QStringLiteral("tools"), tools}}));
}

void McpServer::callTool(const Message &m)
{
    const QJsonValue name = m.params.value(QStringLiteral("name"));
    if (!name.isString())
        return m_send(error(m.id, InvalidParams, QStringLiteral("params.name: expected a tool name (see tools/list)")));
    const QJsonValue arguments = m.params.value(QStringLiteral("arguments"));
    if (!arguments.isUndefined() && !arguments.isObject())
        return m_send(error(m.id, InvalidParams, QStringLiteral("params.arguments: expected an object")));
    const QList<ToolSpec> tools = m_backend->tools();
    const auto tool
        = std::find_if(tools.cbegin(), tools.cend(), [&](const ToolSpec &t) { return t.name == name.toString(); });
    if (tool == tools.cend())
        return m_send(error(
            m.id, InvalidParams, QStringLiteral("unknown tool '%1' (see tools/list)").arg(name.toString().left(100))));
    const QString id = key(m.id);
    if (m_calls.size() >= kMaxCalls)
        return m_send(result(m.id,
            {{QStringLiteral("content"),
                 QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                     {QStringLiteral("text"),
                         QStringLiteral("%1 calls are already in progress: wait for one to finish").arg(kMaxCalls)}}}},
                {QStringLiteral("isError"), true}}));
    const bool structured = hasStructuredResults(m_version) && !tool->outputSchema.isEmpty();
    auto reply = [self = QPointer<McpServer>(this), requestId = m.id, id, structured](const ToolResult &r) {
        if (!self)
            return;
        const InFlight call = self->m_calls.take(id);
        if (call.cancelled || self->m_closing)
            return; // a cancelled request is not answered
        QJsonObject content{{QStringLiteral("content"),
                                QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("text")},
                                    {QStringLiteral("text"), r.text}}}},
            {QStringLiteral("isError"), r.isError}};
        if (structured && !r.structured.isEmpty() && !r.isError)
            content.insert(QStringLiteral("structuredContent"), r.structured);
        self->m_send(result(requestId, content));
    };
    // Arguments that do not fit the schema: the model sees why, and can try again.
    const QJsonObject args = arguments.toObject();
    if (Status valid = tools::JsonSchema::validate(tool->inputSchema, args); !valid)
        return reply(
            ToolResult::failure(QStringLiteral("invalid arguments for %1: %2").arg(tool->name, valid.error().message)));
    CallHooks hooks;
    const QJsonValue token = m.params.value(QStringLiteral("_meta")).toObject().value(QStringLiteral("progressToken"));
    if (token.isString() || token.isDouble()) {
        auto count = std::make_shared<int>(0);
        hooks.progress = [self = QPointer<McpServer>(this), token, count, id](const QString &message) {
            if (self && !self->m_closing && self->m_calls.contains(id) && !self->m_calls.value(id).cancelled)
                self->m_send(notification(QStringLiteral("notifications/progress"),
                    {{QStringLiteral("progressToken"), token}, {QStringLiteral("progress"), ++*count},
                        {QStringLiteral("message"), message}}));
        };
    }
    hooks.done = reply;
    m_calls.insert(id, {});
    logger()->info("{} calls {}", m_clientName.toStdString(), tool->name.toStdString());
    auto cancelCall = m_backend->call(tool->name, args, std::move(hooks));
    if (m_calls.contains(id)) // still running (most calls answer later)
        m_calls[id].cancel = std::move(cancelCall);
}

void McpServer::cancel(const QJsonValue &requestId)
{
    if (!requestId.isString() && !requestId.isDouble())
        return;
    auto it = m_calls.find(key(requestId));
    if (it == m_calls.end() || it->cancelled)
        return; // finished already, or never was: nothing to do (the spec's race)
    it->cancelled = true;
    logger()->info("{} cancelled request {}", m_clientName.toStdString(), key(requestId).mid(2).toStdString());
    if (it->cancel)
        it->cancel();
}

void McpServer::endOfInput()
{
    if (m_closing)
        return;
    m_closing = true;
    for (auto it = m_calls.begin(); it != m_calls.end(); ++it) {
        it->cancelled = true;
        if (it->cancel)
            it->cancel();
    }
    if (!m_backend)
        return QTimer::singleShot(0, this, &McpServer::finished);
    m_backend->shutdown([self = QPointer<McpServer>(this)] {
        if (self)
            Q_EMIT self->finished();
    });
}

} // namespace airlock::mcp
