// SPDX-License-Identifier: Apache-2.0
#include "FleetFilter.h"

#include "SandboxModel.h"

namespace airlock::ui {

FleetFilter::FleetFilter(QObject *parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(SandboxModel::SortRole);
    setFilterKeyColumn(-1);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
    setSortCaseSensitivity(Qt::CaseInsensitive);
    setDynamicSortFilter(true);
}

bool FleetFilter::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    if (!sourceParent.isValid()) // a host: shown unless it was taken out of the console
        return !sourceModel()->index(sourceRow, 0).data(SandboxModel::RetiredRole).toBool();
    return QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent);
}

bool FleetFilter::lessThan(const QModelIndex &left, const QModelIndex &right) const
{
    if (!left.parent().isValid()) // hosts: as added, in either direction
        return sortOrder() == Qt::AscendingOrder ? left.row() < right.row() : left.row() > right.row();
    const QVariant l = left.data(SandboxModel::SortRole), r = right.data(SandboxModel::SortRole);
    if (l.userType() == QMetaType::QString)
        return l.toString() < r.toString();
    return QVariant::compare(l, r) == QPartialOrdering::Less;
}

} // namespace airlock::ui
