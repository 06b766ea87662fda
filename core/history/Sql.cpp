// SPDX-License-Identifier: Apache-2.0
#include "history/Sql.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace airlock::sql {

Error error(sqlite3 *db, const QString &what)
{
    const int code = db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
    const QString message = QString::fromUtf8(db ? sqlite3_errmsg(db) : "out of memory");
    // A full disk or an unwritable file is not a bug: the daemon refuses new work until it heals.
    const bool unavailable = (code & 0xff) == SQLITE_FULL || (code & 0xff) == SQLITE_IOERR
        || (code & 0xff) == SQLITE_READONLY || (code & 0xff) == SQLITE_CANTOPEN;
    return makeError(unavailable ? ErrorCode::HistoryUnavailable : ErrorCode::IoError,
        QStringLiteral("history database: %1: %2").arg(what, message));
}

Status exec(sqlite3 *db, const char *statements, const QString &what)
{
    char *err = nullptr;
    if (sqlite3_exec(db, statements, nullptr, nullptr, &err) == SQLITE_OK)
        return Ok{};
    sqlite3_free(err);
    return error(db, what);
}

Status transaction(sqlite3 *db, const std::function<Status()> &work)
{
    Status s = exec(db, "BEGIN IMMEDIATE", QStringLiteral("begin"));
    if (!s)
        return s;
    s = work();
    if (s)
        s = exec(db, "COMMIT", QStringLiteral("commit"));
    if (!s)
        (void)exec(db, "ROLLBACK", QStringLiteral("rollback"));
    return s;
}

namespace {
void indexTextFunction(sqlite3_context *ctx, int, sqlite3_value **argv)
{
    const auto *data = static_cast<const char *>(sqlite3_value_blob(argv[0]));
    const QByteArray text = indexText(QByteArrayView(data, sqlite3_value_bytes(argv[0]))).toUtf8();
    sqlite3_result_text(ctx, text.constData(), int(text.size()), SQLITE_TRANSIENT);
}

void commandTextFunction(sqlite3_context *ctx, int, sqlite3_value **argv)
{
    const auto *json = reinterpret_cast<const char *>(sqlite3_value_text(argv[0]));
    const QByteArray text = commandText(QByteArray(json ? json : "")).toUtf8();
    sqlite3_result_text(ctx, text.constData(), int(text.size()), SQLITE_TRANSIENT);
}
} // namespace

Result<Db> open(const QString &path, bool readOnly)
{
    sqlite3 *raw = nullptr;
    const int flags
        = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(QFile::encodeName(path).constData(), &raw, flags, nullptr);
    Db db(raw);
    if (rc != SQLITE_OK)
        return error(raw, QStringLiteral("cannot open %1").arg(path));
    sqlite3_busy_timeout(raw, kBusyTimeoutMs);
    sqlite3_extended_result_codes(raw, 1);
    const int fn = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
    sqlite3_create_function(raw, "airlock_index_text", 1, fn, nullptr, indexTextFunction, nullptr, nullptr);
    sqlite3_create_function(raw, "airlock_command_text", 1, fn, nullptr, commandTextFunction, nullptr, nullptr);
    return db;
}

Stmt::Stmt(sqlite3 *db, const char *statement)
{
    if (sqlite3_prepare_v2(db, statement, -1, &m_stmt, nullptr) != SQLITE_OK) {
        sqlite3_finalize(m_stmt);
        m_stmt = nullptr;
    }
}

Stmt &Stmt::text(int i, const QString &v)
{
    return utf8(i, v.toUtf8());
}

Stmt &Stmt::utf8(int i, const QByteArray &v)
{
    sqlite3_bind_text(m_stmt, i, v.constData(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
}

Stmt &Stmt::integer(int i, qint64 v)
{
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
}

Stmt &Stmt::nullable(int i, const QJsonValue &v)
{
    if (v.isDouble())
        sqlite3_bind_int64(m_stmt, i, qint64(v.toDouble()));
    else
        sqlite3_bind_null(m_stmt, i);
    return *this;
}

Stmt &Stmt::nullableText(int i, const QString &v)
{
    if (v.isEmpty())
        sqlite3_bind_null(m_stmt, i);
    else
        text(i, v);
    return *this;
}

Stmt &Stmt::json(int i, const QJsonValue &v)
{
    return utf8(i,
        v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                    : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
}

Stmt &Stmt::json(int i, const QJsonObject &v)
{
    return utf8(i, QJsonDocument(v).toJson(QJsonDocument::Compact));
}

Stmt &Stmt::blob(int i, QByteArrayView v)
{
    sqlite3_bind_blob64(m_stmt, i, v.data(), sqlite3_uint64(v.size()), SQLITE_STATIC);
    return *this;
}

bool Stmt::run()
{
    if (!m_stmt)
        return false;
    const int rc = sqlite3_step(m_stmt);
    reset();
    return rc == SQLITE_DONE;
}

bool Stmt::step()
{
    return m_stmt && sqlite3_step(m_stmt) == SQLITE_ROW;
}

void Stmt::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

QString Stmt::columnText(int col) const
{
    return QString::fromUtf8(
        reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, col)), sqlite3_column_bytes(m_stmt, col));
}

QJsonValue Stmt::columnNumber(int col) const
{
    return isNull(col) ? QJsonValue() : QJsonValue(double(sqlite3_column_int64(m_stmt, col)));
}

QByteArray Stmt::columnBlob(int col) const
{
    const auto *p = static_cast<const char *>(sqlite3_column_blob(m_stmt, col));
    return QByteArray(p, sqlite3_column_bytes(m_stmt, col));
}

QString indexText(QByteArrayView raw)
{
    QString text = QString::fromUtf8(raw.data(), raw.size());
    QChar *out = text.data();
    const QChar *in = out, *end = out + text.size();
    while (in < end) {
        const char16_t c = in->unicode();
        if (c == 0x1b) {
            // ESC [ params intermediates final, ESC ] ... BEL/ST, or ESC plus one character.
            ++in;
            if (in < end && in->unicode() == u'[') {
                ++in;
                while (in < end && (in->unicode() < 0x40 || in->unicode() > 0x7e))
                    ++in;
                in += in < end ? 1 : 0;
            } else if (in < end && in->unicode() == u']') {
                while (in < end && in->unicode() != 0x07 && in->unicode() != 0x1b)
                    ++in;
                in += in < end ? 1 : 0;
            } else {
                in += in < end ? 1 : 0;
            }
            *out++ = QLatin1Char(' ');
            continue;
        }
        *out++ = (c < 0x20 && c != u'\n' && c != u'\t') || c == 0x7f ? QChar(QLatin1Char(' ')) : *in;
        ++in;
    }
    text.truncate(out - text.data());
    return text;
}

QString commandText(const QByteArray &argvJson)
{
    QStringList parts;
    for (const QJsonValue &v : QJsonDocument::fromJson(argvJson).array())
        parts.append(v.toString());
    return parts.join(QLatin1Char(' '));
}

} // namespace airlock::sql
