// SPDX-License-Identifier: Apache-2.0
// cp between this host and a sandbox's workspace, files and (with -r) folders, streamed as data
// frames (fs.upload, fs.download) with progress on a terminal. The daemon resolves every sandbox
// path beneath the workspace; this side only reads and writes local files.
#include "ProgressLine.h"
#include "SandboxCommands.h"

#include "model/DisplayText.h"
#include "rpc/Protocol.h"

#include <QCoreApplication>
#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QJsonArray>
#include <QRegularExpression>
#include <QTemporaryFile>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::cli {

namespace {
// What may wait in the connection's queue before the sender waits for the daemon to read it.
constexpr qint64 kInFlight = 8 * 1024 * 1024;

struct Endpoint {
    QString sandbox; // empty for a host path
    QString path;
};

Endpoint parseEndpoint(const QString &arg)
{
    static const QRegularExpression remote(QStringLiteral("^([a-z0-9][a-z0-9_.-]{0,62}):(.*)$"));
    const auto m = remote.match(arg);
    if (m.hasMatch())
        return {m.captured(1), m.captured(2).isEmpty() ? QStringLiteral("/workspace") : m.captured(2)};
    return {{}, arg};
}

mode_t currentUmask()
{
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}

QString joined(const QString &dir, const QString &name)
{
    if (name.isEmpty())
        return dir;
    return dir.endsWith(QLatin1Char('/')) ? QString(dir + name) : QString(dir + QLatin1Char('/') + name);
}

// A name the daemon listed, from a tree the sandbox controls: only plain components below the
// folder being copied.
bool plainRelative(const QString &path)
{
    if (path.isEmpty() || path.startsWith(QLatin1Char('/')))
        return false;
    const QStringList parts = path.split(QLatin1Char('/'));
    return std::none_of(parts.cbegin(), parts.cend(),
        [](const QString &p) { return p.isEmpty() || p == QLatin1String(".") || p == QLatin1String(".."); });
}

// Where a host copy goes: a new or regular file is written aside (a temporary file beside it) and
// renamed into place once all of it is written and closed without error, so a full disk or a
// failed write is an error, never a short file reported as copied. Not synced: as durable as cp's
// and rsync's copies (`sync FILE` after, against a power cut). Written as it is, with its errors
// checked the same way: one of our own descriptors (/dev/stdout, /dev/fd/N: whatever it is open
// on, appended to as the shell opened it), a device or FIFO (renaming over it would replace it), a
// symbolic link (the kernel follows it, with its protections for shared folders), and a file in a
// folder we may not add to.
class HostTarget {
public:
    explicit HostTarget(const QString &path)
        : m_path(path)
    {
        static const QRegularExpression ownFd(
            QStringLiteral("^/(?:dev/(?:fd/(\\d+)|(stdout|stderr))|proc/self/fd/(\\d+))$"));
        const auto fdMatch = ownFd.match(path);
        m_fd = !fdMatch.hasMatch()                           ? -1
            : fdMatch.captured(2) == QLatin1String("stdout") ? 1
            : fdMatch.captured(2) == QLatin1String("stderr")
            ? 2
            : QString(fdMatch.captured(1) + fdMatch.captured(3)).toInt();
        struct stat st { };
        const bool exists = ::lstat(QFile::encodeName(path).constData(), &st) == 0;
        m_existingMode = exists && S_ISREG(st.st_mode) ? int(st.st_mode & 07777) : -1;
        m_aside = m_fd < 0 && (!exists || S_ISREG(st.st_mode));
    }
    ~HostTarget() { cancel(); }

