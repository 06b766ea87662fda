// SPDX-License-Identifier: Apache-2.0
#include "SandboxConsole.h"

#include "ExecutionReplay.h"
#include "OutputView.h"
#include "client/DaemonApi.h"
#include "model/EventKinds.h"

#include <QPointer>

namespace airlock::ui {

SandboxConsole::SandboxConsole(DaemonClient &client, OutputView &view, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_view(view)
    , m_replay(new ExecutionReplay(client, this))
{
    connect(m_replay, &ExecutionReplay::chunk, this, [this](int stream, const QByteArray &data, qint64 offset) {
        const uint32_t exec = uint32_t(m_replaying.value(QStringLiteral("exec")).toDouble());
        Shown &shown = m_shown[exec];
        const int s = stream == 2 ? 2 : 1;
        if (offset >= kReplayBytes && offset > shown.end[s])
            return; // past what the console shows of the past; History has it whole
        m_view.append(s, data);
        shown.end[s] = offset + data.size();
    });
    connect(m_replay, &ExecutionReplay::finished, this, [this] {
        const uint32_t exec = uint32_t(m_replaying.value(QStringLiteral("exec")).toDouble());
        const qint64 stored = qint64(m_replaying.value(QStringLiteral("storedBytes")).toDouble());
        Shown &shown = m_shown[exec];
        if (stored > shown.end[1] + shown.end[2]) {
            m_view.document().endLine();
            m_view.append(1,
                tr("\x1b[2m[%1 more bytes of #%2 are in the history (Ctrl+H)]\x1b[0m\n")
                    .arg(stored - shown.end[1] - shown.end[2])
                    .arg(exec)
                    .toUtf8());
        }
        if (m_replaying.value(QStringLiteral("status")).toString() != QLatin1String("running")) {
            m_view.endExecution(exec, m_replaying.value(QStringLiteral("status")).toString(),
                m_replaying.value(QStringLiteral("exitCode")));
            shown.ended = true;
        } else if (!shown.ended) {
            Q_EMIT executionRunning(exec, m_replaying.value(QStringLiteral("argv")).toArray(),
                qint64(m_replaying.value(QStringLiteral("startedMs")).toDouble()));
        }
        replayNext();
    });
    connect(m_replay, &ExecutionReplay::failed, this, [this] { replayNext(); });
}

void SandboxConsole::show(const QString &sandboxId)
{
    m_replay->cancel();
    ++m_generation;
    m_sandbox = sandboxId;
    m_view.clear();
    m_shown.clear();
    Q_EMIT cleared();
    m_waiting.clear();
    m_waitingBytes = 0;
    m_skippedWhileLoading = false;
    m_toReplay.clear();
    m_loading = !sandboxId.isEmpty();
    if (!m_loading)
        return;
    DaemonApi(m_client)
        .historyList({{QStringLiteral("sandbox"), sandboxId}, {QStringLiteral("limit"), kRecentExecutions}})
        .then([self = QPointer<SandboxConsole>(this), generation = m_generation](Result<QJsonObject> r) {
            if (!self || generation != self->m_generation)
                return;
            for (const QJsonValue &e : r ? r->value(QStringLiteral("executions")).toArray() : QJsonArray())
                self->m_toReplay.prepend(e.toObject()); // oldest first
            self->replayNext();
        });
}

void SandboxConsole::replayNext()
{
    if (m_toReplay.isEmpty())
        return finishLoading();
    m_replaying = m_toReplay.takeFirst();
    const uint32_t exec = uint32_t(m_replaying.value(QStringLiteral("exec")).toDouble());
    m_view.beginExecution(m_replaying.value(QStringLiteral("argv")).toArray(), exec);
    m_shown[exec].started = true;
    m_replay->start(qint64(m_replaying.value(QStringLiteral("id")).toDouble()));
}

void SandboxConsole::finishLoading()
{
    m_loading = false;
    if (m_skippedWhileLoading) {
        m_view.document().endLine();
        m_view.append(1, tr("\x1b[2m[live output skipped while the history loaded]\x1b[0m\n").toUtf8());
    }
    const QList<Event> waiting = std::exchange(m_waiting, {});
    m_waitingBytes = 0;
    for (const Event &event : waiting)
        apply(event);
    Q_EMIT loaded();
}

void SandboxConsole::onEvent(const Event &event)
{
    if (event.sandbox != m_sandbox || m_sandbox.isEmpty())
        return;
    if (!m_loading)
        return apply(event);
    // Held until the history part is shown; bounded, so a flood cannot grow this without end.
    if (event.isOutput() && m_waitingBytes + event.data.size() > kWaitingBytes) {
        m_skippedWhileLoading = true;
        return;
    }
    m_waitingBytes += event.data.size();
    m_waiting.append(event);
}

void SandboxConsole::apply(const Event &event)
{
    Shown &shown = m_shown[event.exec];
    if (event.isOutput()) {
        // Bytes the history part already showed are skipped, by their place in the stream.
        const int s = event.stream == 2 ? 2 : 1;
        const qint64 skip = std::clamp<qint64>(shown.end[s] - event.offset, 0, event.data.size());
        if (skip < event.data.size())
            m_view.append(s, QByteArrayView(event.data).sliced(skip));
        shown.end[s] = std::max(shown.end[s], event.offset + qint64(event.data.size()));
    } else if (event.kind == event::ExecStarted && !std::exchange(shown.started, true)) {
        m_view.beginExecution(event.payload.value(QStringLiteral("argv")).toArray(), event.exec);
        Q_EMIT executionRunning(event.exec, event.payload.value(QStringLiteral("argv")).toArray(), event.timeMs);
    } else if (event.kind == event::ExecExited && !std::exchange(shown.ended, true)) {
        m_view.endExecution(event.exec, event.payload.value(QStringLiteral("status")).toString(),
            event.payload.value(QStringLiteral("exitCode")));
        Q_EMIT executionEnded(event.exec);
    }
}

} // namespace airlock::ui
