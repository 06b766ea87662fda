// SPDX-License-Identifier: Apache-2.0
// What the history's suites write and read back: events as the daemon appends them, and the
// database looked at directly (tst_history, tst_history_upkeep).
#pragma once

#include "history/HistoryReader.h"
#include "history/HistoryStore.h"

#include <QFile>
#include <QJsonArray>
#include <QVariant>

#include <sqlite3.h>

namespace airlock::test {

inline constexpr qint64 kT0 = 1700000000000;

inline Event makeEvent(
    const QString &sandbox, uint64_t seq, const QString &kind, QJsonObject payload = {}, const QString &run = {})
{
    Event e;
    e.sandbox = sandbox;
    e.seq = seq;
    e.timeMs = kT0 + qint64(seq);
    e.kind = kind;
    e.run = run;
    e.payload = std::move(payload);
    e.exec = uint32_t(e.payload.value(QStringLiteral("exec")).toDouble());
    return e;
}

inline Event output(const QString &sandbox, uint32_t exec, int stream, qint64 offset, const QByteArray &data)
{
    Event e = makeEvent(sandbox, 0, QStringLiteral("exec.output"));
    e.exec = exec;
    e.stream = stream;
    e.offset = offset;
    e.data = data;
    return e;
}

// A sandbox with one execution of argv, in run `run`: created, started (seq 1, 2).
inline void startExecution(
    HistoryStore &h, const QString &sandbox, uint32_t exec, const QStringList &argv, const QString &run = {})
{
    if (exec == 1)
        h.append(makeEvent(sandbox, 1, QStringLiteral("sandbox.created"),
            {{QStringLiteral("name"), QString(sandbox + QStringLiteral("-name"))},
                {QStringLiteral("spec"), QJsonObject{{QStringLiteral("network"), QStringLiteral("none")}}}},
            run));
    h.append(makeEvent(sandbox, 1 + exec * 2 - 1, QStringLiteral("exec.started"),
        {{QStringLiteral("exec"), double(exec)}, {QStringLiteral("argv"), QJsonArray::fromStringList(argv)},
            {QStringLiteral("cwd"), QStringLiteral("/workspace")},
            {QStringLiteral("envNames"), QJsonArray{QStringLiteral("A")}}},
        run));
}

inline void exitExecution(HistoryStore &h, const QString &sandbox, uint32_t exec, qint64 bytesOut, qint64 bytesErr = 0,
    int code = 0, const QString &run = {})
{
    h.append(makeEvent(sandbox, 1 + exec * 2, QStringLiteral("exec.exited"),
        {{QStringLiteral("exec"), double(exec)},
            {QStringLiteral("status"), code ? QStringLiteral("failed") : QStringLiteral("succeeded")},
            {QStringLiteral("exitCode"), code}, {QStringLiteral("signal"), QJsonValue()},
            {QStringLiteral("bytesOut"), double(bytesOut)}, {QStringLiteral("bytesErr"), double(bytesErr)},
            {QStringLiteral("truncated"), false}},
        run));
}

inline QVariant scalar(const QString &path, const char *sql)
{
    sqlite3 *db = nullptr;
    sqlite3_open_v2(QFile::encodeName(path).constData(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt *st = nullptr;
    QVariant v;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
            v = qint64(sqlite3_column_int64(st, 0));
        else if (sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = QByteArray(static_cast<const char *>(sqlite3_column_blob(st, 0)), sqlite3_column_bytes(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

inline int exec(const QString &path, const char *sql)
{
    sqlite3 *db = nullptr;
    sqlite3_open(QFile::encodeName(path).constData(), &db);
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    sqlite3_close(db);
    return rc;
}

inline QJsonArray search(const QString &path, const QString &text)
{
    HistoryReader::Query q;
    q.text = text;
    auto rows = HistoryReader(path).executions(q);
    return rows ? rows->value(QStringLiteral("executions")).toArray()
                : QJsonArray{QJsonValue(QStringLiteral("error: ") + rows.error().message)};
}

// All stored output of an execution, with "[gap N]" where bytes were not kept (per stream).
inline QByteArray replay(const QString &path, qint64 execution, int stream)
{
    QByteArray out;
    qint64 expected = 0, after = 0;
    for (;;) {
        auto page = HistoryReader(path).output(execution, after, 1000);
        if (!page)
            return "error: " + page.error().message.toUtf8();
        for (const QJsonValue &c : page->value(QStringLiteral("chunks")).toArray()) {
            const QJsonObject o = c.toObject();
            if (o.value(QStringLiteral("stream")).toInt() != stream)
                continue;
            const qint64 offset = qint64(o.value(QStringLiteral("offset")).toDouble());
            if (offset != expected)
                out += "[gap " + QByteArray::number(offset - expected) + "]";
            const QByteArray data = QByteArray::fromBase64(o.value(QStringLiteral("data")).toString().toLatin1());
            out += data;
            expected = offset + data.size();
        }
        if (page->value(QStringLiteral("next")).isNull())
            return out;
        after = qint64(page->value(QStringLiteral("next")).toDouble());
    }
}

} // namespace airlock::test