    Status open()
    {
        if (m_fd >= 0) {
            auto file = std::make_unique<QFile>(m_path);
            if (!file->open(m_fd, QIODevice::WriteOnly, QFileDevice::DontCloseHandle))
                return failure(file->errorString());
            m_file = std::move(file);
            return Ok{};
        }
        if (m_aside) {
            const QFileInfo target(m_path);
            // (A short name of its own: the target's could be too long with a suffix.)
            auto temporary
                = std::make_unique<QTemporaryFile>(target.absolutePath() + QStringLiteral("/.airlock-cp-XXXXXX"));
            if (temporary->open()) {
                m_file = std::move(temporary);
                return Ok{};
            }
        }
        auto file = std::make_unique<QFile>(m_path);
        if (!file->open(QIODevice::WriteOnly | (m_aside ? QIODevice::Truncate : QIODevice::OpenMode())))
            return failure(file->errorString());
        m_file = std::move(file);
        return Ok{};
    }
    Status write(QByteArrayView bytes)
    {
        if (m_file->write(bytes.data(), bytes.size()) != bytes.size())
            return failure(m_file->errorString());
        return Ok{};
    }
    // Flushed and closed without error before it counts; a new file takes `mode` less the umask,
    // an existing one keeps its own. Only then is the copy put in place.
    Status commit(int mode)
    {
        auto *temporary = qobject_cast<QTemporaryFile *>(m_file.get());
        const int keep = m_existingMode >= 0 ? m_existingMode : mode >= 0 ? int(mode & 0777 & ~currentUmask()) : -1;
        if (temporary && keep >= 0)
            (void)::fchmod(temporary->handle(), mode_t(keep));
        else if (!temporary && m_existingMode < 0 && m_fd < 0 && mode >= 0 && m_aside)
            (void)::fchmod(m_file->handle(), mode_t(mode & 0777 & ~currentUmask()));
        const bool flushed = m_file->flush() && m_file->error() == QFileDevice::NoError;
        const QString name = m_file->fileName();
        if (!flushed) {
            const QString why = m_file->errorString();
            cancel();
            return failure(why);
        }
        if (!temporary)
            return Ok{};
        const int closed = ::close(::dup(temporary->handle())) == 0 ? 0 : errno; // the close's own error (NFS, quotas)
        temporary->setAutoRemove(false);
        temporary->close();
        if (closed != 0 || ::rename(QFile::encodeName(name).constData(), QFile::encodeName(m_path).constData()) != 0) {
            const QString why = QString::fromLocal8Bit(std::strerror(closed ? closed : errno));
            ::unlink(QFile::encodeName(name).constData());
            m_file.reset();
            return failure(why);
        }
        m_file.reset();
        return Ok{};
    }
    void cancel()
    {
        m_file.reset(); // a temporary file is removed with it
    }

private:
    Error failure(const QString &why) const
    {
        return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(m_path, why));
    }

    QString m_path;
    int m_fd = -1;
    int m_existingMode = -1;
    bool m_aside = false;
    std::unique_ptr<QFile> m_file;
};

// One cp: its files one after the other over one connection, with one progress line.
class Copier {
public:
    Copier(DaemonClient &client, const QString &sandbox, QTextStream &err)
        : m_client(client)
        , m_api(client)
        , m_sandbox(sandbox)
        , m_err(err)
    {
    }

    qint64 files = 0, directories = 0, bytes = 0;
    QStringList skipped;
    qint64 totalBytes = 0; // for the progress line (0: unknown)
    qint64 totalFiles = 0;

