// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStyledItemDelegate>

namespace airlock::ui {

// A cell with a small line of its last samples (SandboxModel::SparklineRole) behind its text:
// how CPU or memory went over the last minute, at a glance.
class SparklineDelegate final : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    static constexpr int kWidth = 60; // pixels of the line, left of the text
};

} // namespace airlock::ui
