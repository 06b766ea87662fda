// SPDX-License-Identifier: Apache-2.0
#include "HistoryModel.h"

#include "client/DaemonClient.h"
#include "model/DisplayText.h"

#include <QBrush>
#include <QTextDocument>
#include <QColor>
#include <QDateTime>
#include <QJsonArray>
#include <QLocale>

namespace airlock::ui {

namespace {
// The daemon's sort key for a column; empty: by id, which is start order.
QString sortKey(int column)
{
    switch (column) {
    case HistoryModel::Sandbox: return QStringLiteral("sandbox");
    case HistoryModel::Status: return QStringLiteral("status");
    case HistoryModel::Exit: return QStringLiteral("exitCode");
    case HistoryModel::Duration: return QStringLiteral("duration");
    case HistoryModel::Output: return QStringLiteral("storedBytes");
    default: return {};
    }
}

QString duration(qint64 ms)
{
    if (ms < 1000)
        return QStringLiteral("%1 ms").arg(ms);
    if (ms < 60000)
        return QStringLiteral("%1 s").arg(double(ms) / 1000, 0, 'f', 1);
    return QStringLiteral("%1 min %2 s").arg(ms / 60000).arg(ms / 1000 % 60);
}
} // namespace

HistoryModel::HistoryModel(DaemonClient &client, QObject *parent) : PagedModel(client, ColumnCount, parent) {}

void HistoryModel::setFilter(const Filter &filter)
{
    if (filter == m_filter && m_started)
        return;
    m_filter = filter;
    m_started = true;
    reload();
}

void HistoryModel::sort(int column, Qt::SortOrder order)
{
    if (sortKey(column) == sortKey(m_sortColumn) && order == m_sortOrder)
        return;
    m_sortColumn = column;
    m_sortOrder = order;
    if (m_started)
        reload();
}

QJsonObject HistoryModel::parameters(const QJsonValue &cursor) const
{
    QJsonObject params{{QStringLiteral("limit"), m_pageSize}};
    for (const auto &[key, value] : {std::pair{"sandbox", &m_filter.sandbox}, {"run", &m_filter.run}, {"status", &m_filter.status}, {"text", &m_filter.text}})
        if (!value->trimmed().isEmpty())
            params.insert(QLatin1String(key), value->trimmed());
    if (m_filter.sinceMs > 0)
        params.insert(QStringLiteral("sinceMs"), double(m_filter.sinceMs));
    const QString key = sortKey(m_sortColumn);
    const bool ascending = m_sortOrder == Qt::AscendingOrder;
    if (!key.isEmpty())
        params.insert(QStringLiteral("sort"), key);
    params.insert(QStringLiteral("order"), ascending ? QStringLiteral("asc") : QStringLiteral("desc"));
    // By id the cursor is the last id seen; by any other column, an offset into that order.
    if (cursor.isDouble())
        params.insert(key.isEmpty() ? (ascending ? QStringLiteral("after") : QStringLiteral("before")) : QStringLiteral("offset"), cursor);
    return params;
}

QJsonValue HistoryModel::cursorOf(const QJsonObject &page) const
{
    return page.contains(QStringLiteral("nextOffset")) ? page.value(QStringLiteral("nextOffset")) : page.value(QStringLiteral("next"));
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
    if (role == Qt::TextAlignmentRole && (index.column() == Id || index.column() == Exit || index.column() == Duration || index.column() == Output))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) { // as plain text whatever it holds: Qt would guess rich text from a '<'
        const QVariant text = data(index, FullTextRole);
        return text.isValid() ? QVariant(Qt::convertFromPlainText(text.toString())) : text;
    }
    if (role != Qt::DisplayRole && role != FullTextRole)
        return {};
    const qint64 started = qint64(e.value(QStringLiteral("startedMs")).toDouble());
    switch (index.column()) {
    case Id: return qint64(e.value(QStringLiteral("id")).toDouble());
    case Sandbox: {
        const QString name = e.value(QStringLiteral("sandboxName")).toString();
        const QString label = QStringLiteral("%1:%2").arg(name.isEmpty() ? e.value(QStringLiteral("sandbox")).toString() : name)
                                  .arg(qint64(e.value(QStringLiteral("exec")).toDouble()));
        return display::escaped(label, 80);
    }
    case Run: return display::escaped(e.value(QStringLiteral("run")).toString(), 80);
    case Command:
        return display::commandLine(e.value(QStringLiteral("argv")).toArray(), role == FullTextRole ? 2000 : 200);
    case Status: return status;
    case Exit: {
        if (e.value(QStringLiteral("exitCode")).isDouble())
            return e.value(QStringLiteral("exitCode")).toInt();
        if (e.value(QStringLiteral("signal")).isDouble())
            return tr("signal %1").arg(e.value(QStringLiteral("signal")).toInt());
        return {};
    }
    case Started: return QDateTime::fromMSecsSinceEpoch(started).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
    case Duration: {
        const QJsonValue ended = e.value(QStringLiteral("endedMs"));
        return ended.isDouble() ? duration(qint64(ended.toDouble()) - started) : QVariant();
    }
    case Output: {
        QString size = QLocale().formattedDataSize(qint64(e.value(QStringLiteral("storedBytes")).toDouble()), 1, QLocale::DataSizeTraditionalFormat);
        if (e.value(QStringLiteral("outputPruned")).toBool())
            size += tr(" (pruned)");
        else if (e.value(QStringLiteral("truncated")).toBool())
            size += tr(" (truncated)");
        return size;
    }
    default: return {};
    }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Id: return tr("Id");
    case Sandbox: return tr("Sandbox:exec");
    case Run: return tr("Run");
    case Command: return tr("Command");
    case Status: return tr("Status");
    case Exit: return tr("Exit");
    case Started: return tr("Started");
    case Duration: return tr("Duration");
    case Output: return tr("Output");
    default: return {};
    }
}

} // namespace airlock::ui
