// SPDX-License-Identifier: Apache-2.0
#include "sandbox/ExecListener.h"
#include "log/Log.h"
#include "sandbox/ProcStatus.h"
#include "util/ThreadDeadline.h"

#include <QFile>
#include <QMetaObject>
#include <QSocketNotifier>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

namespace airlock {

namespace {
auto logger()
{
    static auto l = log::get("core.sandbox");
    return l;
}

// What one exec may carry and still be judged; more is refused (as "too long to judge").
constexpr int kMaxArgs = 4096;
constexpr qsizetype kMaxArgBytes = 1024 * 1024;
constexpr size_t kPage = 4096;

const seccomp_notif_sizes &sizes()
{
    static const seccomp_notif_sizes s = [] {
        seccomp_notif_sizes n{};
        if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &n) != 0)
            n = {sizeof(seccomp_notif), sizeof(seccomp_notif_resp), sizeof(seccomp_data)};
        n.seccomp_notif = std::max<__u16>(n.seccomp_notif, sizeof(seccomp_notif));
        n.seccomp_notif_resp = std::max<__u16>(n.seccomp_notif_resp, sizeof(seccomp_notif_resp));
        return n;
    }();
    return s;
}

// Reads another process's memory without crossing a page in one call, so an unmapped page ends a
// read cleanly instead of failing all of it.
bool readMemory(pid_t pid, quint64 address, void *out, size_t size)
{
    auto *dst = static_cast<char *>(out);
    while (size > 0) {
        const size_t chunk = std::min(size, kPage - size_t(address % kPage));
        iovec local{dst, chunk};
        iovec remote{reinterpret_cast<void *>(address), chunk};
        if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != ssize_t(chunk))
            return false;
        dst += chunk;
        address += chunk;
        size -= chunk;
    }
    return true;
}

// A NUL-terminated string of the process, at most `limit` bytes; nullopt when it cannot be read
// or is longer.
std::optional<QByteArray> readString(pid_t pid, quint64 address, qsizetype limit)
{
    QByteArray out;
    char buf[kPage];
    while (out.size() <= limit) {
        const size_t chunk = kPage - size_t(address % kPage);
        iovec local{buf, chunk};
        iovec remote{reinterpret_cast<void *>(address), chunk};
        const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0)
            return std::nullopt;
        const void *nul = std::memchr(buf, 0, size_t(n));
        if (nul) {
            out.append(buf, static_cast<const char *>(nul) - buf);
            return out.size() <= limit ? std::optional(out) : std::nullopt;
        }
        out.append(buf, n);
        address += quint64(n);
    }
    return std::nullopt;
}

QByteArray rawLink(const QString &path)
{
    const QByteArray native = QFile::encodeName(path);
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(native.constData(), buf, sizeof buf);
    return n > 0 ? QByteArray(buf, n) : QByteArray();
}

QString link(const QString &path)
{
    return QFile::decodeName(rawLink(path));
}

// Bytes that survive decoding to a QString and back: a path that does not (not UTF-8) would be
// looked up, judged and shown as another name than the kernel's.
bool faithful(const QByteArray &raw)
{
    return QFile::encodeName(QFile::decodeName(raw)) == raw;
}

