// SPDX-License-Identifier: Apache-2.0
#include "mcp/ExecCall.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QJsonArray>

#include <csignal>

namespace airlock::mcp {

namespace {
constexpr qint64 kInputChunk = 256 * 1024;
constexpr qint64 kProgressEveryMs = 250;
constexpr qint64 kMaxEarlyBytes = 4 * 1024 * 1024;
} // namespace

void OutputClip::add(QByteArrayView data)
{
    m_total += data.size();
    const qint64 half = m_limit / 2;
    if (m_head.size() < half) {
        const qint64 take = std::min<qint64>(half - m_head.size(), data.size());
        m_head += data.first(take);
        data = data.sliced(take);
    }
    if (data.isEmpty())
        return;
    m_tail += data;
    if (m_tail.size() > 2 * (m_limit - half) + 4096) // trimmed now and then, not on every chunk
        m_tail.remove(0, m_tail.size() - (m_limit - half));
}

QString OutputClip::text(const QString &whereWhole) const
{
    if (!clipped())
        return QString::fromUtf8(m_head + m_tail);
    const QByteArray tail = m_tail.right(m_limit - m_limit / 2);
    return QString::fromUtf8(m_head)
        + QStringLiteral(
            "\n[… %1 bytes left out here (max_output_bytes is %2); the whole output is in the Airlock history: %3 …]\n")
              .arg(m_total - m_head.size() - tail.size())
              .arg(m_limit)
              .arg(whereWhole)
        + QString::fromUtf8(tail);
}

QByteArray OutputClip::lastLine() const
{
    const QByteArray &last = m_tail.isEmpty() ? m_head : m_tail;
    const QByteArray trimmed = last.right(4096).trimmed();
    return trimmed.mid(trimmed.lastIndexOf('\n') + 1);
}

ExecCall::ExecCall(DaemonClient &client, Request request, CallHooks hooks, QObject *parent)
    : QObject(parent)
    , m_client(&client)
    , m_request(std::move(request))
    , m_hooks(std::move(hooks))
    , m_out(m_request.maxOutput)
    , m_err(m_request.maxOutput)
{
}

void ExecCall::start()
{
    m_started.start();
    DaemonApi(*m_client)
        .startExec(m_request.sandbox, m_request.exec)
        .then([self = QPointer<ExecCall>(this)](Result<ExecStarted> r) {
            if (!self)
                return;
            if (!r)
                return self->finish(ToolResult::failure(r.error().code == ErrorCode::Denied
                        ? QStringLiteral("Airlock refused to run the command: %1").arg(r.error().message)
                        : QStringLiteral("the command did not start: %1").arg(r.error().message),
                    r.error().code));
            self->m_sandboxId = r->sandbox;
            self->m_exec = r->exec;
            self->m_started.restart();
            if (self->m_cancelled) // approved after the client gave up on it
                return DaemonApi(*self->m_client).signalExec(self->m_sandboxId, self->m_exec, SIGKILL).send();
            self->progress(QStringLiteral("running as %1:%2").arg(self->m_request.sandboxName).arg(self->m_exec), true);
            if (self->m_request.exec.stdinOpen)
                self->sendInput(0);
            self->m_earlyBytes = 0;
            const QList<Event> early = std::exchange(self->m_early, {});
            for (const Event &e : early)
                self->onEvent(e);
        });
}

void ExecCall::sendInput(qint64 from)
{
    // One chunk in flight: the daemon answers when the guest has room for more.
    const QByteArray chunk = m_request.input.mid(from, kInputChunk);
    const bool last = from + chunk.size() >= m_request.input.size();
    DaemonApi(*m_client)
        .writeStdin(m_sandboxId, m_exec, chunk, last)
        .then([self = QPointer<ExecCall>(this), next = from + chunk.size(), last](Result<QJsonObject> r) {
            if (self && r && !last && !self->m_done)
                self->sendInput(next); // a command that exits without reading it all ends this
        });
}

void ExecCall::cancel()
{
    if (m_cancelled || m_done)
        return;
    m_cancelled = true;
    if (!m_client)
        return; // the daemon's connection is gone, and what it ran with it (or its lease)
    // Still waiting for a person: the question is taken back (the start then fails, unheard).
    if (!m_exec)
        for (const QString &id : std::as_const(m_approvals))
            DaemonApi(*m_client).withdrawApproval(id).send();
    if (m_exec)
        DaemonApi(*m_client).signalExec(m_sandboxId, m_exec, SIGKILL).send();
}

void ExecCall::onEvent(const Event &event)
{
    if (m_done)
        return;
    if (m_exec == 0) {
        // Before the start is answered: kept in case one is this call's (the daemon answers the
        // start before the command can print, so this stays small; a sandbox busy with others'
        // output while this waits for a person must not grow it without end).
        if (m_earlyBytes + event.data.size() <= kMaxEarlyBytes) {
            m_earlyBytes += event.data.size() + 256;
            m_early.append(event);
        }
        return;
    }
    if (event.sandbox != m_sandboxId || event.exec != m_exec)
        return;
    if (event.isOutput()) {
        (event.stream == 2 ? m_err : m_out).add(event.data);
        if (m_hooks.output)
            m_hooks.output(event.stream, event.data);
        if (m_hooks.progress)
            progress(
                QStringLiteral("%1: %2").arg(event.stream == 2 ? QStringLiteral("stderr") : QStringLiteral("stdout"),
                    display::escaped(QString::fromUtf8((event.stream == 2 ? m_err : m_out).lastLine()), 200)));
        return;
    }
    if (event.kind == event::ExecTruncated)
        m_truncatedByLimit = true;
    if (event.kind == event::ExecExited)
        finishAs(event.payload);
}

void ExecCall::onApproval(const QJsonObject &request, bool decided)
{
    const QString id = request.value(QStringLiteral("id")).toString();
    if (m_done || (decided && !m_approvals.contains(id)))
        return;
    if (decided) {
        const bool allowed = request.value(QStringLiteral("decision")).toString() == QLatin1String("allow");
        const QString by = request.value(QStringLiteral("by")).toString();
        return progress(
            allowed ? QStringLiteral("approved by %1").arg(by) : QStringLiteral("denied by %1").arg(by), true);
    }
    m_approvals.insert(id);
    const QString what = request.value(QStringLiteral("kind")).toString() == QLatin1String("network")
        ? QStringLiteral("network access to %1").arg(request.value(QStringLiteral("destination")).toString())
        : QStringLiteral("this command");
    progress(QStringLiteral("waiting for a person to approve %1 (request %2)").arg(what, id), true);
}

bool ExecCall::routeApproval(
    const Event &event, const QList<QPointer<ExecCall>> &calls, const QString &run, const QString &agent)
{
    const bool decided = event.kind == event::ApprovalDecided;
    // This session's own requests: another agent's, or the person's own commands' network
    // destinations in a shared sandbox, are not news here. Each call knows the decisions on its
    // own requests by their ids.
    const QString kind = event.payload.value(QStringLiteral("kind")).toString();
    if (!decided
        && (event.run != run
            || (kind != QLatin1String("network")
                && event.payload.value(QStringLiteral("requester")).toString() != agent)))
        return false;
    QStringList argv;
    for (const QJsonValue &v : event.payload.value(QStringLiteral("argv")).toArray())
        argv.append(v.toString());
    for (const QPointer<ExecCall> &call : calls) { // a copy: a call that finishes leaves the caller's list
        if (!call)
            continue;
        const bool network = kind == QLatin1String("network") && call->sandboxId() == event.sandbox;
        const bool command = kind == QLatin1String("command") && call->requestedSandbox() == event.sandbox
            && (decided || (call->waitsForStart() && call->argv() == argv));
        if (network || command)
            call->onApproval(event.payload, decided);
    }
    return true;
}

void ExecCall::progress(const QString &message, bool force)
{
    if (!m_hooks.progress || (!force && m_lastProgress.isValid() && m_lastProgress.elapsed() < kProgressEveryMs))
        return;
    m_lastProgress.start();
    m_hooks.progress(message);
}

void ExecCall::finishAs(const QJsonObject &exited)
{
    const QString status = exited.value(QStringLiteral("status")).toString();
    const QString where = QStringLiteral("'airlockctl show %1:%2'").arg(m_request.sandboxName).arg(m_exec);
    QJsonObject structured{{QStringLiteral("status"), status}, {QStringLiteral("stdout"), m_out.text(where)},
        {QStringLiteral("stderr"), m_err.text(where)}, {QStringLiteral("stdout_bytes"), double(m_out.total())},
        {QStringLiteral("stderr_bytes"), double(m_err.total())},
        {QStringLiteral("truncated"), m_out.clipped() || m_err.clipped() || m_truncatedByLimit},
        {QStringLiteral("duration_ms"), double(m_started.elapsed())},
        {QStringLiteral("execution"), QStringLiteral("%1:%2").arg(m_request.sandboxName).arg(m_exec)}};
    QString ending;
    if (exited.value(QStringLiteral("exitCode")).isDouble()) {
        structured.insert(QStringLiteral("exit_code"), exited.value(QStringLiteral("exitCode")).toInt());
        ending = QStringLiteral("exit code %1").arg(exited.value(QStringLiteral("exitCode")).toInt());
    }
    if (exited.value(QStringLiteral("signal")).isDouble()) {
        structured.insert(QStringLiteral("signal"), exited.value(QStringLiteral("signal")).toInt());
        ending = QStringLiteral("killed by signal %1").arg(exited.value(QStringLiteral("signal")).toInt());
    }
    if (status == QLatin1String("timed_out"))
        ending = QStringLiteral("timed out and killed");
    if (m_truncatedByLimit)
        ending += QStringLiteral("; killed for exceeding the sandbox's output limit");
    if (exited.contains(QStringLiteral("error")))
        ending += QStringLiteral("; ") + exited.value(QStringLiteral("error")).toString();
    QString text = QStringLiteral("%1 (%2, %3 ms, %4)\n")
                       .arg(ending, status)
                       .arg(m_started.elapsed())
                       .arg(structured.value(QStringLiteral("execution")).toString());
    if (m_out.total())
        text += QStringLiteral("--- stdout ---\n") + structured.value(QStringLiteral("stdout")).toString();
    if (m_err.total()) {
        if (!text.endsWith(QLatin1Char('\n')))
            text += QLatin1Char('\n');
        text += QStringLiteral("--- stderr ---\n") + structured.value(QStringLiteral("stderr")).toString();
    }
    // A command that ran and failed is a result, not a tool error: its exit code is the answer.
    finish({text, structured, false});
}

void ExecCall::finish(const ToolResult &result)
{
    if (m_done)
        return;
    m_done = true;
    m_hooks.done(result);
    Q_EMIT finished();
}

} // namespace airlock::mcp
