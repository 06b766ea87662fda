// SPDX-License-Identifier: Apache-2.0
#include "TimelineModel.h"

#include "SandboxModel.h"
#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "model/EventKinds.h"

#include <QBrush>
#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTextDocument>

namespace airlock::ui {

TimelineModel::TimelineModel(DaemonClient &client, QObject *parent)
    : PagedModel(client, ColumnCount, parent)
{
}

QStringList TimelineModel::kindPrefixes(int categories)
{
    if ((categories & All) == All)
        return {}; // everything: no condition at all
    static const std::pair<int, QStringList> table[] = {
        {Executions, {event::ExecStarted, event::ExecExited, event::ExecTruncated, event::family::Command}},
        {Approvals, {event::family::Approval}},
        {Network, {event::family::Network}},
        {Credentials, {event::family::Credential}},
        {Tools, {event::family::Tool}},
        {Policy, {event::family::Policy}},
        {Sandboxes, {event::family::Sandbox}},
    };
    // Whatever is shown, a note that events were not recorded (rate-limited) is shown with it.
    QStringList prefixes{event::EventsSuppressed};
    for (const auto &[category, kinds] : table)
        if (categories & category)
            prefixes += kinds;
    return prefixes;
}

void TimelineModel::show(const QString &sandbox, const QString &run, int categories)
{
    m_sandbox = sandbox;
    m_run = run;
    m_categories = categories;
    reload();
}

void TimelineModel::show(const Source &host, const QString &sandbox, const QString &run, int categories)
{
    assignSources({host});
    show(sandbox, run, categories);
}

void TimelineModel::setCategories(int categories)
{
    if (categories == m_categories)
        return;
    m_categories = categories;
    reload();
}

QJsonObject TimelineModel::parameters(const QJsonValue &cursor) const
{
    QJsonObject params{{QStringLiteral("limit"), 500}};
    if (!m_sandbox.isEmpty())
        params.insert(QStringLiteral("sandbox"), m_sandbox);
    if (!m_run.isEmpty())
        params.insert(QStringLiteral("run"), m_run);
    if (const QStringList kinds = kindPrefixes(m_categories); !kinds.isEmpty())
        params.insert(QStringLiteral("kinds"), QJsonArray::fromStringList(kinds));
    if (cursor.isObject())
        params.insert(QStringLiteral("after"), cursor);
    return params;
}

QString TimelineModel::describe(const QJsonObject &event)
{
    const QString kind = event.value(QStringLiteral("kind")).toString();
    const QJsonObject payload = event.value(QStringLiteral("payload")).toObject();
    const QString exec = event.value(QStringLiteral("exec")).isDouble()
        ? QStringLiteral("#%1 ").arg(event.value(QStringLiteral("exec")).toInt())
        : QString();
    if (kind == event::ExecStarted)
        return exec + QStringLiteral("$ ") + display::commandLine(payload.value(QStringLiteral("argv")).toArray(), 400);
    // Everything else: its fields as key=value, untrusted strings escaped, long ones elided.
    QStringList fields;
    for (auto it = payload.begin(); it != payload.end(); ++it) {
        if (it.key() == QLatin1String("exec") && !exec.isEmpty())
            continue; // already in front
        const QJsonValue v = it.value();
        QString text;
        if (v.isString())
            text = display::escaped(v.toString(), 120);
        else if (v.isDouble())
            text = QString::number(v.toDouble(), 'g', 15);
        else if (v.isBool())
            text = v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
        else if (v.isArray() && it.key() == QLatin1String("argv"))
            text = display::commandLine(v.toArray(), 200);
        else if (v.isArray() || v.isObject())
            text = display::escaped(
                QString::fromUtf8(QJsonDocument(v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject()))
                                      .toJson(QJsonDocument::Compact)),
                160);
        else
            continue;
        fields.append(it.key() + QLatin1Char('=') + text);
    }
    return exec + fields.join(QLatin1Char(' '));
}

QVariant TimelineModel::data(const QModelIndex &index, int role) const
{
    if (!validIndex(index))
        return {};
    const QJsonObject &e = at(index.row());
    if (role == EventRole)
        return e;
    const QString kind = e.value(QStringLiteral("kind")).toString();
    if (role == Qt::ForegroundRole && index.column() == Kind) {
        // What was refused stands out; what reached the network is in the network colours.
        if (kind.endsWith(QLatin1String(".denied"))
            || e.value(QStringLiteral("payload")).toObject().value(QStringLiteral("decision")).toString()
                == QLatin1String("deny"))
            return QBrush(QColor(0xd0, 0x30, 0x30));
        if (kind.startsWith(event::family::Network))
            return QBrush(SandboxModel::networkColor(QStringLiteral("allowlist")));
        return {};
    }
    if (role == Qt::ToolTipRole) { // as plain text whatever it holds: Qt would guess rich text from a '<'
        const QVariant text = data(index, FullTextRole);
        return text.isValid() ? QVariant(Qt::convertFromPlainText(text.toString())) : text;
    }
    if (role != Qt::DisplayRole && role != FullTextRole)
        return {};
    switch (index.column()) {
    case Time: {
        const QDateTime t = QDateTime::fromMSecsSinceEpoch(qint64(e.value(QStringLiteral("timeMs")).toDouble()));
        return role == FullTextRole ? display::timestamp(t.toMSecsSinceEpoch(), true)
                                    : t.toString(QStringLiteral("HH:mm:ss.zzz"));
    }
    case Sandbox: {
        const QString id = e.value(QStringLiteral("sandbox")).toString();
        return display::escaped(m_names.value(id, id), 40);
    }
    case Kind:
        return kind;
    case Details:
        return describe(e);
    default:
        return {};
    }
}

QVariant TimelineModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[]
        = {QT_TR_NOOP("Time"), QT_TR_NOOP("Sandbox"), QT_TR_NOOP("Event"), QT_TR_NOOP("Details")};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace airlock::ui
