// SPDX-License-Identifier: Apache-2.0
#include "daytona/DaytonaApi.h"

#include "client/DaemonApi.h"
#include "daytona/DaytonaInternal.h"
#include "mcp/ExecCall.h"
#include "model/EventKinds.h"
#include "model/ExecRequest.h"
#include "policy/Policy.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTimeZone>
#include <QTimer>

#include <memory>

namespace airlock::daytona {

using namespace internal;

int httpStatusOf(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::PathEscape:
    case ErrorCode::LimitUnsupported:
        return 400;
    case ErrorCode::NotFound:
        return 404;
    case ErrorCode::AlreadyExists:
    case ErrorCode::Conflict:
    case ErrorCode::SandboxNotRunning:
        return 409;
    case ErrorCode::Denied:
        return 403;
    case ErrorCode::Busy:
        return 429;
    case ErrorCode::DaemonUnavailable:
    case ErrorCode::BoundaryUnavailable:
    case ErrorCode::HistoryUnavailable:
    case ErrorCode::DiskFull:
    case ErrorCode::HostIdsTaken:
        return 503;
    default:
        return 500;
    }
}

HttpResponse errorResponse(const Error &error)
{
    return HttpResponse::error(httpStatusOf(error.code), error.message);
}

Result<QString> workspacePath(const QString &path)
{
    if (path.isEmpty())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("a path is needed"));
    const QString p = sandboxPath(path);
    if (p.split(QLatin1Char('/')).contains(QStringLiteral("..")))
        return makeError(ErrorCode::PathEscape, QStringLiteral("'%1' contains '..'; refused").arg(path.left(200)));
    if (p != QLatin1String("/workspace") && !p.startsWith(QLatin1String("/workspace/")))
        return makeError(ErrorCode::PathEscape,
            QStringLiteral("'%1' is outside /workspace: Airlock's file API reaches the workspace only (a relative "
                           "path is taken from /workspace)")
                .arg(path.left(200)));
    return p;
}

