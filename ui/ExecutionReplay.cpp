// SPDX-License-Identifier: Apache-2.0
#include "ExecutionReplay.h"

#include "client/DaemonApi.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QPointer>

namespace airlock::ui {

ExecutionReplay::ExecutionReplay(DaemonClient &client, QObject *parent)
    : QObject(parent)
    , m_client(&client)
{
}

void ExecutionReplay::start(DaemonClient &client, qint64 execution)
{
    m_client = &client;
    start(execution);
}

void ExecutionReplay::start(qint64 execution)
{
    cancel();
    m_execution = execution;
    requestPage(0);
}

void ExecutionReplay::cancel()
{
    ++m_generation;
    m_execution = 0;
    m_bytes = 0;
}

void ExecutionReplay::requestPage(qint64 afterChunk)
{
    if (!m_client) {
        m_execution = 0;
        Q_EMIT failed(tr("the host's connection is gone"));
        return;
    }
    DaemonApi(*m_client)
        .historyOutput(double(m_execution), double(afterChunk))
        .then([self = QPointer<ExecutionReplay>(this), generation = m_generation](Result<QJsonObject> r) {
            if (!self || generation != self->m_generation)
                return;
            const qint64 execution = self->m_execution;
            if (!r) {
                self->m_execution = 0;
                Q_EMIT self->failed(r.error().message);
                return;
            }
            const QJsonObject &page = *r;
            for (const QJsonValue &v : page.value(QStringLiteral("chunks")).toArray()) {
                const QJsonObject c = v.toObject();
                const QByteArray data = QByteArray::fromBase64(c.value(QStringLiteral("data")).toString().toLatin1());
                self->m_bytes += data.size();
                Q_EMIT self->chunk(c.value(QStringLiteral("stream")).toInt(), data,
                    qint64(c.value(QStringLiteral("offset")).toDouble()),
                    qint64(c.value(QStringLiteral("timeMs")).toDouble()));
                if (!self || generation != self->m_generation)
                    return; // a receiver started another replay
            }
            const QJsonValue next = page.value(QStringLiteral("next"));
            if (next.isDouble())
                return self->requestPage(qint64(next.toDouble()));
            self->m_execution = 0;
            Q_EMIT self->finished(execution);
        });
}

} // namespace airlock::ui
