// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QString>

#include <optional>

namespace airlock::daytona {

// What the Daytona API knows of its sandboxes beyond what the engine keeps: the labels and
// environment they were made with, the resources asked for, the intervals, who made them (the
// token) and whether the SDK stopped them. Kept in one 0600 JSON file in the daemon's data folder,
// written whole (beside, then renamed) on every change, so that a restarted daemon still lists
// and labels them.
class DaytonaStore {
public:
    struct Entry {
        QString id, name, tokenId;
        QJsonObject labels, env; // strings
        double cpu = 0, memory = 0, disk = 0; // as asked: cores, GiB, GiB (0: not asked)
        int autoStop = 0, autoArchive = 0, autoDelete = -1; // minutes, as Daytona counts them
        QString networkAllowList; // empty: no network (Daytona's networkBlockAll)
        bool stopped = false; // the SDK stopped it: commands are refused until it starts it
        QDateTime created, updated, stoppedAt;

        QJsonObject toJson() const;
        static std::optional<Entry> fromJson(const QJsonObject &json);
    };

    explicit DaytonaStore(QString path)
        : m_path(std::move(path))
    {
    }
    Status load(); // a missing file is an empty store
    Status put(const Entry &entry);
    Status remove(const QString &id);
    // The entry of a sandbox made through token `tokenId`, by id or name.
    std::optional<Entry> find(const QString &tokenId, const QString &idOrName) const;
    QList<Entry> entriesOf(const QString &tokenId) const; // oldest first

private:
    Status save() const;

    QString m_path;
    QHash<QString, Entry> m_entries; // by id
};

} // namespace airlock::daytona
