// SPDX-License-Identifier: Apache-2.0
#include "mcp/SandboxBackend.h"

#include "client/DaemonApi.h"
#include "mcp/ExecCall.h"
#include "model/EventKinds.h"
#include "policy/Policy.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTimer>

#include <cmath>
#include <memory>

namespace airlock::mcp {

namespace {
constexpr qint64 kFileChunk = 1024 * 1024;
constexpr qint64 kMaxFileBytes = 32 * 1024 * 1024;
constexpr int kMaxSandboxes = 32; // a session's own, at once
constexpr qint64 kMiB = 1024 * 1024;

QString sandboxPath(const QString &path)
{
    return path.startsWith(QLatin1Char('/')) ? path : QStringLiteral("/workspace/") + path;
}

ToolResult structuredResult(const QString &text, const QJsonObject &structured)
{
    return {text, structured, false};
}

// What a sandbox lets its processes and the agent do, from its effective policy: enough for an
// agent to plan (and to know what will ask a person).
QJsonObject capabilitiesOf(const QJsonObject &info, const QJsonObject &policy)
{
    const QJsonObject network = policy.value(QStringLiteral("network")).toObject();
    const QJsonObject commands = policy.value(QStringLiteral("commands")).toObject();
    QJsonArray allowed, denied;
    for (const QJsonValue &rule : commands.value(QStringLiteral("rules")).toArray()) {
        const QJsonObject r = rule.toObject();
        (r.value(QStringLiteral("decision")).toString() == QLatin1String("deny") ? denied : allowed)
            .append(r.value(QStringLiteral("command")));
    }
    QJsonObject tools;
    const QJsonObject declared = policy.value(QStringLiteral("tools")).toObject();
    for (auto it = declared.begin(); it != declared.end(); ++it)
        tools.insert(it.key(), it.value().toObject().value(QStringLiteral("decision")));
    QJsonObject limits;
    const QJsonObject given = info.value(QStringLiteral("limits")).toObject();
    for (auto it = given.begin(); it != given.end(); ++it)
        if (!it.value().toObject().value(QStringLiteral("value")).isNull())
            limits.insert(it.key(), it.value().toObject().value(QStringLiteral("value")));
    return {{QStringLiteral("network"),
                QJsonObject{{QStringLiteral("mode"), network.value(QStringLiteral("mode"))},
                    {QStringLiteral("allow"), network.value(QStringLiteral("allow"))}}},
        {QStringLiteral("commands"),
            QJsonObject{{QStringLiteral("default"), commands.value(QStringLiteral("default"))},
                {QStringLiteral("allowed"), allowed}, {QStringLiteral("denied"), denied}}},
        {QStringLiteral("tools"), tools}, {QStringLiteral("limits"), limits},
        {QStringLiteral("writable"), QJsonArray{QStringLiteral("/workspace"), QStringLiteral("/tmp")}}};
}
} // namespace

SandboxBackend::SandboxBackend(Options options, Connect connect, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_connect(std::move(connect))
{
}

SandboxBackend::~SandboxBackend() = default;

Status SandboxBackend::open()
{
    auto client = m_connect(true);
    if (!client)
        return client.error();
    m_client = *client;
    connect(m_client, &DaemonClient::eventReceived, this, &SandboxBackend::onEvent);
    connect(m_client, &DaemonClient::disconnected, this, [this](const Error &why) { onLost(why.message); });
    for (const QString &name : std::as_const(m_options.shared)) {
        auto info = DaemonApi(*m_client).sandboxInfo(name).wait();
        if (!info)
            return makeError(info.error().code, QStringLiteral("--sandbox %1: %2").arg(name, info.error().message));
        const QString id = info->value(QStringLiteral("id")).toString();
        m_shared.insert(id); // by id: the person may have named it by id or prefix
        adopt(id, info->value(QStringLiteral("name")).toString());
    }
    return Ok{};
}

QList<ToolSpec> SandboxBackend::tools() const
{
    QList<ToolSpec> tools = sandboxTools();
    QSet<QString> names;
    for (const ToolSpec &t : tools)
        names.insert(t.name);
    for (const Scoped &s : m_scope)
        for (const ToolSpec &t : s.hostTools)
            if (!names.contains(t.name)) { // the same tool of several sandboxes is one MCP tool
                names.insert(t.name);
                tools.append(t);
            }
    return tools;
}

Result<SandboxBackend::Scoped> SandboxBackend::resolve(const QString &ref) const
{
    for (const Scoped &s : m_scope)
        if (s.id == ref || s.name == ref)
            return s;
    return makeError(ErrorCode::NotFound,
        QStringLiteral("'%1' is not a sandbox of this session: create one with sandbox_create (a person can "
                       "share one of theirs with 'airlockctl mcp --sandbox NAME')")
            .arg(ref.left(100)));
}

void SandboxBackend::adopt(const QString &id, const QString &name)
{
    m_scope.insert(id, {id, name, {}});
    // Its approval requests (to tell the agent what it waits for) and its host tools.
    const DaemonApi api(*m_client);
    api.subscribe(id).send();
    api.listTools(id).then([self = QPointer<SandboxBackend>(this), id](Result<QJsonObject> r) {
        if (!self || !r || !self->m_scope.contains(id))
            return;
        QList<ToolSpec> tools;
        for (const QJsonValue &t : r->value(QStringLiteral("tools")).toArray())
            if (t.toObject().value(QStringLiteral("decision")).toString() != QLatin1String("deny"))
                tools.append(hostTool(t.toObject()));
        self->m_scope[id].hostTools = tools;
        if (!tools.isEmpty())
            Q_EMIT self->toolsChanged();
    });
}

SandboxBackend::Cancel SandboxBackend::call(const QString &tool, const QJsonObject &arguments, CallHooks hooks)
{
    if (!m_client || !m_client->isConnected()) {
        hooks.done(ToolResult::failure(QStringLiteral("Airlock's daemon is not connected")));
        return {};
    }
    if (tool == QLatin1String("sandbox_exec"))
        return exec(arguments, std::move(hooks));
    if (tool == QLatin1String("sandbox_create"))
        return create(arguments, std::move(hooks));
    if (tool == QLatin1String("sandbox_list"))
        list(std::move(hooks));
    else if (tool == QLatin1String("sandbox_write_file"))
        writeFile(arguments, std::move(hooks));
    else if (tool == QLatin1String("sandbox_read_file"))
        readFile(arguments, std::move(hooks));
    else if (tool == QLatin1String("sandbox_delete"))
        remove(arguments, std::move(hooks));
    else
        return callHostTool(tool, arguments, std::move(hooks));
    return {};
}

SandboxBackend::Cancel SandboxBackend::create(const QJsonObject &arguments, CallHooks hooks)
{
    // The preset and the hosts are the person's (given when the session started); the agent may
    // ask for those, or less, and choose a name and limits.
    if (m_scope.size() - m_shared.size() >= kMaxSandboxes) {
        hooks.done(ToolResult::failure(
            QStringLiteral("this session already has %1 sandboxes: delete one first").arg(kMaxSandboxes)));
        return {};
    }
    const QString preset = arguments.value(QStringLiteral("preset")).toString();
    if (!preset.isEmpty() && preset != m_options.preset) {
        hooks.done(ToolResult::failure(m_options.preset.isEmpty()
                ? QStringLiteral("presets are the person's to choose: this session has none (they can start it with "
                                 "'airlockctl mcp --preset %1')")
                      .arg(preset.left(100))
                : QStringLiteral("this session creates sandboxes with preset '%1' (the person's choice), not '%2'")
                      .arg(m_options.preset, preset.left(100))));
        return {};
    }
    QStringList allow;
    for (const QJsonValue &host : arguments.value(QStringLiteral("allow")).toArray()) {
        auto normal = policy::normaliseHostPattern(host.toString());
        if (!normal || !m_options.allow.contains(*normal, Qt::CaseInsensitive)) {
            hooks.done(ToolResult::failure(
                QStringLiteral("'%1' is not a host the person allowed for this session (%2)")
                    .arg(host.toString().left(253),
                        m_options.allow.isEmpty()
                            ? QStringLiteral("none; they can start it with 'airlockctl mcp --allow HOST'")
                            : m_options.allow.join(QStringLiteral(", ")))));
            return {};
        }
        allow.append(*normal);
    }
    const bool allowlist
        = arguments.value(QStringLiteral("network")).toString() == QLatin1String("allowlist") || !allow.isEmpty();
    if (allowlist && allow.isEmpty() && m_options.preset.isEmpty()) {
        hooks.done(ToolResult::failure(
            QStringLiteral("network allowlist needs hosts in 'allow' (from those the person allowed: %1)")
                .arg(m_options.allow.isEmpty() ? QStringLiteral("none") : m_options.allow.join(QStringLiteral(", ")))));
        return {};
    }
    QJsonObject limits;
    const QJsonObject asked = arguments.value(QStringLiteral("limits")).toObject();
    const std::pair<const char *, std::pair<const char *, double>> fields[]
        = {{"memory_mb", {"memoryBytes", double(kMiB)}}, {"pids", {"pids", 1}}, {"cpu_seconds", {"cpuSeconds", 1}},
            {"cpus", {"cpuMillicores", 1000}}, {"wall_seconds", {"wallMs", 1000}},
            {"output_mb", {"outputBytes", double(kMiB)}}, {"disk_mb", {"diskBytes", double(kMiB)}}};
    // 0 would be no disk limit at all: that is the person's to give (airlockctl create --disk none), not an agent's.
    if (asked.contains(QStringLiteral("disk_mb")) && !(asked.value(QStringLiteral("disk_mb")).toDouble() >= 16)) {
        hooks.done(ToolResult::failure(QStringLiteral("limits.disk_mb: expected at least 16 (MiB)")));
        return {};
    }
    for (const auto &[from, to] : fields)
        if (asked.contains(QLatin1String(from)))
            limits.insert(QLatin1String(to.first), std::round(asked.value(QLatin1String(from)).toDouble() * to.second));
    QJsonObject spec{{QStringLiteral("limits"), limits}};
    if (arguments.contains(QStringLiteral("name")))
        spec.insert(QStringLiteral("name"), arguments.value(QStringLiteral("name")));
    if (arguments.contains(QStringLiteral("isolation"))) // a stronger boundary is the agent's to ask for
        spec.insert(QStringLiteral("isolation"), arguments.value(QStringLiteral("isolation")));
    // The agent's own connection creates with the person's defaults only; a preset or hosts the
    // person gave this session go through a connection of theirs, for this and nothing else.
    DaemonClient *creator = m_client;
    if (!m_options.preset.isEmpty() || allowlist) {
        auto person = m_connect(false);
        if (!person) {
            hooks.done(ToolResult::failure(person.error().message));
            return {};
        }
        creator = *person;
    }
    // The daemon's own checks of a spec (the agent hears what it would say).
    auto checked = SandboxSpec::fromJson(spec, HostPaths::Remote);
    if (!checked) {
        hooks.done(ToolResult::failure(QStringLiteral("the sandbox was not created: %1").arg(checked.error().message)));
        return {};
    }
    CreateSandboxRequest request;
    request.name = checked->name;
    request.limits = checked->limits;
    request.isolation = checked->isolation;
    if (creator != m_client) {
        request.preset = m_options.preset;
        if (allowlist)
            request.allowHosts(allow);
    }
    DaemonApi(*creator).createSandbox(request).then(
        [self = QPointer<SandboxBackend>(this), hooks](Result<CreatedSandbox> r) {
            if (!self)
                return;
            if (!r)
                return hooks.done(
                    ToolResult::failure(QStringLiteral("the sandbox was not created: %1").arg(r.error().message)));
            const QJsonObject info = r->info;
            const QString id = r->id, name = r->name;
            self->adopt(id, name);
            DaemonApi(*self->m_client).policy(id, true).then([hooks, info, id, name](Result<QJsonObject> policy) {
                const QJsonObject capabilities
                    = capabilitiesOf(info, policy ? policy->value(QStringLiteral("policy")).toObject() : QJsonObject{});
                const QJsonObject structured{{QStringLiteral("id"), id}, {QStringLiteral("name"), name},
                    {QStringLiteral("capabilities"), capabilities}};
                hooks.done(structuredResult(
                    QStringLiteral("Created sandbox %1 (id %2). What it can do:\n%3")
                        .arg(name, id, QString::fromUtf8(QJsonDocument(capabilities).toJson(QJsonDocument::Indented))),
                    structured));
            });
        });
    return {};
}

SandboxBackend::Cancel SandboxBackend::exec(const QJsonObject &arguments, CallHooks hooks)
{
    auto sandbox = resolve(arguments.value(QStringLiteral("sandbox")).toString());
    if (!sandbox) {
        hooks.done(ToolResult::failure(sandbox.error().message));
        return {};
    }
    const bool shell = arguments.contains(QStringLiteral("command")),
               direct = arguments.contains(QStringLiteral("argv"));
    if (shell == direct) {
        hooks.done(ToolResult::failure(
            QStringLiteral("give either 'command' (a shell line) or 'argv' (a program and its arguments), not %1")
                .arg(shell ? QStringLiteral("both") : QStringLiteral("neither"))));
        return {};
    }
    const QJsonArray argv = shell
        ? QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"), arguments.value(QStringLiteral("command"))}
        : arguments.value(QStringLiteral("argv")).toArray();
    const QJsonObject env = arguments.value(QStringLiteral("env")).toObject();
    for (auto it = env.begin(); it != env.end(); ++it)
        if (!it.value().isString()) {
            hooks.done(ToolResult::failure(QStringLiteral("/env/%1: expected a string").arg(it.key().left(100))));
            return {};
        }
    ExecCall::Request request;
    request.sandboxName = sandbox->name;
    request.maxOutput = qint64(arguments.value(QStringLiteral("max_output_bytes")).toDouble(65536));
    request.input = arguments.value(QStringLiteral("stdin")).toString().toUtf8();
    QJsonObject start{{QStringLiteral("argv"), argv},
        {QStringLiteral("cwd"),
            sandboxPath(arguments.value(QStringLiteral("cwd")).toString(QStringLiteral("/workspace")))},
        {QStringLiteral("env"), env}, {QStringLiteral("stdin"), arguments.contains(QStringLiteral("stdin"))},
        {QStringLiteral("leaseMs"), double(m_options.leaseMs)}};
    if (arguments.contains(QStringLiteral("timeout_ms")))
        start.insert(QStringLiteral("timeoutMs"), arguments.value(QStringLiteral("timeout_ms")));
    // The daemon's own checks of a request (the agent hears what it would say).
    auto exec = ExecRequest::fromJson(start);
    if (!exec) {
        hooks.done(ToolResult::failure(QStringLiteral("the command did not start: %1").arg(exec.error().message)));
        return {};
    }
    request.sandbox = sandbox->id;
    request.exec = *exec;
    auto *call = new ExecCall(*m_client, std::move(request), std::move(hooks), this);
    m_execs.append(call);
    connect(call, &ExecCall::finished, this, [this, call] {
        m_execs.removeAll(call);
        call->deleteLater();
    });
    call->start();
    return [call = QPointer<ExecCall>(call)] {
        if (call)
            call->cancel();
    };
}

void SandboxBackend::list(CallHooks hooks)
{
    DaemonApi(*m_client).listSandboxes().then([self = QPointer<SandboxBackend>(this), hooks](Result<QJsonArray> r) {
        if (!self)
            return;
        if (!r)
            return hooks.done(ToolResult::failure(r.error().message));
        QJsonArray mine;
        QStringList lines;
        for (const QJsonValue &v : std::as_const(*r)) {
            const QJsonObject s = v.toObject();
            if (!self->m_scope.contains(s.value(QStringLiteral("id")).toString()))
                continue;
            const QJsonObject entry{{QStringLiteral("id"), s.value(QStringLiteral("id"))},
                {QStringLiteral("name"), s.value(QStringLiteral("name"))},
                {QStringLiteral("state"), s.value(QStringLiteral("state"))},
                {QStringLiteral("network"), s.value(QStringLiteral("network"))},
                {QStringLiteral("preset"), s.value(QStringLiteral("preset"))},
                {QStringLiteral("executions"), s.value(QStringLiteral("executions"))}};
            mine.append(entry);
            lines.append(
                QStringLiteral("%1 (id %2): %3, network %4")
                    .arg(entry.value(QStringLiteral("name")).toString(), entry.value(QStringLiteral("id")).toString(),
                        entry.value(QStringLiteral("state")).toString(),
                        entry.value(QStringLiteral("network")).toString()));
        }
        hooks.done(
            structuredResult(lines.isEmpty() ? QStringLiteral("No sandboxes yet: create one with sandbox_create.")
                                             : lines.join(QLatin1Char('\n')),
                {{QStringLiteral("sandboxes"), mine}}));
    });
}

void SandboxBackend::writeFile(const QJsonObject &arguments, CallHooks hooks)
{
    auto sandbox = resolve(arguments.value(QStringLiteral("sandbox")).toString());
    if (!sandbox)
        return hooks.done(ToolResult::failure(sandbox.error().message));
    const bool text = arguments.contains(QStringLiteral("content")),
               bytes = arguments.contains(QStringLiteral("content_base64"));
    if (text == bytes)
        return hooks.done(
            ToolResult::failure(QStringLiteral("give either 'content' (text) or 'content_base64' (bytes), not %1")
                                    .arg(text ? QStringLiteral("both") : QStringLiteral("neither"))));
    auto data = std::make_shared<QByteArray>();
    if (text) {
        *data = arguments.value(QStringLiteral("content")).toString().toUtf8();
    } else {
        auto decoded
            = QByteArray::fromBase64Encoding(arguments.value(QStringLiteral("content_base64")).toString().toLatin1(),
                QByteArray::AbortOnBase64DecodingErrors);
        if (!decoded)
            return hooks.done(ToolResult::failure(QStringLiteral("/content_base64: not valid base64")));
        *data = *decoded;
    }
    if (data->size() > kMaxFileBytes)
        return hooks.done(ToolResult::failure(
            QStringLiteral("the file is %1 bytes; at most %2 at once").arg(data->size()).arg(kMaxFileBytes)));
    const QString path = sandboxPath(arguments.value(QStringLiteral("path")).toString());
    const int mode = arguments.value(QStringLiteral("mode")).toInt(0644);
    // 1 MiB at a time, each after the last was written.
    auto next = std::make_shared<std::function<void(qint64)>>();
    *next = [self = QPointer<SandboxBackend>(this), id = sandbox->id, path, mode, data, hooks, next](qint64 offset) {
        if (!self) {
            *next = nullptr;
            return;
        }
        const QByteArray chunk = data->mid(offset, kFileChunk);
        DaemonApi(*self->m_client)
            .writeFile(id, path, chunk, offset, mode)
            .then([hooks, next, offset, size = chunk.size(), total = data->size()](Result<QJsonObject> r) {
                if (!r) {
                    *next = nullptr;
                    return hooks.done(ToolResult::failure(QStringLiteral("not written: %1").arg(r.error().message)));
                }
                if (offset + size < total)
                    return (*next)(offset + size);
                const QString written = r->value(QStringLiteral("path")).toString();
                *next = nullptr;
                hooks.done(structuredResult(QStringLiteral("Wrote %1 bytes to %2").arg(total).arg(written),
                    {{QStringLiteral("path"), written}, {QStringLiteral("bytes"), double(total)}}));
            });
    };
    (*next)(0);
}

void SandboxBackend::readFile(const QJsonObject &arguments, CallHooks hooks)
{
    auto sandbox = resolve(arguments.value(QStringLiteral("sandbox")).toString());
    if (!sandbox)
        return hooks.done(ToolResult::failure(sandbox.error().message));
    const qint64 limit = qint64(arguments.value(QStringLiteral("max_bytes")).toDouble(double(kFileChunk)));
    const bool base64 = arguments.value(QStringLiteral("encoding")).toString() == QLatin1String("base64");
    const QString path = sandboxPath(arguments.value(QStringLiteral("path")).toString());
    auto data = std::make_shared<QByteArray>();
    auto next = std::make_shared<std::function<void()>>();
    *next = [self = QPointer<SandboxBackend>(this), id = sandbox->id, path, limit, base64, data, hooks, next] {
        if (!self) {
            *next = nullptr;
            return;
        }
        DaemonApi(*self->m_client)
            .readFile(id, path, data->size(), std::min<qint64>(kFileChunk, limit - data->size()))
            .then([hooks, next, data, limit, base64, path](Result<QJsonObject> r) {
                if (!r) {
                    *next = nullptr;
                    return hooks.done(ToolResult::failure(QStringLiteral("not read: %1").arg(r.error().message)));
                }
                const QJsonObject &chunk = *r;
                *data += QByteArray::fromBase64(chunk.value(QStringLiteral("data")).toString().toLatin1());
                const qint64 size = qint64(chunk.value(QStringLiteral("size")).toDouble());
                if (!chunk.value(QStringLiteral("eof")).toBool() && data->size() < limit && data->size() < size)
                    return (*next)();
                *next = nullptr;
                const bool truncated = data->size() < size;
                const QString content = base64 ? QString::fromLatin1(data->toBase64()) : QString::fromUtf8(*data);
                QString text = content;
                if (truncated)
                    text += QStringLiteral("\n[… the file has %1 bytes; the first %2 are shown (max_bytes)]")
                                .arg(size)
                                .arg(data->size());
                hooks.done(structuredResult(text,
                    {{QStringLiteral("content"), content}, {QStringLiteral("size"), double(size)},
                        {QStringLiteral("truncated"), truncated}}));
            });
    };
    (*next)();
}

void SandboxBackend::remove(const QJsonObject &arguments, CallHooks hooks)
{
    auto sandbox = resolve(arguments.value(QStringLiteral("sandbox")).toString());
    if (!sandbox)
        return hooks.done(ToolResult::failure(sandbox.error().message));
    if (m_shared.contains(sandbox->id))
        return hooks.done(ToolResult::failure(
            QStringLiteral("%1 is the person's, shared with this session: it is theirs to delete").arg(sandbox->name)));
    DaemonApi(*m_client)
        .deleteSandbox(sandbox->id)
        .then([self = QPointer<SandboxBackend>(this), hooks, id = sandbox->id, name = sandbox->name](
                  Result<QJsonObject> r) {
            if (!self)
                return;
            if (!r)
                return hooks.done(ToolResult::failure(QStringLiteral("not deleted: %1").arg(r.error().message)));
            const bool hadTools = !self->m_scope.value(id).hostTools.isEmpty();
            self->m_scope.remove(id);
            if (hadTools)
                Q_EMIT self->toolsChanged();
            hooks.done(
                structuredResult(QStringLiteral("Deleted sandbox %1").arg(name), {{QStringLiteral("deleted"), name}}));
        });
}

SandboxBackend::Cancel SandboxBackend::callHostTool(const QString &tool, const QJsonObject &arguments, CallHooks hooks)
{
    auto sandbox = resolve(arguments.value(QStringLiteral("sandbox")).toString());
    if (!sandbox) {
        hooks.done(ToolResult::failure(sandbox.error().message));
        return {};
    }
    const quint64 call = m_nextCall++;
    // Followed for news of its approvals, and so that a cancelled call can take its question back.
    m_waiting.insert(call, {sandbox->id, tool, hooks.progress ? hooks.progress : [](const QString &) {}, {}});
    DaemonApi(*m_client)
        .callTool(sandbox->id, tool, arguments.value(QStringLiteral("arguments")))
        .then([self = QPointer<SandboxBackend>(this), hooks, call, tool](Result<QJsonObject> r) {
            if (self)
                self->m_waiting.remove(call);
            if (!r)
                return hooks.done(
                    ToolResult::failure(QStringLiteral("%1 was not run: %2").arg(tool, r.error().message)));
            hooks.done({QString::fromUtf8(QJsonDocument(*r).toJson(QJsonDocument::Indented)), {}, false});
        });
    // Once it runs on the host it runs to its end; while it waits for a person, it can be taken back.
    return [self = QPointer<SandboxBackend>(this), call] {
        if (self && self->m_waiting.contains(call))
            for (const QString &id : std::as_const(self->m_waiting[call].approvals))
                DaemonApi(*self->m_client).withdrawApproval(id).send();
    };
}

void SandboxBackend::onEvent(const Event &event)
{
    const bool requested = event.kind == event::ApprovalRequested, decided = event.kind == event::ApprovalDecided;
    if (requested || decided) {
        const QString kind = event.payload.value(QStringLiteral("kind")).toString();
        const auto calls = m_execs; // a call that finishes leaves the list
        if (!ExecCall::routeApproval(event, calls, m_client->options().run, m_client->options().agent))
            return;
        for (Waiting &w : m_waiting) {
            if (w.sandbox != event.sandbox || kind != QLatin1String("tool"))
                continue;
            const QString id = event.payload.value(QStringLiteral("id")).toString();
            if (requested && event.payload.value(QStringLiteral("tool")).toString() == w.tool) {
                w.approvals.insert(id);
                w.progress(QStringLiteral("waiting for a person to approve %1 (request %2)").arg(w.tool, id));
            } else if (decided && w.approvals.contains(id)) {
                w.progress(QStringLiteral("%1 by %2")
                               .arg(event.payload.value(QStringLiteral("decision")).toString() == QLatin1String("allow")
                                       ? QStringLiteral("approved")
                                       : QStringLiteral("denied"),
                                   event.payload.value(QStringLiteral("by")).toString()));
            }
        }
        return;
    }
    const auto calls = m_execs; // a call that finishes leaves the list
    for (const QPointer<ExecCall> &call : calls)
        if (call)
            call->onEvent(event);
}

void SandboxBackend::onLost(const QString &why)
{
    const auto calls = m_execs;
    for (const QPointer<ExecCall> &call : calls)
        if (call)
            call->fail(QStringLiteral("the connection to Airlock's daemon was lost: %1").arg(why));
}

void SandboxBackend::shutdown(std::function<void()> done)
{
    for (const QPointer<ExecCall> &call : std::as_const(m_execs))
        if (call)
            call->cancel();
    // Each killed execution reports its end; a daemon that does not answer has a moment.
    auto waited = std::make_shared<int>(0);
    auto *timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, [this, timer, waited, done] {
        const bool running
            = std::any_of(m_execs.cbegin(), m_execs.cend(), [](const QPointer<ExecCall> &c) { return !c.isNull(); });
        if (running && ++*waited < 60)
            return;
        timer->deleteLater();
        done();
    });
    timer->start(50);
}

} // namespace airlock::mcp