    // The host file (or pipe) `hostPath` to `target` in the sandbox (a folder: into it, as `name`).
    Result<QString> upload(const QString &hostPath, const QString &target, const QString &name)
    {
        QFile file(hostPath);
        if (!file.open(QIODevice::ReadOnly))
            return makeError(
                ErrorCode::NotFound, QStringLiteral("cannot read %1: %2").arg(hostPath, file.errorString()));
        // A file or a pipe (a FIFO, /dev/stdin of a pipeline): read to its end. A device or a
        // socket may never end: refused rather than copied in part.
        struct stat st { };
        if (::fstat(file.handle(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)))
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral(
                    "%1 is not a regular file or a pipe (a device or socket may never end); copy a file, or pipe it: "
                    "cat %1 | airlockctl cp /dev/stdin SANDBOX:PATH")
                    .arg(hostPath));
        auto opened = m_api.openUpload(m_sandbox, target, name, int(st.st_mode & 0777)).wait();
        if (!opened)
            return opened.error();
        const quint32 transfer = quint32(opened->value(QStringLiteral("transfer")).toDouble());
        const QString path = opened->value(QStringLiteral("path")).toString();
        if (S_ISREG(st.st_mode) && totalFiles == 0)
            totalBytes = st.st_size;
        qint64 sent = 0;
        QByteArray chunk;
        std::optional<Error> readError;
        bool refused = false; // the daemon could not write: the rest is not sent
        const auto told = QObject::connect(
            &m_client, &DaemonClient::notified, &m_client, [&](const QString &method, const QJsonObject &p) {
                refused |= method == rpc::method::TransferNotification
                    && quint32(p.value(QStringLiteral("transfer")).toDouble()) == transfer
                    && p.contains(QStringLiteral("error"));
            });
        const auto untell = qScopeGuard([&] { QObject::disconnect(told); });
        while (!refused) {
            chunk.resize(rpc::kDataChunk);
            const ssize_t n = ::read(file.handle(), chunk.data(), size_t(chunk.size()));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                readError = makeError(ErrorCode::IoError,
                    QStringLiteral("cannot read %1: %2").arg(hostPath, QString::fromLocal8Bit(std::strerror(errno))));
            if (n <= 0)
                break;
            chunk.resize(n);
            m_client.sendData(transfer, chunk);
            sent += n;
            step(n, QFileInfo(path).fileName());
            if (Status room = waitForRoom(); !room)
                return room.error();
        }
        auto finished = m_api.finishUpload(m_sandbox, transfer, readError ? -1 : sent).wait(600000);
        if (readError)
            return *readError;
        if (!finished)
            return finished.error();
        ++files;
        return path;
    }

    // `path` in the sandbox to the host file `hostPath`; its mode for a new file.
    Status download(const QString &path, const QString &hostPath)
    {
        HostTarget target(hostPath);
        std::optional<quint32> transfer;
        qint64 size = -1, received = 0;
        int mode = -1;
        std::optional<Error> failed;
        bool ended = false;
        QEventLoop loop;
        // The reply comes before the data frames that follow it: each frame is for a known transfer.
        const auto data
            = QObject::connect(&m_client, &DaemonClient::dataReceived, &loop, [&](quint32 id, QByteArrayView bytes) {
                  if (!transfer || id != *transfer || failed)
                      return;
                  if (Status w = target.write(bytes); !w)
                      failed = w.error(); // the rest is drained, then the error said
                  received += bytes.size();
                  step(bytes.size(), QFileInfo(path).fileName());
              });
        const auto done = QObject::connect(
            &m_client, &DaemonClient::notified, &loop, [&](const QString &method, const QJsonObject &p) {
                if (method != rpc::method::TransferNotification || !transfer
                    || quint32(p.value(QStringLiteral("transfer")).toDouble()) != *transfer)
                    return;
                if (p.contains(QStringLiteral("error")) && !failed)
                    failed = rpc::errorFromReply(p.value(QStringLiteral("error")).toObject());
                ended = true;
                loop.quit();
            });
        const auto gone = QObject::connect(&m_client, &DaemonClient::disconnected, &loop, [&](const Error &why) {
            if (!failed)
                failed = why;
            ended = true;
            loop.quit();
        });
        const auto disconnect = qScopeGuard([&] {
            QObject::disconnect(data);
            QObject::disconnect(done);
            QObject::disconnect(gone);
        });
        std::optional<Result<QJsonObject>> opened;
        m_api.openDownload(m_sandbox, path).then([&](Result<QJsonObject> r) {
            if (r) {
                const QJsonObject &o = *r;
                size = qint64(o.value(QStringLiteral("size")).toDouble());
                mode = o.value(QStringLiteral("mode")).toInt(-1);
                if (Status open = target.open(); !open)
                    failed = open.error();
                transfer = quint32(o.value(QStringLiteral("transfer")).toDouble());
                if (totalFiles == 0)
                    totalBytes = size;
            }
            opened = std::move(r);
            if (!*opened)
                loop.quit();
        });
        if (!opened || *opened)
            loop.exec();
        if (opened && !*opened)
            return opened->error();
        if (!failed && received != size)
            failed = makeError(
                ErrorCode::IoError, QStringLiteral("%1: %2 of %3 bytes arrived").arg(path).arg(received).arg(size));
        if (failed) {
            target.cancel();
            return *failed;
        }
        if (Status c = target.commit(mode); !c)
            return c;
        ++files;
        return Ok{};
    }

    Result<QString> makeDirectory(const QString &path, int mode, bool *existed)
    {
        auto made = m_api.makeDirectory(m_sandbox, path, mode).wait();
        if (!made)
            return made.error();
        *existed = made->value(QStringLiteral("existed")).toBool();
        if (!*existed)
            ++directories;
        return made->value(QStringLiteral("path")).toString();
    }

    Result<QJsonArray> list(const QString &path)
    {
        auto listed = m_api.listDirectory(m_sandbox, path).wait();
        if (!listed)
            return listed.error();
        return listed->value(QStringLiteral("entries")).toArray();
    }

    void skip(const QString &what)
    {
        m_line.clear();
        skipped.append(what);
        m_err << "airlockctl: skipped " << display::escaped(what) << " (cp copies files and folders)"
              << Qt::endl; // names a sandbox chose
    }
    void clearProgress() { m_line.clear(); }
    const QString &sandbox() const { return m_sandbox; }

