// SPDX-License-Identifier: Apache-2.0
// Small helpers the integration suites share: argument lists, JSON output, the daemon's /proc.
#pragma once

#include "TestDaemon.h"
#include "history/Sql.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>

#include <csignal>
#include <sys/stat.h>

namespace airlock::test {

inline QString q(const char *s)
{
    return QString::fromUtf8(s);
}
inline QString q(const QString &s)
{
    return s;
}
template<typename... T> QStringList args(const T &...a)
{
    return QStringList{q(a)...};
}

inline QByteArray native(const QString &path)
{
    return QFile::encodeName(path);
}

inline bool writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}
// A file with its folders made, and its permissions as given.
inline bool putFile(const QString &path, const QByteArray &data, int mode = 0644)
{
    QDir().mkpath(QFileInfo(path).path());
    return writeFile(path, data) && ::chmod(QFile::encodeName(path).constData(), mode_t(mode)) == 0;
}
inline QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline QJsonObject jsonObject(const QByteArray &out)
{
    return QJsonDocument::fromJson(out).object();
}

inline QJsonArray jsonArray(const QByteArray &out)
{
    return QJsonDocument::fromJson(out).array();
}

// A field of /proc/PID/status ("VmRSS:", "Uid:"), as its first number; -1 when unreadable.
inline qint64 procStatusField(qint64 pid, const QByteArray &field)
{
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith(field))
            return line.mid(field.size()).simplified().split(' ').value(0).toLongLong();
    return -1;
}

// CPU a process has used (user + system, /proc/PID/stat), in clock ticks (1/100 s); -1 when unreadable.
inline qint64 cpuTicks(qint64 pid)
{
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return -1;
    const QList<QByteArray> fields = stat.readAll().split(')').last().split(' ');
    return fields.value(12).toLongLong() + fields.value(13).toLongLong(); // utime + stime
}

// `airlockctl exec SANDBOX -n [options] -- command` against a test daemon.
inline CliResult execIn(const TestDaemon &d, const QString &sandbox, const QStringList &command,
    const QStringList &options = {}, int timeoutMs = 60000)
{
    return d.ctl(args("exec", sandbox, "-n") + options + args("--") + command, {}, timeoutMs);
}

inline QJsonObject sandboxInfo(const TestDaemon &d, const QString &sandbox)
{
    return jsonObject(d.ctl(args("info", "--json", sandbox)).out);
}

// The payloads of the events of one kind the daemon has stored, by sandbox, in order.
inline QList<QJsonObject> storedEvents(const TestDaemon &d, const QString &kind)
{
    QList<QJsonObject> out;
    auto db = sql::open(d.dataDir() + QStringLiteral("/history.db"), true);
    if (!db)
        return out;
    sql::Stmt st(db->get(), "SELECT payload FROM events WHERE kind = ? ORDER BY sandbox_id, seq");
    st.text(1, kind);
    while (st.step())
        out.append(QJsonDocument::fromJson(st.columnText(0).toUtf8()).object());
    return out;
}

// What waits for a person now, as `airlockctl approvals --json` lists it (nonces included).
inline QJsonArray pendingApprovals(const TestDaemon &d)
{
    return jsonObject(d.ctl(args("approvals", "--json")).out).value(QStringLiteral("approvals")).toArray();
}

// The oldest request waiting for a person, once there is one; empty after timeoutMs.
inline QJsonObject waitForApproval(const TestDaemon &d, int timeoutMs = 10000)
{
    QJsonObject found;
    waitFor(
        [&] {
            found = pendingApprovals(d).first().toObject();
            return !found.isEmpty();
        },
        timeoutMs);
    return found;
}

inline QString octalMode(const QString &path)
{
    struct stat st { };
    if (::lstat(native(path).constData(), &st) != 0)
        return QStringLiteral("missing");
    return QString::number(st.st_mode & 07777, 8);
}

// Alive and not a zombie waiting for a parent that is not us.
inline bool processRunning(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return false;
    const QByteArray stat = f.readAll();
    const qsizetype close = stat.lastIndexOf(')');
    return close > 0 && stat.mid(close + 2, 1) != "Z";
}

// Kills a daemon we did not start ourselves (autostart) if the test ends early.
struct KillOnExit {
    qint64 pid = 0;
    ~KillOnExit()
    {
        if (pid > 0)
            ::kill(pid_t(pid), SIGKILL);
    }
};

} // namespace airlock::test
