// SPDX-License-Identifier: Apache-2.0
#include "TraceModel.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"

#include <QDateTime>
#include <QJsonArray>
#include <QPointF>
#include <QTextDocument>

namespace airlock::ui {

TraceModel::TraceModel(QObject *parent)
    : QAbstractItemModel(parent)
{
}

void TraceModel::load(DaemonClient &client, const QString &sandbox, const QString &run, const QString &title,
    const QHash<QString, QString> &names)
{
    ++m_generation;
    m_client = &client;
    m_sandbox = run.isEmpty() ? sandbox : QString();
    m_run = run;
    m_title = title;
    m_names = names;
    m_events.clear();
    m_cut = false;
    m_loading = true;
    m_clock.start();
    requestPage(QJsonValue());
}

void TraceModel::requestPage(const QJsonValue &after)
{
    if (!m_client || !m_client->isConnected()) {
        m_loading = false;
        return Q_EMIT failed(tr("not connected"));
    }
    QJsonObject params{{QStringLiteral("limit"), 5000}};
    params.insert(
        m_run.isEmpty() ? QStringLiteral("sandbox") : QStringLiteral("run"), m_run.isEmpty() ? m_sandbox : m_run);
    if (after.isObject())
        params.insert(QStringLiteral("after"), after);
    DaemonApi(*m_client).historyEvents(params).then(
        [self = QPointer<TraceModel>(this), generation = m_generation](Result<QJsonObject> r) {
            if (!self || generation != self->m_generation)
                return; // another trace was asked for meanwhile
            if (!r) {
                self->m_loading = false;
                return Q_EMIT self->failed(r.error().message);
            }
            const QJsonObject &page = *r;
            const QJsonArray rows = page.value(QStringLiteral("events")).toArray();
            for (const QJsonValue &row : rows)
                self->m_events.append(row.toObject());
            const QJsonValue next = page.value(QStringLiteral("next"));
            if (next.isObject() && self->m_events.size() < kMaxEvents)
                return self->requestPage(next);
            self->m_cut = next.isObject();
            self->setTrace(
                trace::Trace::build(self->m_events, self->m_title, QDateTime::currentMSecsSinceEpoch(), self->m_names));
            self->m_events.clear();
            self->m_loading = false;
            Q_EMIT self->loaded(self->m_trace.events, self->m_clock.elapsed());
        });
}

void TraceModel::setTrace(trace::Trace trace)
{
    beginResetModel();
    m_trace = std::move(trace);
    m_rowInParent = QList<int>(m_trace.spans.size(), 0);
    for (const trace::Span &s : std::as_const(m_trace.spans))
        for (int row = 0; row < s.children.size(); ++row)
            m_rowInParent[s.children[row]] = row;
    endResetModel();
}

QModelIndex TraceModel::indexOf(int span, int column) const
{
    if (span < 0 || span >= m_trace.spans.size())
        return {};
    return createIndex(m_rowInParent[span], column, quintptr(span));
}

QModelIndex TraceModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || row < 0 || m_trace.spans.isEmpty())
        return {};
    if (!parent.isValid()) // the root span is the one top-level row
        return row == 0 ? createIndex(0, column, quintptr(0)) : QModelIndex();
    const QList<int> &children = m_trace.spans[int(parent.internalId())].children;
    return row < children.size() ? createIndex(row, column, quintptr(children[row])) : QModelIndex();
}

QModelIndex TraceModel::parent(const QModelIndex &child) const
{
    if (!child.isValid() || child.internalId() == 0)
        return {};
    return indexOf(m_trace.spans[int(child.internalId())].parent);
}

int TraceModel::rowCount(const QModelIndex &parent) const
{
    if (m_trace.spans.isEmpty())
        return 0;
    if (!parent.isValid())
        return 1;
    return parent.column() == 0 ? int(m_trace.spans[int(parent.internalId())].children.size()) : 0;
}

int TraceModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant TraceModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    const int i = int(index.internalId());
    const trace::Span &s = m_trace.spans[i];
    switch (role) {
    case SpanRole:
        return i;
    case KindRole:
        return int(s.kind);
    case OutcomeRole:
        return int(s.outcome);
    case InstantRole:
        return s.instant;
    case RangeRole: {
        const double whole = double(std::max<qint64>(1, m_trace.endMs - m_trace.startMs));
        return QPointF(double(s.startMs - m_trace.startMs) / whole, double(s.endMs - m_trace.startMs) / whole);
    }
    case Qt::ToolTipRole: {
        QString text = s.label;
        if (!s.detail.isEmpty())
            text += QLatin1Char('\n') + s.detail;
        text += QLatin1Char('\n') + display::timestamp(s.startMs, true);
        if (s.exec)
            text += tr("\nDouble-click or press Enter: its output from this moment");
        return Qt::convertFromPlainText(text); // as plain text whatever it holds
    }
    case Qt::TextAlignmentRole:
        return index.column() == Duration || index.column() == Start ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                                                     : QVariant();
    case Qt::DisplayRole:
        switch (index.column()) {
        case Span:
            return s.label;
        case Duration:
            if (s.instant && s.children.isEmpty())
                return QString();
            return s.open ? tr("%1 …").arg(display::duration(s.durationMs())) : display::duration(s.durationMs());
        case Start:
            return tr("+%1").arg(display::duration(s.startMs - m_trace.startMs));
        default:
            return {};
        }
    default:
        return {};
    }
}

QVariant TraceModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole && section == Waterfall)
        return tr("When each span ran, on the run's time axis; a mark is a moment (a program started, a refusal)");
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Span:
        return tr("Span");
    case Duration:
        return tr("Duration");
    case Waterfall:
        return tr("Timeline");
    case Start:
        return tr("Start");
    default:
        return {};
    }
}

} // namespace airlock::ui
