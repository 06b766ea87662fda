// SPDX-License-Identifier: Apache-2.0
#include "daytona/DaytonaStore.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <algorithm>

namespace airlock::daytona {

QJsonObject DaytonaStore::Entry::toJson() const
{
    return {{QStringLiteral("id"), id}, {QStringLiteral("name"), name}, {QStringLiteral("token"), tokenId},
        {QStringLiteral("labels"), labels}, {QStringLiteral("env"), env}, {QStringLiteral("cpu"), cpu},
        {QStringLiteral("memory"), memory}, {QStringLiteral("disk"), disk}, {QStringLiteral("autoStop"), autoStop},
        {QStringLiteral("autoArchive"), autoArchive}, {QStringLiteral("autoDelete"), autoDelete},
        {QStringLiteral("networkAllowList"), networkAllowList}, {QStringLiteral("stopped"), stopped},
        {QStringLiteral("created"), created.toString(Qt::ISODateWithMs)},
        {QStringLiteral("updated"), updated.toString(Qt::ISODateWithMs)},
        {QStringLiteral("stoppedAt"), stoppedAt.toString(Qt::ISODateWithMs)}};
}

std::optional<DaytonaStore::Entry> DaytonaStore::Entry::fromJson(const QJsonObject &json)
{
    Entry e;
    e.id = json.value(QStringLiteral("id")).toString();
    e.name = json.value(QStringLiteral("name")).toString();
    e.tokenId = json.value(QStringLiteral("token")).toString();
    if (e.id.isEmpty() || e.tokenId.isEmpty())
        return std::nullopt;
    e.labels = json.value(QStringLiteral("labels")).toObject();
    e.env = json.value(QStringLiteral("env")).toObject();
    e.cpu = json.value(QStringLiteral("cpu")).toDouble();
    e.memory = json.value(QStringLiteral("memory")).toDouble();
    e.disk = json.value(QStringLiteral("disk")).toDouble();
    e.autoStop = json.value(QStringLiteral("autoStop")).toInt();
    e.autoArchive = json.value(QStringLiteral("autoArchive")).toInt();
    e.autoDelete = json.value(QStringLiteral("autoDelete")).toInt(-1);
    e.networkAllowList = json.value(QStringLiteral("networkAllowList")).toString();
    e.stopped = json.value(QStringLiteral("stopped")).toBool();
    e.created = QDateTime::fromString(json.value(QStringLiteral("created")).toString(), Qt::ISODateWithMs);
    e.updated = QDateTime::fromString(json.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs);
    e.stoppedAt = QDateTime::fromString(json.value(QStringLiteral("stoppedAt")).toString(), Qt::ISODateWithMs);
    return e;
}

Status DaytonaStore::load()
{
    QFile file(m_path);
    if (!file.exists())
        return Ok{};
    if (!file.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot read %1: %2").arg(m_path, file.errorString()));
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parseError);
    if (!doc.isObject())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1 is not the Daytona API's sandbox list (%2): move it away to start afresh")
                .arg(m_path, parseError.errorString()));
    for (const QJsonValue &v : doc.object().value(QStringLiteral("sandboxes")).toArray())
        if (auto e = Entry::fromJson(v.toObject()))
            m_entries.insert(e->id, *e);
    return Ok{};
}

Status DaytonaStore::save() const
{
    QJsonArray list;
    for (const Entry &e : entriesOf({}))
        list.append(e.toJson());
    QSaveFile file(m_path);
    if (!file.open(QIODevice::WriteOnly))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(m_path, file.errorString()));
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    file.write(QJsonDocument(QJsonObject{{QStringLiteral("sandboxes"), list}}).toJson());
    if (!file.commit())
        return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(m_path, file.errorString()));
    return Ok{};
}

Status DaytonaStore::put(const Entry &entry)
{
    m_entries.insert(entry.id, entry);
    return save();
}

Status DaytonaStore::remove(const QString &id)
{
    if (!m_entries.remove(id))
        return Ok{};
    return save();
}

std::optional<DaytonaStore::Entry> DaytonaStore::find(const QString &tokenId, const QString &idOrName) const
{
    if (auto it = m_entries.constFind(idOrName); it != m_entries.cend() && it->tokenId == tokenId)
        return *it;
    // By name: the newest (an older one of that name is a sandbox gone with an earlier daemon).
    std::optional<Entry> found;
    for (const Entry &e : m_entries)
        if (e.tokenId == tokenId && e.name == idOrName && (!found || found->created < e.created))
            found = e;
    return found;
}

QList<DaytonaStore::Entry> DaytonaStore::entriesOf(const QString &tokenId) const
{
    QList<Entry> out;
    for (const Entry &e : m_entries)
        if (tokenId.isEmpty() || e.tokenId == tokenId)
            out.append(e);
    std::sort(out.begin(), out.end(),
        [](const Entry &a, const Entry &b) { return a.created != b.created ? a.created < b.created : a.id < b.id; });
    return out;
}

} // namespace airlock::daytona
