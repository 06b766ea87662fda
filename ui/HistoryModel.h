// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "PagedModel.h"

namespace airlock::ui {

// The history's executions (history.list), and the agents' commands that were refused before they
// ran, a page at a time as the view scrolls. Filters (sandbox, run, agent, status, full-text) and sorting run in the
// daemon's query; changing either starts over. From several hosts (setSources) the rows are merged by the sorted
// column, then by start time: by default, every host's executions by time, newest first.
class HistoryModel final : public PagedModel {
    Q_OBJECT
public:
    enum Column { Host, Id, Sandbox, Run, Agent, Command, Status, Exit, Started, Duration, Output, ColumnCount };
    static bool sorts(int column); // false: a click on its header changes nothing
    enum Role { ExecutionRole = Qt::UserRole + 1, FullTextRole }; // the whole row; a cell unabridged

    struct Filter {
        QString sandbox, run, status, text; // status may be "refused": denied or unanswered
        QString agent;
        qint64 sinceMs = 0; // started at or after; 0: any time
        qint64 untilMs = 0; // started before; 0: up to now
        bool operator==(const Filter &) const = default;
    };

    explicit HistoryModel(DaemonClient &client, QObject *parent = nullptr);

    void setFilter(const Filter &filter);
    void setQuery(const QList<Source> &hosts, const Filter &filter); // starts over if either changed
    const Filter &filter() const { return m_filter; }
    using PagedModel::reload;
    QJsonObject execution(int row) const { return PagedModel::row(row); }
    int pageSize() const { return m_pageSize; }
    void setPageSize(int rows) { m_pageSize = rows; }

    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

private:
    DaemonApi::Call<> page(const DaemonApi &api, const QJsonObject &query) const override
    {
        return api.historyList(query);
    }
    QJsonObject parameters(const QJsonValue &cursor) const override;
    QString rowsKey() const override { return QStringLiteral("executions"); }
    QJsonValue cursorOf(const QJsonObject &page) const override;
    bool before(const QJsonObject &a, const QString &aHost, const QJsonObject &b, const QString &bHost) const override;

    Filter m_filter;
    bool m_started = false; // a first page has been asked for
    int m_pageSize = 200;
    int m_sortColumn = Id;
    Qt::SortOrder m_sortOrder = Qt::DescendingOrder;
};

} // namespace airlock::ui
