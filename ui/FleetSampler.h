// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QSet>

class QTimer;

namespace airlock::ui {

class SandboxModel;

// Asks every connected host's daemon for sandbox.stats about once a second and hands the answers
// to the model. A host whose previous answer is still out is skipped (a slow host never piles up
// requests), and nothing is asked while stopped (the window is hidden or minimised).
class FleetSampler final : public QObject {
    Q_OBJECT
public:
    explicit FleetSampler(SandboxModel &model, QObject *parent = nullptr);

    void setActive(bool active);
    bool isActive() const;
    static constexpr int kIntervalMs = 1000;
    // The GUI thread's time spent on the last answer (model update and what it announced).
    qint64 lastApplyNs() const { return m_lastApplyNs; }
    void sampleNow();

Q_SIGNALS:
    void sampled(int host);

private:
    SandboxModel &m_model;
    QTimer *m_timer;
    QSet<int> m_waiting; // hosts whose answer is still out
    QElapsedTimer m_clock;
    qint64 m_lastApplyNs = 0;
};

} // namespace airlock::ui
