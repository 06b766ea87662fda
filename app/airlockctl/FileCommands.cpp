// SPDX-License-Identifier: Apache-2.0
// cp between this host and a sandbox's workspace. The daemon resolves every sandbox path beneath
// the workspace; this side only reads and writes local files.
#include "SandboxCommands.h"

#include <QFile>
#include <QSaveFile>
#include <cstring>
#include <cerrno>
#include <QFileInfo>

#include <memory>

#include <sys/stat.h>
#include <QRegularExpression>

namespace airlock::cli {

namespace {
constexpr qint64 kChunk = 1024 * 1024;

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
} // namespace

class CpCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("cp"); }
    QString summary() const override
    {
        return QStringLiteral("Copy a file between this host and a sandbox's /workspace. Paths outside the workspace, "
                              "'..' and symlinks that lead out are refused.");
    }
    QString usage() const override { return QStringLiteral("HOSTFILE SANDBOX:PATH | SANDBOX:PATH HOSTPATH"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        const QStringList args = positional;
        if (args.size() != 2)
            return fail(ctx, makeError(ErrorCode::InvalidArgument, QStringLiteral("cp needs a source and a destination")));
        const Endpoint from = parseEndpoint(args[0]), to = parseEndpoint(args[1]);
        if (from.sandbox.isEmpty() == to.sandbox.isEmpty())
            return fail(ctx, makeError(ErrorCode::InvalidArgument,
                                       QStringLiteral("exactly one side must be SANDBOX:PATH (e.g. cp ./data.csv sb1:/workspace/)")));
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto copied = to.sandbox.isEmpty() ? download(**client, from, to.path) : upload(**client, from.path, to);
        if (!copied)
            return fail(ctx, copied.error());
        if (ctx.json)
            printJson(ctx, *copied);
        return ExitOk;
    }

private:
    static Result<QJsonObject> upload(DaemonClient &client, const QString &hostPath, const Endpoint &to)
    {
        QFile file(hostPath);
        if (QFileInfo(hostPath).isDir())
            return makeError(ErrorCode::InvalidArgument, QStringLiteral("%1 is a directory; cp copies single files").arg(hostPath));
        if (!file.open(QIODevice::ReadOnly))
            return makeError(ErrorCode::NotFound, QStringLiteral("cannot read %1: %2").arg(hostPath, file.errorString()));
        // A file or a pipe (a FIFO, /dev/stdin of a pipeline): read to its end. A device or a
        // socket may never end: refused rather than copied in part.
        struct stat st {};
        if (::fstat(file.handle(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)))
            return makeError(ErrorCode::InvalidArgument,
                             QStringLiteral("%1 is not a regular file or a pipe (a device or socket may never end); copy a file, or pipe it: "
                                            "cat %1 | airlockctl cp /dev/stdin SANDBOX:PATH")
                                 .arg(hostPath));
        const int mode = (file.permissions() & QFileDevice::ExeOwner) ? 0755 : 0644;
        QString target = to.path;
        qint64 offset = 0;
        QByteArray chunk;
        do {
            // Only an empty read is the end (a pipe's read returns what its writer wrote so far).
            chunk = file.read(kChunk);
            if (chunk.isEmpty() && file.error() != QFileDevice::NoError)
                return makeError(ErrorCode::IoError, QStringLiteral("cannot read %1: %2").arg(hostPath, file.errorString()));
            if (chunk.isEmpty() && offset > 0)
                break;
            auto r = client.call(QStringLiteral("fs.write"), {{QStringLiteral("sandbox"), to.sandbox},
                                                               {QStringLiteral("path"), target},
                                                               {QStringLiteral("name"), QFileInfo(hostPath).fileName()},
                                                               {QStringLiteral("data"), QString::fromLatin1(chunk.toBase64())},
                                                               {QStringLiteral("offset"), double(offset)},
                                                               {QStringLiteral("truncate"), offset == 0},
                                                               {QStringLiteral("mode"), mode}});
            if (!r)
                return r.error();
            target = r->value(QStringLiteral("path")).toString(); // the directory case resolved once
            offset += chunk.size();
        } while (!chunk.isEmpty());
        return QJsonObject{{QStringLiteral("sandbox"), to.sandbox}, {QStringLiteral("path"), target}, {QStringLiteral("bytes"), double(offset)}};
    }

    static Result<QJsonObject> download(DaemonClient &client, const Endpoint &from, QString hostPath)
    {
        if (QFileInfo(hostPath).isDir())
            hostPath += QLatin1Char('/') + QFileInfo(from.path).fileName();
        // A new or regular file is written aside and put in place once all of it is written,
        // flushed and synced: a full disk or a failed write is an error, never a short file
        // reported as copied. Written as it is, with its errors checked the same way: one of our
        // own descriptors (/dev/stdout, /dev/fd/N: whatever it is open on, appended to as the
        // shell opened it), a device or FIFO (renaming over it would replace it), and a symbolic
        // link (the kernel follows it, with its protections for shared folders).
        struct stat st {};
        const QByteArray native = QFile::encodeName(hostPath);
        static const QRegularExpression ownFd(QStringLiteral("^/(?:dev/(?:fd/(\\d+)|(stdout|stderr))|proc/self/fd/(\\d+))$"));
        const auto fdMatch = ownFd.match(hostPath);
        const int fd = !fdMatch.hasMatch() ? -1
                       : fdMatch.captured(2) == QLatin1String("stdout") ? 1
                       : fdMatch.captured(2) == QLatin1String("stderr") ? 2
                                                                       : QString(fdMatch.captured(1) + fdMatch.captured(3)).toInt();
        const bool direct = fd >= 0 || (::lstat(native.constData(), &st) == 0 && (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)));
        std::unique_ptr<QFileDevice> out = direct ? std::unique_ptr<QFileDevice>(std::make_unique<QFile>(hostPath))
                                                  : std::unique_ptr<QFileDevice>(std::make_unique<QSaveFile>(hostPath));
        if (auto *save = qobject_cast<QSaveFile *>(out.get()))
            save->setDirectWriteFallback(true); // a folder we may not add to: the file itself, errors still checked
        QFileDevice &file = *out;
        const auto open = [&] {
            if (fd >= 0)
                return static_cast<QFile &>(file).open(fd, QIODevice::WriteOnly, QFileDevice::DontCloseHandle);
            return file.open(direct ? QIODevice::WriteOnly : QIODevice::WriteOnly | QIODevice::Truncate);
        };
        qint64 offset = 0;
        // The size is fixed by the first answer: a sandbox that keeps appending to the file must
        // not be able to make this copy run (and fill the host disk) forever.
        qint64 total = -1;
        for (bool eof = false; !eof;) {
            auto r = client.call(QStringLiteral("fs.read"), {{QStringLiteral("sandbox"), from.sandbox},
                                                              {QStringLiteral("path"), from.path},
                                                              {QStringLiteral("offset"), double(offset)},
                                                              {QStringLiteral("length"), double(kChunk)}});
            if (!r)
                return r.error();
            if (!file.isOpen() && !open())
                return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(hostPath, file.errorString()));
            const QByteArray data = QByteArray::fromBase64(r->value(QStringLiteral("data")).toString().toLatin1());
            if (total < 0)
                total = qint64(r->value(QStringLiteral("size")).toDouble());
            const qint64 wanted = std::min<qint64>(data.size(), total - offset);
            if (wanted > 0 && file.write(data.constData(), wanted) != wanted)
                return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(hostPath, file.errorString()));
            offset += std::max<qint64>(wanted, 0);
            eof = r->value(QStringLiteral("eof")).toBool() || data.isEmpty() || offset >= total;
        }
        // Flushed and, for a file, synced before it counts (QSaveFile's commit does not check the
        // last flush): only then is the copy put in place.
        const bool flushed = file.flush() && file.error() == QFileDevice::NoError;
        const int handle = file.handle();
        const bool synced = flushed && (fd >= 0 || (::fstat(handle, &st) == 0 && !S_ISREG(st.st_mode)) || ::fsync(handle) == 0);
        if (!synced) {
            const QString why = file.error() != QFileDevice::NoError ? file.errorString() : QString::fromLocal8Bit(std::strerror(errno));
            if (auto *save = qobject_cast<QSaveFile *>(&file))
                save->cancelWriting();
            return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(hostPath, why));
        }
        if (auto *save = qobject_cast<QSaveFile *>(&file); save && !save->commit())
            return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(hostPath, file.errorString()));
        return QJsonObject{{QStringLiteral("path"), hostPath}, {QStringLiteral("bytes"), double(offset)}};
    }
};

void addFileCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<CpCommand>());
}

} // namespace airlock::cli