DaytonaApi::DaytonaApi(Options options, DaytonaStore &store, remote::Grant grant, DaemonClient &client, QObject *parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_store(store)
    , m_grant(std::move(grant))
    , m_client(client)
    , m_sessions([this](const Entry &entry, const QString &command, mcp::CallHooks hooks) {
        // A session command's output is kept by the session (hooks.output), not collected whole.
        return launch(entry, {QStringLiteral("/bin/sh"), QStringLiteral("-c"), command}, QStringLiteral("/workspace"),
            entry.env, 0, std::move(hooks), 64 * 1024);
    })
{
    connect(&m_client, &DaemonClient::eventReceived, this, &DaytonaApi::onEvent);
    auto *intervals = new QTimer(this);
    connect(intervals, &QTimer::timeout, this, &DaytonaApi::sweep);
    intervals->start(kSweepMs);
}

DaytonaApi::~DaytonaApi() = default;

void DaytonaApi::shutdown()
{
    m_sessions.forgetAll();
    const auto execs = m_execs;
    for (const QPointer<mcp::ExecCall> &exec : execs)
        if (exec)
            exec->cancel();
}

DaytonaApi::Cancel DaytonaApi::handle(const HttpRequest &request, Reply reply, const std::optional<HttpStream> &stream)
{
    const QString top = request.segments.value(0);
    if (top == QLatin1String("api"))
        return stream ? (reply(HttpResponse::error(400, QStringLiteral("/api takes no WebSocket"))), Cancel{})
                      : api(request, reply);
    if (top == QLatin1String("toolbox") && request.segments.size() >= 3) {
        const auto entry = find(request.segments.at(1));
        if (!entry) {
            reply(HttpResponse::error(404,
                QStringLiteral(
                    "no sandbox '%1' was made through this API key (Airlock's Daytona API reaches only those)")
                    .arg(request.segments.at(1).left(100))));
            return {};
        }
        if (entry->stopped) {
            reply(HttpResponse::error(409, QStringLiteral("sandbox %1 is stopped: start it first").arg(entry->id)));
            return {};
        }
        m_lastActive.insert(entry->id, QDateTime::currentMSecsSinceEpoch());
        return toolbox(*entry, request, reply, stream);
    }
    reply(HttpResponse::error(404,
        QStringLiteral("nothing at /%1: Airlock's Daytona API serves /api and /toolbox/SANDBOX")
            .arg(request.segments.join(QLatin1Char('/')).left(200))));
    return {};
}

DaytonaApi::Cancel DaytonaApi::api(const HttpRequest &request, const Reply &reply)
{
    const QStringList s = request.segments.mid(1);
    const QByteArray &method = request.method;
    const QString first = s.value(0);
    if (first == QLatin1String("snapshots"))
        return reply(unsupported(QStringLiteral("Airlock has no snapshots: a sandbox runs this machine's programs "
                                                "(read-only) with its own workspace; create one without a snapshot"))),
               Cancel{};
    if (first == QLatin1String("volumes"))
        return reply(unsupported(QStringLiteral("Airlock has no volumes: a person gives a sandbox host folders "
                                                "(airlockctl create --mount)"))),
               Cancel{};
    if (first != QLatin1String("sandbox")) {
        reply(HttpResponse::error(404,
            QStringLiteral("Airlock's Daytona API has no %1 /api/%2")
                .arg(QString::fromLatin1(method), s.join(QLatin1Char('/')).left(200))));
        return {};
    }
    if (s.size() == 1 || (s.size() == 2 && s.at(1) == QLatin1String("paginated"))) {
        if (method == "POST" && s.size() == 1)
            create(request, reply);
        else if (method == "GET")
            list(request, reply);
        else
            reply(HttpResponse::error(405, QStringLiteral("/api/sandbox takes GET and POST")));
        return {};
    }
    auto entry = find(s.at(1));
    if (!entry) {
        reply(HttpResponse::error(404,
            QStringLiteral("Sandbox with ID or name %1 not found (Airlock's Daytona API reaches only the sandboxes "
                           "made through this API key)")
                .arg(s.at(1).left(100))));
        return {};
    }
    if (s.size() == 2) {
        if (method == "GET")
            describe(*entry, reply);
        else if (method == "DELETE")
            remove(*entry, reply);
        else
            reply(HttpResponse::error(405, QStringLiteral("/api/sandbox/ID takes GET and DELETE")));
        return {};
    }
    const QString action = s.at(2);
    if (action == QLatin1String("toolbox-proxy-url") && method == "GET")
        return reply(HttpResponse::json(QJsonObject{{QStringLiteral("url"), m_options.toolboxUrl}})), Cancel{};
    if (action == QLatin1String("start") && method == "POST") {
        entry->stopped = false;
        m_lastActive.insert(entry->id, QDateTime::currentMSecsSinceEpoch());
        update(*entry, reply);
        return {};
    }
    if (action == QLatin1String("stop") && method == "POST") {
        stop(*entry, reply);
        return {};
    }
    if (action == QLatin1String("labels") && method == "PUT") {
        auto body = jsonBody(request);
        if (!body)
            return reply(errorResponse(body.error())), Cancel{};
        const QJsonValue labels = body->value(QStringLiteral("labels"));
        if (const QString bad = labelsError(labels); !bad.isEmpty() || !labels.isObject())
            return reply(HttpResponse::error(400, bad.isEmpty() ? QStringLiteral("labels must be an object") : bad)),
                   Cancel{};
        entry->labels = labels.toObject();
        update(*entry, reply);
        return {};
    }
    if ((action == QLatin1String("autostop") || action == QLatin1String("autoarchive")
            || action == QLatin1String("autodelete"))
        && method == "POST" && s.size() == 4) {
        bool ok = false;
        const int minutes = s.at(3).toInt(&ok);
        if (!ok || minutes < -1)
            return reply(HttpResponse::error(400, QStringLiteral("the interval is a number of minutes"))), Cancel{};
        (action == QLatin1String("autostop")             ? entry->autoStop
                : action == QLatin1String("autoarchive") ? entry->autoArchive
                                                         : entry->autoDelete)
            = minutes;
        update(*entry, reply);
        return {};
    }
    static const QHash<QString, QString> absent{
        {QStringLiteral("snapshot"), QStringLiteral("Airlock has no snapshots of sandboxes")},
        {QStringLiteral("fork"), QStringLiteral("Airlock does not fork sandboxes")},
        {QStringLiteral("archive"), QStringLiteral("Airlock does not archive sandboxes: stop or delete it")},
        {QStringLiteral("pause"), QStringLiteral("Airlock does not pause sandboxes: stop or delete it")},
        {QStringLiteral("resize"), QStringLiteral("Airlock sets a sandbox's limits when it is made")},
        {QStringLiteral("backup"), QStringLiteral("Airlock has no backups of sandboxes")},
        {QStringLiteral("public"), QStringLiteral("Airlock does not publish sandbox ports")},
        {QStringLiteral("ports"), QStringLiteral("Airlock does not publish sandbox ports")},
        {QStringLiteral("ssh-access"), QStringLiteral("Airlock gives no SSH access to sandboxes")},
    };
    if (absent.contains(action))
        return reply(unsupported(absent.value(action))), Cancel{};
    reply(HttpResponse::error(404,
        QStringLiteral("Airlock's Daytona API has no %1 /api/sandbox/ID/%2")
            .arg(QString::fromLatin1(method), s.mid(2).join(QLatin1Char('/')).left(200))));
    return {};
}

void DaytonaApi::create(const HttpRequest &request, const Reply &reply)
{
    auto parsed = jsonBody(request);
    if (!parsed)
        return reply(errorResponse(parsed.error()));
    const QJsonObject body = *parsed;
    const QJsonValue build = body.value(QStringLiteral("buildInfo"));
    if (!build.isUndefined() && !build.isNull())
        return reply(unsupported(QStringLiteral("Airlock does not build images: a sandbox runs this machine's programs "
                                                "(read-only); create it without an image")));
    if (!jsonString(body, "snapshot").isEmpty())
        return reply(unsupported(QStringLiteral("Airlock has no snapshots: a sandbox runs this machine's programs "
                                                "(read-only); create it without a snapshot")));
    if (!body.value(QStringLiteral("volumes")).toArray().isEmpty())
        return reply(unsupported(QStringLiteral("Airlock has no volumes: a person gives a sandbox host folders "
                                                "(airlockctl create --mount)")));
    if (body.value(QStringLiteral("gpu")).toDouble() > 0)
        return reply(unsupported(QStringLiteral("Airlock sandboxes have no GPUs")));
    if (body.value(QStringLiteral("public")).toBool())
        return reply(unsupported(QStringLiteral("Airlock does not publish sandbox ports")));
    // Hosts only from those the person allowed (airlockd --daytona-allow), as for an MCP session.
    QStringList hosts;
    for (const QString &item : jsonString(body, "networkAllowList").split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        auto normal = policy::normaliseHostPattern(item.trimmed());
        if (!normal || !m_options.networkHosts.contains(*normal, Qt::CaseInsensitive) || !m_options.person)
            return reply(HttpResponse::error(403,
                QStringLiteral("networkAllowList: '%1' is not a host the person allowed (%2)")
                    .arg(item.trimmed().left(253),
                        m_options.networkHosts.isEmpty()
                            ? QStringLiteral("none; they can start airlockd with --daytona-allow HOST")
                            : m_options.networkHosts.join(QStringLiteral(", ")))));
        hosts.append(*normal);
    }
    if (!hosts.isEmpty() && !m_grant.sandboxes.isEmpty())
        return reply(HttpResponse::error(
            403, QStringLiteral("networkAllowList: a key limited to some sandboxes creates them with no network")));
    if (const QString bad = labelsError(body.value(QStringLiteral("labels"))); !bad.isEmpty())
        return reply(HttpResponse::error(400, bad));
    if (const QString bad = envError(body.value(QStringLiteral("env")), QStringLiteral("env")); !bad.isEmpty())
        return reply(HttpResponse::error(400, bad));
    if (m_store.entriesOf(m_grant.tokenId).size() >= kMaxSandboxesPerKey)
        return reply(HttpResponse::error(
            429, QStringLiteral("a key has at most %1 sandboxes: delete one first").arg(kMaxSandboxesPerKey)));
    Entry entry;
    entry.tokenId = m_grant.tokenId;
    entry.labels = body.value(QStringLiteral("labels")).toObject();
    entry.env = body.value(QStringLiteral("env")).toObject();
    CreateSandboxRequest create;
    create.name = jsonString(body, "name");
    for (const char *field : {"cpu", "memory", "disk"}) {
        const QJsonValue v = body.value(QLatin1String(field));
        if (!v.isUndefined() && !v.isNull() && (!v.isDouble() || v.toDouble() < 0 || v.toDouble() > 1e6))
            return reply(
                HttpResponse::error(400, QStringLiteral("%1 must be a number >= 0").arg(QLatin1String(field))));
    }
    entry.cpu = body.value(QStringLiteral("cpu")).toDouble();
    entry.memory = body.value(QStringLiteral("memory")).toDouble();
    entry.disk = body.value(QStringLiteral("disk")).toDouble();
    if (entry.cpu > 0)
        create.limits.cpuMillicores = uint64_t(entry.cpu * 1000);
    if (entry.memory > 0)
        create.limits.memoryBytes = uint64_t(entry.memory * kGiB);
    if (entry.disk > 0)
        create.limits.diskBytes = uint64_t(entry.disk * kGiB);
    entry.autoStop = body.value(QStringLiteral("autoStopInterval")).toInt(0);
    entry.autoArchive = body.value(QStringLiteral("autoArchiveInterval")).toInt(0);
    entry.autoDelete = body.value(QStringLiteral("autoDeleteInterval")).toInt(-1);
    // With hosts, the person's connection creates it (an agent's gets the defaults only).
    DaemonClient *creator = &m_client;
    if (!hosts.isEmpty()) {
        create.allowHosts(hosts);
        entry.networkAllowList = hosts.join(QLatin1Char(','));
        creator = m_options.person;
    }
    DaemonApi(*creator).createSandbox(create).then(
        [this, self = QPointer<DaytonaApi>(this), entry, reply](Result<CreatedSandbox> created) mutable {
            if (!self)
                return;
            if (!created)
                return reply(errorResponse(created.error()));
            entry.id = created->id;
            entry.name = created->name;
            entry.created = entry.updated = QDateTime::currentDateTimeUtc();
            if (Status saved = m_store.put(entry); !saved)
                return reply(errorResponse(saved.error()));
            reply(HttpResponse::json(dto(entry, created->info)));
        });
}

void DaytonaApi::list(const HttpRequest &request, const Reply &reply)
{
    QJsonObject labels;
    if (const QString text = request.queryValue(QStringLiteral("labels")); !text.isEmpty()) {
        const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8());
        if (!doc.isObject())
            return reply(HttpResponse::error(400, QStringLiteral("labels must be a JSON object of strings")));
        labels = doc.object();
    }
    QStringList states;
    for (const QString &v : request.query.allQueryItemValues(QStringLiteral("states"), QUrl::FullyDecoded))
        states += v.split(QLatin1Char(','), Qt::SkipEmptyParts);
    bool ok = true;
    const QString limitText = request.queryValue(QStringLiteral("limit"));
    const int limit = limitText.isEmpty() ? 100 : limitText.toInt(&ok);
    if (!ok || limit < 1 || limit > 1000)
        return reply(HttpResponse::error(400, QStringLiteral("limit is 1 to 1000")));
    const QString cursorText = request.queryValue(QStringLiteral("cursor"));
    const QString pageText = request.queryValue(QStringLiteral("page"));
    const int page = pageText.isEmpty() ? 1 : pageText.toInt(&ok);
    const int from = cursorText.isEmpty() ? (page - 1) * limit : cursorText.toInt(&ok);
    if (!ok || from < 0)
        return reply(HttpResponse::error(400, QStringLiteral("cursor and page are what an earlier answer gave")));
    DaemonApi(m_client).listSandboxes(true).then(
        [this, self = QPointer<DaytonaApi>(this), labels, states, limit, from, reply](Result<QJsonArray> listed) {
            if (!self)
                return;
            if (!listed)
                return reply(errorResponse(listed.error()));
            QHash<QString, QJsonObject> byId;
            for (const QJsonValue &v : *listed)
                byId.insert(v.toObject().value(QStringLiteral("id")).toString(), v.toObject());
            QJsonArray matching;
            for (const Entry &e : m_store.entriesOf(m_grant.tokenId)) {
                if (!byId.contains(e.id)) { // deleted by a person meanwhile
                    forget(e.id);
                    continue;
                }
                bool match = true;
                for (auto it = labels.begin(); it != labels.end() && match; ++it)
                    match = e.labels.value(it.key()) == it.value();
                const QJsonObject d = dto(e, byId.value(e.id));
                if (match && (states.isEmpty() || states.contains(d.value(QStringLiteral("state")).toString())))
                    matching.append(d);
            }
            QJsonArray items;
            for (qsizetype i = from; i < matching.size() && items.size() < limit; ++i)
                items.append(matching.at(i));
            const qsizetype next = from + items.size();
            reply(HttpResponse::json(QJsonObject{{QStringLiteral("items"), items},
                {QStringLiteral("nextCursor"),
                    next < matching.size() ? QJsonValue(QString::number(next)) : QJsonValue(QJsonValue::Null)},
                {QStringLiteral("total"), double(matching.size())}, {QStringLiteral("page"), from / limit + 1},
                {QStringLiteral("totalPages"), double((matching.size() + limit - 1) / limit)}}));
        });
}

