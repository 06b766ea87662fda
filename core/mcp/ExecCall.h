// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "mcp/ToolCall.h"
#include "model/Event.h"
#include "model/ExecRequest.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>

namespace airlock {
class DaemonClient;
}

namespace airlock::mcp {

// The first and the last bytes of a stream, up to a limit, and how many there were: what an agent
// gets back from a command with more output than it asked for.
class OutputClip {
public:
    explicit OutputClip(qint64 limit)
        : m_limit(limit)
    {
    }
    void add(QByteArrayView data);
    qint64 total() const { return m_total; }
    bool clipped() const { return m_total > m_limit; }
    // The kept bytes as text (invalid UTF-8 replaced); when clipped, the beginning, a marker
    // saying how much is left out and where it is, then the end.
    QString text(const QString &whereWhole) const;
    QByteArray lastLine() const;

private:
    qint64 m_limit, m_total = 0;
    QByteArray m_head, m_tail;
};

// One sandbox_exec: starts the execution (which may first wait for a person), feeds its stdin,
// collects its output (clipped), reports progress, and ends with its exit code. cancel() kills it
// (once it has started; a cancelled call whose start is approved later is killed at once).
class ExecCall final : public QObject {
    Q_OBJECT
public:
    struct Request {
        QString sandbox; // its id
        ExecRequest exec;
        QByteArray input; // stdin, closed after it
        qint64 maxOutput = 65536;
        QString sandboxName; // for "SANDBOX:N"
    };
    ExecCall(DaemonClient &client, Request request, CallHooks hooks, QObject *parent = nullptr);

    void start();
    void cancel();
    void onEvent(const Event &event); // every event of the connection; it picks its own
    // An approval request that is this call's (asked), or any decision (told if it is one of its).
    void onApproval(const QJsonObject &request, bool decided);
    // An approval event (requested or decided) of a session whose run and agent are these, given
    // to the calls it concerns: a network request in their sandbox, their command, decisions.
    // False when it is not the session's (another agent's, another run's).
    static bool routeApproval(
        const Event &event, const QList<QPointer<ExecCall>> &calls, const QString &run, const QString &agent);
    void fail(const QString &message) { finish(ToolResult::failure(message)); } // the daemon is gone
    bool waitsForStart() const { return m_exec == 0 && !m_done; }
    QString sandboxId() const { return m_sandboxId; } // once started
    QString requestedSandbox() const { return m_request.sandbox; }
    QStringList argv() const { return m_request.exec.argv; }

Q_SIGNALS:
    void finished(); // done has been called

private:
    void sendInput(qint64 from);
    void finish(const ToolResult &result);
    void finishAs(const QJsonObject &exited);
    void progress(const QString &message, bool force = false);

    QPointer<DaemonClient> m_client;
    Request m_request;
    CallHooks m_hooks;
    QString m_sandboxId;
    uint32_t m_exec = 0;
    QList<Event> m_early; // events before the start was answered
    qint64 m_earlyBytes = 0;
    QSet<QString> m_approvals; // requests it waits or waited for
    OutputClip m_out, m_err;
    bool m_cancelled = false, m_done = false, m_truncatedByLimit = false;
    QElapsedTimer m_started, m_lastProgress;
};

} // namespace airlock::mcp
