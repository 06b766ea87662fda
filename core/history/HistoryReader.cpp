// SPDX-License-Identifier: Apache-2.0
#include "history/HistoryReader.h"

#include <limits>

#include "history/HistorySchema.h"
#include "history/Sql.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <algorithm>
#include <functional>
#include <variant>
#include <vector>

namespace airlock {

namespace {
constexpr qint64 kMaxPageBytes = 1024 * 1024; // of a reply, escaped: far below the 4 MiB frame limit
constexpr const char *kExecutionColumns
    = "e.id, e.sandbox_id, coalesce(s.name, ''), e.exec_id, coalesce(r.name, ''), e.argv_json, e.cwd, "
      "e.env_names_json, e.status, "
      "e.exit_code, e.signal, e.started_ms, e.ended_ms, e.bytes_out, e.bytes_err, e.stored_bytes, e.truncated, "
      "e.output_pruned, "
      "coalesce(e.agent, ''), coalesce(e.decided_by, '') "
      "FROM executions e LEFT JOIN sandboxes s ON s.id = e.sandbox_id LEFT JOIN runs r ON r.id = e.run_id ";

QJsonValue jsonColumn(const sql::Stmt &st, int col)
{
    const QJsonDocument doc = QJsonDocument::fromJson(st.columnText(col).toUtf8());
    return doc.isArray() ? QJsonValue(doc.array()) : doc.isObject() ? QJsonValue(doc.object()) : QJsonValue();
}

QJsonObject executionRow(const sql::Stmt &st)
{
    return {{QStringLiteral("id"), st.columnNumber(0)}, {QStringLiteral("sandbox"), st.columnText(1)},
        {QStringLiteral("sandboxName"), st.columnText(2)}, {QStringLiteral("exec"), st.columnNumber(3)},
        {QStringLiteral("run"), st.columnText(4)}, {QStringLiteral("argv"), jsonColumn(st, 5)},
        {QStringLiteral("cwd"), st.columnText(6)}, {QStringLiteral("envNames"), jsonColumn(st, 7)},
        {QStringLiteral("status"), st.columnText(8)}, {QStringLiteral("exitCode"), st.columnNumber(9)},
        {QStringLiteral("signal"), st.columnNumber(10)}, {QStringLiteral("startedMs"), st.columnNumber(11)},
        {QStringLiteral("endedMs"), st.columnNumber(12)}, {QStringLiteral("bytesOut"), st.columnNumber(13)},
        {QStringLiteral("bytesErr"), st.columnNumber(14)}, {QStringLiteral("storedBytes"), st.columnNumber(15)},
        {QStringLiteral("truncated"), st.columnInt(16) != 0}, {QStringLiteral("outputPruned"), st.columnInt(17) != 0},
        {QStringLiteral("agent"), st.columnText(18)}, {QStringLiteral("decidedBy"), st.columnText(19)}};
}

// The columns a listing may be sorted by, as SQL; anything else sorts by id.
QString sortColumn(const QString &key)
{
    static const QHash<QString, QString> columns{{QStringLiteral("status"), QStringLiteral("e.status")},
        {QStringLiteral("exitCode"), QStringLiteral("e.exit_code")},
        {QStringLiteral("storedBytes"), QStringLiteral("e.stored_bytes")},
        {QStringLiteral("duration"), QStringLiteral("(e.ended_ms - e.started_ms)")},
        {QStringLiteral("sandbox"), QStringLiteral("s.name")},
        {QStringLiteral("agent"), QStringLiteral("coalesce(e.agent, '')")}};
    return columns.value(key, QStringLiteral("e.id"));
}

Error notFound(const QString &what)
{
    return makeError(ErrorCode::NotFound, what);
}

// The user's text as one FTS5 phrase: quotes doubled, so no query syntax gets through.
QString ftsPhrase(const QString &text)
{
    QString quoted = text;
    quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

// Conditions with positional parameters, bound in the order they were added.
struct Where {
    QStringList conditions;
    std::vector<std::variant<QString, qint64>> values;
    void add(const QString &condition, std::initializer_list<std::variant<QString, qint64>> params)
    {
        conditions.append(condition);
        values.insert(values.end(), params);
    }
    QString sql() const
    {
        return conditions.isEmpty() ? QString() : QStringLiteral("WHERE ") + conditions.join(QStringLiteral(" AND "));
    }
    void bind(sql::Stmt &st) const
    {
        for (size_t i = 0; i < values.size(); ++i) {
            if (const auto *text = std::get_if<QString>(&values[i]))
                st.text(int(i) + 1, *text);
            else
                st.integer(int(i) + 1, std::get<qint64>(values[i]));
        }
    }
};
} // namespace

#define OPEN_READER(db)                                                                                                \
    auto opened = sql::open(m_path, true);                                                                             \
    if (!opened)                                                                                                       \
        return opened.error();                                                                                         \
    sqlite3 *db = opened->get()

Result<QJsonObject> HistoryReader::executions(const Query &query) const
{
    OPEN_READER(db);
    Where where;
    if (!query.sandbox.isEmpty())
        where.add(QStringLiteral("(e.sandbox_id = ? OR s.name = ?)"), {query.sandbox, query.sandbox});
    if (!query.run.isEmpty())
        where.add(QStringLiteral("e.run_id = (SELECT id FROM runs WHERE name = ?)"), {query.run});
    if (query.status == QLatin1String("refused")) // what an agent asked for and did not get, however
        where.conditions.append(QStringLiteral("e.status IN ('denied', 'unanswered')"));
    else if (!query.status.isEmpty())
        where.add(QStringLiteral("e.status = ?"), {query.status});
    if (!query.agent.isEmpty())
        where.add(QStringLiteral("e.agent = ?"), {query.agent});
    if (query.exitCode)
        where.add(QStringLiteral("e.exit_code = ?"), {qint64(*query.exitCode)});
    if (query.sinceMs)
        where.add(QStringLiteral("e.started_ms >= ?"), {*query.sinceMs});
    if (query.untilMs)
        where.add(QStringLiteral("e.started_ms < ?"), {*query.untilMs});
    const QString orderColumn = sortColumn(query.sort);
    const bool byId = orderColumn == QLatin1String("e.id");
    if (byId && !query.ascending && query.beforeId > 0)
        where.add(QStringLiteral("e.id < ?"), {query.beforeId});
    if (byId && query.ascending && query.afterId > 0)
        where.add(QStringLiteral("e.id > ?"), {query.afterId});
    if (const QString text = query.text.trimmed(); !text.isEmpty())
        where.add(QStringLiteral("e.id IN (SELECT rowid FROM command_fts WHERE command_fts MATCH ? "
                                 "UNION SELECT c.execution FROM output_fts JOIN chunks c ON c.id = output_fts.rowid "
                                 "WHERE output_fts MATCH ?)"),
            {ftsPhrase(text), ftsPhrase(text)});
    const int limit = std::clamp(query.limit, 1, 10000);
    // By id, pages follow the primary key; by any other column they are offsets into one order
    // (ties broken by id, so a page boundary neither repeats nor skips a row).
    const QString direction = query.ascending ? QStringLiteral("ASC") : QStringLiteral("DESC");
    QString order = QStringLiteral(" ORDER BY %1 %2").arg(orderColumn, direction);
    if (!byId)
        order += QStringLiteral(", e.id %1 LIMIT %2 OFFSET %3")
                     .arg(direction)
                     .arg(limit + 1)
                     .arg(std::max<qint64>(query.offset, 0));
    else
        order += QStringLiteral(" LIMIT %1").arg(limit + 1);
    const QByteArray statement
        = (QStringLiteral("SELECT ") + QLatin1String(kExecutionColumns) + where.sql() + order).toUtf8();
    sql::Stmt st(db, statement.constData());
    if (!st.prepared())
        return sql::error(db, QStringLiteral("querying executions"));
    where.bind(st);
    QJsonArray rows;
    QJsonValue next;
    qint64 bytes = 0; // a page stays well within a frame however long the commands are
    while (st.step()) {
        if (rows.size() == limit || bytes > kMaxPageBytes) {
            next = byId ? rows.last().toObject().value(QStringLiteral("id"))
                        : QJsonValue(double(query.offset + rows.size()));
            break;
        }
        // Escaped JSON may take six bytes per character of argv and cwd.
        bytes += 512 + 6 * qint64(st.columnText(5).size() + st.columnText(6).size());
        rows.append(executionRow(st));
    }
    return QJsonObject{
        {QStringLiteral("executions"), rows}, {byId ? QStringLiteral("next") : QStringLiteral("nextOffset"), next}};
}

bool HistoryReader::isSortKey(const QString &key)
{
    return key.isEmpty() || key == QLatin1String("id") || sortColumn(key) != QLatin1String("e.id");
}

Result<QJsonObject> HistoryReader::events(const EventQuery &query) const
{
    OPEN_READER(db);
    Where where;
    if (!query.sandbox.isEmpty())
        where.add(QStringLiteral("v.sandbox_id = coalesce((SELECT id FROM sandboxes WHERE id = ?), "
                                 "(SELECT id FROM sandboxes WHERE name = ? ORDER BY created_ms DESC LIMIT 1))"),
            {query.sandbox, query.sandbox});
    if (!query.run.isEmpty())
        where.add(QStringLiteral("v.run_id = (SELECT id FROM runs WHERE name = ?)"), {query.run});
    if (query.sandbox.isEmpty() && query.run.isEmpty())
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("name a sandbox or a run whose events to list"));
    if (!query.kinds.isEmpty()) {
        QStringList any;
        for (const QString &kind : query.kinds) {
            any.append(QStringLiteral("substr(v.kind, 1, ?) = ?"));
            where.values.insert(where.values.end(), {qint64(kind.size()), kind.left(100)});
        }
        where.conditions.append(QLatin1Char('(') + any.join(QStringLiteral(" OR ")) + QLatin1Char(')'));
    }
    // One sandbox's events are in time order by their sequence numbers, its primary key: pages
    // follow the key. A run's come from several sandboxes and are ordered by time.
    const bool bySeq = query.run.isEmpty();
    if (!query.after.isEmpty() && bySeq)
        where.add(QStringLiteral("v.seq > ?"), {qint64(query.after.value(QStringLiteral("seq")).toDouble())});
    else if (!query.after.isEmpty())
        where.add(QStringLiteral("(v.time_ms, v.sandbox_id, v.seq) > (?, ?, ?)"),
            {qint64(query.after.value(QStringLiteral("timeMs")).toDouble()),
                query.after.value(QStringLiteral("sandbox")).toString(),
                qint64(query.after.value(QStringLiteral("seq")).toDouble())});
    const int limit = std::clamp(query.limit, 1, 5000);
    const QByteArray statement
        = (QStringLiteral("SELECT v.sandbox_id, v.seq, v.time_ms, v.kind, v.exec_id, v.payload, s.name FROM events v "
                          "LEFT JOIN sandboxes s ON s.id = v.sandbox_id ")
            + where.sql()
            + (bySeq ? QStringLiteral(" ORDER BY v.sandbox_id, v.seq")
                     : QStringLiteral(" ORDER BY v.time_ms, v.sandbox_id, v.seq"))
            + QStringLiteral(" LIMIT %1").arg(limit + 1))
              .toUtf8();
    sql::Stmt st(db, statement.constData());
    if (!st.prepared())
        return sql::error(db, QStringLiteral("querying events"));
    where.bind(st);
    QJsonArray rows;
    QJsonValue next;
    qint64 bytes = 0;
    while (st.step()) {
        if (rows.size() == limit || bytes > kMaxPageBytes) {
            const QJsonObject last = rows.last().toObject();
            next = QJsonObject{{QStringLiteral("timeMs"), last.value(QStringLiteral("timeMs"))},
                {QStringLiteral("sandbox"), last.value(QStringLiteral("sandbox"))},
                {QStringLiteral("seq"), last.value(QStringLiteral("seq"))}};
            break;
        }
        bytes += 128 + 6 * qint64(st.columnText(5).size());
        rows.append(QJsonObject{{QStringLiteral("sandbox"), st.columnText(0)},
            {QStringLiteral("seq"), st.columnNumber(1)}, {QStringLiteral("timeMs"), st.columnNumber(2)},
            {QStringLiteral("kind"), st.columnText(3)}, {QStringLiteral("exec"), st.columnNumber(4)},
            {QStringLiteral("payload"), jsonColumn(st, 5)}, {QStringLiteral("sandboxName"), st.columnText(6)}});
    }
    return QJsonObject{{QStringLiteral("events"), rows}, {QStringLiteral("next"), next}};
}

Result<QJsonObject> HistoryReader::execution(const QString &ref) const
{
    OPEN_READER(db);
    static const QRegularExpression byNumber(QStringLiteral("^(?:#)?(\\d{1,18})$"));
    static const QRegularExpression bySandbox(QStringLiteral("^([^:]{1,200}):(\\d{1,10})$"));
    QByteArray statement = QByteArray("SELECT ") + kExecutionColumns;
    std::function<void(sql::Stmt &)> bind;
    if (const auto m = byNumber.match(ref); m.hasMatch()) {
        statement += "WHERE e.id = ?";
        bind = [id = m.captured(1).toLongLong()](sql::Stmt &st) { st.integer(1, id); };
    } else if (const auto m = bySandbox.match(ref); m.hasMatch()) {
        statement += "WHERE (e.sandbox_id = ?1 OR s.name = ?1) AND e.exec_id = ?2 ORDER BY s.created_ms DESC LIMIT 1";
        bind = [sb = m.captured(1), n = m.captured(2).toLongLong()](sql::Stmt &st) { st.text(1, sb).integer(2, n); };
    } else {
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' names no execution: use its id from 'airlockctl history' (like 42) or "
                           "SANDBOX:N (like build:3)")
                .arg(ref.left(100)));
    }
    sql::Stmt st(db, statement.constData());
    bind(st);
    if (!st.step())
        return notFound(QStringLiteral("no execution %1 in the history").arg(ref.left(100)));
    QJsonObject row = executionRow(st);
    sql::Stmt chunks(db,
        "SELECT count(*), coalesce(max(offset + length(data)) FILTER (WHERE stream = 1), 0), "
        "coalesce(max(offset + length(data)) FILTER (WHERE stream = 2), 0) FROM chunks WHERE execution = ?");
    chunks.integer(1, qint64(row.value(QStringLiteral("id")).toDouble()));
    if (chunks.step())
        row.insert(QStringLiteral("chunks"), chunks.columnNumber(0));
    return row;
}