void DaytonaApi::describe(const Entry &entry, const Reply &reply, int status)
{
    DaemonApi(m_client).sandboxInfo(entry.id).then(
        [this, self = QPointer<DaytonaApi>(this), entry, reply, status](Result<QJsonObject> info) {
            if (!self)
                return;
            if (!info) {
                if (info.error().code == ErrorCode::NotFound)
                    forget(entry.id);
                return reply(errorResponse(info.error()));
            }
            reply(HttpResponse::json(dto(entry, *info), status));
        });
}

void DaytonaApi::update(Entry entry, const Reply &reply)
{
    entry.updated = QDateTime::currentDateTimeUtc();
    if (Status saved = m_store.put(entry); !saved)
        return reply(errorResponse(saved.error()));
    describe(entry, reply);
}

void DaytonaApi::stop(Entry entry, const Reply &reply)
{
    // What runs in it is ended, as Daytona's stop does; an ephemeral one (auto-delete 0) goes then.
    if (!entry.stopped) // stopped again: its auto-delete still counts from the first stop
        entry.stoppedAt = QDateTime::currentDateTimeUtc();
    entry.stopped = true;
    m_sessions.forget(entry.id);
    for (const QPointer<mcp::ExecCall> &exec : std::as_const(m_execs))
        if (exec && exec->requestedSandbox() == entry.id)
            exec->cancel();
    update(entry, reply);
    if (entry.autoDelete == 0)
        remove(entry, [](const HttpResponse &) {});
}

