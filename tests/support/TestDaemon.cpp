// SPDX-License-Identifier: Apache-2.0
#include "TestDaemon.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLocalSocket>
#include <QScopeGuard>
#include <QTcpServer>
#include <QThread>

#include "sandbox/SandboxRecord.h"
#include "sandbox/WorkspaceVolume.h"

#include <csignal>
#include <fcntl.h>
#include <pty.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock::test {

QString binDir()
{
    return QStringLiteral(AIRLOCK_TEST_BIN_DIR);
}

QString probePath()
{
    return binDir() + QStringLiteral("/airlock-probe");
}

QString probeMount()
{
    return binDir() + QStringLiteral(":/opt/probe:ro");
}

QString CliResult::describe() const
{
    return QStringLiteral("exit %1%2\nstdout: %3\nstderr: %4")
        .arg(exitCode)
        .arg(crashed ? QStringLiteral(" (crashed)") : QString())
        .arg(QString::fromUtf8(out.left(2000)), QString::fromUtf8(err.left(2000)));
}

TestDaemon::TestDaemon(QStringList extraArgs, QProcessEnvironment extraEnv)
    : m_args(std::move(extraArgs))
    , m_env(QProcessEnvironment::systemEnvironment())
{
    m_env.remove(QStringLiteral("AIRLOCK_SOCKET"));
    for (const char *sub : {"run", "data", "state"}) {
        QDir().mkpath(m_dir.filePath(QLatin1String(sub)));
        QFile::setPermissions(m_dir.filePath(QLatin1String(sub)),
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    }
    // Traversable (not listable) by others: bubblewrap, run as a root daemon's sandbox uid, resolves
    // the path of whatever a test mounts from in here.
    QFile::setPermissions(m_dir.path(),
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner | QFileDevice::ExeGroup
            | QFileDevice::ExeOther);
    m_env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_dir.filePath(QStringLiteral("run")));
    m_env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("data")));
    m_env.insert(QStringLiteral("XDG_STATE_HOME"), m_dir.filePath(QStringLiteral("state")));
    m_env.insert(
        QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config"))); // never the real user's policy
#if defined(__SANITIZE_ADDRESS__)
    // A small quarantine keeps the daemon's resident size meaningful for the tests that measure it.
    m_env.insert(QStringLiteral("ASAN_OPTIONS"), QStringLiteral("detect_leaks=0:quarantine_size_mb=8"));
#endif
    for (const QString &key : extraEnv.keys())
        m_env.insert(key, extraEnv.value(key));
}

TestDaemon::~TestDaemon()
{
    stop();
    killLeftSandboxes(dataDir());
    removeDaemonLeftovers(dataDir());
}

QStringList sandboxWorkspaces(const QString &dir, QDir::Filters filters)
{
    const QDir d(dir);
    QStringList spares;
    for (const QString &marker : d.entryList({QStringLiteral("*.spare")}, QDir::Files | QDir::Hidden))
        spares << marker << marker.chopped(6) << marker.chopped(6) + QStringLiteral(".ext4");
    QStringList out;
    for (const QString &entry : d.entryList(filters))
        if (!spares.contains(entry) && !entry.startsWith(QLatin1String(".template-")))
            out << entry;
    return out;
}

QString instanceHash(const QString &dataDir)
{
    return QString::fromLatin1(
        QCryptographicHash::hash(QFile::encodeName(dataDir), QCryptographicHash::Sha256).toHex().left(12));
}

QString rootWorkspacesDir(const QString &dataDir)
{
    return QStringLiteral("/var/lib/airlock/workspaces-") + instanceHash(dataDir);
}

namespace {
const QString kHostUidClaims = QStringLiteral("/run/airlock/host-uids");
// A claim's file names its daemon's hash, then the sandbox's id: "HASH ID\n".
QByteArray claimOf(const QString &path, const QString &hash)
{
    QFile claim(path);
    const QByteArray text = claim.open(QIODevice::ReadOnly) ? claim.read(256) : QByteArray();
    return text.startsWith(QByteArray(hash.toLatin1() + ' ')) ? text.mid(hash.size() + 1).trimmed() : QByteArray();
}
} // namespace

