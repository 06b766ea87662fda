// SPDX-License-Identifier: Apache-2.0
#include "rpc/SocketActivation.h"

#include <QFile>
#include <QFileInfo>
#include <QLocalSocket>
#include <QSocketNotifier>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace airlock::rpc {

namespace {
constexpr int kFirstPassedFd = 3; // SD_LISTEN_FDS_START
}

Result<ActivatedSocket *> ActivatedSocket::take(const QString &socketPath, QObject *parent)
{
    const bool passed = qEnvironmentVariable("LISTEN_PID").toLongLong() == ::getpid()
        && qEnvironmentVariableIntValue("LISTEN_FDS") >= 1;
    qunsetenv("LISTEN_PID");
    qunsetenv("LISTEN_FDS");
    qunsetenv("LISTEN_FDNAMES");
    if (!passed)
        return static_cast<ActivatedSocket *>(nullptr);
    sockaddr_un address{};
    socklen_t length = sizeof address;
    int listening = 0;
    socklen_t size = sizeof listening;
    if (::getsockname(kFirstPassedFd, reinterpret_cast<sockaddr *>(&address), &length) != 0
        || address.sun_family != AF_UNIX
        || ::getsockopt(kFirstPassedFd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening)
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("socket activation: fd 3 is not a listening unix socket"));
    const QString bound = QFile::decodeName(address.sun_path);
    if (QFileInfo(bound).absoluteFilePath() != QFileInfo(socketPath).absoluteFilePath())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral(
                "socket activation: systemd passed %1 but the daemon's socket is %2; make ListenStream= and --socket "
                "(or AIRLOCK_SOCKET) agree")
                .arg(bound, socketPath));
    ::fcntl(kFirstPassedFd, F_SETFD, FD_CLOEXEC);
    ::fcntl(kFirstPassedFd, F_SETFL, ::fcntl(kFirstPassedFd, F_GETFL) | O_NONBLOCK);
    return new ActivatedSocket(kFirstPassedFd, parent);
}

ActivatedSocket::ActivatedSocket(int fd, QObject *parent)
    : QObject(parent)
    , m_fd(fd)
    , m_notifier(new QSocketNotifier(fd, QSocketNotifier::Read, this))
{
    // Level-triggered: the connection that woke the daemon is taken on the first event-loop turn,
    // once the receiver is connected.
    connect(m_notifier, &QSocketNotifier::activated, this, &ActivatedSocket::acceptAll);
}

ActivatedSocket::~ActivatedSocket()
{
    ::close(m_fd); // systemd keeps its own copy, and the file
}

void ActivatedSocket::acceptAll()
{
    for (;;) {
        const int client = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0)
            return; // EAGAIN: all taken; anything else: try again on the next wake
        auto *socket = new QLocalSocket;
        if (!socket->setSocketDescriptor(client)) {
            ::close(client);
            delete socket;
            continue;
        }
        Q_EMIT accepted(socket);
    }
}

} // namespace airlock::rpc