Result<QJsonObject> HistoryReader::output(qint64 execution, qint64 afterChunk, qint64 maxBytes) const
{
    OPEN_READER(db);
    sql::Stmt st(db, "SELECT id, stream, offset, time_ms, data FROM chunks WHERE execution = ? AND id > ? ORDER BY id");
    st.integer(1, execution).integer(2, afterChunk);
    QJsonArray chunks;
    qint64 bytes = 0;
    QJsonValue next;
    while (st.step()) {
        const QByteArray data = st.columnBlob(4);
        if (!chunks.isEmpty() && bytes + data.size() > maxBytes) {
            next = chunks.last().toObject().value(QStringLiteral("id"));
            break;
        }
        bytes += data.size();
        chunks.append(
            QJsonObject{{QStringLiteral("id"), st.columnNumber(0)}, {QStringLiteral("stream"), st.columnNumber(1)},
                {QStringLiteral("offset"), st.columnNumber(2)}, {QStringLiteral("timeMs"), st.columnNumber(3)},
                {QStringLiteral("data"), QString::fromLatin1(data.toBase64())}});
    }
    return QJsonObject{{QStringLiteral("chunks"), chunks}, {QStringLiteral("next"), next}};
}

Result<QJsonObject> HistoryReader::runs(int limit, qint64 beforeId) const
{
    OPEN_READER(db);
    limit = std::clamp(limit, 1, 10000);
    sql::Stmt st(db,
        "SELECT r.id, r.name, r.created_ms, "
        "(SELECT count(*) FROM sandboxes s WHERE s.run_id = r.id), "
        "(SELECT count(*) FROM executions e WHERE e.run_id = r.id), "
        "max(r.created_ms, coalesce((SELECT max(time_ms) FROM events v WHERE v.run_id = r.id), 0)) "
        "FROM runs r WHERE (?1 = 0 OR r.id < ?1) ORDER BY r.id DESC LIMIT ?2");
    st.integer(1, beforeId).integer(2, limit + 1);
    QJsonArray rows;
    QJsonValue next;
    while (st.step()) {
        if (rows.size() == limit) {
            next = rows.last().toObject().value(QStringLiteral("id"));
            break;
        }
        rows.append(QJsonObject{{QStringLiteral("id"), st.columnNumber(0)}, {QStringLiteral("name"), st.columnText(1)},
            {QStringLiteral("createdMs"), st.columnNumber(2)}, {QStringLiteral("sandboxes"), st.columnNumber(3)},
            {QStringLiteral("executions"), st.columnNumber(4)}, {QStringLiteral("lastMs"), st.columnNumber(5)}});
    }
    return QJsonObject{{QStringLiteral("runs"), rows}, {QStringLiteral("next"), next}};
}

