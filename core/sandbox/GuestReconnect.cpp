// SPDX-License-Identifier: Apache-2.0
#include "sandbox/GuestReconnect.h"
#include "util/UntrustedFd.h"

#include "log/Log.h"
#include "sandbox/GuestWire.h"
#include "sandbox/GvisorLauncher.h"
#include "util/ConstantTime.h"

#include <QSocketNotifier>
#include <QTimer>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}

// Reconnect: the header, the token, the guest's protocol version.
constexpr qsizetype kProofPayload = wire::kResumeTokenSize + 4;
constexpr qsizetype kProofSize = wire::kHeaderSize + kProofPayload;
} // namespace

GuestReconnect::GuestReconnect(
    int listenFd, QByteArray token, uid_t runtimeUid, const QString &sandboxId, QObject *parent)
    : QObject(parent)
    , m_listenFd(listenFd)
    , m_listenNotifier(new QSocketNotifier(listenFd, QSocketNotifier::Read, this))
    , m_token(std::move(token))
    , m_runtimeUid(runtimeUid)
    , m_sandboxId(sandboxId)
{
    connect(m_listenNotifier, &QSocketNotifier::activated, this, &GuestReconnect::onAcceptable);
}

GuestReconnect::~GuestReconnect()
{
    for (const Pending &p : std::as_const(m_pending))
        closeUntrusted(p.fd);
    if (m_listenFd >= 0)
        ::close(m_listenFd);
}

void GuestReconnect::onAcceptable()
{
    for (int i = 0; i < 64 && m_listenFd >= 0; ++i) {
        // The folder is the daemon's and the runtime's group's: runsc's gofer connects as the
        // runtime's uid. Anything else is not this sandbox's.
        const int fd = acceptFromRuntime(m_listenFd, m_runtimeUid, m_sandboxId, "resume");
        if (fd < 0)
            return;
        if (m_pending.size() >= kMaxPending)
            drop(m_pending.first().fd, "more connections wait to prove themselves");
        Pending p;
        p.fd = fd;
        p.serial = ++m_accepted;
        p.notifier = new QSocketNotifier(fd, QSocketNotifier::Read, this);
        connect(p.notifier, &QSocketNotifier::activated, this, [this, fd] { onReadable(fd); });
        // Unproven past the guest's own wait for Resume: not the guest. (By its serial: its
        // descriptor's number may be another connection's by then.)
        QTimer::singleShot(wire::kResumeFrameTimeoutMs, p.notifier, [this, fd, serial = p.serial] {
            const auto it = std::find_if(m_pending.cbegin(), m_pending.cend(),
                [&](const Pending &q) { return q.fd == fd && q.serial == serial; });
            if (it != m_pending.cend())
                drop(fd, "it did not prove itself in time");
        });
        m_pending.append(p);
        onReadable(fd); // the guest writes its proof as it connects: it is often there already
    }
}

void GuestReconnect::onReadable(int fd)
{
    const auto it = std::find_if(m_pending.begin(), m_pending.end(), [fd](const Pending &p) { return p.fd == fd; });
    if (it == m_pending.end())
        return;
    const qsizetype had = it->got.size();
    it->got.resize(kProofSize);
    int flags = 0;
    const ssize_t n = receiveUntrusted(fd, it->got.data() + had, size_t(kProofSize - had), 0, nullptr, &flags);
    it->got.resize(had + std::max<ssize_t>(n, 0));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0 && (flags & MSG_CTRUNC))
        return drop(fd, "it attached descriptors to its proof");
    if (n <= 0)
        return drop(fd, "it closed before proving itself");
    // A header that is not the proof's is refused as soon as it is there.
    const auto header = wire::peekHeader(it->got.constData(), size_t(it->got.size()));
    if (header && (header->type != wire::Type::Reconnect || header->payloadLen != uint32_t(kProofPayload)))
        return drop(fd, "its first frame is not Reconnect");
    if (it->got.size() < kProofSize)
        return;
    if (!constantTimeEquals(it->got.mid(wire::kHeaderSize, wire::kResumeTokenSize), m_token))
        return drop(fd, "wrong token");
    // Anything it sent past its proof would be a frame before Resume: the guest sends none. And a
    // guest that closed after its proof (this daemon was too slow: it gave up waiting for Resume
    // and comes back on a new connection) is not the one to answer.
    char more = 0;
    const ssize_t after = ::recv(fd, &more, 1, MSG_PEEK | MSG_DONTWAIT);
    if (after > 0)
        return drop(fd, "it sent more than its proof");
    if (after == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        return drop(fd, "it closed after its proof, waiting no longer");
    // (Notifiers go later: this may run in one's signal.)
    for (const Pending &p : std::as_const(m_pending)) {
        p.notifier->setEnabled(false);
        p.notifier->deleteLater();
        if (p.fd != fd)
            closeUntrusted(p.fd);
    }
    m_pending.clear();
    m_listenNotifier->setEnabled(false);
    m_listenNotifier->deleteLater();
    m_listenNotifier = nullptr;
    ::close(std::exchange(m_listenFd, -1));
    // Blocking for Resume, which is written whole before the guest's answer is read (GuestChannel
    // makes it non-blocking again); a guest that reads nothing holds the daemon no longer than this.
    const timeval sendTimeout{wire::kResumeFrameTimeoutMs / 1000, 0};
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout);
    logger()->info("sandbox {}: its agent came back and proved itself ({} other connections refused)",
        m_sandboxId.toStdString(), m_refused);
    Q_EMIT reconnected(fd);
}

void GuestReconnect::drop(int fd, const char *why)
{
    const auto it = std::find_if(m_pending.begin(), m_pending.end(), [fd](const Pending &p) { return p.fd == fd; });
    if (it == m_pending.end())
        return;
    // What runs in the sandbox can connect at will: the first few are said, the rest counted.
    if (++m_refused <= kRefusalsLogged)
        logger()->warn("sandbox {}: a connection to its resume socket was closed unanswered: {}{}",
            m_sandboxId.toStdString(), why, m_refused == kRefusalsLogged ? " (more are counted, not said)" : "");
    it->notifier->setEnabled(false);
    it->notifier->deleteLater(); // it may be the one whose signal runs now
    closeUntrusted(fd);
    m_pending.erase(it);
}

} // namespace airlock
