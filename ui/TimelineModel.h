// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "PagedModel.h"

#include <QHash>
#include <QStringList>

namespace airlock::ui {

// One run's or one sandbox's recorded events in time order (history.events), a page at a time
// as the view scrolls: executions, approvals, network connections, credential uses, tool calls and
// policy changes on one line each. Categories filter in the daemon's query.
class TimelineModel final : public PagedModel {
    Q_OBJECT
public:
    enum Column { Time, Sandbox, Kind, Details, ColumnCount };
    enum Category {
        Executions = 1,
        Approvals = 2,
        Network = 4,
        Credentials = 8,
        Tools = 16,
        Policy = 32,
        Sandboxes = 64,
        All = 127
    };
    enum Role { EventRole = Qt::UserRole + 1, FullTextRole };

    explicit TimelineModel(DaemonClient &client, QObject *parent = nullptr);

    // What to show: a sandbox (id or name) or a run (name); categories is a mask of Category.
    void show(const QString &sandbox, const QString &run, int categories = All);
    void show(const Source &host, const QString &sandbox, const QString &run,
        int categories = All); // from that host's daemon
    void setCategories(int categories);
    // Names to show for sandbox ids (events carry ids; a person knows names).
    void setSandboxNames(const QHash<QString, QString> &names) { m_names = names; }
    int categories() const { return m_categories; }
    QString sandbox() const { return m_sandbox; }
    QString run() const { return m_run; }
    QJsonObject eventAt(int row) const { return PagedModel::row(row); }

    // One line about an event, for people: untrusted text escaped.
    static QString describe(const QJsonObject &event);
    static QStringList kindPrefixes(int categories);

    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    bool hasQuery() const override { return m_categories != 0 && (!m_sandbox.isEmpty() || !m_run.isEmpty()); }
    DaemonApi::Call<> page(const DaemonApi &api, const QJsonObject &query) const override
    {
        return api.historyEvents(query);
    }
    QJsonObject parameters(const QJsonValue &cursor) const override;
    QString rowsKey() const override { return QStringLiteral("events"); }

    QString m_sandbox, m_run;
    int m_categories = All;
    QHash<QString, QString> m_names;
};

} // namespace airlock::ui