Result<QJsonObject> HistoryReader::exportPage(const QString &run, const QJsonObject &cursor, qint64 maxBytes) const
{
    OPEN_READER(db);
    sql::Stmt findRun(db, "SELECT id, name, created_ms FROM runs WHERE name = ?");
    findRun.text(1, run);
    if (!findRun.step())
        return notFound(QStringLiteral("no run named '%1' in the history (see 'airlockctl runs')").arg(run.left(200)));
    const qint64 runId = findRun.columnInt(0);
    // Phases in order; each pages by an increasing id so that a page boundary loses nothing.
    QString phase = cursor.value(QStringLiteral("phase")).toString(QStringLiteral("run"));
    qint64 after = qint64(cursor.value(QStringLiteral("after")).toDouble(0));
    QString afterSandbox = cursor.value(QStringLiteral("sandbox")).toString(); // events only
    qint64 afterTime = qint64(cursor.value(QStringLiteral("timeMs")).toDouble(0)); // events only
    QJsonArray records;
    qint64 bytes = 0;
    auto full = [&] { return bytes >= maxBytes; };
    auto add = [&](QJsonObject record) {
        bytes += 64 + qint64(QJsonDocument(record).toJson(QJsonDocument::Compact).size());
        records.append(record);
    };
    if (phase == QLatin1String("run")) {
        add({{QStringLiteral("type"), QStringLiteral("run")}, {QStringLiteral("name"), findRun.columnText(1)},
            {QStringLiteral("createdMs"), findRun.columnNumber(2)}});
        phase = QStringLiteral("sandboxes");
        after = 0;
    }
    if (phase == QLatin1String("sandboxes")) {
        sql::Stmt sandboxes(db,
            "SELECT id, name, spec_json, created_ms, deleted_ms, rowid FROM sandboxes WHERE rowid > ?2 AND (run_id = "
            "?1 "
            "OR id IN (SELECT sandbox_id FROM executions WHERE run_id = ?1)) ORDER BY rowid");
        sandboxes.integer(1, runId).integer(2, after);
        bool more = false;
        while (!(more = full()) && sandboxes.step()) {
            after = sandboxes.columnInt(5);
            add({{QStringLiteral("type"), QStringLiteral("sandbox")}, {QStringLiteral("id"), sandboxes.columnText(0)},
                {QStringLiteral("name"), sandboxes.columnText(1)}, {QStringLiteral("spec"), jsonColumn(sandboxes, 2)},
                {QStringLiteral("createdMs"), sandboxes.columnNumber(3)},
                {QStringLiteral("deletedMs"), sandboxes.columnNumber(4)}});
        }
        if (more)
            return QJsonObject{{QStringLiteral("records"), records},
                {QStringLiteral("cursor"),
                    QJsonObject{{QStringLiteral("phase"), phase}, {QStringLiteral("after"), double(after)}}}};
        phase = QStringLiteral("executions");
        after = 0;
    }
    if (phase == QLatin1String("executions")) {
        const QByteArray statement
            = QByteArray("SELECT ") + kExecutionColumns + "WHERE e.run_id = ? AND e.id > ? ORDER BY e.id";
        sql::Stmt st(db, statement.constData());
        st.integer(1, runId).integer(2, after);
        bool more = false;
        while (!(more = full()) && st.step()) {
            QJsonObject row = executionRow(st);
            after = qint64(row.value(QStringLiteral("id")).toDouble());
            row.insert(QStringLiteral("type"), QStringLiteral("execution"));
            add(row);
        }
        if (!more) {
            phase = QStringLiteral("events");
            after = 0;
            afterSandbox.clear();
            afterTime = std::numeric_limits<qint64>::min();
        }
    }
    if (phase == QLatin1String("events") && !full()) {
        // Paged by (time, sandbox, seq): a range of events_by_run_time, as a trace reads them.
        sql::Stmt st(db,
            "SELECT seq, sandbox_id, seq, time_ms, kind, exec_id, payload FROM events WHERE run_id = ?1 "
            "AND (time_ms, sandbox_id, seq) > (?4, ?2, ?3) ORDER BY time_ms, sandbox_id, seq");
        st.integer(1, runId).text(2, afterSandbox).integer(3, after).integer(4, afterTime);
        bool more = false;
        while (!(more = full()) && st.step()) {
            after = st.columnInt(0);
            afterSandbox = st.columnText(1);
            afterTime = st.columnInt(3);
            add({{QStringLiteral("type"), QStringLiteral("event")}, {QStringLiteral("sandbox"), st.columnText(1)},
                {QStringLiteral("seq"), st.columnNumber(2)}, {QStringLiteral("timeMs"), st.columnNumber(3)},
                {QStringLiteral("kind"), st.columnText(4)}, {QStringLiteral("exec"), st.columnNumber(5)},
                {QStringLiteral("payload"), jsonColumn(st, 6)}});
        }
        if (!more) {
            phase = QStringLiteral("output");
            after = 0;
            afterTime = 0;
        }
    }
    if (phase == QLatin1String("output") && !full()) {
        sql::Stmt st(db,
            "SELECT c.id, c.execution, c.stream, c.offset, c.time_ms, c.data FROM chunks c "
            "JOIN executions e ON e.id = c.execution WHERE e.run_id = ? AND c.id > ? ORDER BY c.id");
        st.integer(1, runId).integer(2, after);
        bool more = false;
        while (!(more = full()) && st.step()) {
            after = st.columnInt(0);
            add({{QStringLiteral("type"), QStringLiteral("output")}, {QStringLiteral("execution"), st.columnNumber(1)},
                {QStringLiteral("stream"), st.columnNumber(2)}, {QStringLiteral("offset"), st.columnNumber(3)},
                {QStringLiteral("timeMs"), st.columnNumber(4)},
                {QStringLiteral("data"), QString::fromLatin1(st.columnBlob(5).toBase64())}});
        }
        if (!more)
            phase = QStringLiteral("done");
    }
    const QJsonValue next = phase == QLatin1String("done")
        ? QJsonValue()
        : QJsonValue(QJsonObject{{QStringLiteral("phase"), phase}, {QStringLiteral("after"), double(after)},
            {QStringLiteral("sandbox"), afterSandbox}, {QStringLiteral("timeMs"), double(afterTime)}});
    return QJsonObject{{QStringLiteral("records"), records}, {QStringLiteral("cursor"), next}};
}

