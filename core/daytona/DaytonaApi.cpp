// SPDX-License-Identifier: Apache-2.0
#include "daytona/DaytonaApi.h"

#include "client/DaemonApi.h"
#include "daytona/Multipart.h"
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

namespace {
constexpr qint64 kChunk = 1024 * 1024; // what fs.write and fs.read move in one request
constexpr qint64 kMaxOutput = 4 * 1024 * 1024; // of each stream of one command executeCommand answers with
constexpr qint64 kMaxDownload = 1024LL * 1024 * 1024; // of one bulk download, all files together
constexpr int kMaxFiles = 1000; // in one bulk upload or download
constexpr qint64 kFileCommandMs = 120'000;
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr qint64 kLeaseMs = 5000;
constexpr int kSweepMs = 30'000; // how often the auto-stop and auto-delete intervals are looked at
constexpr int kMaxLabels = 64, kMaxLabelKey = 128, kMaxLabelValue = 1024;
constexpr int kMaxEnv = 256, kMaxEnvValue = 32 * 1024;
constexpr qsizetype kMaxSandboxesPerKey = 256;

HttpResponse unsupported(const QString &what)
{
    return HttpResponse::error(501, what);
}

QString jsonString(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

// A path for a command run in the sandbox: relative ones are taken from /workspace.
QString sandboxPath(const QString &path)
{
    return path.startsWith(QLatin1Char('/')) ? path : QStringLiteral("/workspace/") + path;
}

Result<QJsonObject> jsonBody(const HttpRequest &request)
{
    if (request.body.trimmed().isEmpty())
        return QJsonObject{};
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(request.body, &error);
    if (!doc.isObject())
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("the body must be a JSON object (%1)").arg(error.errorString()));
    return doc.object();
}

// An object of at most `count` strings, names and values within their lengths (labels, env), or
// why not.
QString stringsError(const QJsonValue &value, const QString &field, int count, int keyLength, int valueLength)
{
    if (value.isUndefined() || value.isNull())
        return {};
    if (!value.isObject())
        return QStringLiteral("%1 must be an object of strings").arg(field);
    const QJsonObject o = value.toObject();
    if (o.size() > count)
        return QStringLiteral("%1: at most %2 of them").arg(field).arg(count);
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (!it.value().isString())
            return QStringLiteral("%1.%2 must be a string").arg(field, it.key().left(100));
        if (it.key().isEmpty() || it.key().size() > keyLength || it.value().toString().size() > valueLength)
            return QStringLiteral("%1.%2: names of 1 to %3 characters, values of at most %4")
                .arg(field, it.key().left(100))
                .arg(keyLength)
                .arg(valueLength);
    }
    return {};
}
QString labelsError(const QJsonValue &value)
{
    return stringsError(value, QStringLiteral("labels"), kMaxLabels, kMaxLabelKey, kMaxLabelValue);
}
QString envError(const QJsonValue &value, const QString &field)
{
    return stringsError(value, field, kMaxEnv, 256, kMaxEnvValue);
}

QString symbolicMode(int mode, bool dir)
{
    QString out = dir ? QStringLiteral("d") : QStringLiteral("-");
    const char *letters = "rwx";
    for (int bit = 8; bit >= 0; --bit)
        out += (mode & (1 << bit)) ? QLatin1Char(letters[(8 - bit) % 3]) : QLatin1Char('-');
    return out;
}

QJsonObject fileInfo(const QString &name, bool dir, qint64 size, int mode)
{
    return {{QStringLiteral("name"), name}, {QStringLiteral("isDir"), dir}, {QStringLiteral("size"), double(size)},
        {QStringLiteral("mode"), symbolicMode(mode, dir)},
        {QStringLiteral("permissions"), QStringLiteral("0%1").arg(mode & 07777, 3, 8, QLatin1Char('0'))},
        {QStringLiteral("owner"), QStringLiteral("sandbox")}, {QStringLiteral("group"), QStringLiteral("sandbox")},
        {QStringLiteral("modTime"), QString()}};
}

