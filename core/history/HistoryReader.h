// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/StoredSandbox.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace airlock {

// The reading half of the history: every call opens its own read-only connection, so readers never
// wait for the writer (WAL) and are safe from any thread.
class HistoryReader {
public:
    explicit HistoryReader(QString path)
        : m_path(std::move(path))
    {
    }

    struct Query {
        QString sandbox; // id or name
        QString run; // name
        QString status; // or "refused": denied and unanswered
        QString agent; // who asked (a person's own commands have none)
        QString text; // full-text search over commands and output
        std::optional<int> exitCode;
        std::optional<qint64> sinceMs, untilMs; // started within
        qint64 beforeId = 0; // paging, newest first: only executions older than this id
        qint64 afterId = 0; // paging, oldest first: only executions newer than this id
        QString sort; // "" (by id, i.e. start), sandbox, agent, status, exitCode, storedBytes, duration
        bool ascending = false;
        qint64 offset = 0; // paging when sorted by anything but id
        int limit = 50;
    };
    static bool isSortKey(const QString &key);
    // Newest first (or as sorted): {executions: [row…], next: id to pass as beforeId (afterId when
    // ascending), or null; nextOffset instead when sorted by another column}. A row:
    // {id, sandbox, sandboxName, exec, run, argv, cwd, envNames, status, exitCode, signal, startedMs,
    // endedMs, bytesOut, bytesErr, storedBytes, truncated, outputPruned, agent, decidedBy}. A refused
    // command (status denied or unanswered) has no exec: nothing ran.
    Result<QJsonObject> executions(const Query &query) const;
    // One execution by id ("42") or by sandbox and number ("name:3", the newest sandbox of that name).
    Result<QJsonObject> execution(const QString &ref) const;
    // Stored output in the order it was produced: {chunks: [{id, stream, offset, timeMs, data}],
    // next: chunk id to pass as afterChunk, or null when done}; data is base64.
    Result<QJsonObject> output(qint64 execution, qint64 afterChunk, qint64 maxBytes) const;
    // Newest first: {runs: [{id, name, createdMs, lastMs, sandboxes, executions}], next}.
    Result<QJsonObject> runs(int limit, qint64 beforeId) const;
    // One page of a run's export records: {records: [...], cursor: {...} or null when done}.
    Result<QJsonObject> exportPage(const QString &run, const QJsonObject &cursor, qint64 maxBytes) const;

    // A sandbox's or a run's events in time order, optionally only kinds starting with one of
    // `kinds` ("network." or "exec.started"): {events: [{sandbox, seq, timeMs, kind, exec, payload}],
    // next: {timeMs, sandbox, seq} to pass as `after`, or null}.
    struct EventQuery {
        QString sandbox; // id or name (the newest sandbox of that name)
        QString run;
        QStringList kinds;
        QJsonObject after;
        int limit = 500;
    };
    Result<QJsonObject> events(const EventQuery &query) const;

    Result<qint64> eventCount(const QString &sandbox = {}) const;
    // What is stored of a sandbox's stream (by id), for a daemon that takes the sandbox over.
    Result<StoredSandbox> storedSandbox(const QString &sandboxId) const;
    Result<int> schemaVersion() const;
    Result<QString> quickCheck() const; // "ok" or SQLite's findings

private:
    QString m_path;
};

} // namespace airlock
