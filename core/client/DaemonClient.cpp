// SPDX-License-Identifier: Apache-2.0
#include "client/DaemonClient.h"
#include "model/DisplayText.h"

#include "client/Hosts.h"

#include "log/Log.h"
#include "rpc/Connection.h"
#include "rpc/Methods.h"
#include "rpc/Protocol.h"
#include "util/Paths.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QLocalSocket>
#include <QPointer>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>
#include <QTimer>

#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.client");
    return l;
}
} // namespace

DaemonClient::DaemonClient(QObject *parent)
    : QObject(parent)
{
}

DaemonClient::~DaemonClient() = default;

bool DaemonClient::isConnected() const
{
    return m_conn && m_conn->isOpen();
}

void DaemonClient::close()
{
    if (m_conn) {
        m_conn->disconnect(this);
        m_conn->close();
        m_conn->deleteLater();
        m_conn = nullptr;
    }
    m_progress.clear();
    const auto pending = std::exchange(m_pending, {});
    for (const Callback &cb : pending)
        cb(makeError(ErrorCode::DaemonUnavailable, QStringLiteral("the connection was closed")));
}

namespace {
// The socket may live in a directory someone else could have created first (AIRLOCK_SOCKET or
// XDG_RUNTIME_DIR pointing into a shared place). Requests carry commands, environment values and
// files, so only a private directory of ours and a daemon running as us are acceptable.
Status checkSocketDirectory(const QString &socketPath)
{
    const QString dir = QFileInfo(socketPath).absolutePath();
    struct stat st { };
    if (::lstat(QFile::encodeName(dir).constData(), &st) != 0)
        return makeError(ErrorCode::DaemonUnavailable, QStringLiteral("%1 does not exist").arg(dir));
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077)) {
        const passwd *owner = ::getpwuid(st.st_uid);
        const QString is = !S_ISDIR(st.st_mode) ? QStringLiteral("not a directory")
            : st.st_uid != ::geteuid()
            ? QStringLiteral("owned by %1 (uid %2)")
                  .arg(owner ? QString::fromLocal8Bit(owner->pw_name) : QStringLiteral("another user"))
                  .arg(st.st_uid)
            : QStringLiteral("mode %1").arg(st.st_mode & 0777, 4, 8, QLatin1Char('0'));
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral(
                "refusing %1: it must be a directory owned by you with mode 0700, and it is %2 (someone else "
                "may have created it to impersonate the daemon). Remove it (as its owner or root: rm -r %1), or "
                "set XDG_RUNTIME_DIR (or AIRLOCK_SOCKET) to a folder of your own")
                .arg(dir, is));
    }
    return Ok{};
}

Status checkPeer(int fd, const QString &socketPath)
{
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != ::geteuid())
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral("refusing the daemon at %1: it runs as uid %2, not as you").arg(socketPath).arg(peer.uid));
    return Ok{};
}
} // namespace

namespace {
// One attempt: the socket's directory and the peer are checked before anything is sent.
Result<std::unique_ptr<QLocalSocket>> openOnce(const QString &path, int timeoutMs)
{
    if (Status dir = checkSocketDirectory(path); !dir)
        return dir.error();
    auto socket = std::make_unique<QLocalSocket>();
    socket->connectToServer(path);
    if (!socket->waitForConnected(timeoutMs)) {
        // In a person's words: what the state of the daemon is, not which call of Qt's failed.
        switch (socket->error()) {
        case QLocalSocket::ServerNotFoundError:
            return makeError(ErrorCode::DaemonUnavailable, QStringLiteral("no daemon is running at %1").arg(path));
        case QLocalSocket::ConnectionRefusedError:
            return makeError(ErrorCode::DaemonUnavailable,
                QStringLiteral("the daemon at %1 is not accepting connections (it stopped, or is stopping or starting)")
                    .arg(path));
        case QLocalSocket::SocketAccessError:
            return makeError(
                ErrorCode::DaemonUnavailable, QStringLiteral("you may not open %1 (its permissions)").arg(path));
        case QLocalSocket::SocketTimeoutError:
            return makeError(ErrorCode::DaemonUnavailable,
                QStringLiteral("the daemon at %1 did not answer within %2 ms (it may be busy)")
                    .arg(path)
                    .arg(timeoutMs));
        default:
            return makeError(ErrorCode::DaemonUnavailable,
                QStringLiteral("cannot reach the daemon at %1: %2").arg(path, socket->errorString()));
        }
    }
    if (Status peer = checkPeer(int(socket->socketDescriptor()), path); !peer)
        return peer.error();
    return socket;
}
} // namespace