private:
    void step(qint64 n, const QString &name)
    {
        bytes += n;
        const QString what = totalFiles > 1 ? QStringLiteral("copying %1 of %2 files").arg(files + 1).arg(totalFiles)
                                            : QStringLiteral("copying ") + name;
        m_line.update(what, bytes, totalBytes);
    }
    // Flow control: while much is queued, wait for the daemon to read it. And hear what the
    // daemon said meanwhile (a write it could not do): sendData writes without the event loop.
    Status waitForRoom()
    {
        QCoreApplication::processEvents();
        while (m_client.pendingBytes() > kInFlight) {
            if (!m_client.isConnected())
                return makeError(ErrorCode::DaemonUnavailable, QStringLiteral("the daemon went away during the copy"));
            QEventLoop loop;
            QObject::connect(&m_client, &DaemonClient::bytesWritten, &loop, &QEventLoop::quit);
            QObject::connect(&m_client, &DaemonClient::disconnected, &loop, &QEventLoop::quit);
            loop.exec();
        }
        return Ok{};
    }

    DaemonClient &m_client;
    DaemonApi m_api;
    QString m_sandbox;
    QTextStream &m_err;
    ProgressLine m_line;
};
} // namespace

class CpCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("cp"); }
    QString summary() const override
    {
        return QStringLiteral(
            "Copy files (and with -r folders) between this host and a sandbox's /workspace, keeping their modes. "
            "Paths outside the workspace, '..' and symlinks that lead out are refused.");
    }
    QString usage() const override { return QStringLiteral("[-r] HOSTPATH SANDBOX:PATH | [-r] SANDBOX:PATH HOSTPATH"); }
    QList<QCommandLineOption> options() const override { return {m_recursive}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        const QStringList args = positional;
        if (args.size() != 2)
            return fail(
                ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("cp needs a source and a destination")));
        const Endpoint from = parseEndpoint(args[0]), to = parseEndpoint(args[1]);
        if (from.sandbox.isEmpty() == to.sandbox.isEmpty())
            return fail(ctx,
                makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("exactly one side must be SANDBOX:PATH (e.g. cp ./data.csv sb1:/workspace/)")));
        const bool recursive = parser.isSet(m_recursive);
        if (to.sandbox.isEmpty() ? false : QFileInfo(from.path).isDir() && !recursive)
            return fail(ctx,
                makeError(
                    ErrorCode::InvalidArgument, QStringLiteral("%1 is a folder; copy it with cp -r").arg(from.path)));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        Copier copier(**client, to.sandbox.isEmpty() ? from.sandbox : to.sandbox, ctx.err);
        Result<QJsonObject> copied = to.sandbox.isEmpty() ? download(copier, from.path, to.path, recursive)
                                                          : upload(copier, from.path, to.path, recursive);
        copier.clearProgress();
        if (!copied)
            return fail(ctx, copied.error());
        if (ctx.json)
            printJson(ctx, *copied);
        return ExitOk;
    }