QStringList hostUidClaims(const QString &dataDir)
{
    QStringList ids;
    const QDir claims(kHostUidClaims);
    for (const QString &uid : claims.entryList(QDir::Files))
        if (const QByteArray id = claimOf(claims.filePath(uid), instanceHash(dataDir)); !id.isEmpty())
            ids.append(QString::fromLatin1(id));
    return ids;
}

void removeDaemonLeftovers(const QString &dataDir)
{
    // Named by a hash of the data directory: the guest's copy (a killed daemon leaves it), a root
    // daemon's workspaces, kept ones too, and its claims of host uids (of sandboxes that outlived it).
    const QString hash = instanceHash(dataDir);
    QFile::remove(QStringLiteral("/dev/shm/.airlock-guest-") + hash);
    if (::geteuid() != 0)
        return;
    const QDir workspaces(rootWorkspacesDir(dataDir));
    for (const QString &ws : workspaces.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        volume::removeWorkspace(workspaces.filePath(ws)); // unmounted first: never emptied through its mount
    // The folder's own mount (volume::bindOnItself), which airlockd keeps across its restarts.
    while (volume::isMountRoot(workspaces.path())
        && ::umount2(QFile::encodeName(workspaces.path()).constData(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) { }
    for (const char *kind : {"/var/lib/airlock/workspaces-", "/var/lib/airlock/kept-"})
        QDir(QLatin1String(kind) + hash).removeRecursively();
    const QDir claims(kHostUidClaims);
    for (const QString &uid : claims.entryList(QDir::Files))
        if (!claimOf(claims.filePath(uid), hash).isEmpty())
            QFile::remove(claims.filePath(uid));
}

void killLeftSandboxes(const QString &dataDir)
{
    for (const auto &[name, record] : SandboxRecords(dataDir + QStringLiteral("/sandboxes")).readAll()) {
        if (!record)
            continue;
        for (const ProcessRef &p : {record->init, record->bwrap})
            if (const int fd = p.open(); fd >= 0) {
                ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
                ::close(fd);
            }
    }
}

QString TestDaemon::rootDir() const
{
    return m_dir.path();
}

QString TestDaemon::runtimeDir() const
{
    return m_dir.filePath(QStringLiteral("run/airlock"));
}

QString TestDaemon::configDir() const
{
    return m_dir.filePath(QStringLiteral("config/airlock"));
}

QString TestDaemon::dataDir() const
{
    return m_dir.filePath(QStringLiteral("data/airlock"));
}

QString TestDaemon::socketPath() const
{
    return runtimeDir() + QStringLiteral("/airlockd.sock");
}

QProcessEnvironment TestDaemon::environment() const
{
    QProcessEnvironment env = m_env;
    env.insert(QStringLiteral("AIRLOCK_SOCKET"), socketPath());
    return env;
}

bool TestDaemon::start()
{
    m_process.setProcessEnvironment(m_env);
    QStringList command = m_launcher
        + QStringList{m_program.isEmpty() ? binDir() + QStringLiteral("/airlockd") : m_program,
            QStringLiteral("--socket"), socketPath()}
        + m_args;
    if (!m_outlive)
        command.append(QStringLiteral("--sandboxes-end-with-daemon"));
    if (qEnvironmentVariableIsSet("AIRLOCK_TEST_DAEMON_VERBOSE")) // for a failure's story
        command.append(QStringLiteral("--verbose"));
    m_process.setProgram(command.constFirst());
    m_process.setArguments(command.mid(1));
    m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    m_process.start();
    if (!m_process.waitForStarted(5000))
        return false;
    return waitFor(
               [this] {
                   if (m_process.state() != QProcess::Running)
                       return true;
                   QLocalSocket s;
                   s.connectToServer(socketPath());
                   return s.waitForConnected(100);
               },
               10000)
        && m_process.state() == QProcess::Running;
}

void TestDaemon::stop()
{
    if (m_process.state() == QProcess::NotRunning)
        return;
    m_process.terminate();
    if (!m_process.waitForFinished(15000)) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

qint64 TestDaemon::pid() const
{
    return m_process.processId();
}

QString testIsolation()
{
    const QString isolation = qEnvironmentVariable("AIRLOCK_TEST_ISOLATION");
    return isolation.isEmpty() ? QStringLiteral("namespaces") : isolation;
}

namespace {
// A suite run again under another runtime (AIRLOCK_TEST_ISOLATION=gvisor, as ctest's *_gvisor runs): every
// create and run that does not name one gets it.
QStringList withTestIsolation(QStringList args)
{
    const QString isolation = qEnvironmentVariable("AIRLOCK_TEST_ISOLATION");
    if (isolation.isEmpty() || args.contains(QStringLiteral("--isolation")))
        return args;
    for (qsizetype i = 0; i < args.size(); ++i)
        if (args[i] == QLatin1String("create") || args[i] == QLatin1String("run")) {
            args.insert(i + 1, QStringLiteral("--isolation"));
            args.insert(i + 2, isolation);
            break;
        } else if (!args[i].startsWith(QLatin1Char('-')) && (i == 0 || args[i - 1] != QLatin1String("--agent"))) {
            break; // another command
        }
    return args;
}
} // namespace

CliResult TestDaemon::ctl(const QStringList &args, const QByteArray &stdinData, int timeoutMs) const
{
    QProcess p;
    p.setProcessEnvironment(environment());
    p.start(binDir() + QStringLiteral("/airlockctl"),
        QStringList{QStringLiteral("--no-autostart")} + withTestIsolation(args));
    CliResult r;
    if (!p.waitForStarted(5000))
        return r;
    if (!stdinData.isEmpty())
        p.write(stdinData);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished(2000);
        r.crashed = true;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.crashed = r.crashed || p.exitStatus() != QProcess::NormalExit;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

CliResult TestDaemon::ctlWatched(const QStringList &args, int timeoutMs) const
{
    int terminal = -1;
    int side = -1;
    CliResult r;
    if (::openpty(&terminal, &side, nullptr, nullptr, nullptr) != 0)
        return r;
    const auto close = qScopeGuard([&] {
        ::close(terminal);
        if (side >= 0)
            ::close(side);
    });
    ::fcntl(terminal, F_SETFL, O_NONBLOCK);
    QProcess p;
    p.setProcessEnvironment(environment());
    p.setChildProcessModifier([side] { ::dup2(side, STDERR_FILENO); });
    p.start(binDir() + QStringLiteral("/airlockctl"), QStringList{QStringLiteral("--no-autostart")} + args);
    if (!p.waitForStarted(5000))
        return r;
    p.closeWriteChannel();
    ::close(side);
    side = -1;
    // Drained as it comes: a pty holds only a few KiB before the writer blocks.
    const auto drain = [&] {
        char buf[4096];
        for (ssize_t n; (n = ::read(terminal, buf, sizeof buf)) > 0;)
            r.err.append(buf, n);
    };
    QElapsedTimer waited;
    waited.start();
    while (!p.waitForFinished(20)) {
        drain();
        if (waited.elapsed() > timeoutMs) {
            p.kill();
            p.waitForFinished(2000);
            r.crashed = true;
            break;
        }
    }
    drain();
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.crashed = r.crashed || p.exitStatus() != QProcess::NormalExit;
    r.out = p.readAllStandardOutput();
    return r;
}

QString TestDaemon::create(const QStringList &options, QString *error) const
{
    const CliResult r = ctl(QStringList{QStringLiteral("create")} + options);
    if (r.exitCode != 0) {
        if (error)
            *error = r.describe();
        return {};
    }
    return QString::fromUtf8(r.out).trimmed();
}

std::unique_ptr<DaemonClient> TestDaemon::connect() const
{
    auto client = std::make_unique<DaemonClient>();
    ConnectOptions options;
    options.socketPath = socketPath();
    options.autostart = false;
    options.clientName = QStringLiteral("test");
    if (!client->connectToDaemon(options))
        return nullptr;
    return client;
}

QList<qint64> pidsWithCommandLine(const QByteArray &needle)
{
    QList<qint64> pids;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool ok = false;
        const qint64 pid = e.toLongLong(&ok);
        if (!ok || pid == QCoreApplication::applicationPid())
            continue;
        QFile f(QStringLiteral("/proc/%1/cmdline").arg(e));
        if (f.open(QIODevice::ReadOnly) && f.readAll().replace('\0', ' ').contains(needle))
            pids.append(pid);
    }
    return pids;
}

quint16 freeLoopbackPort()
{
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    return probe.serverPort();
}

bool waitFor(const std::function<bool()> &condition, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (!condition()) {
        if (t.elapsed() > timeoutMs)
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(10);
    }
    return true;
}

namespace {
QStringList asUnprivileged(const QString &program)
{
    return {
        QStringLiteral("--reuid=65534"), QStringLiteral("--regid=65534"), QStringLiteral("--clear-groups"), program};
}
} // namespace

UnprivilegedDaemon::UnprivilegedDaemon()
    : m_env(QProcessEnvironment::systemEnvironment())
{
    (void)::chown(QFile::encodeName(m_home.path()).constData(), kUid, kUid);
    m_env.insert(QStringLiteral("HOME"), m_home.path());
    m_env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_home.filePath(QStringLiteral("run")));
    m_env.insert(QStringLiteral("XDG_DATA_HOME"), m_home.filePath(QStringLiteral("data")));
    m_env.insert(QStringLiteral("XDG_STATE_HOME"), m_home.filePath(QStringLiteral("state")));
    m_env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_home.filePath(QStringLiteral("config")));
}

UnprivilegedDaemon::~UnprivilegedDaemon()
{
    stop();
    killLeftSandboxes(dataDir());
    removeDaemonLeftovers(dataDir());
}

bool UnprivilegedDaemon::start(const QStringList &extraArgs)
{
    const QString socket = m_home.filePath(QStringLiteral("run/airlock/airlockd.sock"));
    m_process.setProcessEnvironment(m_env);
    QStringList args = QStringList{QStringLiteral("--socket"), socket} + extraArgs;
    if (!m_outlive)
        args.append(QStringLiteral("--sandboxes-end-with-daemon"));
    m_process.start(QStringLiteral("setpriv"), asUnprivileged(binDir() + QStringLiteral("/airlockd")) + args);
    // Accepting, not only there: a killed daemon leaves its socket behind.
    return waitFor(
               [&] {
                   if (m_process.state() == QProcess::NotRunning)
                       return true;
                   QLocalSocket s;
                   s.connectToServer(socket);
                   return s.waitForConnected(100);
               },
               10000)
        && m_process.state() != QProcess::NotRunning;
}

int UnprivilegedDaemon::stop()
{
    if (m_process.state() != QProcess::NotRunning) {
        m_process.terminate();
        m_process.waitForFinished(10000);
    }
    return m_process.exitCode();
}

void UnprivilegedDaemon::kill()
{
    m_process.kill(); // setpriv exec'd airlockd: the same process
    m_process.waitForFinished(10000);
}

QString UnprivilegedDaemon::dataDir() const
{
    return m_home.filePath(QStringLiteral("data/airlock"));
}

std::unique_ptr<QProcess> UnprivilegedDaemon::startAsUser(const QString &program, const QStringList &args) const
{
    auto p = std::make_unique<QProcess>();
    p->setProcessEnvironment(m_env);
    p->start(QStringLiteral("setpriv"), asUnprivileged(binDir() + QLatin1Char('/') + program) + args);
    return p;
}

std::pair<int, QByteArray> UnprivilegedDaemon::runAsUser(
    const QString &program, const QStringList &args, const QByteArray &stdinData) const
{
    const auto p = startAsUser(program, args);
    p->write(stdinData);
    p->closeWriteChannel();
    p->waitForFinished(30000);
    return {p->exitCode(), p->readAllStandardOutput() + p->readAllStandardError()};
}

std::pair<int, QByteArray> UnprivilegedDaemon::airlockd(const QStringList &args) const
{
    return runAsUser(QStringLiteral("airlockd"), args, {});
}

std::pair<int, QByteArray> UnprivilegedDaemon::ctl(const QStringList &args, const QByteArray &stdinData) const
{
    return runAsUser(QStringLiteral("airlockctl"), QStringList{QStringLiteral("--no-autostart")} + args, stdinData);
}

std::unique_ptr<QProcess> UnprivilegedDaemon::startCtl(const QStringList &args) const
{
    return startAsUser(QStringLiteral("airlockctl"), QStringList{QStringLiteral("--no-autostart")} + args);
}

QString UnprivilegedDaemon::file(const QString &name, const QByteArray &content) const
{
    QFile f(m_home.filePath(name));
    if (f.open(QIODevice::WriteOnly))
        f.write(content);
    f.close();
    (void)::chown(QFile::encodeName(f.fileName()).constData(), kUid, kUid);
    return f.fileName();
}

} // namespace airlock::test