// The program file as the kernel will open it: `path` in the process's root (symlinks resolved
// inside it), relative to its working directory; or, for execveat(fd, "", AT_EMPTY_PATH), its
// descriptor. -1 with errno when it cannot be opened from here.
// Opens for reading only a regular file (what the kernel could execute) or a directory (whose
// execve fails with EACCES, which a PATH search goes on from): found with O_PATH first, so that a
// FIFO (whose open would wait for a writer, on the daemon's one thread) or a device is never
// opened. Anything else fails with EACCES, as its execve will.
int readableRegularFile(int pathFd)
{
    if (pathFd < 0)
        return -1;
    struct stat st { };
    int fd = -1;
    if (::fstat(pathFd, &st) != 0)
        fd = -1;
    else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        errno = EACCES;
    else
        fd = ::open(QStringLiteral("/proc/self/fd/%1").arg(pathFd).toLatin1().constData(),
            O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    const int err = errno;
    ::close(pathFd);
    errno = err;
    return fd;
}

int openProgram(pid_t pid, const QString &path, const QString &cwd, int emptyPathFd)
{
    if (emptyPathFd >= 0)
        return readableRegularFile(::open(
            QStringLiteral("/proc/%1/fd/%2").arg(pid).arg(emptyPathFd).toLatin1().constData(), O_PATH | O_CLOEXEC));
    const int root
        = ::open(QStringLiteral("/proc/%1/root").arg(pid).toLatin1().constData(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return -1;
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const QString inRoot = path.startsWith(QLatin1Char('/')) ? path : cwd + QLatin1Char('/') + path;
    const QByteArray relative = QFile::encodeName(inRoot.mid(1));
    const int fd = int(::syscall(SYS_openat2, root, relative.isEmpty() ? "." : relative.constData(), &how, sizeof how));
    const int err = errno;
    ::close(root);
    errno = err;
    return readableRegularFile(fd);
}

// A script's "#!" line as the kernel reads it: the interpreter and its one optional argument.
std::optional<QStringList> shebang(int fd)
{
    char buf[256];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    if (n < 3 || buf[0] != '#' || buf[1] != '!')
        return std::nullopt;
    QByteArray line(buf + 2, n - 2);
    line = line.left(line.indexOf('\n') < 0 ? line.size() : line.indexOf('\n')).trimmed();
    const qsizetype space = line.indexOf(' ') >= 0 ? line.indexOf(' ') : line.indexOf('\t');
    if (!faithful(line))
        return QStringList{}; // refused by the caller: a name that cannot be looked up as the kernel will
    QStringList out{QFile::decodeName(space < 0 ? line : line.left(space))};
    if (space >= 0 && !line.mid(space).trimmed().isEmpty())
        out.append(QFile::decodeName(line.mid(space).trimmed()));
    return out;
}
} // namespace

ExecListener::ExecListener(int fd, QString workspaceDir, QObject *parent)
    : QObject(parent)
    , m_fd(fd)
    , m_workspaceDir(std::move(workspaceDir))
    , m_notification(sizes().seccomp_notif)
{
    m_notifier = new QSocketNotifier(m_fd, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &ExecListener::onReadable);
}

ExecListener::~ExecListener()
{
    for (quint64 id : m_watched.keys())
        unwatch(id);
    delete m_notifier;
    ::close(m_fd);
}

void ExecListener::watch(const ExecAttempt &attempt)
{
    constexpr unsigned kPidfdThread = O_EXCL; // PIDFD_THREAD (Linux 6.9): the thread, not its group
    int fd = int(::syscall(SYS_pidfd_open, attempt.hostPid, kPidfdThread));
    if (fd < 0 && errno == EINVAL)
        fd = int(::syscall(SYS_pidfd_open, attempt.hostPid, 0));
    if (fd < 0 && errno == EINVAL)
        return; // not a process's first thread, and this kernel cannot watch threads
    // Opened after the process waited in it: the notification still pending means this is that
    // process, not another that took its pid.
    quint64 id = attempt.id;
    if (fd < 0 || ::ioctl(m_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) {
        if (fd >= 0)
            ::close(fd);
        m_open.remove(id);
        QMetaObject::invokeMethod(
            this, [this, id] { Q_EMIT abandoned(id); }, Qt::QueuedConnection);
        return;
    }
    auto *n = new QSocketNotifier(fd, QSocketNotifier::Read, this);
    m_watched.insert(id, n);
    connect(n, &QSocketNotifier::activated, this, [this, id] {
        unwatch(id);
        m_open.remove(id);
        Q_EMIT abandoned(id);
    });
}

void ExecListener::unwatch(quint64 id)
{
    QSocketNotifier *n = m_watched.take(id);
    if (!n)
        return;
    const int fd = int(n->socket());
    n->setEnabled(false);
    n->deleteLater(); // (this may run in its own signal)
    ::close(fd);
}

bool ExecListener::isListener(int fd)
{
    return link(QStringLiteral("/proc/self/fd/%1").arg(fd)) == QLatin1String("anon_inode:seccomp notify");
}

void ExecListener::onReadable()
{
    // NOTIF_RECV blocks when nothing waits, so poll first: POLLIN is a waiting exec, POLLHUP (alone)
    // means no process is left under the filter. At most 64 at a time and for 5 ms (megabytes of
    // arguments each take a while to read): the notifier comes back for the rest, after the
    // daemon's other clients had their turn.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    for (int i = 0; i < 64 && std::chrono::steady_clock::now() < until; ++i) {
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0)
            return;
        if (!(p.revents & POLLIN)) {
            if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
                m_notifier->setEnabled(false);
                Q_EMIT drained();
            }
            return;
        }
        if (!receive(m_fd, m_notification)) {
            if (errno == EINTR)
                return; // the guest took it: nothing waits here now
            if (errno == ENOTSUP) { // no deadline: its execs wait unjudged rather than the daemon
                logger()->error("exec checks: no timer for the receive's deadline; this execution's "
                                "programs are not judged and wait");
                m_notifier->setEnabled(false);
                return;
            }
            continue; // ENOENT: the process went (or was signalled) before we took it
        }
        ExecAttempt attempt = read(m_notification.data());
        // The process we read is still the one waiting (its pid was not reused meanwhile).
        quint64 id = attempt.id;
        if (::ioctl(m_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0)
            continue;
        m_open.insert(attempt.id, attempt);
        Q_EMIT attempted(attempt);
    }
}

bool ExecListener::receive(int fd, std::vector<char> &notification)
{
    notification.assign(sizes().seccomp_notif, 0); // the kernel wants it zeroed
    const ThreadDeadline::Armed deadline;
    if (!deadline.usable()) { // never a receive that could wait for good
        errno = ENOTSUP;
        return false;
    }
    return ::ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, notification.data()) == 0;
}

