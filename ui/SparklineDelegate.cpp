// SPDX-License-Identifier: Apache-2.0
#include "SparklineDelegate.h"

#include "SandboxModel.h"

#include <QPainter>
#include <QPainterPath>

namespace airlock::ui {

void SparklineDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QStyledItemDelegate::paint(painter, option, index);
    const QList<float> samples = index.data(SandboxModel::SparklineRole).value<QList<float>>();
    if (samples.isEmpty())
        return;
    const QRectF area(option.rect.left() + 3, option.rect.top() + 3, kWidth, option.rect.height() - 6);
    // The well the line is drawn in, there from the first sample: a minute's width.
    QColor well = option.palette.text().color();
    well.setAlphaF(0.08f);
    painter->fillRect(area, well);
    if (samples.size() < 2)
        return;
    const double step = area.width() / (SandboxModel::kSparklineSamples - 1);
    // Newest at the right edge, so a new sample moves the line left as on a monitor.
    const double x0 = area.right() - step * double(samples.size() - 1);
    QPainterPath line;
    for (qsizetype i = 0; i < samples.size(); ++i) {
        const QPointF p(
            x0 + step * double(i), area.bottom() - area.height() * double(std::clamp(samples[i], 0.0f, 1.0f)));
        i == 0 ? line.moveTo(p) : line.lineTo(p);
    }
    QPainterPath fill = line;
    fill.lineTo(area.right(), area.bottom());
    fill.lineTo(x0, area.bottom());
    fill.closeSubpath();
    const QColor colour = option.state & QStyle::State_Selected ? option.palette.highlightedText().color()
                                                                : option.palette.highlight().color();
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    QColor faint = colour;
    faint.setAlphaF(0.2f);
    painter->fillPath(fill, faint);
    painter->setPen(QPen(colour, 1.2));
    painter->drawPath(line);
    painter->restore();
}

QSize SparklineDelegate::sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    size.setWidth(size.width() + kWidth + 8);
    return size;
}

} // namespace airlock::ui