// ssh://: the system ssh (the user's keys, agent, known_hosts and config; BatchMode, so it never
// prompts, and host keys are checked as ssh always does) runs `airlockd --stdio` over there. Its
// stdin and stdout are one end of a socketpair; the other end is this client's socket, so the
// protocol runs over it exactly as over the local socket. AIRLOCK_SSH names another ssh program.
Result<std::unique_ptr<QLocalSocket>> DaemonClient::openSsh(const HostAddress &address)
{
    if (address.host.startsWith(QLatin1Char('-')) || address.user.startsWith(QLatin1Char('-')))
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("%1: a host or user cannot start with '-'").arg(address.text));
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("socketpair failed"));
    QStringList arguments{QStringLiteral("-T"), QStringLiteral("-e"), QStringLiteral("none"), QStringLiteral("-o"),
        QStringLiteral("BatchMode=yes"), QStringLiteral("-o"), QStringLiteral("ServerAliveInterval=15"),
        QStringLiteral("-o"), QStringLiteral("ServerAliveCountMax=3")};
    if (address.port)
        arguments += {QStringLiteral("-p"), QString::number(address.port)};
    if (!address.user.isEmpty())
        arguments += {QStringLiteral("-l"), address.user};
    arguments += {QStringLiteral("--"), address.host, QStringLiteral("airlockd"), QStringLiteral("--stdio")};
    auto socket = std::make_unique<QLocalSocket>();
    auto *ssh = new QProcess;
    ssh->setProcessChannelMode(QProcess::ForwardedErrorChannel); // ssh's own messages, as it says them
    const int theirs = pair[1];
    ssh->setChildProcessModifier([theirs] {
        ::dup2(theirs, STDIN_FILENO);
        ::dup2(theirs, STDOUT_FILENO);
    });
    const QString program = qEnvironmentVariable("AIRLOCK_SSH", QStringLiteral("ssh"));
    ssh->start(program, arguments);
    const bool started = ssh->waitForStarted(5000);
    ::close(pair[1]);
    if (!started) {
        ::close(pair[0]);
        const QString why = ssh->errorString();
        delete ssh;
        return makeError(
            ErrorCode::DaemonUnavailable, QStringLiteral("cannot run %1 for %2: %3").arg(program, address.text, why));
    }
    if (!socket->setSocketDescriptor(pair[0])) {
        ::close(pair[0]);
        delete ssh;
        return makeError(ErrorCode::IoError, QStringLiteral("cannot use the socketpair for %1").arg(address.text));
    }
    socket->setProperty("transport", QVariant::fromValue<QObject *>(ssh));
    // When the connection ends, ssh reads the end of its stdin and leaves on its own (closing the
    // far side's bridge); it is given a moment before it is stopped.
    QObject::connect(socket.get(), &QObject::destroyed, ssh, [ssh] {
        if (ssh->state() != QProcess::NotRunning && !ssh->waitForFinished(3000)) {
            ssh->terminate();
            if (!ssh->waitForFinished(2000))
                ssh->kill();
            ssh->waitForFinished(1000);
        }
        ssh->deleteLater();
    });
    return socket;
}