QList<ExecAttempt> ExecListener::refuseOpen()
{
    const QHash<quint64, ExecAttempt> open = m_open;
    QList<ExecAttempt> refused;
    for (const ExecAttempt &a : open)
        if (answer(a.id, false))
            refused.append(a);
    return refused;
}

ExecAttempt ExecListener::read(const void *notification) const
{
    const auto *n = static_cast<const seccomp_notif *>(notification);
    ExecAttempt a;
    a.id = n->id;
    a.hostPid = pid_t(n->pid);
    const StatusPids self = statusPids(a.hostPid);
    a.pid = self.nsPid;
    a.parentPid = self.parentHostPid > 0 ? statusPids(self.parentHostPid).nsPid : 0;
    const auto inSandbox = [this](QString path) {
        if (path.startsWith(m_workspaceDir)
            && (path.size() == m_workspaceDir.size() || path.at(m_workspaceDir.size()) == QLatin1Char('/')))
            path = QStringLiteral("/workspace") + path.mid(m_workspaceDir.size());
        return path;
    };
    const QByteArray cwd = rawLink(QStringLiteral("/proc/%1/cwd").arg(a.hostPid));
    a.cwd = inSandbox(QFile::decodeName(cwd));

    const bool at = n->data.nr == __NR_execveat;
    const quint64 pathAddress = at ? n->data.args[1] : n->data.args[0];
    const quint64 argvAddress = at ? n->data.args[2] : n->data.args[1];
    auto path = readString(a.hostPid, pathAddress, PATH_MAX);
    if (!path) {
        a.unreadable = QStringLiteral("the program's path cannot be read from the process");
        return a;
    }
    a.path = QFile::decodeName(*path);
    if (!faithful(*path) || !faithful(cwd)) {
        a.unreadable = QStringLiteral(
            "the program's path or working directory is not valid UTF-8 (%1): it cannot be judged by its name")
                           .arg(QString::fromLatin1((faithful(*path) ? cwd : *path).toPercentEncoding("/").left(200)));
        return a;
    }
    const QString given = a.path;
    int emptyPathFd = -1;
    if (at) {
        const int dirfd = int(n->data.args[0]);
        const bool emptyPath = (n->data.args[4] & AT_EMPTY_PATH) && a.path.isEmpty();
        if (emptyPath || (!a.path.startsWith(QLatin1Char('/')) && dirfd != AT_FDCWD)) {
            const QString dir = link(QStringLiteral("/proc/%1/fd/%2").arg(a.hostPid).arg(dirfd));
            if (dir.isEmpty()) {
                a.unreadable = QStringLiteral("execveat's descriptor %1 cannot be resolved").arg(dirfd);
                return a;
            }
            a.path = emptyPath ? dir : dir + QLatin1Char('/') + a.path;
            emptyPathFd = emptyPath ? dirfd : -1;
            if (!emptyPath) {
                a.unreadable = QStringLiteral("execveat relative to a descriptor is not followed");
                return a;
            }
        }
    }
    a.path = inSandbox(a.path);
    qsizetype bytes = 0;
    // The pointers a page at a time (never across one, so an unmapped page ends them cleanly).
    quint64 pointers[kPage / sizeof(quint64)];
    size_t have = 0, next = 0;
    for (quint64 address = argvAddress; a.argv.size() <= kMaxArgs; address += sizeof(quint64)) {
        if (next == have) {
            have = (kPage - size_t(address % kPage)) / sizeof(quint64);
            next = 0;
            if (have == 0 || !readMemory(a.hostPid, address, pointers, have * sizeof(quint64))) {
                a.unreadable = QStringLiteral("the program's arguments cannot be read from the process");
                return a;
            }
        }
        const quint64 pointer = pointers[next++];
        if (pointer == 0)
            break;
        const auto word = readString(a.hostPid, pointer, kMaxArgBytes - bytes);
        if (!word) {
            a.unreadable
                = QStringLiteral("the program's arguments cannot be read from the process, or are longer than %1 bytes")
                      .arg(kMaxArgBytes);
            return a;
        }
        bytes += word->size() + 1;
        a.argv.append(QString::fromUtf8(*word));
    }
    if (a.argv.size() > kMaxArgs) {
        a.unreadable = QStringLiteral("more than %1 arguments").arg(kMaxArgs);
        return a;
    }
    // The programs a script's "#!" lines start run without an execve of their own: each is judged
    // too (the kernel follows up to 4 of them). What cannot be opened from here, other than a
    // path with nothing there (a PATH search's miss: the kernel fails it too), is refused.
    QString file = given;
    for (int level = 0; level < 5; ++level) {
        const int fd = openProgram(a.hostPid, file, a.cwd, level == 0 ? emptyPathFd : -1);
        if (fd < 0) {
            if ((errno == ENOENT || errno == ENOTDIR) && !file.startsWith(QLatin1String("/proc/"))
                && !file.startsWith(QLatin1String("/dev/")))
                a.missing = level == 0;
            else
                a.unreadable = QStringLiteral("'%1' cannot be opened to check it (%2)")
                                   .arg(file.left(200), QString::fromLocal8Bit(std::strerror(errno)));
            break;
        }
        const auto interpreter = shebang(fd);
        ::close(fd);
        if (!interpreter)
            break;
        if (interpreter->isEmpty()) {
            a.unreadable = QStringLiteral("'%1' names an interpreter that is not valid UTF-8").arg(file.left(200));
            break;
        }
        if (level == 4) {
            a.unreadable = QStringLiteral("scripts nested more than 4 deep");
            break;
        }
        a.interpreters.append(*interpreter);
        file = interpreter->first();
    }
    return a;
}

bool ExecListener::answer(quint64 id, bool allow)
{
    unwatch(id);
    m_open.remove(id);
    std::vector<char> buf(sizes().seccomp_notif_resp, 0);
    auto *r = reinterpret_cast<seccomp_notif_resp *>(buf.data());
    r->id = id;
    if (allow)
        r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    else
        r->error = -EPERM;
    return ::ioctl(m_fd, SECCOMP_IOCTL_NOTIF_SEND, r) == 0; // ENOENT: the process has gone meanwhile
}

} // namespace airlock
