// SPDX-License-Identifier: Apache-2.0
#include "RunningStrip.h"

#include "model/DisplayText.h"
#include "model/Units.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QTextDocument>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <csignal>

namespace airlock::ui {

RunningStrip::RunningStrip(QWidget *parent)
    : QWidget(parent)
    , m_layout(new QVBoxLayout(this))
    , m_more(new QLabel)
    , m_timer(new QTimer(this))
{
    setObjectName(QStringLiteral("runningStrip"));
    m_layout->setContentsMargins(6, 0, 6, 0);
    m_layout->setSpacing(0);
    m_more->setForegroundRole(QPalette::PlaceholderText);
    m_more->hide();
    m_layout->addWidget(m_more);
    m_timer->setInterval(1000);
    connect(m_timer, &QTimer::timeout, this, &RunningStrip::tick);
    hide();
}

void RunningStrip::clear()
{
    for (const Row &row : std::as_const(m_rows))
        delete row.widget;
    m_rows.clear();
    m_order.clear();
    m_timer->stop();
    updateMore();
}

void RunningStrip::add(uint32_t exec, const QJsonArray &argv, qint64 startedMsSinceEpoch)
{
    if (m_rows.contains(exec))
        return;
    Row row;
    row.startedMs = startedMsSinceEpoch;
    row.widget = new QWidget;
    auto *line = new QHBoxLayout(row.widget);
    line->setContentsMargins(0, 1, 0, 1);
    auto *command = new QLabel;
    command->setTextFormat(Qt::PlainText);
    const QString shown = display::commandLine(argv, 160);
    command->setText(tr("▶ #%1  %2").arg(exec).arg(shown));
    command->setToolTip(Qt::convertFromPlainText(display::commandLine(argv, 2000))); // never read as rich text
    command->setMinimumWidth(80);
    command->setSizePolicy(
        QSizePolicy::Ignored, QSizePolicy::Preferred); // elided by the layout, never widening the window
    row.elapsed = new QLabel;
    row.elapsed->setForegroundRole(QPalette::PlaceholderText);
    row.stop = new QToolButton;
    row.stop->setText(tr("Stop"));
    row.stop->setToolTip(tr("SIGTERM to this command alone; if it has not ended %1 s later, this button kills it")
                             .arg(kStopGraceMs / 1000));
    row.stop->setFocusPolicy(Qt::TabFocus);
    connect(row.stop, &QToolButton::clicked, this, [this, exec] {
        Row &r = m_rows[exec];
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const bool kill = r.stoppedAtMs >= 0 && now - r.stoppedAtMs >= kStopGraceMs;
        if (r.stoppedAtMs < 0)
            r.stoppedAtMs = now;
        Q_EMIT signalRequested(exec, kill ? SIGKILL : SIGTERM);
        tick();
    });
    line->addWidget(command, 1);
    line->addWidget(row.elapsed);
    line->addWidget(row.stop);
    m_layout->insertWidget(m_layout->count() - 1, row.widget);
    m_rows.insert(exec, row);
    m_order.append(exec);
    m_timer->start();
    tick();
    updateMore();
}

void RunningStrip::remove(uint32_t exec)
{
    const auto it = m_rows.find(exec);
    if (it == m_rows.end())
        return;
    delete it->widget;
    m_rows.erase(it);
    m_order.removeAll(exec);
    if (m_rows.isEmpty())
        m_timer->stop();
    updateMore();
}

QToolButton *RunningStrip::stopButton(uint32_t exec) const
{
    return m_rows.value(exec).stop;
}

QString RunningStrip::elapsedText(uint32_t exec) const
{
    const Row row = m_rows.value(exec);
    return row.elapsed ? row.elapsed->text() : QString();
}

void RunningStrip::tick()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    for (Row &row : m_rows) {
        row.elapsed->setText(units::formatDurationMs(uint64_t(std::max<qint64>(0, now - row.startedMs)) / 1000 * 1000));
        if (row.stoppedAtMs >= 0) {
            const bool canKill = now - row.stoppedAtMs >= kStopGraceMs;
            row.stop->setText(canKill ? tr("Kill") : tr("Stopping…"));
            row.stop->setEnabled(canKill);
        }
    }
}

void RunningStrip::updateMore()
{
    // The oldest kMaxRows are shown; the rest are a count.
    for (qsizetype i = 0; i < m_order.size(); ++i)
        m_rows[m_order[i]].widget->setVisible(i < kMaxRows);
    const qsizetype hidden = m_order.size() - kMaxRows;
    m_more->setVisible(hidden > 0);
    if (hidden > 0)
        m_more->setText(tr("and %n more running (the fleet's Running column lists them)", nullptr, int(hidden)));
    setVisible(!m_rows.isEmpty());
}

} // namespace airlock::ui
