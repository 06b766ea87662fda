// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/DaemonApi.h"

#include <QAbstractTableModel>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QPointer>

#include <vector>

namespace airlock::ui {

// A table of JSON rows fetched from the daemon a page at a time as the view scrolls
// (canFetchMore/fetchMore): a million rows cost what the visible ones do. Subclasses say which
// request to make with which parameters and how a row looks; reload() starts over, and an answer to
// an older query is dropped.
//
// The rows may come from several daemons (one per host) asking each the same query: they are
// merged in the subclass's order (before()), each host's pages already in that order. A row is
// shown only once every host that may still have an earlier one has sent its next page, so the
// merged order is exact however the hosts' pages interleave. A host that fails drops out of the
// merge (unavailable() says which and why); the others go on.
class PagedModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // Where rows come from: a daemon, and its host's name for people.
    struct Source {
        QString name;
        QPointer<DaemonClient> client;
        bool operator==(const Source &other) const;
    };

    void setSources(const QList<Source> &sources); // starts over
    const QList<Source> &sources() const { return m_sources; }
    bool isMerged() const { return m_sources.size() > 1; }
    Source sourceOf(int row) const { return m_sources.value(m_rowSource.value(row, -1)); }
    QStringList unavailable() const { return m_unavailable; } // "host: why", since the last reload

    bool isLoading() const;
    QJsonObject row(int row) const { return m_rows.value(row); }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    bool canFetchMore(const QModelIndex &parent = {}) const override;
    void fetchMore(const QModelIndex &parent = {}) override;

Q_SIGNALS:
    void loaded(int rows); // a page arrived; rows: how many the model holds now
    void failed(const QString &message); // a daemon refused or is gone ("host: why" when merged)

protected:
    PagedModel(DaemonClient &client, int columns, QObject *parent);
    void reload();
    void assignSources(const QList<Source> &sources) { m_sources = sources; } // for the next reload

    virtual bool hasQuery() const { return true; } // false: the model stays empty
    // The request for one page with these parameters.
    virtual DaemonApi::Call<> page(const DaemonApi &api, const QJsonObject &parameters) const = 0;
    virtual QJsonObject parameters(const QJsonValue &cursor) const = 0; // cursor: null for the first page
    virtual QString rowsKey() const = 0;
    virtual QJsonValue cursorOf(const QJsonObject &page) const { return page.value(QStringLiteral("next")); }
    // The merge order: whether row a (from host aHost) comes before row b. Only asked when merging.
    virtual bool before(const QJsonObject &a, const QString &aHost, const QJsonObject &b, const QString &bHost) const;
    const QJsonObject &at(int row) const { return m_rows.at(row); }
    bool validIndex(const QModelIndex &index) const;

private:
    // One source's pages: rows fetched but not yet merged into the table, and where to go on.
    struct Feed {
        QList<QJsonObject> rows;
        qsizetype head = 0;
        QJsonValue next;
        bool started = false, loading = false, failed = false;
        bool drained() const { return head == rows.size(); }
        bool morePages() const { return !failed && (!started || (!next.isNull() && !next.isUndefined())); }
    };
    void pump();
    void request(int source);
    void merge();

    const int m_columns;
    QList<Source> m_sources;
    std::vector<Feed> m_feeds;
    QList<QJsonObject> m_rows;
    QList<int> m_rowSource; // m_sources index of each row
    QStringList m_unavailable;
    quint64 m_generation = 0; // answers from before the last reset are dropped
};

} // namespace airlock::ui