Result<qint64> HistoryReader::eventCount(const QString &sandbox) const
{
    OPEN_READER(db);
    sql::Stmt st(
        db, sandbox.isEmpty() ? "SELECT count(*) FROM events" : "SELECT count(*) FROM events WHERE sandbox_id=?");
    if (!sandbox.isEmpty())
        st.text(1, sandbox);
    if (!st.step())
        return sql::error(db, QStringLiteral("counting events"));
    return st.columnInt(0);
}

Result<StoredSandbox> HistoryReader::storedSandbox(const QString &sandboxId) const
{
    OPEN_READER(db);
    StoredSandbox stored;
    sql::Stmt last(db,
        "SELECT (SELECT coalesce(max(seq), 0) FROM events WHERE sandbox_id = ?1), "
        "(SELECT coalesce(max(exec_id), 0) FROM executions WHERE sandbox_id = ?1)");
    last.text(1, sandboxId);
    if (!last.step())
        return sql::error(db, QStringLiteral("reading sandbox %1").arg(sandboxId));
    stored.lastSeq = uint64_t(last.columnInt(0));
    stored.lastExec = uint32_t(last.columnInt(1));
    sql::Stmt running(db, R"sql(
        SELECT x.exec_id, x.argv_json, coalesce(r.name, ''), x.started_ms,
               (SELECT e.payload FROM events e
                WHERE e.sandbox_id = x.sandbox_id AND e.exec_id = x.exec_id AND e.kind = 'exec.started'),
               coalesce((SELECT max(c.offset + length(c.data)) FROM chunks c WHERE c.execution = x.id AND c.stream = 1), 0),
               coalesce((SELECT max(c.offset + length(c.data)) FROM chunks c WHERE c.execution = x.id AND c.stream = 2), 0)
        FROM executions x LEFT JOIN runs r ON r.id = x.run_id
        WHERE x.sandbox_id = ? AND x.status = 'running' ORDER BY x.exec_id)sql");
    running.text(1, sandboxId);
    while (running.step()) {
        StoredExecution e;
        e.id = uint32_t(running.columnInt(0));
        for (const QJsonValue &a : QJsonDocument::fromJson(running.columnText(1).toUtf8()).array())
            e.argv.append(a.toString());
        e.run = running.columnText(2);
        e.startedMs = running.columnInt(3);
        const QJsonObject started = QJsonDocument::fromJson(running.columnText(4).toUtf8()).object();
        if (const QJsonValue timeout = started.value(QStringLiteral("timeoutMs")); timeout.isDouble())
            e.timeoutMs = qint64(timeout.toDouble());
        e.execCheck = started.value(QStringLiteral("execCheck")).toBool();
        e.agent = started.value(QStringLiteral("agent")).toString();
        e.decidedBy = started.value(QStringLiteral("decidedBy")).toString();
        e.approval = started.value(QStringLiteral("approval")).toString();
        e.stored[1] = uint64_t(running.columnInt(5));
        e.stored[2] = uint64_t(running.columnInt(6));
        if (e.execCheck) {
            // The programs it asked a person about that nothing decided since (the same
            // notification recorded again): their processes still wait, unanswered.
            sql::Stmt asks(db, R"sql(
                SELECT a.payload FROM events a
                WHERE a.sandbox_id = ?1 AND a.exec_id = ?2 AND a.kind = 'exec.program'
                  AND json_extract(a.payload, '$.decision') = 'ask'
                  AND json_extract(a.payload, '$.notification') IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM events b
                      WHERE b.sandbox_id = a.sandbox_id AND b.seq > a.seq AND b.exec_id = a.exec_id
                        AND b.kind = 'exec.program'
                        AND json_extract(b.payload, '$.notification') = json_extract(a.payload, '$.notification'))
                ORDER BY a.seq LIMIT 256)sql");
            asks.text(1, sandboxId).integer(2, e.id);
            while (asks.step())
                e.openAsks.append(QJsonDocument::fromJson(asks.columnText(0).toUtf8()).object());
        }
        stored.running.append(e);
    }
    return stored;
}

Result<int> HistoryReader::schemaVersion() const
{
    OPEN_READER(db);
    return history::userVersion(db);
}

Result<QString> HistoryReader::quickCheck() const
{
    OPEN_READER(db);
    sql::Stmt st(db, "PRAGMA quick_check");
    QStringList findings;
    while (st.step())
        findings.append(st.columnText(0));
    if (findings.isEmpty())
        return sql::error(db, QStringLiteral("quick_check"));
    return findings.join(QLatin1Char('\n'));
}

} // namespace airlock