QString daytonaState(const QString &airlockState, bool stopped)
{
    if (airlockState == QLatin1String("running"))
        return stopped ? QStringLiteral("stopped") : QStringLiteral("started");
    if (airlockState == QLatin1String("failed"))
        return QStringLiteral("error");
    return airlockState; // starting, stopped
}
} // namespace

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
    , m_tokenId(m_grant.tokenId)
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
    if (m_store.entriesOf(m_tokenId).size() >= kMaxSandboxesPerKey)
        return reply(HttpResponse::error(
            429, QStringLiteral("a key has at most %1 sandboxes: delete one first").arg(kMaxSandboxesPerKey)));
    Entry entry;
    entry.tokenId = m_tokenId;
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
        entry.networkBlockAll = false;
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
            for (const Entry &e : m_store.entriesOf(m_tokenId)) {
                if (!byId.contains(e.id)) { // deleted by a person meanwhile
                    (void)m_store.remove(e.id);
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
                    (void)m_store.remove(entry.id);
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
    entry.stopped = true;
    entry.stoppedAt = QDateTime::currentDateTimeUtc();
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
    for (const Entry &entry : m_store.entriesOf(m_tokenId)) {
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
            (void)m_store.remove(entry.id);
            m_sessions.forget(entry.id);
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
        {QStringLiteral("networkBlockAll"), entry.networkBlockAll},
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

DaytonaApi::Cancel DaytonaApi::toolbox(
    const Entry &entry, const HttpRequest &request, const Reply &reply, const std::optional<HttpStream> &stream)
{
    const QStringList s = request.segments.mid(2);
    const QByteArray &method = request.method;
    const QString area = s.value(0), what = s.value(1);
    const QString path = request.queryValue(QStringLiteral("path"));
    if (area == QLatin1String("process") && what == QLatin1String("execute") && method == "POST")
        return execute(entry, request, reply);
    if (area == QLatin1String("process") && what == QLatin1String("session"))
        return m_sessions.handle(entry, s.mid(2), request, reply, stream);
    if (stream)
        return reply(HttpResponse::error(400, QStringLiteral("only a session command's logs are followed"))), Cancel{};
    if (area == QLatin1String("files")) {
        if (s.size() == 1 && method == "GET")
            return listFiles(entry, path, false, reply), Cancel{};
        if (s.size() == 1 && method == "DELETE") {
            const bool recursive = request.queryValue(QStringLiteral("recursive")) == QLatin1String("true");
            return fileCommand(entry,
                recursive
                    ? QStringList{QStringLiteral("rm"), QStringLiteral("-r"), QStringLiteral("--"), sandboxPath(path)}
                    : QStringList{QStringLiteral("rm"), QStringLiteral("-d"), QStringLiteral("--"), sandboxPath(path)},
                reply);
        }
        if (what == QLatin1String("info") && method == "GET")
            return listFiles(entry, path, true, reply), Cancel{};
        if (what == QLatin1String("folder") && method == "POST") {
            bool ok = false;
            const QString modeText = request.queryValue(QStringLiteral("mode"));
            const int mode = modeText.isEmpty() ? 0755 : modeText.toInt(&ok, 8);
            if (!modeText.isEmpty() && (!ok || mode < 0 || mode > 07777))
                return reply(HttpResponse::error(400, QStringLiteral("mode is octal, like 755"))), Cancel{};
            return makeFolder(entry, path, mode, reply), Cancel{};
        }
        if ((what == QLatin1String("bulk-upload") || what == QLatin1String("upload")) && method == "POST")
            return upload(entry, request, reply), Cancel{};
        if ((what == QLatin1String("bulk-download") && method == "POST")
            || (what == QLatin1String("download") && method == "GET"))
            return download(entry, request, reply), Cancel{};
        if (what == QLatin1String("move") && method == "POST")
            return fileCommand(entry,
                {QStringLiteral("mv"), QStringLiteral("--"), sandboxPath(request.queryValue(QStringLiteral("source"))),
                    sandboxPath(request.queryValue(QStringLiteral("destination")))},
                reply);
        if (what == QLatin1String("permissions") && method == "POST") {
            const QString mode = request.queryValue(QStringLiteral("mode"));
            const QString owner = request.queryValue(QStringLiteral("owner"));
            const QString group = request.queryValue(QStringLiteral("group"));
            if (!owner.isEmpty() || !group.isEmpty())
                return reply(
                           unsupported(QStringLiteral("a sandbox's files all belong to its one user: only the mode can "
                                                      "be set"))),
                       Cancel{};
            static const QRegularExpression octal(QStringLiteral("^[0-7]{3,4}$"));
            if (!octal.match(mode).hasMatch())
                return reply(HttpResponse::error(400, QStringLiteral("mode is octal, like 644"))), Cancel{};
            return fileCommand(entry, {QStringLiteral("chmod"), mode, QStringLiteral("--"), sandboxPath(path)}, reply);
        }
        if (what == QLatin1String("find") && method == "GET") {
            const QString pattern = request.queryValue(QStringLiteral("pattern"));
            return fileCommand(entry,
                {QStringLiteral("grep"), QStringLiteral("-rnI"), QStringLiteral("--"), pattern, sandboxPath(path)},
                reply, [](const CommandOutcome &o) {
                    QJsonArray matches;
                    for (const QString &line : o.stdoutText.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
                        const QStringList parts = line.split(QLatin1Char(':'));
                        if (parts.size() >= 3)
                            matches.append(QJsonObject{{QStringLiteral("file"), parts.at(0)},
                                {QStringLiteral("line"), parts.at(1).toInt()},
                                {QStringLiteral("content"), parts.mid(2).join(QLatin1Char(':'))}});
                    }
                    return HttpResponse::json(matches);
                });
        }
        if (what == QLatin1String("search") && method == "GET") {
            const QString pattern = request.queryValue(QStringLiteral("pattern"));
            return fileCommand(entry, {QStringLiteral("find"), sandboxPath(path), QStringLiteral("-name"), pattern},
                reply, [](const CommandOutcome &o) {
                    return HttpResponse::json(QJsonObject{{QStringLiteral("files"),
                        QJsonArray::fromStringList(o.stdoutText.split(QLatin1Char('\n'), Qt::SkipEmptyParts))}});
                });
        }
    }
    if (area == QLatin1String("info") && method == "GET") {
        if (what == QLatin1String("user-home-dir"))
            return reply(HttpResponse::json(QJsonObject{{QStringLiteral("dir"), QStringLiteral("/home/sandbox")}})),
                   Cancel{};
        if (what == QLatin1String("work-dir") || what == QLatin1String("project-dir"))
            return reply(HttpResponse::json(QJsonObject{{QStringLiteral("dir"), QStringLiteral("/workspace")}})),
                   Cancel{};
    }
    reply(unsupported(QStringLiteral("Airlock's Daytona API does not serve %1 /toolbox/ID/%2 (see README: which SDK "
                                     "calls work)")
                          .arg(QString::fromLatin1(method), s.join(QLatin1Char('/')).left(200))));
    return {};
}

DaytonaApi::Cancel DaytonaApi::execute(const Entry &entry, const HttpRequest &request, const Reply &reply)
{
    auto parsed = jsonBody(request);
    if (!parsed)
        return reply(errorResponse(parsed.error())), Cancel{};
    const QJsonObject body = *parsed;
    const QString command = jsonString(body, "command");
    if (command.trimmed().isEmpty())
        return reply(HttpResponse::error(400, QStringLiteral("command is required"))), Cancel{};
    if (const QString bad = envError(body.value(QStringLiteral("envs")), QStringLiteral("envs")); !bad.isEmpty())
        return reply(HttpResponse::error(400, bad)), Cancel{};
    QJsonObject env = entry.env;
    const QJsonObject envs = body.value(QStringLiteral("envs")).toObject();
    for (auto it = envs.begin(); it != envs.end(); ++it)
        env.insert(it.key(), it.value());
    const QString cwd = jsonString(body, "cwd");
    const double timeout = body.value(QStringLiteral("timeout")).toDouble(0);
    return run(entry, {QStringLiteral("/bin/sh"), QStringLiteral("-c"), command},
        cwd.isEmpty() ? QStringLiteral("/workspace") : sandboxPath(cwd), env, timeout > 0 ? qint64(timeout * 1000) : 0,
        [reply, timeout](Result<CommandOutcome> ran) {
            if (!ran)
                return reply(errorResponse(ran.error()));
            if (ran->exitCode == -124)
                return reply(HttpResponse::error(
                    408, QStringLiteral("the command ran past its timeout of %1 s and was killed").arg(timeout)));
            reply(HttpResponse::json(QJsonObject{{QStringLiteral("exitCode"), ran->exitCode},
                {QStringLiteral("result"), QString(ran->stdoutText + ran->stderrText)}}));
        });
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

DaytonaApi::Cancel DaytonaApi::fileCommand(const Entry &entry, const QStringList &argv, const Reply &reply,
    std::function<HttpResponse(const CommandOutcome &)> answer)
{
    for (qsizetype i = 1; i < argv.size(); ++i)
        if (argv.at(i).isEmpty() || argv.at(i) == QLatin1String("/workspace/"))
            return reply(HttpResponse::error(400, QStringLiteral("a path is needed"))), Cancel{};
    return run(entry, argv, QStringLiteral("/workspace"), {}, kFileCommandMs,
        [reply, answer, argv](Result<CommandOutcome> ran) {
            if (!ran)
                return reply(errorResponse(ran.error()));
            // grep says "no match" with 1: an empty answer, not a failure.
            if (ran->exitCode != 0 && !(argv.first() == QLatin1String("grep") && ran->exitCode == 1)) {
                const QString said = ran->stderrText.trimmed().left(2000);
                const int status = said.contains(QLatin1String("No such file")) ? 404 : 400;
                return reply(HttpResponse::error(status,
                    said.isEmpty() ? QStringLiteral("%1 failed with exit code %2").arg(argv.first()).arg(ran->exitCode)
                                   : said));
            }
            reply(answer ? answer(*ran) : HttpResponse::json(QJsonObject{}));
        });
}

void DaytonaApi::makeParents(const QString &sandbox, const QString &path, std::function<void(Status)> done)
{
    QStringList parts = path.mid(QStringLiteral("/workspace/").size()).split(QLatin1Char('/'), Qt::SkipEmptyParts);
    if (!parts.isEmpty())
        parts.removeLast();
    auto folders = std::make_shared<QStringList>();
    QString at = QStringLiteral("/workspace");
    for (const QString &p : parts)
        folders->append(at += QLatin1Char('/') + p);
    auto step = std::make_shared<std::function<void()>>();
    // Each step holds itself only through the answer it waits for: the chain ends with it.
    *step = [this, self = QPointer<DaytonaApi>(this), sandbox, folders, done, weak = std::weak_ptr(step)] {
        if (!self)
            return;
        if (folders->isEmpty())
            return done(Ok{});
        const QString next = folders->takeFirst();
        DaemonApi(m_client)
            .makeDirectory(sandbox, next, 0755)
            .then([step = weak.lock(), done](Result<QJsonObject> made) {
                if (!made)
                    return done(made.error());
                (*step)();
            });
    };
    (*step)();
}

void DaytonaApi::makeFolder(const Entry &entry, const QString &path, int mode, const Reply &reply)
{
    auto target = workspacePath(path);
    if (!target)
        return reply(errorResponse(target.error()));
    if (*target == QLatin1String("/workspace"))
        return reply(HttpResponse::json(QJsonObject{}));
    makeParents(entry.id, *target,
        [this, self = QPointer<DaytonaApi>(this), id = entry.id, target = *target, mode, reply](Status parents) {
            if (!self)
                return;
            if (!parents)
                return reply(errorResponse(parents.error()));
            DaemonApi(m_client).makeDirectory(id, target, mode).then([reply](Result<QJsonObject> made) {
                reply(made ? HttpResponse::json(QJsonObject{}) : errorResponse(made.error()));
            });
        });
}

void DaytonaApi::listFiles(const Entry &entry, const QString &path, bool infoOnly, const Reply &reply)
{
    auto target = workspacePath(path.isEmpty() ? QStringLiteral("/workspace") : path);
    if (!target)
        return reply(errorResponse(target.error()));
    const QString name = target->section(QLatin1Char('/'), -1);
    DaemonApi(m_client).listDirectory(entry.id, *target).then([reply, infoOnly, name](Result<QJsonObject> listed) {
        if (!listed)
            return reply(errorResponse(listed.error()));
        const QJsonArray entries = listed->value(QStringLiteral("entries")).toArray();
        const QJsonObject first = entries.first().toObject();
        const bool isFile = entries.size() == 1 && first.value(QStringLiteral("path")).toString().isEmpty();
        if (infoOnly)
            return reply(HttpResponse::json(isFile
                    ? fileInfo(name, false, qint64(first.value(QStringLiteral("size")).toDouble()),
                        first.value(QStringLiteral("mode")).toInt())
                    : fileInfo(name, true, 0, 0755)));
        QJsonArray out;
        for (const QJsonValue &v : entries) {
            const QJsonObject e = v.toObject();
            const QString p = e.value(QStringLiteral("path")).toString();
            if (p.contains(QLatin1Char('/')))
                continue; // deeper down: Daytona lists one folder
            out.append(fileInfo(p.isEmpty() ? name : p,
                e.value(QStringLiteral("type")).toString() == QLatin1String("directory"),
                qint64(e.value(QStringLiteral("size")).toDouble()), e.value(QStringLiteral("mode")).toInt()));
        }
        reply(HttpResponse::json(out));
    });
}

void DaytonaApi::upload(const Entry &entry, const HttpRequest &request, const Reply &reply)
{
    auto boundary = multipartBoundary(request.header("content-type"));
    if (!boundary)
        return reply(errorResponse(boundary.error()));
    auto parts = parseMultipart(request.body, *boundary, 2 * kMaxFiles + 1);
    if (!parts)
        return reply(errorResponse(parts.error()));
    // files[i].path names where files[i].file goes; a single upload (files/upload?path=) has one "file".
    QMap<int, QPair<QString, QByteArray>> byIndex;
    QHash<int, bool> hasData;
    static const QRegularExpression field(QStringLiteral("^files\\[(\\d{1,4})\\]\\.(path|file)$"));
    for (const FormPart &p : *parts) {
        if (p.name == QLatin1String("file") && !request.queryValue(QStringLiteral("path")).isEmpty()) {
            byIndex[0] = {request.queryValue(QStringLiteral("path")), p.data};
            hasData[0] = true;
            continue;
        }
        const auto m = field.match(p.name);
        if (!m.hasMatch())
            return reply(HttpResponse::error(400, QStringLiteral("unexpected form field '%1'").arg(p.name.left(100))));
        const int i = m.captured(1).toInt();
        if (m.captured(2) == QLatin1String("path"))
            byIndex[i].first = QString::fromUtf8(p.data);
        else {
            byIndex[i].second = p.data;
            hasData[i] = true;
        }
    }
    auto files = std::make_shared<QList<QPair<QString, QByteArray>>>();
    for (auto it = byIndex.begin(); it != byIndex.end(); ++it) {
        auto target = workspacePath(it->first);
        if (!target)
            return reply(errorResponse(target.error()));
        if (!hasData.value(it.key()))
            return reply(HttpResponse::error(400, QStringLiteral("files[%1] has a path and no file").arg(it.key())));
        files->append({*target, it->second});
    }
    if (files->isEmpty())
        return reply(HttpResponse::error(400, QStringLiteral("no files in the upload")));
    const QString id = entry.id;
    auto offset = std::make_shared<qint64>(0);
    auto step = std::make_shared<std::function<void()>>();
    const auto finish = reply;
    *step = [this, self = QPointer<DaytonaApi>(this), id, files, offset, weak = std::weak_ptr(step), finish] {
        if (!self)
            return;
        if (files->isEmpty())
            return finish(HttpResponse::json(QJsonObject{}));
        const QString path = files->first().first;
        const auto write = [this, id, files, offset, step = weak.lock(), finish] {
            const auto &[path, data] = files->first();
            const QByteArray chunk = data.mid(*offset, kChunk);
            DaemonApi(m_client)
                .writeFile(id, path, chunk, *offset, 0644)
                .then([files, offset, step, finish, size = chunk.size()](Result<QJsonObject> written) {
                    if (!written)
                        return finish(errorResponse(written.error()));
                    *offset += size;
                    if (*offset >= files->first().second.size()) {
                        files->removeFirst();
                        *offset = 0;
                    }
                    (*step)();
                });
        };
        if (*offset > 0)
            return write();
        makeParents(id, path, [write, finish](Status parents) {
            if (!parents)
                return finish(errorResponse(parents.error()));
            write();
        });
    };
    (*step)();
}

void DaytonaApi::download(const Entry &entry, const HttpRequest &request, const Reply &reply)
{
    QStringList paths;
    const bool single = request.method == "GET";
    if (single) {
        paths.append(request.queryValue(QStringLiteral("path")));
    } else {
        auto body = jsonBody(request);
        if (!body)
            return reply(errorResponse(body.error()));
        for (const QJsonValue &v : body->value(QStringLiteral("paths")).toArray())
            paths.append(v.toString());
    }
    if (paths.isEmpty() || paths.size() > kMaxFiles)
        return reply(HttpResponse::error(400, QStringLiteral("paths: 1 to %1 of them").arg(kMaxFiles)));
    struct Job {
        QStringList paths;
        QList<FormPart> parts;
        QByteArray data;
        qint64 total = 0;
    };
    auto job = std::make_shared<Job>();
    job->paths = paths;
    auto step = std::make_shared<std::function<void()>>();
    const QString id = entry.id;
    *step = [this, self = QPointer<DaytonaApi>(this), id, job, weak = std::weak_ptr(step), reply, single] {
        if (!self)
            return;
        const auto step = weak.lock();
        if (job->parts.size() == job->paths.size()) {
            if (single) {
                const FormPart &only = job->parts.first();
                if (only.name == QLatin1String("error"))
                    return reply(
                        {QJsonDocument::fromJson(only.data).object().value(QStringLiteral("statusCode")).toInt(500),
                            "application/json", only.data});
                return reply({200, "application/octet-stream", only.data});
            }
            const QByteArray boundary = freshBoundary(job->parts);
            return reply({200, "multipart/form-data; boundary=" + boundary, writeMultipart(job->parts, boundary)});
        }
        const QString asked = job->paths.at(job->parts.size());
        const auto failed = [job, step, asked](const Error &error) {
            job->data.clear();
            job->parts.append({QStringLiteral("error"), asked,
                QJsonDocument(QJsonObject{{QStringLiteral("message"), error.message},
                                  {QStringLiteral("statusCode"), httpStatusOf(error.code)},
                                  {QStringLiteral("code"), errorCodeName(error.code).toUpper()}})
                    .toJson(QJsonDocument::Compact),
                "application/json"});
            (*step)();
        };
        auto target = workspacePath(asked);
        if (!target)
            return failed(target.error());
        DaemonApi(m_client)
            .readFile(id, *target, job->data.size(), kChunk)
            .then([job, step, asked, failed](Result<QJsonObject> read) {
                if (!read)
                    return failed(read.error());
                const QByteArray chunk
                    = QByteArray::fromBase64(read->value(QStringLiteral("data")).toString().toLatin1());
                job->total += chunk.size();
                if (job->total > kMaxDownload)
                    return failed(makeError(ErrorCode::InvalidArgument,
                        QStringLiteral("more than %1 bytes asked for in one download: ask for fewer files at once")
                            .arg(kMaxDownload)));
                job->data += chunk;
                if (read->value(QStringLiteral("eof")).toBool() || chunk.isEmpty())
                    job->parts.append({QStringLiteral("file"), asked, std::exchange(job->data, {}), {}});
                (*step)();
            });
    };
    (*step)();
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

void DaytonaApi::onEvent(const Event &event)
{
    if (event.kind == event::SandboxDeleted && m_watched.contains(event.sandbox)) {
        // Deleted by the person (or its daemon): its sessions and its record go with it.
        m_sessions.forget(event.sandbox);
        m_watched.remove(event.sandbox);
        if (find(event.sandbox))
            (void)m_store.remove(event.sandbox);
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
