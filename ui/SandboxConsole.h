// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QObject>

#include "model/Event.h"

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

class ExecutionReplay;
class OutputView;

// One sandbox's executions in an OutputView: when it is selected, its last few executions are
// read back from the history (what ran before the window looked), then its live events continue
// where they left off. Live output that arrives meanwhile waits; afterwards each execution's
// bytes are placed by their stream offsets, so nothing is shown twice and nothing is missed.
class SandboxConsole final : public QObject {
    Q_OBJECT
public:
    SandboxConsole(DaemonClient &client, OutputView &view, QObject *parent = nullptr);

    void show(const QString &sandboxId); // empty: nothing
    void onEvent(const Event &event);
    bool isLoading() const { return m_loading; }
    static constexpr int kRecentExecutions = 5;
    static constexpr qint64 kReplayBytes = 4 * 1024 * 1024; // per execution; the rest is in History
    static constexpr qint64 kWaitingBytes = 16 * 1024 * 1024; // live output held while loading

Q_SIGNALS:
    void loaded(); // the history part is in the view
    // What runs in the sandbox shown, as its events (or its history) say: for the running strip.
    void executionRunning(uint32_t exec, const QJsonArray &argv, qint64 startedMsSinceEpoch);
    void executionEnded(uint32_t exec);
    void cleared(); // another sandbox, or none, is shown

private:
    struct Shown { // what the view has of one execution, per stream
        qint64 end[3] = {0, 0, 0};
        bool started = false, ended = false;
    };
    void replayNext();
    void finishLoading();
    void apply(const Event &event);

    DaemonClient &m_client;
    OutputView &m_view;
    ExecutionReplay *m_replay;
    QString m_sandbox;
    quint64 m_generation = 0;
    bool m_loading = false;
    QList<QJsonObject> m_toReplay; // oldest first
    QJsonObject m_replaying;
    QList<Event> m_waiting;
    qint64 m_waitingBytes = 0;
    bool m_skippedWhileLoading = false;
    QHash<uint32_t, Shown> m_shown;
};

} // namespace airlock::ui
