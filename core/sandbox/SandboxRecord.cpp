// SPDX-License-Identifier: Apache-2.0
#include "sandbox/SandboxRecord.h"

#include <QJsonArray>

#include "sandbox/GuestWire.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

namespace airlock {

namespace {
constexpr qint64 kMaxRecordBytes = 4 * 1024 * 1024;

Error recordError(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, what);
}

// Field 22 of /proc/PID/stat, counted after the command name (which may hold spaces and parens).
quint64 startTimeOf(pid_t pid)
{
    QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray stat = f.read(4096);
    const qsizetype close = stat.lastIndexOf(')');
    if (close < 0)
        return 0;
    const QList<QByteArray> fields = stat.mid(close + 2).split(' ');
    return fields.size() > 19 ? fields.at(19).toULongLong() : 0; // fields from 3 on: 22 is [19]
}

// bind()/connect() by a path of any length: through the directory's descriptor.
struct SocketAddress {
    int dirFd = -1;
    sockaddr_un sa{};
    ~SocketAddress()
    {
        if (dirFd >= 0)
            ::close(dirFd);
    }
};
Result<std::unique_ptr<SocketAddress>> addressIn(const QString &dir)
{
    auto a = std::make_unique<SocketAddress>();
    a->dirFd = ::open(QFile::encodeName(dir).constData(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (a->dirFd < 0)
        return makeError(
            ErrorCode::IoError, QStringLiteral("cannot open %1: %2").arg(dir, QString::fromLocal8Bit(strerror(errno))));
    a->sa.sun_family = AF_UNIX;
    std::snprintf(a->sa.sun_path, sizeof a->sa.sun_path, "/proc/self/fd/%d/guest.sock", a->dirFd);
    return a;
}
} // namespace

int ProcessRef::open() const
{
    if (pid <= 1 || startTime == 0)
        return -1;
    const int fd = int(::syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0)
        return -1;
    // Opened first: the start time read next is of that process, not of a later reuse of the pid.
    if (startTimeOf(pid) != startTime) {
        ::close(fd);
        return -1;
    }
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

std::optional<ProcessRef> ProcessRef::of(pid_t pid)
{
    const quint64 start = pid > 1 ? startTimeOf(pid) : 0;
    if (start == 0)
        return std::nullopt;
    return ProcessRef{pid, start};
}

QJsonObject SandboxRecord::toJson() const
{
    const auto process = [](const ProcessRef &p) {
        return QJsonObject{
            {QStringLiteral("pid"), double(p.pid)}, {QStringLiteral("startTime"), QString::number(p.startTime)}};
    };
    QJsonObject o{{QStringLiteral("format"), kFormat}, {QStringLiteral("id"), id},
        {QStringLiteral("spec"), spec.toJson()}, {QStringLiteral("run"), run},
        {QStringLiteral("createdThrough"), createdThrough}, {QStringLiteral("preset"), preset},
        {QStringLiteral("overrides"), overrides}, {QStringLiteral("policyVersion"), policyVersion},
        {QStringLiteral("workspace"), workspaceDir}, {QStringLiteral("bwrap"), process(bwrap)},
        {QStringLiteral("token"), QString::fromLatin1(token.toHex())}, {QStringLiteral("createdMs"), double(createdMs)},
        {QStringLiteral("landlockAbi"), landlockAbi}, {QStringLiteral("daemonVersion"), daemonVersion}};
    if (init.pid > 0)
        o.insert(QStringLiteral("init"), process(init));
    if (!brokerAuthority.key.isEmpty())
        o.insert(QStringLiteral("brokerAuthority"),
            QJsonObject{{QStringLiteral("key"), QString::fromLatin1(brokerAuthority.key)},
                {QStringLiteral("certificate"), QString::fromLatin1(brokerAuthority.certificate)},
                {QStringLiteral("hosts"), QJsonArray::fromStringList(brokerHosts)}});
    if (hostUid)
        o.insert(QStringLiteral("hostUid"), double(*hostUid));
    if (userLayer)
        o.insert(QStringLiteral("userLayer"), *userLayer);
    if (!ended.isEmpty())
        o.insert(QStringLiteral("ended"), ended);
    if (oneShot)
        o.insert(QStringLiteral("oneShot"), true);
    if (warm)
        o.insert(QStringLiteral("warm"), true);
    return o;
}

Result<SandboxRecord> SandboxRecord::fromJson(const QJsonObject &o)
{
    if (o.value(QStringLiteral("format")).toInt() != kFormat)
        return recordError(QStringLiteral("record format %1, this airlockd reads %2")
                               .arg(o.value(QStringLiteral("format")).toInt())
                               .arg(kFormat));
    SandboxRecord r;
    r.id = o.value(QStringLiteral("id")).toString();
    static const QRegularExpression idPattern(QStringLiteral("^[0-9a-f]{8,64}$"));
    if (!idPattern.match(r.id).hasMatch())
        return recordError(QStringLiteral("/id: expected a sandbox id"));
    auto spec = SandboxSpec::fromJson(o.value(QStringLiteral("spec")).toObject(), HostPaths::Recorded);
    if (!spec)
        return recordError(QStringLiteral("/spec: %1").arg(spec.error().message));
    r.spec = *spec;
    for (const auto &[key, field] :
        {std::pair{"run", &r.run}, {"createdThrough", &r.createdThrough}, {"preset", &r.preset},
            {"workspace", &r.workspaceDir}, {"daemonVersion", &r.daemonVersion}, {"ended", &r.ended}}) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (!v.isUndefined() && !v.isString())
            return recordError(QStringLiteral("/%1: expected a string").arg(QLatin1String(key)));
        *field = v.toString();
    }
    if (!o.value(QStringLiteral("overrides")).isObject())
        return recordError(QStringLiteral("/overrides: expected an object"));
    r.overrides = o.value(QStringLiteral("overrides")).toObject();
    for (const auto &[key, field] : {std::pair{"oneShot", &r.oneShot}, {"warm", &r.warm}}) {
        const QJsonValue v = o.value(QLatin1String(key));
        if (!v.isUndefined() && !v.isBool())
            return recordError(QStringLiteral("/%1: expected true or false").arg(QLatin1String(key)));
        *field = v.toBool();
    }
    if (const QJsonValue user = o.value(QStringLiteral("userLayer")); !user.isUndefined()) {
        if (!user.isObject())
            return recordError(QStringLiteral("/userLayer: expected an object"));
        r.userLayer = user.toObject();
    }
    const auto process = [&](const char *key, ProcessRef &p) -> Status {
        const QJsonObject j = o.value(QLatin1String(key)).toObject();
        const double pid = j.value(QStringLiteral("pid")).toDouble();
        bool ok = false;
        p.startTime = j.value(QStringLiteral("startTime")).toString().toULongLong(&ok);
        if (pid < 2 || pid > 4194304 || pid != double(pid_t(pid)) || !ok || p.startTime == 0)
            return recordError(QStringLiteral("/%1: expected {pid, startTime}").arg(QLatin1String(key)));
        p.pid = pid_t(pid);
        return Ok{};
    };
    if (Status s = process("bwrap", r.bwrap); !s)
        return s.error();
    // gVisor's sandbox has no init on the host (its processes are the sentry's tasks): none is named.
    if (r.spec.isolation == Isolation::Gvisor) {
        if (o.contains(QStringLiteral("init")))
            return recordError(QStringLiteral("/init: a gVisor sandbox has no host process for its init"));
    } else if (Status s = process("init", r.init); !s) {
        return s.error();
    }
    r.token = QByteArray::fromHex(o.value(QStringLiteral("token")).toString().toLatin1());
    if (r.token.size() != qsizetype(wire::kResumeTokenSize))
        return recordError(QStringLiteral("/token: expected %1 bytes in hex").arg(wire::kResumeTokenSize));
    r.policyVersion = o.value(QStringLiteral("policyVersion")).toInt(0);
    r.landlockAbi = o.value(QStringLiteral("landlockAbi")).toInt(-1);
    r.createdMs = qint64(o.value(QStringLiteral("createdMs")).toDouble(-1));
    if (r.policyVersion < 1 || r.landlockAbi < 0 || r.createdMs < 0)
        return recordError(QStringLiteral("/policyVersion, /landlockAbi and /createdMs: expected numbers"));
    if (o.contains(QStringLiteral("brokerAuthority"))) {
        const QJsonObject a = o.value(QStringLiteral("brokerAuthority")).toObject();
        r.brokerAuthority = {a.value(QStringLiteral("key")).toString().toLatin1(),
            a.value(QStringLiteral("certificate")).toString().toLatin1()};
        for (const QJsonValue &h : a.value(QStringLiteral("hosts")).toArray())
            r.brokerHosts.append(h.toString());
        if (!r.brokerAuthority.key.startsWith("-----BEGIN") || !r.brokerAuthority.certificate.startsWith("-----BEGIN")
            || r.brokerHosts.isEmpty())
            return recordError(QStringLiteral("/brokerAuthority: expected {key, certificate (PEM), hosts}"));
    }
    if (o.contains(QStringLiteral("hostUid"))) {
        const double uid = o.value(QStringLiteral("hostUid")).toDouble(-1);
        if (uid < 1 || uid > 4294967294.0)
            return recordError(QStringLiteral("/hostUid: expected a uid"));
        r.hostUid = uid_t(uid);
    }
    return r;
}

Status SandboxRecords::write(const SandboxRecord &record) const
{
    const QString dir = m_dir + QLatin1Char('/') + record.id;
    if (!QDir().mkpath(dir) || ::chmod(QFile::encodeName(m_dir).constData(), 0700) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(dir));
    const QByteArray data = QJsonDocument(record.toJson()).toJson(QJsonDocument::Compact);
    const QByteArray path = QFile::encodeName(dir + QStringLiteral("/record.json"));
    const QByteArray aside = path + ".new";
    const int fd = ::open(aside.constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot write %1: %2")
                .arg(QString::fromLocal8Bit(aside), QString::fromLocal8Bit(strerror(errno))));
    const bool written = ::write(fd, data.constData(), size_t(data.size())) == data.size();
    ::close(fd);
    if (!written || ::rename(aside.constData(), path.constData()) != 0) {
        ::unlink(aside.constData());
        return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1").arg(QString::fromLocal8Bit(path)));
    }
    return Ok{};
}

void SandboxRecords::remove(const QString &id) const
{
    if (!id.isEmpty() && !id.contains(QLatin1Char('/')))
        fs::removeTree(m_dir + QLatin1Char('/') + id);
}

QList<std::pair<QString, Result<SandboxRecord>>> SandboxRecords::readAll() const
{
    QList<std::pair<QString, Result<SandboxRecord>>> out;
    for (const QString &name : QDir(m_dir).entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name)) {
        QFile f(m_dir + QLatin1Char('/') + name + QStringLiteral("/record.json"));
        if (!f.open(QIODevice::ReadOnly)) {
            out.append({name, recordError(QStringLiteral("cannot read %1: %2").arg(f.fileName(), f.errorString()))});
            continue;
        }
        QJsonParseError err{};
        const QJsonDocument doc = QJsonDocument::fromJson(f.read(kMaxRecordBytes), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            out.append({name,
                recordError(QStringLiteral("%1 is not a JSON object: %2").arg(f.fileName(), err.errorString()))});
            continue;
        }
        auto record = SandboxRecord::fromJson(doc.object());
        if (record && record->id != name)
            record = recordError(QStringLiteral("%1 names sandbox %2").arg(f.fileName(), record->id));
        out.append({name, std::move(record)});
    }
    return out;
}

Result<int> SandboxRecords::listen(const QString &id) const
{
    const QString dir = m_dir + QLatin1Char('/') + id;
    if (!QDir().mkpath(dir) || ::chmod(QFile::encodeName(m_dir).constData(), 0700) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(dir));
    auto address = addressIn(dir);
    if (!address)
        return address.error();
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ::unlinkat((*address)->dirFd, "guest.sock", 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&(*address)->sa), sizeof(sockaddr_un)) != 0
        || ::listen(fd, 4) != 0) {
        const int err = errno;
        if (fd >= 0)
            ::close(fd);
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot listen for the guest in %1: %2").arg(dir, QString::fromLocal8Bit(strerror(err))));
    }
    return fd;
}

Result<int> SandboxRecords::connect(const QString &id) const
{
    auto address = addressIn(m_dir + QLatin1Char('/') + id);
    if (!address)
        return address.error();
    // Without waiting: the guest holds the listener, and one whose backlog it lets fill would hold
    // a blocking connect() (and this daemon's start) for good (EAGAIN instead). What is then sent
    // on it waits 2 s at most.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const timeval sendTimeout{2, 0};
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&(*address)->sa), sizeof(sockaddr_un)) != 0
        || ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0
        || ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout) != 0) {
        const int err = errno;
        if (fd >= 0)
            ::close(fd);
        return makeError(ErrorCode::IoError,
            QStringLiteral("cannot reach the sandbox's agent: %1").arg(QString::fromLocal8Bit(strerror(err))));
    }
    return fd;
}

} // namespace airlock