void DaemonClient::attach(QLocalSocket *socket)
{
    delete m_conn;
    m_conn = new rpc::Connection(socket, this);
    connect(m_conn, &rpc::Connection::messageReceived, this, &DaemonClient::onMessage);
    connect(m_conn, &rpc::Connection::outputReceived, this, &DaemonClient::eventReceived);
    connect(m_conn, &rpc::Connection::dataReceived, this, &DaemonClient::dataReceived);
    connect(m_conn, &rpc::Connection::bytesFlushed, this, &DaemonClient::bytesWritten);
    connect(m_conn, &rpc::Connection::framingFailed, this, [this](const Error &e) {
        m_conn->close();
        Q_EMIT disconnected(e);
    });
    connect(m_conn, &rpc::Connection::disconnected, this, [this, socket] {
        // Over ssh://, the end of the connection is usually ssh's own: say how it ended (its own
        // message is already on stderr) rather than blame a daemon that may never have answered.
        QString ended = QStringLiteral("the daemon closed the connection");
        if (auto *ssh = qobject_cast<QProcess *>(socket->property("transport").value<QObject *>())) {
            if (ssh->state() != QProcess::NotRunning)
                ssh->waitForFinished(2000);
            if (ssh->state() == QProcess::NotRunning)
                ended = QStringLiteral("ssh exited with status %1").arg(ssh->exitCode());
        }
        const Error why
            = m_lastServerError.message.isEmpty() ? makeError(ErrorCode::DaemonUnavailable, ended) : m_lastServerError;
        m_progress.clear();
        auto pending = std::exchange(m_pending, {});
        for (const Callback &cb : std::as_const(pending))
            cb(why);
        Q_EMIT disconnected(why);
    });
}

Status DaemonClient::startDaemon(const ConnectOptions &options, const QString &socketPath, int *statusFd)
{
    QString program = options.daemonProgram;
    if (program.isEmpty()) {
        const QString sibling = QCoreApplication::applicationDirPath() + QStringLiteral("/airlockd");
        program
            = QFileInfo(sibling).isExecutable() ? sibling : QStandardPaths::findExecutable(QStringLiteral("airlockd"));
    }
    if (program.isEmpty())
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral("no daemon answers at %1 and airlockd was not found next to this program or in PATH")
                .arg(socketPath));
    const QByteArray prog = QFile::encodeName(program);
    const QByteArray sock = QFile::encodeName(socketPath);
    // Its stderr is a pipe to us while we wait for it: a daemon that exits before it is ready
    // (a damaged history, a socket it cannot take) is said at once, with its own words, instead
    // of after the wait. Once we are gone its writes there fail quietly (it ignores SIGPIPE).
    // The daemon hears that its stderr is ours until it is ready (then it points it at /dev/null,
    // so nothing it starts later writes into a closed pipe). Made before fork: nothing allocates after.
    QList<QByteArray> environment{QByteArrayLiteral("AIRLOCK_STDERR_UNTIL_READY=1")};
    for (char **e = environ; *e; ++e)
        if (!QByteArray(*e).startsWith("AIRLOCK_STDERR_UNTIL_READY="))
            environment.append(QByteArray(*e));
    std::vector<char *> envp;
    for (QByteArray &e : environment)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    int status[2];
    if (::pipe2(status, O_CLOEXEC) != 0)
        return makeError(ErrorCode::DaemonUnavailable, QStringLiteral("pipe failed"));
    // Detached: double fork so the daemon is not our child and outlives us; stdin and stdout to
    // /dev/null (it logs to the state directory).
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(status[0]);
        ::close(status[1]);
        return makeError(ErrorCode::DaemonUnavailable, QStringLiteral("fork failed"));
    }
    if (pid == 0) {
        ::setsid();
        if (::fork() != 0)
            ::_exit(0);
        // Out of the way of 0-2 first (a client started with them closed gets its pipe there).
        const int writeEnd = ::fcntl(status[1], F_DUPFD, 10);
        const int devnull = ::open("/dev/null", O_RDWR);
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        ::dup2(writeEnd, 2); // without close-on-exec: dup2 clears it
        ::syscall(SYS_close_range, 3U, ~0U, 0);
        const char *argv[] = {prog.constData(), "--socket", sock.constData(), nullptr};
        ::execve(argv[0], const_cast<char *const *>(argv), envp.data());
        ::_exit(127);
    }
    ::close(status[1]);
    ::waitpid(pid, nullptr, 0);
    ::fcntl(status[0], F_SETFL, O_NONBLOCK);
    *statusFd = status[0];
    logger()->info("started {} for {}", program.toStdString(), socketPath.toStdString());
    return Ok{};
}

