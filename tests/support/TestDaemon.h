// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/DaemonClient.h"

#include <QByteArray>
#include <QDir>
#include <QProcess>
#include <QProcessEnvironment>
#include <QStringList>
#include <QTemporaryDir>

#include <memory>
#include <sys/types.h>
#include <utility>

namespace airlock::test {

QString binDir(); // where airlockd, airlockctl, airlock-guest and the test helpers are built
QString probePath(); // airlock-probe, visible inside sandboxes at /opt/probe/airlock-probe when mounted
QString probeMount(); // "--mount" value that makes the probe visible at /opt/probe
// The runtime a suite's sandboxes run under: AIRLOCK_TEST_ISOLATION (ctest's *_gvisor runs set
// gvisor), "namespaces" by default. TestDaemon::ctl gives it to every create and run.
QString testIsolation();
inline bool underGvisor()
{
    return testIsolation() == QLatin1String("gvisor");
}

struct CliResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
    bool crashed = false;
    QString describe() const; // for failure messages
};

// Ends whatever sandboxes that outlived a daemon with this data directory still run (by their
// records), so that no test leaves processes behind.
void killLeftSandboxes(const QString &dataDir);
// What a workspaces folder holds for sandboxes: not the spares the daemon makes ahead of time
// (ID, ID.ext4 and the ID.spare that says so) nor the empty filesystems it copies
// (.template-BYTES.ext4).
QStringList sandboxWorkspaces(
    const QString &dir, QDir::Filters filters = QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
// Removes what a daemon with this data directory keeps outside it, should it have been killed.
void removeDaemonLeftovers(const QString &dataDir);
// What names a daemon's things outside its data directory: a hash of that directory.
QString instanceHash(const QString &dataDir);
// Where a root daemon with this data directory keeps its workspaces (/var/lib/airlock/workspaces-HASH).
QString rootWorkspacesDir(const QString &dataDir);
// The sandbox ids of that daemon's host uid claims (/run/airlock/host-uids, root's daemons).
QStringList hostUidClaims(const QString &dataDir);

// A real airlockd in private XDG directories, its own socket, stopped (SIGTERM) on destruction.
// Its sandboxes end with it (--sandboxes-end-with-daemon) unless setSandboxesOutlive(true); what
// outlived it is ended on destruction.
class TestDaemon {
public:
    explicit TestDaemon(QStringList extraArgs = {}, QProcessEnvironment extraEnv = {});
    ~TestDaemon();
    TestDaemon(const TestDaemon &) = delete;
    TestDaemon &operator=(const TestDaemon &) = delete;

    // Runs the daemon through this command (for example {"ip", "netns", "exec", NS}); before start().
    void setLauncher(QStringList prefix) { m_launcher = std::move(prefix); }
    // Sandboxes go on when the daemon stops or dies (airlockd's default); before start().
    void setSandboxesOutlive(bool outlive) { m_outlive = outlive; }
    // Another airlockd binary than the build's (for example airlockd-other-version); before start().
    void setProgram(QString path) { m_program = std::move(path); }
    bool start(); // waits until the socket accepts connections
    void stop(); // SIGTERM and wait; returns once the process is gone
    qint64 pid() const;
    QProcess &process() { return m_process; }
    QString socketPath() const;
    QString rootDir() const; // everything of this daemon's: XDG config, data, state and runtime
    QString runtimeDir() const;
    QString dataDir() const;
    QString configDir() const; // $XDG_CONFIG_HOME/airlock (the user's policy.json goes here)
    QProcessEnvironment environment() const; // for clients of this daemon

    // Runs airlockctl against this daemon (never autostarting another one).
    CliResult ctl(const QStringList &args, const QByteArray &stdinData = {}, int timeoutMs = 60000) const;
    // The same with stderr on a terminal (a pty of its own; stdout stays a pipe): what a person
    // watching sees there, progress lines and all, is `err`.
    CliResult ctlWatched(const QStringList &args, int timeoutMs = 60000) const;
    // Creates a sandbox with these create options; returns its name, or fails the test via QVERIFY2 in caller.
    QString create(const QStringList &options, QString *error = nullptr) const;
    std::unique_ptr<DaemonClient> connect() const;

private:
    QTemporaryDir m_dir;
    QStringList m_args;
    QStringList m_launcher;
    QString m_program;
    QProcessEnvironment m_env;
    QProcess m_process;
    bool m_outlive = false;
};

// Host pids of processes whose command line contains `needle` (scanning /proc).
QList<qint64> pidsWithCommandLine(const QByteArray &needle);
bool waitFor(const std::function<bool()> &condition, int timeoutMs);
// A TCP port on 127.0.0.1 that nothing listened on a moment ago, for a server a test starts.
quint16 freeLoopbackPort();

// An airlockd run as an ordinary user (uid and gid 65534, no groups) in a home of its own, and
// airlockctl run as that user against it: the non-root path, from a test that runs as root.
class UnprivilegedDaemon {
public:
    static constexpr uid_t kUid = 65534;
    UnprivilegedDaemon();
    ~UnprivilegedDaemon(); // stops it
    // Its sandboxes end with it (--sandboxes-end-with-daemon) unless setSandboxesOutlive(true).
    void setSandboxesOutlive(bool outlive) { m_outlive = outlive; }
    bool start(const QStringList &extraArgs = {}); // waits for its socket
    int stop(); // SIGTERM and wait: its exit code
    void kill(); // SIGKILL and wait
    const QTemporaryDir &home() const { return m_home; }
    QProcessEnvironment environment() const { return m_env; } // for its clients
    QString dataDir() const; // $XDG_DATA_HOME/airlock
    // airlockd ARGS as the user (token create): exit code, stdout and stderr together.
    std::pair<int, QByteArray> airlockd(const QStringList &args) const;
    // airlockctl --no-autostart ARGS as the user: exit code, stdout and stderr together.
    std::pair<int, QByteArray> ctl(const QStringList &args, const QByteArray &stdinData = {}) const;
    // The same, started and not waited for (several at once).
    std::unique_ptr<QProcess> startCtl(const QStringList &args) const;
    // A file written in the home, owned by the user, for `cp` (returns its path).
    QString file(const QString &name, const QByteArray &content) const;

private:
    // PROGRAM (of this build's bin) ARGS as the user, started; run to its end with stdinData.
    std::unique_ptr<QProcess> startAsUser(const QString &program, const QStringList &args) const;
    std::pair<int, QByteArray> runAsUser(
        const QString &program, const QStringList &args, const QByteArray &stdinData) const;

    QTemporaryDir m_home;
    QProcessEnvironment m_env;
    QProcess m_process;
    bool m_outlive = false;
};

} // namespace airlock::test
