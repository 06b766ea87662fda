// SPDX-License-Identifier: Apache-2.0
#include "mcp/McpProtocol.h"

#include <QJsonDocument>
#include <QJsonParseError>

#include <cmath>

namespace airlock::mcp::protocol {

QStringList supportedVersions()
{
    return {QLatin1String(kLatestVersion), QStringLiteral("2025-06-18"), QStringLiteral("2025-03-26"),
        QStringLiteral("2024-11-05")};
}

QString negotiate(const QString &requested)
{
    return supportedVersions().contains(requested) ? requested : QLatin1String(kLatestVersion);
}

bool hasStructuredResults(const QString &version)
{
    return version >= QLatin1String("2025-06-18"); // revisions are dates: they sort as text
}

namespace {
bool validId(const QJsonValue &id)
{
    if (id.isString())
        return true;
    // JSON-RPC allows numbers; MCP says integers.
    return id.isDouble() && std::floor(id.toDouble()) == id.toDouble() && std::abs(id.toDouble()) < 9007199254740992.0;
}
} // namespace

Parsed parse(QByteArrayView line)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromRawData(line.data(), line.size()), &error);
    if (error.error != QJsonParseError::NoError)
        return {std::nullopt,
            {ParseError, QStringLiteral("not JSON: %1 at offset %2").arg(error.errorString()).arg(error.offset)}};
    if (doc.isArray())
        return {
            std::nullopt, {InvalidRequest, QStringLiteral("batches are not part of MCP: send one message per line")}};
    const QJsonObject o = doc.object();
    const QJsonValue id = o.value(QStringLiteral("id"));
    const QJsonValue replyTo = validId(id) ? id : QJsonValue(QJsonValue::Null);
    if (o.value(QStringLiteral("jsonrpc")).toString() != QLatin1String("2.0"))
        return {std::nullopt, {InvalidRequest, QStringLiteral("\"jsonrpc\" must be \"2.0\""), replyTo}};
    if (o.contains(QStringLiteral("id")) && !validId(id))
        return {std::nullopt, {InvalidRequest, QStringLiteral("\"id\" must be a string or an integer")}};
    Message m;
    m.id = id;
    if (!o.contains(QStringLiteral("method"))) {
        if (!o.contains(QStringLiteral("id"))
            || (!o.contains(QStringLiteral("result")) && !o.contains(QStringLiteral("error"))))
            return {std::nullopt,
                {InvalidRequest,
                    QStringLiteral("a message needs a \"method\" (or is a response with \"result\" or \"error\")"),
                    replyTo}};
        m.kind = Message::Kind::Response;
        return {m, {}};
    }
    const QJsonValue method = o.value(QStringLiteral("method"));
    if (!method.isString() || method.toString().isEmpty())
        return {std::nullopt, {InvalidRequest, QStringLiteral("\"method\" must be a non-empty string"), replyTo}};
    const QJsonValue params = o.value(QStringLiteral("params"));
    if (!params.isUndefined() && !params.isObject())
        return {std::nullopt, {InvalidRequest, QStringLiteral("\"params\" must be an object"), replyTo}};
    m.kind = o.contains(QStringLiteral("id")) ? Message::Kind::Request : Message::Kind::Notification;
    m.method = method.toString();
    m.params = params.toObject();
    return {m, {}};
}

QJsonObject result(const QJsonValue &id, const QJsonObject &result)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), id},
        {QStringLiteral("result"), result}};
}

QJsonObject error(const QJsonValue &id, int code, const QString &message, const QJsonValue &data)
{
    QJsonObject e{{QStringLiteral("code"), code}, {QStringLiteral("message"), message}};
    if (!data.isUndefined() && !data.isNull())
        e.insert(QStringLiteral("data"), data);
    return {
        {QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), id}, {QStringLiteral("error"), e}};
}

QJsonObject notification(const QString &method, const QJsonObject &params)
{
    return {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("method"), method},
        {QStringLiteral("params"), params}};
}

} // namespace airlock::mcp::protocol
