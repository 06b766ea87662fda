// SPDX-License-Identifier: Apache-2.0
// DaytonaApi's toolbox: /toolbox/ID/… (commands, files, sessions), over the same agent connection.
#include "daytona/DaytonaApi.h"

#include "client/DaemonApi.h"
#include "daytona/DaytonaInternal.h"
#include "daytona/Multipart.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QRegularExpression>

#include <memory>

namespace airlock::daytona {

using namespace internal;

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

} // namespace airlock::daytona