namespace {
// What a daemon we started said on stderr so far; true once it closed it (it exited).
bool readStatus(int fd, QByteArray &said)
{
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            if (said.size() < 16 * 1024)
                said.append(buf, int(std::min<ssize_t>(n, 16 * 1024 - said.size())));
            continue;
        }
        return n == 0; // EOF: every writer is gone; -1 (EAGAIN): still running
    }
}

// Its own words: the lines it printed as airlockd (its log's copy of them left out), escaped.
QStringList daemonWords(const QByteArray &said)
{
    QStringList words;
    for (const QString &line : QString::fromUtf8(said).split(QLatin1Char('\n'), Qt::SkipEmptyParts))
        if (line.startsWith(QLatin1String("airlockd: ")))
            words.append(display::escaped(line, 1000));
    return words;
}
} // namespace

Result<std::unique_ptr<QLocalSocket>> DaemonClient::openDaemonSocket(const ConnectOptions &given, QString *startNotice)
{
    ConnectOptions options = given;
    if (!options.host.isEmpty()) {
        auto address = parseHostAddress(options.host);
        if (!address)
            return address.error();
        if (address->scheme == HostAddress::Scheme::Ssh)
            return openSsh(*address);
        if (address->scheme == HostAddress::Scheme::Wss || address->scheme == HostAddress::Scheme::Ws)
            return openWebSocket(*address,
                options.token.isEmpty() ? qEnvironmentVariable("AIRLOCK_TOKEN") : options.token, options.timeoutMs);
        options.socketPath = address->path;
        options.autostart = false; // someone else's socket path: connect, never start a daemon there
    }
    const QString path = options.socketPath.isEmpty() ? paths::defaultSocketPath() : options.socketPath;
    if (QFileInfo::exists(QFileInfo(path).absolutePath()))
        if (Status dir = checkSocketDirectory(path); !dir)
            return dir.error(); // someone else's directory: starting a daemon there would not help
    auto socket = openOnce(path, 1000);
    if (!socket && options.autostart) {
        int status = -1;
        if (Status started = startDaemon(options, path, &status); !started)
            return started.error();
        QElapsedTimer t;
        t.start();
        QByteArray said;
        bool exited = false;
        for (;;) {
            if ((socket = openOnce(path, 1000)) || t.elapsed() >= options.timeoutMs)
                break;
            if (!exited && (exited = readStatus(status, said))) { // it closed its stderr: ready, or gone
                if ((socket = openOnce(path, 1000)))
                    break;
                // Gone. Another daemon won the race to start (it said so): wait for that one.
                // Anything else: say why now, not after the wait.
                if (!said.contains("another airlockd"))
                    break;
            }
            QThread::msleep(10);
        }
        if (socket && startNotice) { // up: what it said on the way as airlockd (read what is left first)
            readStatus(status, said);
            *startNotice = daemonWords(said).join(QLatin1Char('\n'));
        }
        ::close(status);
        if (!socket && exited) {
            QStringList words = daemonWords(said);
            for (QString &w : words)
                w.remove(0, 10); // "airlockd: "
            return makeError(ErrorCode::DaemonUnavailable,
                QStringLiteral("airlockd exited before it was ready%1 (its log: %2)")
                    .arg(words.isEmpty() ? QString() : QStringLiteral(": ") + words.join(QStringLiteral("; ")),
                        paths::stateDir() + QStringLiteral("/airlockd.log")));
        }
    }
    if (!socket)
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral("cannot reach airlockd at %1 (%2)%3")
                .arg(path, socket.error().message,
                    options.autostart ? QStringLiteral("; see the daemon log in ") + paths::stateDir()
                                      : QStringLiteral("; start it with 'airlockd'")));
    return socket;
}

Status DaemonClient::connectToDaemon(const ConnectOptions &options)
{
    m_options = options;
    m_lastServerError = {};
    m_startNotice.clear();
    auto socket = openDaemonSocket(options, &m_startNotice);
    if (!socket)
        return socket.error();
    attach(socket->release());
    auto hello = call(rpc::method::Hello,
        {{QStringLiteral("protocol"), rpc::kProtocolVersion}, {QStringLiteral("client"), options.clientName},
            {QStringLiteral("run"), options.run}, {QStringLiteral("agent"), options.agent}},
        options.timeoutMs);
    if (!hello)
        return hello.error();
    m_daemonVersion = hello->value(QStringLiteral("daemon")).toString();
    return Ok{};
}

