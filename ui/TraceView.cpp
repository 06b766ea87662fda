// SPDX-License-Identifier: Apache-2.0
#include "TraceView.h"

#include "Theme.h"
#include "TraceModel.h"
#include "model/DisplayText.h"

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStyledItemDelegate>
#include <QTreeView>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
using trace::Outcome;
using trace::SpanKind;

QColor spanColour(SpanKind kind, Outcome outcome, bool dark)
{
    if (outcome == Outcome::Denied)
        return dark ? QColor(0xf0, 0x5a, 0x5a) : QColor(0xd0, 0x30, 0x30);
    if (kind == SpanKind::Wait || outcome == Outcome::Asked)
        return QColor(0xe0, 0x9a, 0x20);
    if (outcome == Outcome::Failed)
        return dark ? QColor(0xe0, 0x70, 0x50) : QColor(0xc0, 0x50, 0x30);
    switch (kind) {
    case SpanKind::Run:
    case SpanKind::Sandbox:
        return dark ? QColor(0x8a, 0x94, 0xa6) : QColor(0x70, 0x7a, 0x8a);
    case SpanKind::Execution:
        return dark ? QColor(0x5a, 0x9a, 0xf0) : QColor(0x2f, 0x6f, 0xd0);
    case SpanKind::Program:
        return dark ? QColor(0x70, 0xc0, 0xd0) : QColor(0x20, 0x90, 0xa0);
    case SpanKind::Connection:
        return dark ? QColor(0x60, 0xc0, 0x80) : QColor(0x2e, 0x8b, 0x3e);
    case SpanKind::Request:
        return dark ? QColor(0x90, 0xd8, 0xa0) : QColor(0x4f, 0xa8, 0x60);
    case SpanKind::ToolCall:
        return dark ? QColor(0xb0, 0x8a, 0xf0) : QColor(0x80, 0x50, 0xc0);
    default:
        return dark ? QColor(0xa0, 0xa0, 0xa0) : QColor(0x80, 0x80, 0x80);
    }
}

// The bar of a span on the trace's time axis, or a diamond for a moment.
class WaterfallDelegate final : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        QStyledItemDelegate::paint(painter, option, index);
        const QPointF range = index.data(TraceModel::RangeRole).toPointF();
        const auto kind = SpanKind(index.data(TraceModel::KindRole).toInt());
        const auto outcome = Outcome(index.data(TraceModel::OutcomeRole).toInt());
        const QRectF area = QRectF(option.rect).adjusted(6, 4, -6, -4);
        const QColor colour = spanColour(kind, outcome, isDark(option.palette));
        const double x0 = area.left() + area.width() * std::clamp(range.x(), 0.0, 1.0);
        const double x1 = area.left() + area.width() * std::clamp(range.y(), 0.0, 1.0);
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        if (index.data(TraceModel::InstantRole).toBool() && x1 - x0 < 3) {
            const double h = area.height() / 2, cy = area.center().y();
            const QPointF diamond[] = {{x0, cy - h}, {x0 + h, cy}, {x0, cy + h}, {x0 - h, cy}};
            painter->setPen(Qt::NoPen);
            painter->setBrush(colour);
            painter->drawPolygon(diamond, 4);
        } else {
            QColor fill = colour;
            if (kind == SpanKind::Run || kind == SpanKind::Sandbox)
                fill.setAlphaF(0.35f); // what holds the rest, quieter
            painter->setPen(Qt::NoPen);
            painter->setBrush(fill);
            painter->drawRoundedRect(QRectF(x0, area.top(), std::max(2.0, x1 - x0), area.height()), 2, 2);
        }
        painter->restore();
    }
};
} // namespace

TraceView::TraceView(QWidget *parent)
    : QWidget(parent)
    , m_model(new TraceModel(this))
    , m_tree(new QTreeView)
    , m_summary(new QLabel)
{
    m_summary->setTextFormat(Qt::PlainText);
    m_summary->setWordWrap(true);
    m_summary->setContentsMargins(6, 4, 6, 4);
    m_summary->setText(
        tr("Select an execution in the list above, or press Ctrl+T in the console, to see its run as a trace."));
    m_tree->setModel(m_model);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setAllColumnsShowFocus(true);
    m_tree->setItemDelegateForColumn(TraceModel::Waterfall, new WaterfallDelegate(m_tree));
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(TraceModel::Span, QHeaderView::Interactive);
    m_tree->header()->setSectionResizeMode(TraceModel::Waterfall, QHeaderView::Stretch);
    m_tree->setColumnWidth(TraceModel::Span, 460);
    m_tree->setColumnWidth(TraceModel::Duration, 90);
    m_tree->setColumnWidth(TraceModel::Start, 90);
    m_tree->setToolTip(QString());
    connect(m_tree, &QTreeView::activated, this,
        [this](const QModelIndex &index) { activateSpan(index.data(TraceModel::SpanRole).toInt()); });
    connect(m_model, &TraceModel::loaded, this, &TraceView::showLoaded);
    connect(m_model, &TraceModel::failed, this,
        [this](const QString &message) { m_summary->setText(tr("Trace unavailable: %1").arg(message)); });

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_summary);
    layout->addWidget(m_tree, 1);
}

void TraceView::showTrace(DaemonClient &client, const QString &sandbox, const QString &run, const QString &title,
    const QHash<QString, QString> &names)
{
    m_summary->setText(tr("Reading the trace of %1…").arg(display::escaped(title, 120)));
    m_model->load(client, sandbox, run, title, names);
}

void TraceView::showLoaded(int events, qint64 elapsedMs)
{
    const trace::Trace &t = m_model->trace();
    int commands = 0, refused = 0, waits = 0;
    for (const trace::Span &s : t.spans) {
        commands += s.kind == SpanKind::Execution ? 1 : 0;
        refused += s.kind == SpanKind::Refused || (s.outcome == Outcome::Denied && s.kind != SpanKind::Wait) ? 1 : 0;
        waits += s.kind == SpanKind::Wait ? 1 : 0;
    }
    QString text = tr("%1 · %2 · %3")
                       .arg(t.spans.value(0).label, display::duration(t.endMs - t.startMs),
                           display::count(commands, tr("command")));
    if (waits)
        text += tr(" · %1 for a person").arg(display::count(waits, tr("wait")));
    if (refused)
        text += tr(" · %1 refused").arg(refused);
    text += tr(" · %1, read in %2").arg(display::count(events, tr("event")), display::duration(elapsedMs));
    if (m_model->isCut())
        text += tr(" · only the first %1 events are shown").arg(TraceModel::kMaxEvents);
    if (commands == 0 && refused == 0)
        text += tr(" · nothing has run here yet");
    m_summary->setText(text);
    // The run and its sandboxes open; what each command started, one level more.
    m_tree->expandToDepth(2);
}

void TraceView::activateSpan(int span)
{
    const auto &spans = m_model->trace().spans;
    if (span < 0 || span >= spans.size() || spans[span].exec == 0)
        return;
    Q_EMIT outputRequested(spans[span].sandbox, spans[span].exec, spans[span].startMs);
}

} // namespace airlock::ui