private:
    static Result<QJsonObject> upload(Copier &copier, const QString &hostPath, const QString &target, bool recursive)
    {
        const QFileInfo source(hostPath);
        if (!recursive || !source.isDir() || source.isSymLink()) {
            auto path = copier.upload(hostPath, target, source.fileName());
            if (!path)
                return path.error();
            return QJsonObject{{QStringLiteral("path"), *path}, {QStringLiteral("bytes"), double(copier.bytes)}};
        }
        // cp -r SRC DST: into DST when it is a folder, else as DST.
        namespace fs = std::filesystem;
        const fs::path root = fs::path(QFile::encodeName(hostPath).toStdString());
        std::error_code ec;
        struct Item {
            QString relative;
            fs::file_status status;
        };
        QList<Item> items;
        for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::file_status st = it->symlink_status(ec);
            items.append(
                {QFile::decodeName(QByteArray::fromStdString(it->path().lexically_relative(root).string())), st});
            if (st.type() == fs::file_type::regular) {
                copier.totalBytes += qint64(it->file_size(ec));
                ++copier.totalFiles;
            }
        }
        if (ec)
            return makeError(ErrorCode::IoError,
                QStringLiteral("cannot read %1: %2").arg(hostPath, QString::fromStdString(ec.message())));
        bool existed = false;
        auto top = copier.makeDirectory(target, modeOf(hostPath), &existed);
        if (!top)
            return top.error();
        QString base = *top;
        if (existed) {
            auto inside = copier.makeDirectory(joined(*top, source.fileName()), modeOf(hostPath), &existed);
            if (!inside)
                return inside.error();
            base = *inside;
        }
        for (const Item &item : std::as_const(items)) {
            const QString dest = joined(base, item.relative);
            const QString src = joined(hostPath, item.relative);
            if (item.status.type() == fs::file_type::directory) {
                if (auto made = copier.makeDirectory(dest, modeOf(src), &existed); !made)
                    return made.error();
            } else if (item.status.type() == fs::file_type::regular) {
                if (auto up = copier.upload(src, dest, QString()); !up)
                    return up.error();
            } else {
                copier.skip(QStringLiteral("%1 %2").arg(item.status.type() == fs::file_type::symlink
                        ? QStringLiteral("symbolic link")
                        : QStringLiteral("special file"),
                    src));
            }
        }
        return summary(copier, base);
    }

    static Result<QJsonObject> download(Copier &copier, const QString &path, QString hostPath, bool recursive)
    {
        auto listed = copier.list(path);
        if (!listed)
            return listed.error();
        const bool file
            = listed->size() == 1 && listed->at(0).toObject().value(QStringLiteral("path")).toString().isEmpty();
        const QString name = QFileInfo(path).fileName();
        if (file) {
            if (QFileInfo(hostPath).isDir())
                hostPath = joined(hostPath, name);
            if (Status s = copier.download(path, hostPath); !s)
                return s.error();
            return QJsonObject{{QStringLiteral("path"), hostPath}, {QStringLiteral("bytes"), double(copier.bytes)}};
        }
        if (!recursive)
            return makeError(
                ErrorCode::InvalidArgument, QStringLiteral("%1 is a folder; copy it with cp -r").arg(path));
        // cp -r SB:SRC DST: into DST when it is a folder, else as DST.
        const mode_t mask = currentUmask();
        const QString base = QFileInfo(hostPath).isDir() && !name.isEmpty() ? joined(hostPath, name) : hostPath;
        if (!QFileInfo(base).isDir() && !QDir().mkpath(base))
            return makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(base));
        for (const QJsonValue &v : std::as_const(*listed)) {
            const QJsonObject e = v.toObject();
            if (e.value(QStringLiteral("type")).toString() == QLatin1String("file")) {
                copier.totalBytes += qint64(e.value(QStringLiteral("size")).toDouble());
                ++copier.totalFiles;
            }
        }
        for (const QJsonValue &v : std::as_const(*listed)) {
            const QJsonObject e = v.toObject();
            const QString relative = e.value(QStringLiteral("path")).toString();
            const QString type = e.value(QStringLiteral("type")).toString();
            if (!plainRelative(relative))
                return makeError(ErrorCode::ProtocolError,
                    QStringLiteral("the daemon listed '%1', which is not a name below %2; refused")
                        .arg(relative, path));
            const QString dest = joined(base, relative);
            const int mode = e.value(QStringLiteral("mode")).toInt(0755);
            if (type == QLatin1String("directory")) {
                // Writable for the copy of what it holds, whatever its mode says.
                if (::mkdir(QFile::encodeName(dest).constData(), mode_t((mode | 0700) & ~mask)) != 0 && errno != EEXIST)
                    return makeError(ErrorCode::IoError,
                        QStringLiteral("cannot create %1: %2").arg(dest, QString::fromLocal8Bit(std::strerror(errno))));
                ++copier.directories;
            } else if (type == QLatin1String("file")) {
                if (Status s = copier.download(joined(path, relative), dest); !s)
                    return s.error();
            } else {
                copier.skip(QStringLiteral("%1 %2:%3")
                                .arg(type == QLatin1String("link") ? QStringLiteral("symbolic link")
                                                                   : QStringLiteral("special file"),
                                    copier.sandbox(), joined(path, relative)));
            }
        }
        return summary(copier, base);
    }

    static int modeOf(const QString &hostPath)
    {
        struct stat st { };
        return ::lstat(QFile::encodeName(hostPath).constData(), &st) == 0 ? int(st.st_mode & 0777) | 0700 : 0755;
    }

    static QJsonObject summary(const Copier &copier, const QString &path)
    {
        return QJsonObject{{QStringLiteral("path"), path}, {QStringLiteral("files"), double(copier.files)},
            {QStringLiteral("directories"), double(copier.directories)},
            {QStringLiteral("bytes"), double(copier.bytes)},
            {QStringLiteral("skipped"), QJsonArray::fromStringList(copier.skipped)}};
    }

    QCommandLineOption m_recursive{{QStringLiteral("r"), QStringLiteral("recursive")},
        QStringLiteral("Copy folders and what they hold (symbolic links and special files are skipped, and said).")};
};

void addFileCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<CpCommand>());
}

} // namespace airlock::cli
