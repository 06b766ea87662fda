// SPDX-License-Identifier: Apache-2.0
#include "daytona/DaytonaSessions.h"

#include "daytona/DaytonaApi.h"
#include "daytona/DaytonaInternal.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QUuid>

namespace airlock::daytona {

namespace {
constexpr qsizetype kMaxKept = 1024 * 1024; // of one command's output, kept for its logs (the first)
constexpr qsizetype kKeyBudget = 64 * 1024 * 1024; // kept for all the commands of one key
constexpr qsizetype kMaxSessions = 64; // of one sandbox
constexpr qsizetype kMaxCommands = 200; // kept per session; the oldest finished ones go first
const QByteArray kStdoutMarker("\x01\x01\x01", 3);
const QByteArray kStderrMarker("\x02\x02\x02", 3);
} // namespace

struct DaytonaSessions::Command {
    struct Chunk {
        int stream;
        QByteArray bytes;
    };
    QString id, command;
    std::optional<int> exitCode;
    QList<Chunk> chunks; // what is kept of its output, in order
    qsizetype kept = 0;
    // How much more of its output may be kept now (the key's budget; null once it is not counted).
    std::function<qsizetype(qsizetype)> reserve;
    Cancel cancel;
    QList<std::shared_ptr<HttpStream>> followers;

