// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/Trace.h"

#include <QAbstractItemModel>
#include <QElapsedTimer>
#include <QPointer>

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// A run's (or a sandbox's) trace as a tree: each span a row under the span that holds it, with its
// duration, a waterfall bar placed on the trace's time axis, and when it began. Loads every event
// of the run from its host's history (history.events, in pages), then builds the spans at once.
class TraceModel final : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Span, Duration, Waterfall, Start, ColumnCount };
    enum Role {
        SpanRole = Qt::UserRole + 1, // its index in trace().spans
        KindRole, // trace::SpanKind
        OutcomeRole, // trace::Outcome
        RangeRole, // QPointF(start, end) as fractions of the trace's span
        InstantRole,
    };
    static constexpr int kMaxEvents = 100'000; // a trace past this shows its first events, and says so

    explicit TraceModel(QObject *parent = nullptr);

    // sandbox: an id (or name); run: a run's name. One of them. title heads the tree.
    void load(DaemonClient &client, const QString &sandbox, const QString &run, const QString &title,
        const QHash<QString, QString> &names = {});
    void setTrace(trace::Trace trace); // what load() ends with; also for tests and benchmarks
    const trace::Trace &trace() const { return m_trace; }
    bool isLoading() const { return m_loading; }
    bool isCut() const { return m_cut; }
    QString sandbox() const { return m_sandbox; }
    QString run() const { return m_run; }
    QModelIndex indexOf(int span, int column = Span) const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

Q_SIGNALS:
    void loaded(int events, qint64 elapsedMs); // from load() to the tree in place
    void failed(const QString &message);

private:
    void requestPage(const QJsonValue &after);

    trace::Trace m_trace;
    QList<int> m_rowInParent;
    QPointer<DaemonClient> m_client;
    QString m_sandbox, m_run, m_title;
    QHash<QString, QString> m_names;
    QList<QJsonObject> m_events;
    quint64 m_generation = 0;
    bool m_loading = false, m_cut = false;
    QElapsedTimer m_clock;
};

} // namespace airlock::ui