void DaemonClient::connectOver(QLocalSocket *socket, const ConnectOptions &options, std::function<void(Status)> done)
{
    m_options = options;
    m_lastServerError = {};
    attach(socket);
    callAsync(rpc::method::Hello,
        {{QStringLiteral("protocol"), rpc::kProtocolVersion}, {QStringLiteral("client"), options.clientName},
            {QStringLiteral("run"), options.run}, {QStringLiteral("agent"), options.agent}},
        [this, done = std::move(done)](Result<QJsonValue> hello) {
            if (!hello)
                return done(hello.error());
            m_daemonVersion = hello->toObject().value(QStringLiteral("daemon")).toString();
            done(Ok{});
        });
}

qint64 DaemonClient::callAsync(const QString &method, const QJsonObject &params, Callback done, Progress progress)
{
    if (!isConnected()) {
        done(makeError(ErrorCode::DaemonUnavailable, QStringLiteral("not connected to the daemon")));
        return 0;
    }
    const qint64 id = m_nextId++;
    m_pending.insert(id, std::move(done));
    if (progress)
        m_progress.insert(id, std::move(progress));
    m_conn->send(rpc::makeRequest(id, method, params));
    return id;
}

void DaemonClient::sendData(quint32 transfer, const QByteArray &bytes)
{
    if (isConnected())
        m_conn->sendDataWaiting(transfer, bytes);
}

qint64 DaemonClient::pendingBytes() const
{
    return m_conn ? m_conn->pendingBytes() : 0;
}

void DaemonClient::notify(const QString &method, const QJsonObject &params)
{
    callAsync(method, params, [](Result<QJsonValue>) {});
}

Result<QJsonObject> DaemonClient::call(
    const QString &method, const QJsonObject &params, int timeoutMs, Progress progress)
{
    QEventLoop loop;
    std::optional<Result<QJsonValue>> result;
    QPointer<QEventLoop> guard(&loop);
    const qint64 id = callAsync(
        method, params,
        [&result, guard](Result<QJsonValue> r) {
            result = std::move(r);
            if (guard)
                guard->quit();
        },
        std::move(progress));
    if (!result) {
        QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (!result) {
        // What was given for this call refers to this frame: never called after it returns.
        m_pending.remove(id);
        m_progress.remove(id);
        return makeError(
            ErrorCode::DaemonUnavailable, QStringLiteral("%1: no answer within %2 ms").arg(method).arg(timeoutMs));
    }
    if (!*result)
        return result->error();
    return result->value().toObject();
}

void DaemonClient::onMessage(const QJsonObject &message)
{
    if (message.contains(QStringLiteral("method"))) {
        const QString method = message.value(QStringLiteral("method")).toString();
        const QJsonObject params = message.value(QStringLiteral("params")).toObject();
        if (method == rpc::method::EventNotification) {
            if (auto ev = rpc::eventFromJson(params))
                Q_EMIT eventReceived(*ev);
        } else if (method == rpc::method::ProgressNotification) {
            // A copy: the call may start others (or end this one) while it runs.
            if (const Progress told = m_progress.value(qint64(params.value(QStringLiteral("id")).toDouble())))
                told(params);
        } else {
            Q_EMIT notified(method, params);
        }
        return;
    }
    const QJsonValue id = message.value(QStringLiteral("id"));
    const bool isError = message.contains(QStringLiteral("error"));
    if (id.isNull() && isError) {
        // A connection-level error: the daemon closes after it.
        m_lastServerError = rpc::errorFromReply(message.value(QStringLiteral("error")).toObject());
        return;
    }
    auto it = m_pending.find(qint64(id.toDouble()));
    if (it == m_pending.end())
        return;
    Callback cb = std::move(*it);
    m_pending.erase(it);
    m_progress.remove(qint64(id.toDouble()));
    if (isError)
        cb(rpc::errorFromReply(message.value(QStringLiteral("error")).toObject()));
    else
        cb(message.value(QStringLiteral("result")));
}

} // namespace airlock