    void add(int stream, QByteArrayView bytes)
    {
        if (!followers.isEmpty()) {
            const QByteArray chunk = (stream == 2 ? kStderrMarker : kStdoutMarker) + bytes.toByteArray();
            const auto following = followers; // one that fails leaves the list
            for (const auto &f : following)
                f->write(chunk);
        }
        if (kept >= kMaxKept || !reserve)
            return;
        const qsizetype room = reserve(std::min(kMaxKept - kept, bytes.size()));
        if (room <= 0)
            return;
        if (!chunks.isEmpty() && chunks.last().stream == stream)
            chunks.last().bytes += bytes.first(room);
        else
            chunks.append({stream, bytes.first(room).toByteArray()});
        kept += room;
    }
    // Its kept output: one stream (1, 2), both in order (0), or both after their markers (-1).
    QByteArray output(int which) const
    {
        QByteArray out;
        for (const Chunk &c : chunks) {
            if (which == -1)
                out += c.stream == 2 ? kStderrMarker : kStdoutMarker;
            if (which <= 0 || c.stream == which)
                out += c.bytes;
        }
        return out;
    }
    qsizetype release() // forgets its output; how much that was
    {
        chunks.clear();
        return std::exchange(kept, 0);
    }
    void finish(int code)
    {
        exitCode = code;
        cancel = {};
        for (const auto &f : std::exchange(followers, {}))
            f->end();
    }
    QJsonObject toJson() const
    {
        QJsonObject o{{QStringLiteral("id"), id}, {QStringLiteral("command"), command}};
        if (exitCode)
            o.insert(QStringLiteral("exitCode"), *exitCode);
        return o;
    }
};

Result<CommandOutcome> CommandOutcome::of(const mcp::ToolResult &result)
{
    if (result.isError)
        return makeError(result.code, result.text);
    const QJsonObject &r = result.structured;
    CommandOutcome o;
    o.stdoutText = r.value(QStringLiteral("stdout")).toString();
    o.stderrText = r.value(QStringLiteral("stderr")).toString();
    if (r.value(QStringLiteral("status")).toString() == QLatin1String("timed_out"))
        o.exitCode = -124;
    else if (r.contains(QStringLiteral("exit_code")))
        o.exitCode = r.value(QStringLiteral("exit_code")).toInt();
    else
        o.exitCode = 128 + r.value(QStringLiteral("signal")).toInt();
    return o;
}

DaytonaSessions::~DaytonaSessions()
{
    for (auto &sandbox : m_sessions)
        for (Session &session : sandbox)
            end(session);
}

void DaytonaSessions::end(Session &session)
{
    for (const auto &c : std::as_const(session.commands)) {
        c->reserve = nullptr;
        m_kept -= c->release();
        if (auto cancel = std::exchange(c->cancel, {}))
            cancel();
        for (const auto &f : std::exchange(c->followers, {}))
            f->end();
    }
}

qsizetype DaytonaSessions::reserve(qsizetype wanted)
{
    // Room is made by forgetting the output of the oldest finished commands of this key (those
    // started first); commands gone or forgotten leave the list on the way.
    for (auto it = m_commands.begin(); m_kept + wanted > kKeyBudget && it != m_commands.end();) {
        const auto c = it->lock();
        if (c && !c->exitCode) {
            ++it;
            continue;
        }
        if (c)
            m_kept -= c->release();
        it = m_commands.erase(it);
    }
    const qsizetype granted = std::clamp<qsizetype>(kKeyBudget - m_kept, 0, wanted);
    m_kept += granted;
    return granted;
}

void DaytonaSessions::forget(const QString &sandbox)
{
    auto sessions = m_sessions.take(sandbox);
    for (Session &session : sessions)
        end(session);
}

void DaytonaSessions::forgetAll()
{
    const QStringList sandboxes = m_sessions.keys();
    for (const QString &sandbox : sandboxes)
        forget(sandbox);
}

QJsonObject DaytonaSessions::describe(const Session &session)
{
    QJsonArray commands;
    for (const auto &c : session.commands)
        commands.append(c->toJson());
    return {{QStringLiteral("sessionId"), session.id}, {QStringLiteral("commands"), commands}};
}

DaytonaSessions::Cancel DaytonaSessions::handle(const DaytonaStore::Entry &entry, const QStringList &s,
    const HttpRequest &request, const Reply &reply, const std::optional<HttpStream> &stream)
{
    auto &sessions = m_sessions[entry.id];
    const QByteArray &method = request.method;
    if (s.isEmpty()) {
        if (method == "GET") {
            QJsonArray all;
            for (const Session &session : std::as_const(sessions))
                all.append(describe(session));
            return reply(HttpResponse::json(all)), Cancel{};
        }
        if (method != "POST")
            return reply(HttpResponse::error(405, QStringLiteral("/process/session takes GET and POST"))), Cancel{};
        const auto body = internal::jsonBody(request);
        if (!body)
            return reply(errorResponse(body.error())), Cancel{};
        const QString id = body->value(QStringLiteral("sessionId")).toString();
        static const QRegularExpression valid(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"));
        if (!valid.match(id).hasMatch())
            return reply(HttpResponse::error(400, QStringLiteral("sessionId is 1 to 128 of A-Z a-z 0-9 . _ -"))),
                   Cancel{};
        if (sessions.contains(id))
            return reply(HttpResponse::error(409, QStringLiteral("session '%1' exists").arg(id))), Cancel{};
        if (sessions.size() >= kMaxSessions)
            return reply(HttpResponse::error(
                       429, QStringLiteral("a sandbox keeps at most %1 sessions: delete one first").arg(kMaxSessions))),
                   Cancel{};
        sessions.insert(id, Session{id, {}});
        return reply(HttpResponse::json(QJsonObject{})), Cancel{};
    }
    auto it = sessions.find(s.first());
    if (it == sessions.end())
        return reply(HttpResponse::error(
                   404, QStringLiteral("no session '%1' in this sandbox").arg(s.first().left(100)))),
               Cancel{};
    Session &session = *it;
    if (s.size() == 1) {
        if (method == "GET")
            return reply(HttpResponse::json(describe(session))), Cancel{};
        if (method == "DELETE") {
            end(session);
            sessions.erase(it);
            return reply(HttpResponse::json(QJsonObject{})), Cancel{};
        }
        return reply(HttpResponse::error(405, QStringLiteral("/process/session/ID takes GET and DELETE"))), Cancel{};
    }
    if (s.at(1) == QLatin1String("exec") && s.size() == 2 && method == "POST") {
        Cancel cancel;
        execute(entry, session, request, reply, &cancel);
        return cancel;
    }
    if (s.at(1) != QLatin1String("command") || s.size() < 3)
        return reply(HttpResponse::error(404, QStringLiteral("no such session request"))), Cancel{};
    std::shared_ptr<Command> command;
    for (const auto &c : std::as_const(session.commands))
        if (c->id == s.at(2))
            command = c;
    if (!command)
        return reply(HttpResponse::error(
                   404, QStringLiteral("no command '%1' in session '%2'").arg(s.at(2).left(100), session.id))),
               Cancel{};
    if (s.size() == 3 && method == "GET")
        return reply(HttpResponse::json(command->toJson())), Cancel{};
    if (s.size() == 4 && s.at(3) == QLatin1String("logs") && method == "GET") {
        if (!stream)
            return reply(
                       HttpResponse::json(QJsonObject{{QStringLiteral("output"), QString::fromUtf8(command->output(0))},
                           {QStringLiteral("stdout"), QString::fromUtf8(command->output(1))},
                           {QStringLiteral("stderr"), QString::fromUtf8(command->output(2))}})),
                   Cancel{};
        // Followed: what was said so far, then as it comes, closed when the command ends.
        auto follower = std::make_shared<HttpStream>(*stream);
        follower->open();
        if (command->kept > 0)
            follower->write(command->output(-1));
        if (command->exitCode) {
            follower->end();
            return {};
        }
        command->followers.append(follower);
        return [weak = std::weak_ptr(command), follower] {
            if (auto c = weak.lock())
                c->followers.removeAll(follower);
        };
    }
    if (s.size() == 4 && s.at(3) == QLatin1String("input"))
        return reply(HttpResponse::error(501, QStringLiteral("Airlock does not send input to session commands yet"))),
               Cancel{};
    return reply(HttpResponse::error(404, QStringLiteral("no such session request"))), Cancel{};
}

void DaytonaSessions::execute(
    const DaytonaStore::Entry &entry, Session &session, const HttpRequest &request, const Reply &reply, Cancel *cancel)
{
    const auto body = internal::jsonBody(request);
    if (!body)
        return reply(errorResponse(body.error()));
    const QString text = body->value(QStringLiteral("command")).toString();
    if (text.trimmed().isEmpty())
        return reply(HttpResponse::error(400, QStringLiteral("command is required")));
    const bool async
        = body->value(QStringLiteral("runAsync")).toBool() || body->value(QStringLiteral("async")).toBool();
    // Room for it: the oldest finished commands (and their logs) go.
    for (qsizetype i = 0; session.commands.size() >= kMaxCommands && i < session.commands.size();) {
        const auto &c = session.commands.at(i);
        if (!c->exitCode) {
            ++i;
            continue;
        }
        c->reserve = nullptr;
        m_kept -= c->release();
        session.commands.removeAt(i);
    }
    if (session.commands.size() >= kMaxCommands)
        return reply(
            HttpResponse::error(429, QStringLiteral("%1 commands of this session still run").arg(kMaxCommands)));
    auto command = std::make_shared<Command>();
    command->id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    command->command = text;
    command->reserve = [this](qsizetype wanted) { return reserve(wanted); };
    session.commands.append(command);
    m_commands.append(command);
    if (m_commands.size() % 1024 == 0) // those forgotten by now go, now and then
        m_commands.removeIf([](const std::weak_ptr<Command> &c) { return c.expired(); });
    mcp::CallHooks hooks;
    hooks.output = [weak = std::weak_ptr(command)](int stream, QByteArrayView bytes) {
        if (auto c = weak.lock())
            c->add(stream, bytes);
    };
    hooks.done = [command, async, reply](const mcp::ToolResult &result) {
        auto outcome = CommandOutcome::of(result);
        if (!outcome) {
            // Refused or not started: as the command's own failure for one that runs on its own
            // (126, the reason on stderr), as the request's error for one the client waits for.
            const QByteArray why = outcome.error().message.toUtf8() + '\n';
            command->add(2, why);
            command->finish(126);
            if (!async)
                reply(errorResponse(outcome.error()));
            return;
        }
        command->finish(outcome->exitCode);
        if (!async)
            reply(HttpResponse::json(
                QJsonObject{{QStringLiteral("cmdId"), command->id}, {QStringLiteral("exitCode"), outcome->exitCode},
                    {QStringLiteral("output"), QString::fromUtf8(command->output(0))},
                    {QStringLiteral("stdout"), QString::fromUtf8(command->output(1))},
                    {QStringLiteral("stderr"), QString::fromUtf8(command->output(2))}}));
    };
    command->cancel = m_launch(entry, text, hooks);
    if (async) {
        reply(HttpResponse::json(QJsonObject{{QStringLiteral("cmdId"), command->id}}));
        return;
    }
    *cancel = command->cancel; // a client that leaves while it waits ends it
}

} // namespace airlock::daytona
