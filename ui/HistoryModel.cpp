// SPDX-License-Identifier: Apache-2.0
#include "HistoryModel.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QJsonArray>
#include <QLocale>
#include <QTextDocument>

namespace airlock::ui {

namespace {
// The daemon's sort key for a column; empty: by id, which is start order.
QString sortKey(int column)
{
    switch (column) {
    case HistoryModel::Sandbox:
        return QStringLiteral("sandbox");
    case HistoryModel::Agent:
        return QStringLiteral("agent");
    case HistoryModel::Status:
        return QStringLiteral("status");
    case HistoryModel::Exit:
        return QStringLiteral("exitCode");
    case HistoryModel::Duration:
        return QStringLiteral("duration");
    case HistoryModel::Output:
        return QStringLiteral("storedBytes");
    default:
        return {};
    }
}

// A row's value in the daemon's sort for a column, ordered as SQLite orders them: null first,
// then numbers, then text. Columns the daemon sorts by id are in start order.
QJsonValue sortValue(const QJsonObject &e, int column)
{
    switch (column) {
    case HistoryModel::Sandbox:
        return e.value(QStringLiteral("sandboxName"));
    case HistoryModel::Agent:
        return e.value(QStringLiteral("agent"));
    case HistoryModel::Status:
        return e.value(QStringLiteral("status"));
    case HistoryModel::Exit:
        return e.value(QStringLiteral("exitCode"));
    case HistoryModel::Output:
        return e.value(QStringLiteral("storedBytes"));
    case HistoryModel::Duration: {
        const QJsonValue ended = e.value(QStringLiteral("endedMs"));
        return ended.isDouble() ? QJsonValue(ended.toDouble() - e.value(QStringLiteral("startedMs")).toDouble())
                                : QJsonValue();
    }
    default:
        return e.value(QStringLiteral("startedMs"));
    }
}

int compareValues(const QJsonValue &a, const QJsonValue &b)
{
    auto rank = [](const QJsonValue &v) { return v.isDouble() ? 1 : v.isString() ? 2 : 0; };
    if (rank(a) != rank(b))
        return rank(a) < rank(b) ? -1 : 1;
    if (a.isDouble())
        return a.toDouble() < b.toDouble() ? -1 : a.toDouble() > b.toDouble() ? 1 : 0;
    return a.isString() ? a.toString().compare(b.toString()) : 0;
}

} // namespace

HistoryModel::HistoryModel(DaemonClient &client, QObject *parent)
    : PagedModel(client, ColumnCount, parent)
{
}

void HistoryModel::setFilter(const Filter &filter)
{
    setQuery(sources(), filter);
}

void HistoryModel::setQuery(const QList<Source> &hosts, const Filter &filter)
{
    if (filter == m_filter && hosts == sources() && m_started)
        return;
    assignSources(hosts);
    m_filter = filter;
    m_started = true;
    reload();
}

bool HistoryModel::sorts(int column)
{
    // Id and Started are start order; Run and Command have no order the daemon keeps.
    return column != Run && column != Command && column >= 0 && column < ColumnCount;
}

void HistoryModel::sort(int column, Qt::SortOrder order)
{
    if (!sorts(column))
        return;
    if (sortKey(column) == sortKey(m_sortColumn) && (column == Host) == (m_sortColumn == Host) && order == m_sortOrder)
        return;
    m_sortColumn = column;
    m_sortOrder = order;
    if (m_started)
        reload();
}

QJsonObject HistoryModel::parameters(const QJsonValue &cursor) const
{
    QJsonObject params{{QStringLiteral("limit"), m_pageSize}};
    for (const auto &[key, value] : {std::pair{"sandbox", &m_filter.sandbox}, {"run", &m_filter.run},
             {"agent", &m_filter.agent}, {"status", &m_filter.status}, {"text", &m_filter.text}})
        if (!value->trimmed().isEmpty())
            params.insert(QLatin1String(key), value->trimmed());
    if (m_filter.sinceMs > 0)
        params.insert(QStringLiteral("sinceMs"), double(m_filter.sinceMs));
    if (m_filter.untilMs > 0)
        params.insert(QStringLiteral("untilMs"), double(m_filter.untilMs));
    const QString key = sortKey(m_sortColumn);
    const bool ascending = m_sortOrder == Qt::AscendingOrder;
    if (!key.isEmpty())
        params.insert(QStringLiteral("sort"), key);
    params.insert(QStringLiteral("order"), ascending ? QStringLiteral("asc") : QStringLiteral("desc"));
    // By id the cursor is the last id seen; by any other column, an offset into that order.
    if (cursor.isDouble())
        params.insert(
            key.isEmpty() ? (ascending ? QStringLiteral("after") : QStringLiteral("before")) : QStringLiteral("offset"),
            cursor);
    return params;
}

QJsonValue HistoryModel::cursorOf(const QJsonObject &page) const
{
    return page.contains(QStringLiteral("nextOffset")) ? page.value(QStringLiteral("nextOffset"))
                                                       : page.value(QStringLiteral("next"));
}

bool HistoryModel::before(const QJsonObject &a, const QString &aHost, const QJsonObject &b, const QString &bHost) const
{
    // By host: each host's rows together, in start order within; otherwise by the column, ties in
    // start order, then by host, then by id.
    int order = m_sortColumn == Host ? aHost.compare(bHost)
                                     : compareValues(sortValue(a, m_sortColumn), sortValue(b, m_sortColumn));
    if (order == 0)
        order = compareValues(sortValue(a, Started), sortValue(b, Started));
    if (order == 0)
        order = aHost.compare(bHost);
    if (order == 0)
        order = compareValues(a.value(QStringLiteral("id")), b.value(QStringLiteral("id")));
    return m_sortOrder == Qt::AscendingOrder ? order < 0 : order > 0;
}

QVariant HistoryModel::data(const QModelIndex &index, int role) const
{
    if (!validIndex(index))
        return {};
    const QJsonObject &e = at(index.row());
    if (role == ExecutionRole)
        return e;
    const QString status = e.value(QStringLiteral("status")).toString();
    if (role == Qt::ForegroundRole && index.column() == Status) {
        if (status == QLatin1String("succeeded"))
            return QBrush(QColor(0x2e, 0x8b, 0x3e));
        if (status != QLatin1String("running"))
            return QBrush(QColor(0xd0, 0x30, 0x30));
        return {};
    }
    if (role == Qt::TextAlignmentRole
        && (index.column() == Id || index.column() == Exit || index.column() == Duration || index.column() == Output))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) { // as plain text whatever it holds: Qt would guess rich text from a '<'
        QVariant text = data(index, FullTextRole);
        // How it was decided: the rule, the person or the timeout (a person's own command: nothing).
        if (const QString decided = e.value(QStringLiteral("decidedBy")).toString();
            index.column() == Status && !decided.isEmpty())
            text = tr("%1 · %2").arg(text.toString(), display::escaped(decided, 300));
        return text.isValid() ? QVariant(Qt::convertFromPlainText(text.toString())) : text;
    }
    if (role != Qt::DisplayRole && role != FullTextRole)
        return {};
    const qint64 started = qint64(e.value(QStringLiteral("startedMs")).toDouble());
    switch (index.column()) {
    case Host:
        return sourceOf(index.row()).name;
    case Id:
        return qint64(e.value(QStringLiteral("id")).toDouble());
    case Sandbox: {
        const QString name = e.value(QStringLiteral("sandboxName")).toString();
        QString label = name.isEmpty() ? e.value(QStringLiteral("sandbox")).toString() : name;
        if (const QJsonValue exec = e.value(QStringLiteral("exec"));
            exec.isDouble()) // a refused command never ran: no number
            label += QLatin1Char(':') + QString::number(qint64(exec.toDouble()));
        return display::escaped(label, 80);
    }
    case Run:
        return display::escaped(e.value(QStringLiteral("run")).toString(), 80);
    case Agent:
        return display::escaped(e.value(QStringLiteral("agent")).toString(), 60); // an agent's choice of name
    case Command:
        return display::commandLine(e.value(QStringLiteral("argv")).toArray(), role == FullTextRole ? 2000 : 200);
    case Status:
        return status == QLatin1String("unanswered") ? tr("unanswered (timed out)") : status;
    case Exit: {
        if (e.value(QStringLiteral("exitCode")).isDouble())
            return e.value(QStringLiteral("exitCode")).toInt();
        if (e.value(QStringLiteral("signal")).isDouble())
            return tr("signal %1").arg(e.value(QStringLiteral("signal")).toInt());
        return {};
    }
    case Started:
        return display::timestamp(started);
    case Duration: {
        const QJsonValue ended = e.value(QStringLiteral("endedMs"));
        return ended.isDouble() ? display::duration(qint64(ended.toDouble()) - started) : QVariant();
    }
    case Output: {
        QString size = QLocale().formattedDataSize(
            qint64(e.value(QStringLiteral("storedBytes")).toDouble()), 1, QLocale::DataSizeTraditionalFormat);
        if (e.value(QStringLiteral("outputPruned")).toBool())
            size += tr(" (pruned)");
        else if (e.value(QStringLiteral("truncated")).toBool())
            size += tr(" (truncated)");
        return size;
    }
    default:
        return {};
    }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole)
        return sorts(section) ? tr("Click to sort by this column")
                              : tr("Not sorted by this column: filter by run or search the commands instead");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Host:
        return tr("Host");
    case Id:
        return tr("Id");
    case Sandbox:
        return tr("Sandbox:exec");
    case Run:
        return tr("Run");
    case Agent:
        return tr("Agent");
    case Command:
        return tr("Command");
    case Status:
        return tr("Status");
    case Exit:
        return tr("Exit");
    case Started:
        return tr("Started");
    case Duration:
        return tr("Duration");
    case Output:
        return tr("Output");
    default:
        return {};
    }
}

} // namespace airlock::ui
