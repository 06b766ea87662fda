// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArrayView>
#include <QJsonObject>
#include <QJsonValue>
#include <QStringList>

#include <optional>

namespace airlock::mcp {

// The Model Context Protocol's JSON-RPC 2.0 messages, one per line (the stdio transport), and its
// protocol revisions.
namespace protocol {

inline constexpr char kLatestVersion[] = "2025-11-25";
// Newest first. A client asking for one of these gets it; any other gets the latest, and the
// client decides whether it can go on.
QStringList supportedVersions();
QString negotiate(const QString &requested);
// Whether a revision has tool titles, structured results and output schemas (2025-06-18 on).
bool hasStructuredResults(const QString &version);

// JSON-RPC error codes.
enum Code {
    ParseError = -32700,
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    InvalidParams = -32602,
    InternalError = -32603,
};

struct Message {
    enum class Kind { Request, Notification, Response };
    Kind kind = Kind::Request;
    QJsonValue id; // a string or an integer (requests and responses)
    QString method;
    QJsonObject params;
};

// A line that is not a message: the error to answer with, to the id if one could be read.
struct Fault {
    int code = InvalidRequest;
    QString message;
    QJsonValue id = QJsonValue::Null;
};

// One line, as received: a message, or the fault that says exactly what is wrong with it.
struct Parsed {
    std::optional<Message> message;
    Fault fault;
};
Parsed parse(QByteArrayView line);

QJsonObject result(const QJsonValue &id, const QJsonObject &result);
QJsonObject error(const QJsonValue &id, int code, const QString &message, const QJsonValue &data = {});
QJsonObject notification(const QString &method, const QJsonObject &params);

} // namespace protocol
} // namespace airlock::mcp
