// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractTableModel>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// A table of JSON rows fetched from the daemon a page at a time as the view scrolls
// (canFetchMore/fetchMore): a million rows cost what the visible ones do. Subclasses say which
// method to call with which parameters and how a row looks; reload() starts over, and an answer to
// an older query is dropped.
class PagedModel : public QAbstractTableModel {
    Q_OBJECT
public:
    bool isLoading() const { return m_loading; }
    QJsonObject row(int row) const { return m_rows.value(row); }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    bool canFetchMore(const QModelIndex &parent = {}) const override;
    void fetchMore(const QModelIndex &parent = {}) override;

Q_SIGNALS:
    void loaded(int rows);               // a page arrived; rows: how many the model holds now
    void failed(const QString &message); // the daemon refused or is gone

protected:
    PagedModel(DaemonClient &client, int columns, QObject *parent);
    void reload();

    virtual bool hasQuery() const { return true; } // false: the model stays empty
    virtual QString method() const = 0;
    virtual QJsonObject parameters(const QJsonValue &cursor) const = 0; // cursor: null for the first page
    virtual QString rowsKey() const = 0;
    virtual QJsonValue cursorOf(const QJsonObject &page) const { return page.value(QStringLiteral("next")); }
    const QJsonObject &at(int row) const { return m_rows.at(row); }
    bool validIndex(const QModelIndex &index) const;

private:
    void request();

    DaemonClient &m_client;
    const int m_columns;
    QList<QJsonObject> m_rows;
    QJsonValue m_next;        // the cursor of the next page; null when all are here
    bool m_loading = false;
    quint64 m_generation = 0; // answers from before the last reset are dropped
};

} // namespace airlock::ui
