// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

#include <sqlite3.h>

#include <functional>
#include <memory>

// Thin RAII over the SQLite C API, shared by the history's writer and readers.
namespace airlock::sql {

// How long a statement waits for another connection's lock before it fails with SQLITE_BUSY.
inline constexpr int kBusyTimeoutMs = 5000;

Error error(sqlite3 *db, const QString &what);
// Runs one or more statements without results.
Status exec(sqlite3 *db, const char *sql, const QString &what);
// BEGIN IMMEDIATE, `work`, COMMIT; rolled back when either fails (what the caller keeps beside
// the database is its to put back).
Status transaction(sqlite3 *db, const std::function<Status()> &work);

struct CloseDb {
    void operator()(sqlite3 *db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

// Opens with a busy timeout and the history's SQL functions registered.
Result<Db> open(const QString &path, bool readOnly);

// A prepared statement: bind by index (1-based), step, read columns; resets after each run().
class Stmt {
public:
    Stmt(sqlite3 *db, const char *sql);
    ~Stmt() { sqlite3_finalize(m_stmt); }
    Stmt(const Stmt &) = delete;
    Stmt &operator=(const Stmt &) = delete;

    bool prepared() const { return m_stmt != nullptr; }
    Stmt &text(int i, const QString &v);
    Stmt &utf8(int i, const QByteArray &v);
    Stmt &integer(int i, qint64 v);
    Stmt &nullable(int i, const QJsonValue &v); // a JSON number, or NULL
    Stmt &nullableText(int i, const QString &v); // NULL when empty
    Stmt &json(int i, const QJsonValue &v); // compact JSON text of an object or array
    Stmt &json(int i, const QJsonObject &v);
    Stmt &blob(int i, QByteArrayView v); // not copied: valid until run()/step() is done

    // For statements without rows: steps once, resets. True when it completed.
    bool run();
    // For queries: true while there is a row. Call reset() to reuse.
    bool step();
    void reset();

    QString columnText(int col) const;
    qint64 columnInt(int col) const { return sqlite3_column_int64(m_stmt, col); }
    bool isNull(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
    QJsonValue columnNumber(int col) const; // a number, or null
    QByteArray columnBlob(int col) const;

private:
    sqlite3_stmt *m_stmt = nullptr;
};

// Lossy text of raw output for the search index only: invalid UTF-8 becomes U+FFFD, escape
// sequences and control characters become spaces (so a coloured word is still a word).
QString indexText(QByteArrayView raw);
// The text a command is indexed and shown by: its argv joined with spaces.
QString commandText(const QByteArray &argvJson);

} // namespace airlock::sql
