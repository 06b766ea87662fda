// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QWidget>

class QLabel;
class QTimer;
class QToolButton;
class QVBoxLayout;

namespace airlock::ui {

// Above the console's output: one row per command running in the selected sandbox, with how long
// it has run and a Stop button for that one command. Stop sends SIGTERM; a command still running
// kStopGraceMs later can then be killed from the same button. Hidden while nothing runs.
class RunningStrip final : public QWidget {
    Q_OBJECT
public:
    explicit RunningStrip(QWidget *parent = nullptr);

    void clear();
    void add(uint32_t exec, const QJsonArray &argv, qint64 startedMsSinceEpoch);
    void remove(uint32_t exec);
    QList<uint32_t> executions() const { return m_rows.keys(); }
    QToolButton *stopButton(uint32_t exec) const;
    QString elapsedText(uint32_t exec) const;
    static constexpr int kStopGraceMs = 3000;
    static constexpr int kMaxRows = 4; // the rest are counted on the last row

Q_SIGNALS:
    void signalRequested(uint32_t exec, int signo);

private:
    struct Row {
        QWidget *widget = nullptr;
        QLabel *elapsed = nullptr;
        QToolButton *stop = nullptr;
        qint64 startedMs = 0;
        qint64 stoppedAtMs = -1; // when Stop was pressed
    };
    void tick();
    void updateMore();

    QVBoxLayout *m_layout;
    QLabel *m_more;
    QTimer *m_timer;
    QHash<uint32_t, Row> m_rows;
    QList<uint32_t> m_order; // oldest first
};

} // namespace airlock::ui
