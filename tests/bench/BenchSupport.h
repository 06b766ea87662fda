// SPDX-License-Identifier: Apache-2.0
// What airlock-bench's measurements share: a result row, medians, spawning a command and timing it.
#pragma once

#include "client/DaemonClient.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QList>
#include <QProcessEnvironment>
#include <QSet>
#include <QStandardPaths>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace airlock::bench {

struct Row {
    QString what;
    double value;
    QString unit;
    QString baselineWhat;
    double baseline;
    QString target;
};

inline double median(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A daemon's environment as posix_spawn takes it.
class EnvironmentBlock {
public:
    explicit EnvironmentBlock(const QProcessEnvironment &env)
    {
        for (const QString &kv : env.toStringList())
            m_storage.append(kv.toLocal8Bit());
        for (QByteArray &kv : m_storage)
            m_pointers.push_back(kv.data());
        m_pointers.push_back(nullptr);
    }
    char **get() const { return const_cast<char **>(m_pointers.data()); }

private:
    QList<QByteArray> m_storage;
    std::vector<char *> m_pointers;
};

// Starts argv with stdin, stdout and stderr on /dev/null; its pid, or -1.
inline pid_t spawnQuiet(const QStringList &args, char **envp = environ)
{
    std::vector<QByteArray> storage;
    std::vector<char *> argv;
    for (const QString &a : args)
        storage.push_back(a.toLocal8Bit());
    for (QByteArray &s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

// Runs argv to completion, quietly; returns wall milliseconds.
inline double spawnMs(const QStringList &args, char **envp = environ)
{
    QElapsedTimer t;
    t.start();
    const pid_t pid = spawnQuiet(args, envp);
    if (pid < 0)
        return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    return double(t.nsecsElapsed()) / 1e6;
}

inline QList<double> repeat(int n, const std::function<double()> &f)
{
    QList<double> v;
    for (int i = 0; i < n; ++i)
        v.append(f());
    return v;
}

// The floor for a sandbox: a bare bubblewrap run of `true` with the host's root read-only.
inline QStringList bareBwrapArgs()
{
    return {QStandardPaths::findExecutable(QStringLiteral("bwrap")), QStringLiteral("--unshare-all"),
        QStringLiteral("--ro-bind"), QStringLiteral("/"), QStringLiteral("/"), QStringLiteral("--dev"),
        QStringLiteral("/dev"), QStringLiteral("--proc"), QStringLiteral("/proc"), QStringLiteral("true")};
}

// The least bubblewrap run that starts a program: /usr only (no recursive bind of the host's root,
// which copies every mount below it), with the namespaces Airlock's runtime makes.
inline QStringList usrOnlyBwrapArgs()
{
    return {QStandardPaths::findExecutable(QStringLiteral("bwrap")), QStringLiteral("--unshare-all"),
        QStringLiteral("--ro-bind"), QStringLiteral("/usr"), QStringLiteral("/usr"), QStringLiteral("--symlink"),
        QStringLiteral("usr/lib"), QStringLiteral("/lib"), QStringLiteral("--symlink"), QStringLiteral("usr/lib64"),
        QStringLiteral("/lib64"), QStringLiteral("--symlink"), QStringLiteral("usr/bin"), QStringLiteral("/bin"),
        QStringLiteral("--proc"), QStringLiteral("/proc"), QStringLiteral("--dev"), QStringLiteral("/dev"),
        QStringLiteral("true")};
}

// `count` bare bubblewrap runs, `parallel` at a time: how many sandboxes per second this kernel
// starts at most, with what is on the host at the time; -1 if a run did not start or failed.
inline double bareBwrapRate(int count, int parallel)
{
    const QStringList args = bareBwrapArgs();
    QElapsedTimer t;
    t.start();
    QList<pid_t> running;
    int launched = 0, failed = 0;
    while (launched < count || !running.isEmpty()) {
        while (launched < count && running.size() < parallel) {
            if (const pid_t pid = spawnQuiet(args); pid > 0)
                running.append(pid);
            else
                ++failed;
            ++launched;
        }
        // Only its own runs are waited for (not the daemon a bench started, say): the oldest.
        int status = 0;
        if (!running.isEmpty()
            && (::waitpid(running.takeFirst(), &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
            ++failed;
    }
    return failed ? -1 : count / (double(t.nsecsElapsed()) / 1e9);
}

// A field of /proc/PID/status ("VmRSS:") or smaps_rollup ("Pss:"), in KiB.
inline qint64 rssKb(qint64 pid, const char *field)
{
    QFile f(QStringLiteral("/proc/%1/%2").arg(pid).arg(QLatin1String(field[0] == 'P' ? "smaps_rollup" : "status")));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith(field))
            return line.mid(qsizetype(strlen(field))).trimmed().split(' ').first().toLongLong();
    return 0;
}

// Waits for the exec.exited event of one execution.
class ExecWaiter : public QObject {
public:
    explicit ExecWaiter(DaemonClient &c)
    {
        connect(&c, &DaemonClient::eventReceived, this, [this](const Event &e) {
            if (e.kind == QLatin1String("exec.exited"))
                m_done.insert(e.exec);
        });
    }
    void wait(uint32_t exec)
    {
        while (!m_done.contains(exec))
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
        m_done.remove(exec);
    }

private:
    QSet<uint32_t> m_done;
};

// cp and writes into a workspace (bench-files.cpp).
int benchCp(QList<Row> &rows, int rounds, bool quick);
int benchDisk(QList<Row> &rows, int rounds, bool quick);
// The gVisor runtime beside bubblewrap's and bare runsc (bench-gvisor.cpp).
int benchGvisor(QList<Row> &rows, int rounds, bool quick);
// N live sandboxes beside one; K streams at once beside K pipelines (bench-scale.cpp).
int benchScale(QList<Row> &rows, int rounds, bool quick);
int benchParallel(QList<Row> &rows, int rounds, bool quick);
int benchBroker(QList<Row> &rows, int rounds, bool quick); // bench-broker.cpp
int benchAgent(QList<Row> &rows, int rounds, bool quick); // bench-agent.cpp
int benchCow(QList<Row> &rows, int rounds, bool quick); // bench-cow.cpp
int benchDaytona(QList<Row> &rows, int rounds, bool quick); // bench-daytona.cpp

} // namespace airlock::bench
