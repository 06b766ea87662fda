// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "mcp/McpProtocol.h"
#include "util/Result.h"

#include <QHash>
#include <QObject>

#include <functional>

namespace airlock::mcp {

class SandboxBackend;

// An MCP server session (protocol revisions 2024-11-05 to 2025-11-25): initialize and version
// negotiation, ping, tools/list and tools/call with arguments checked against each tool's schema,
// progress notifications for calls that ask for them, cancellation, and tools/list_changed. The
// transport is the caller's: receive() takes one line, send() writes one message.
class McpServer final : public QObject {
    Q_OBJECT
public:
    using Send = std::function<void(const QJsonObject &)>;
    // Called once, when the client initializes, with its name: the backend to serve it with.
    using Open = std::function<Result<SandboxBackend *>(const QString &clientName)>;

    McpServer(Open open, Send send, QObject *parent = nullptr);

    void receive(QByteArrayView line);
    void refuseLongLine(qint64 limit); // a line was longer than the transport takes
    // The client is gone: every call still running is cancelled (its execution killed); then
    // finished().
    void endOfInput();

    QString clientName() const { return m_clientName; }
    QString protocolVersion() const { return m_version; }

Q_SIGNALS:
    void finished();

private:
    void onRequest(const protocol::Message &m);
    void initialize(const protocol::Message &m);
    void listTools(const protocol::Message &m);
    void callTool(const protocol::Message &m);
    void cancel(const QJsonValue &requestId);
    static QString key(const QJsonValue &id);

    Open m_open;
    Send m_send;
    SandboxBackend *m_backend = nullptr;
    QString m_clientName, m_version;
    bool m_closing = false;
    bool m_initializing = false; // connecting to the daemon
    struct InFlight {
        std::function<void()> cancel;
        bool cancelled = false;
    };
    QHash<QString, InFlight> m_calls; // by request id
};

} // namespace airlock::mcp
