// SPDX-License-Identifier: Apache-2.0
// What DaytonaApi's sources share (not part of core's interface): its limits and the JSON shapes
// of Daytona's answers.
#pragma once

#include "daytona/HttpMessage.h"
#include "util/Result.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

namespace airlock::daytona::internal {

inline constexpr qint64 kChunk = 1024 * 1024; // what fs.write and fs.read move in one request
inline constexpr qint64 kMaxOutput = 4 * 1024 * 1024; // of each stream of one command executeCommand answers with
inline constexpr qint64 kMaxDownload = 1024LL * 1024 * 1024; // of one bulk download, all files together
inline constexpr int kMaxFiles = 1000; // in one bulk upload or download
inline constexpr qint64 kFileCommandMs = 120'000;
inline constexpr double kGiB = 1024.0 * 1024 * 1024;
inline constexpr qint64 kLeaseMs = 5000;
inline constexpr int kSweepMs = 30'000; // how often the auto-stop and auto-delete intervals are looked at
inline constexpr int kMaxLabels = 64, kMaxLabelKey = 128, kMaxLabelValue = 1024;
inline constexpr int kMaxEnv = 256, kMaxEnvValue = 32 * 1024;
inline constexpr qsizetype kMaxSandboxesPerKey = 256;

inline HttpResponse unsupported(const QString &what)
{
    return HttpResponse::error(501, what);
}

inline QString jsonString(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

// A path for a command run in the sandbox: relative ones are taken from /workspace.
inline QString sandboxPath(const QString &path)
{
    return path.startsWith(QLatin1Char('/')) ? path : QStringLiteral("/workspace/") + path;
}

inline Result<QJsonObject> jsonBody(const HttpRequest &request)
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
inline QString stringsError(const QJsonValue &value, const QString &field, int count, int keyLength, int valueLength)
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
inline QString labelsError(const QJsonValue &value)
{
    return stringsError(value, QStringLiteral("labels"), kMaxLabels, kMaxLabelKey, kMaxLabelValue);
}
inline QString envError(const QJsonValue &value, const QString &field)
{
    return stringsError(value, field, kMaxEnv, 256, kMaxEnvValue);
}

inline QString symbolicMode(int mode, bool dir)
{
    QString out = dir ? QStringLiteral("d") : QStringLiteral("-");
    const char *letters = "rwx";
    for (int bit = 8; bit >= 0; --bit)
        out += (mode & (1 << bit)) ? QLatin1Char(letters[(8 - bit) % 3]) : QLatin1Char('-');
    return out;
}

inline QJsonObject fileInfo(const QString &name, bool dir, qint64 size, int mode)
{
    return {{QStringLiteral("name"), name}, {QStringLiteral("isDir"), dir}, {QStringLiteral("size"), double(size)},
        {QStringLiteral("mode"), symbolicMode(mode, dir)},
        {QStringLiteral("permissions"), QStringLiteral("0%1").arg(mode & 07777, 3, 8, QLatin1Char('0'))},
        {QStringLiteral("owner"), QStringLiteral("sandbox")}, {QStringLiteral("group"), QStringLiteral("sandbox")},
        {QStringLiteral("modTime"), QString()}};
}

inline QString daytonaState(const QString &airlockState, bool stopped)
{
    if (airlockState == QLatin1String("running"))
        return stopped ? QStringLiteral("stopped") : QStringLiteral("started");
    if (airlockState == QLatin1String("failed"))
        return QStringLiteral("error");
    return airlockState; // starting, stopped
}

} // namespace airlock::daytona::internal
