// SPDX-License-Identifier: Apache-2.0
#include "PagedModel.h"

#include "client/DaemonClient.h"

#include <QJsonArray>
#include <QPointer>

namespace airlock::ui {

PagedModel::PagedModel(DaemonClient &client, int columns, QObject *parent) : QAbstractTableModel(parent), m_client(client), m_columns(columns) {}

void PagedModel::reload()
{
    beginResetModel();
    m_rows.clear();
    m_next = QJsonValue();
    m_loading = false;
    ++m_generation;
    endResetModel();
    if (hasQuery())
        request();
}

bool PagedModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && !m_loading && !m_next.isNull() && !m_next.isUndefined();
}

void PagedModel::fetchMore(const QModelIndex &parent)
{
    if (canFetchMore(parent))
        request();
}

void PagedModel::request()
{
    m_loading = true;
    m_client.callAsync(method(), parameters(m_next), [self = QPointer<PagedModel>(this), generation = m_generation](Result<QJsonValue> r) {
        if (!self || generation != self->m_generation)
            return; // an answer to a query nobody looks at any more
        self->m_loading = false;
        if (!r) {
            self->m_next = QJsonValue();
            Q_EMIT self->failed(r.error().message);
            return;
        }
        const QJsonObject page = r->toObject();
        const QJsonArray rows = page.value(self->rowsKey()).toArray();
        self->m_next = self->cursorOf(page);
        if (!rows.isEmpty()) {
            const int first = int(self->m_rows.size());
            self->beginInsertRows({}, first, first + int(rows.size()) - 1);
            for (const QJsonValue &row : rows)
                self->m_rows.append(row.toObject());
            self->endInsertRows();
        }
        Q_EMIT self->loaded(int(self->m_rows.size()));
    });
}

int PagedModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int PagedModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_columns;
}

bool PagedModel::validIndex(const QModelIndex &index) const
{
    return checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid);
}

} // namespace airlock::ui