void DaytonaApi::sweep()
{
    // Daytona's intervals, in minutes: stopped after that long without a request or a command
    // running, deleted that long after being stopped.
    const QDateTime now = QDateTime::currentDateTimeUtc();
    const qint64 nowMs = now.toMSecsSinceEpoch();
    for (const Entry &entry : m_store.entriesOf(m_grant.tokenId)) {
        bool running = false;
        for (const QPointer<mcp::ExecCall> &exec : std::as_const(m_execs))
            running = running || (exec && exec->requestedSandbox() == entry.id);
        const qint64 active = std::max(m_lastActive.value(entry.id), entry.updated.toMSecsSinceEpoch());
        if (!entry.stopped && entry.autoStop > 0 && !running && nowMs - active >= qint64(entry.autoStop) * 60'000)
            stop(entry, [](const HttpResponse &) {});
        else if (entry.stopped && entry.autoDelete >= 0 && entry.stoppedAt.isValid()
            && entry.stoppedAt.msecsTo(now) >= qint64(entry.autoDelete) * 60'000)
            remove(entry, [](const HttpResponse &) {});
    }
}

void DaytonaApi::remove(const Entry &entry, const Reply &reply)
{
    DaemonApi(m_client).deleteSandbox(entry.id).then(
        [this, self = QPointer<DaytonaApi>(this), entry, reply](Result<QJsonObject> deleted) {
            if (!self)
                return;
            if (!deleted && deleted.error().code != ErrorCode::NotFound)
                return reply(errorResponse(deleted.error()));
            forget(entry.id);
            QJsonObject gone = dto(entry, {{QStringLiteral("state"), QStringLiteral("destroyed")}});
            reply(HttpResponse::json(gone));
        });
}

QJsonObject DaytonaApi::dto(const Entry &entry, const QJsonObject &sandbox) const
{
    const QString state = daytonaState(sandbox.value(QStringLiteral("state")).toString(), entry.stopped);
    const QJsonValue failure = sandbox.value(QStringLiteral("failure"));
    return {{QStringLiteral("id"), entry.id}, {QStringLiteral("name"), entry.name},
        {QStringLiteral("organizationId"), QStringLiteral("airlock")},
        {QStringLiteral("user"), QStringLiteral("sandbox")}, {QStringLiteral("snapshot"), QJsonValue::Null},
        {QStringLiteral("env"), entry.env}, {QStringLiteral("labels"), entry.labels}, {QStringLiteral("public"), false},
        {QStringLiteral("networkBlockAll"), entry.networkAllowList.isEmpty()},
        {QStringLiteral("networkAllowList"), entry.networkAllowList},
        {QStringLiteral("target"), QStringLiteral("local")}, {QStringLiteral("cpu"), entry.cpu},
        {QStringLiteral("gpu"), 0}, {QStringLiteral("memory"), entry.memory}, {QStringLiteral("disk"), entry.disk},
        {QStringLiteral("state"), state},
        {QStringLiteral("desiredState"),
            state == QLatin1String("destroyed") ? state
                : entry.stopped                 ? QStringLiteral("stopped")
                                                : QStringLiteral("started")},
        {QStringLiteral("errorReason"), failure.isString() ? failure : QJsonValue(QJsonValue::Null)},
        {QStringLiteral("backupState"), QStringLiteral("None")}, {QStringLiteral("autoStopInterval"), entry.autoStop},
        {QStringLiteral("autoArchiveInterval"), entry.autoArchive},
        {QStringLiteral("autoDeleteInterval"), entry.autoDelete}, {QStringLiteral("volumes"), QJsonArray()},
        {QStringLiteral("createdAt"), entry.created.toString(Qt::ISODateWithMs)},
        {QStringLiteral("updatedAt"), entry.updated.toString(Qt::ISODateWithMs)},
        {QStringLiteral("class"), QStringLiteral("small")}, {QStringLiteral("toolboxProxyUrl"), m_options.toolboxUrl}};
}

DaytonaApi::Cancel DaytonaApi::launch(const Entry &entry, const QStringList &argv, const QString &cwd,
    const QJsonObject &env, qint64 timeoutMs, mcp::CallHooks hooks, qint64 maxOutput)
{
    QJsonObject json{{QStringLiteral("argv"), QJsonArray::fromStringList(argv)}, {QStringLiteral("cwd"), cwd},
        {QStringLiteral("env"), env}};
    if (timeoutMs > 0)
        json.insert(QStringLiteral("timeoutMs"), double(timeoutMs));
    // Should the key's connection end (revoked, the daemon stopping), so does what it started.
    json.insert(QStringLiteral("leaseMs"), double(kLeaseMs));
    auto exec = ExecRequest::fromJson(json);
    if (!exec) {
        hooks.done(mcp::ToolResult::failure(exec.error().message, exec.error().code));
        return {};
    }
    watch(entry.id);
    auto made = std::make_shared<QPointer<mcp::ExecCall>>();
    hooks.done = [made, done = std::move(hooks.done)](const mcp::ToolResult &result) {
        if (*made)
            (*made)->deleteLater();
        done(result);
    };
    auto *call = new mcp::ExecCall(m_client, {entry.id, *exec, {}, maxOutput, entry.name}, hooks, this);
    *made = call;
    m_execs.removeAll(nullptr);
    m_execs.append(call);
    call->start();
    return [call = QPointer<mcp::ExecCall>(call)] {
        if (call)
            call->cancel();
    };
}

DaytonaApi::Cancel DaytonaApi::run(
    const Entry &entry, const QStringList &argv, const QString &cwd, const QJsonObject &env, qint64 timeoutMs, Ran done)
{
    mcp::CallHooks hooks;
    hooks.done = [done = std::move(done)](const mcp::ToolResult &result) { done(CommandOutcome::of(result)); };
    return launch(entry, argv, cwd, env, timeoutMs, std::move(hooks), kMaxOutput);
}

void DaytonaApi::watch(const QString &sandbox)
{
    // Its events, approvals among them: a command whose client leaves while it waits for a person
    // takes its question back.
    if (!m_watched.contains(sandbox)) {
        m_watched.insert(sandbox);
        DaemonApi(m_client).subscribe(sandbox).send();
    }
}

void DaytonaApi::forget(const QString &sandbox)
{
    (void)m_store.remove(sandbox);
    m_sessions.forget(sandbox);
    m_watched.remove(sandbox);
    m_lastActive.remove(sandbox);
}

void DaytonaApi::onEvent(const Event &event)
{
    if (event.kind == event::SandboxDeleted && m_watched.contains(event.sandbox)) {
        forget(event.sandbox); // deleted by the person (or its daemon)
    }
    const auto execs = m_execs; // a call that finishes may be deleted later, never during this
    if (event.kind == event::ApprovalRequested || event.kind == event::ApprovalDecided) {
        mcp::ExecCall::routeApproval(event, execs, m_client.options().run, m_client.options().agent);
        return;
    }
    for (const QPointer<mcp::ExecCall> &exec : execs)
        if (exec)
            exec->onEvent(event);
}

} // namespace airlock::daytona
