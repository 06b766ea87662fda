// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QSortFilterProxyModel>

namespace airlock::ui {

// The fleet as the person asks to see it: sandboxes filtered by a text found in any column (name,
// state, network, credentials, agent, run, last output) and sorted on any column by its raw value.
// Hosts always stay, in the order they were added, whatever the sort.
class FleetFilter final : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit FleetFilter(QObject *parent = nullptr);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;
};

} // namespace airlock::ui
