// SPDX-License-Identifier: Apache-2.0
#include "FleetSampler.h"

#include "SandboxModel.h"
#include "client/DaemonApi.h"

#include <QJsonArray>
#include <QPointer>
#include <QTimer>

namespace airlock::ui {

FleetSampler::FleetSampler(SandboxModel &model, QObject *parent)
    : QObject(parent)
    , m_model(model)
    , m_timer(new QTimer(this))
{
    m_clock.start();
    m_timer->setInterval(kIntervalMs);
    m_timer->setTimerType(Qt::CoarseTimer);
    connect(m_timer, &QTimer::timeout, this, &FleetSampler::sampleNow);
}

void FleetSampler::setActive(bool active)
{
    if (active == m_timer->isActive())
        return;
    if (active) {
        m_timer->start();
        sampleNow();
    } else {
        m_timer->stop();
    }
}

bool FleetSampler::isActive() const
{
    return m_timer->isActive();
}

void FleetSampler::sampleNow()
{
    for (int host = 0; host < m_model.hostCount(); ++host) {
        DaemonClient *client = m_model.hostClient(m_model.index(host, 0));
        if (!client || !client->isConnected() || m_waiting.contains(host))
            continue;
        m_waiting.insert(host);
        DaemonApi(*client).sandboxStats().then([self = QPointer<FleetSampler>(this), host](Result<QJsonObject> r) {
            if (!self)
                return;
            self->m_waiting.remove(host);
            if (!r)
                return; // an older daemon, or one going away: the columns stay as they were
            QElapsedTimer spent;
            spent.start();
            // The daemon's own clock when it says when it sampled (a reused pass is older than its answer).
            const QJsonValue sampledMs = r->value(QStringLiteral("sampledMs"));
            self->m_model.setUsage(host, r->value(QStringLiteral("sandboxes")).toArray(),
                sampledMs.isDouble() ? qint64(sampledMs.toDouble()) : self->m_clock.elapsed());
            self->m_lastApplyNs = spent.nsecsElapsed();
            Q_EMIT self->sampled(host);
        });
    }
}

} // namespace airlock::ui
