// SPDX-License-Identifier: Apache-2.0
#include "PagedModel.h"

#include "client/DaemonApi.h"

#include <QJsonArray>

namespace airlock::ui {

PagedModel::PagedModel(DaemonClient &client, int columns, QObject *parent)
    : QAbstractTableModel(parent)
    , m_columns(columns)
    , m_sources{Source{QString(), &client}}
{
}

bool PagedModel::Source::operator==(const Source &other) const
{
    return name == other.name && client == other.client;
}

void PagedModel::setSources(const QList<Source> &sources)
{
    m_sources = sources;
    reload();
}

void PagedModel::reload()
{
    beginResetModel();
    m_rows.clear();
    m_rowSource.clear();
    m_unavailable.clear();
    m_feeds.assign(hasQuery() ? size_t(m_sources.size()) : 0, Feed{});
    ++m_generation;
    endResetModel();
    pump();
}

bool PagedModel::isLoading() const
{
    return std::any_of(m_feeds.begin(), m_feeds.end(), [](const Feed &f) { return f.loading; });
}

bool PagedModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && !isLoading()
        && std::any_of(m_feeds.begin(), m_feeds.end(), [](const Feed &f) { return !f.drained() || f.morePages(); });
}

void PagedModel::fetchMore(const QModelIndex &parent)
{
    if (canFetchMore(parent))
        pump();
}

bool PagedModel::before(const QJsonObject &, const QString &, const QJsonObject &, const QString &) const
{
    return false; // in source order
}

// Asks for the next page of every source that has nothing left to merge but more to come; with
// none outstanding, merges what is here.
void PagedModel::pump()
{
    for (int i = 0; i < int(m_feeds.size()); ++i)
        if (m_feeds[i].drained() && m_feeds[i].morePages() && !m_feeds[i].loading)
            request(i);
    if (!m_feeds.empty() && !isLoading())
        merge();
}

void PagedModel::request(int source)
{
    Feed &feed = m_feeds[size_t(source)];
    const Source &from = m_sources.at(source);
    auto fail = [this, source](const QString &message) {
        Feed &f = m_feeds[size_t(source)];
        f.failed = true;
        f.next = QJsonValue();
        const QString name = m_sources.at(source).name;
        m_unavailable.append(isMerged() ? QStringLiteral("%1: %2").arg(name, message) : message);
        Q_EMIT failed(m_unavailable.last());
    };
    if (!from.client || !from.client->isConnected())
        return fail(tr("not connected"));
    feed.loading = true;
    page(DaemonApi(*from.client), parameters(feed.started ? feed.next : QJsonValue()))
        .then([self = QPointer<PagedModel>(this), generation = m_generation, source, fail](Result<QJsonObject> r) {
            if (!self || generation != self->m_generation)
                return; // an answer to a query nobody looks at any more
            Feed &f = self->m_feeds[size_t(source)];
            f.loading = false;
            f.started = true;
            if (!r)
                fail(r.error().message);
            else {
                const QJsonObject &page = *r;
                f.rows.clear();
                f.head = 0;
                for (const QJsonValue &row : page.value(self->rowsKey()).toArray())
                    f.rows.append(row.toObject());
                f.next = self->cursorOf(page);
            }
            if (!self->isLoading())
                self->merge();
        });
}

// Moves rows into the table in merge order for as long as no source that may still have an
// earlier row has run out of fetched ones.
void PagedModel::merge()
{
    QList<QJsonObject> rows;
    QList<int> sources;
    for (;;) {
        int best = -1;
        bool blocked = false;
        for (int i = 0; i < int(m_feeds.size()) && !blocked; ++i) {
            const Feed &f = m_feeds[size_t(i)];
            if (f.drained()) {
                blocked = f.morePages();
                continue;
            }
            if (best < 0
                || before(f.rows.at(f.head), m_sources.at(i).name,
                    m_feeds[size_t(best)].rows.at(m_feeds[size_t(best)].head), m_sources.at(best).name))
                best = i;
        }
        if (blocked || best < 0)
            break;
        Feed &f = m_feeds[size_t(best)];
        rows.append(f.rows.at(f.head++));
        sources.append(best);
    }
    if (!rows.isEmpty()) {
        const int first = int(m_rows.size());
        beginInsertRows({}, first, first + int(rows.size()) - 1);
        m_rows += rows;
        m_rowSource += sources;
        endInsertRows();
    }
    Q_EMIT loaded(int(m_rows.size()));
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
