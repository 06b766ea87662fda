// SPDX-License-Identifier: Apache-2.0
#include "rpc/FileTransfers.h"

#include "engine/Engine.h"
#include "rpc/Connection.h"
#include "rpc/Params.h"
#include "sandbox/Sandbox.h"
#include "sandbox/WorkspaceFiles.h"

#include <QJsonArray>
#include <QPointer>
#include <QTimer>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace airlock::rpc {

namespace {
// A download is sent while less than this waits in its connection's queue.
constexpr qint64 kHighWater = 4 * 1024 * 1024;
// What one turn of the event loop sends at most, however fast the reader is.
constexpr qint64 kPerTurn = 8 * 1024 * 1024;
// fs.list's paths take at most this much together (one frame holds 4 MiB of reply).
constexpr qint64 kMaxListBytes = 2 * 1024 * 1024;

Error ioError(int err, const QString &path, const char *doing)
{
    return makeError(ErrorCode::IoError,
        QStringLiteral("%1 '%2': %3").arg(QLatin1String(doing), path, QString::fromLocal8Bit(std::strerror(err))));
}

// A whole number in [0, max]: what a double from JSON may be cast to.
std::optional<qint64> wholeParam(const QJsonObject &p, const char *key, double max)
{
    const QJsonValue v = p.value(QLatin1String(key));
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d < 0 || d > max || d != double(qint64(d)))
        return std::nullopt;
    return qint64(d);
}

Result<int> modeParam(const QJsonObject &p)
{
    const QJsonValue v = p.value(QStringLiteral("mode"));
    if (v.isUndefined())
        return 0644;
    if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() > 0777 || v.toDouble() != double(v.toInt()))
        return invalid(QStringLiteral("params.mode: expected permission bits, 0 to 0777"));
    return v.toInt();
}

QString typeName(WorkspaceFiles::Entry::Type t)
{
    switch (t) {
    case WorkspaceFiles::Entry::Type::File:
        return QStringLiteral("file");
    case WorkspaceFiles::Entry::Type::Directory:
        return QStringLiteral("directory");
    case WorkspaceFiles::Entry::Type::Link:
        return QStringLiteral("link");
    case WorkspaceFiles::Entry::Type::Other:
        break;
    }
    return QStringLiteral("other");
}
} // namespace

FileTransfers::FileTransfers(Engine &engine, QObject *parent)
    : QObject(parent)
    , m_engine(engine)
{
}

FileTransfers::~FileTransfers()
{
    for (auto &transfers : m_transfers)
        for (auto &[id, t] : transfers)
            ::close(t.fd);
}

bool FileTransfers::handles(const QString &method)
{
    static const QStringList methods{QStringLiteral("fs.upload"), QStringLiteral("fs.download"),
        QStringLiteral("fs.finish"), QStringLiteral("fs.mkdir"), QStringLiteral("fs.list")};
    return methods.contains(method);
}

void FileTransfers::handle(Connection *conn, const QString &method, const QJsonObject &p, const Reply &reply)
{
    auto ref = stringParam(p, "sandbox");
    if (!ref)
        return reply(ref.error());
    auto sandbox = m_engine.find(*ref);
    if (!sandbox)
        return reply(sandbox.error());
    const QString sandboxId = (*sandbox)->id();
    if (method == QLatin1String("fs.finish"))
        return finish(conn, p, sandboxId, reply);
    auto path = stringParam(p, "path");
    if (!path)
        return reply(path.error());
    auto files = m_engine.files(sandboxId);
    if (!files)
        return reply(files.error());
    if (method == QLatin1String("fs.mkdir")) {
        auto mode = modeParam(p);
        if (!mode)
            return reply(mode.error());
        bool existed = false;
        auto made = files->makeDirectory(*path, *mode, &existed);
        return reply(made ? Result<QJsonObject>(
                         QJsonObject{{QStringLiteral("path"), *made}, {QStringLiteral("existed"), existed}})
                          : Result<QJsonObject>(made.error()));
    }
    if (method == QLatin1String("fs.list")) {
        auto entries = files->list(*path, kMaxListEntries, kMaxListBytes);
        if (!entries)
            return reply(entries.error());
        QJsonArray rows;
        for (const WorkspaceFiles::Entry &e : std::as_const(*entries))
            rows.append(QJsonObject{{QStringLiteral("path"), e.path}, {QStringLiteral("type"), typeName(e.type)},
                {QStringLiteral("size"), double(e.size)}, {QStringLiteral("mode"), e.mode}});
        const QJsonObject listed{{QStringLiteral("entries"), rows}};
        // Names full of escapes grow in JSON: the reply must still fit a frame.
        if (encodeJson(makeResult(QJsonValue(0), listed)).size() > kMaxFrameBytes - 4096)
            return reply(makeError(ErrorCode::InvalidArgument,
                QStringLiteral("'%1' holds too much to list at once; copy a part of it, or pack it first (exec tar)")
                    .arg(*path)));
        return reply(listed);
    }
    auto &mine = m_transfers[conn];
    if (mine.size() >= size_t(kMaxTransfers))
        return reply(makeError(ErrorCode::Busy,
            QStringLiteral("%1 copies are open on this connection; finish one first").arg(kMaxTransfers)));
    if (m_open >= kMaxOpen)
        return reply(makeError(ErrorCode::Busy,
            QStringLiteral("%1 copies are open on this daemon; try again when some are done").arg(kMaxOpen)));
    quint32 id = m_next++;
    while (id == 0 || mine.count(id)) // after a wrap, never one still open
        id = m_next++;
    if (method == QLatin1String("fs.upload")) {
        auto mode = modeParam(p);
        if (!mode)
            return reply(mode.error());
        auto opened = files->openForWrite(*path, p.value(QStringLiteral("name")).toString(), *mode);
        if (!opened)
            return reply(opened.error());
        mine.emplace(id, Transfer{opened->fd, true, sandboxId, opened->path, 0, 0, std::nullopt});
        ++m_open;
        return reply(QJsonObject{{QStringLiteral("transfer"), double(id)}, {QStringLiteral("path"), opened->path}});
    }
    auto opened = files->openForRead(*path);
    if (!opened)
        return reply(opened.error());
    mine.emplace(id, Transfer{opened->fd, false, sandboxId, opened->path, opened->size, 0, std::nullopt});
    ++m_open;
    reply(QJsonObject{{QStringLiteral("transfer"), double(id)}, {QStringLiteral("path"), opened->path},
        {QStringLiteral("size"), double(opened->size)}, {QStringLiteral("mode"), opened->mode}});
    pump(conn); // after the reply: its data frames follow it
}

void FileTransfers::finish(Connection *conn, const QJsonObject &p, const QString &sandbox, const Reply &reply)
{
    const quint32 id = quint32(wholeParam(p, "transfer", 4294967295.0).value_or(0));
    auto mine = m_transfers.find(conn);
    const auto it = mine == m_transfers.end() ? std::map<quint32, Transfer>::iterator() : mine->find(id);
    if (mine == m_transfers.end() || it == mine->end() || it->second.sandbox != sandbox)
        return reply(
            invalid(QStringLiteral("params.transfer: no copy %1 of this sandbox is open on this connection").arg(id)));
    const Transfer t = it->second;
    end(conn, id);
    if (!t.upload) // a download given up by the client
        return reply(QJsonObject{{QStringLiteral("path"), t.path}, {QStringLiteral("bytes"), double(t.done)}});
    if (t.failed)
        return reply(*t.failed);
    const std::optional<qint64> expected = wholeParam(p, "bytes", 1e15);
    if (expected != t.done)
        return reply(makeError(ErrorCode::IoError,
            QStringLiteral("'%1': %2 bytes arrived, %3 were sent; the copy is incomplete")
                .arg(t.path)
                .arg(t.done)
                .arg(expected.value_or(-1))));
    reply(QJsonObject{{QStringLiteral("path"), t.path}, {QStringLiteral("bytes"), double(t.done)}});
}

void FileTransfers::onData(Connection *conn, quint32 transfer, QByteArrayView bytes)
{
    auto mine = m_transfers.find(conn);
    const auto it = mine == m_transfers.end() ? std::map<quint32, Transfer>::iterator() : mine->find(transfer);
    if (mine == m_transfers.end() || it == mine->end() || !it->second.upload) {
        conn->closeWithError(makeError(ErrorCode::ProtocolError,
            QStringLiteral("data for copy %1, which is not an open upload of this connection").arg(transfer)));
        return;
    }
    Transfer &t = it->second;
    if (t.failed) // the rest is dropped: fs.finish says why
        return;
    for (qsizetype at = 0; at < bytes.size();) {
        const ssize_t n = ::write(t.fd, bytes.data() + at, size_t(bytes.size() - at));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            t.failed = ioError(n < 0 ? errno : ENOSPC, t.path, "cannot write");
            // Said at once, so that the sender stops; fs.finish says it again.
            conn->send(makeNotification(QStringLiteral("fs.transfer"),
                {{QStringLiteral("transfer"), double(transfer)}, {QStringLiteral("bytes"), double(t.done)},
                    {QStringLiteral("error"),
                        makeErrorReply(QJsonValue(), *t.failed).value(QStringLiteral("error"))}}));
            return;
        }
        at += n;
        t.done += n;
    }
}

void FileTransfers::pump(Connection *conn)
{
    auto mine = m_transfers.find(conn);
    if (mine == m_transfers.end())
        return;
    std::vector<quint32> ended;
    qint64 sent = 0;
    bool more = false;
    for (auto &[id, t] : *mine) {
        if (t.upload)
            continue;
        while (t.done < t.size && conn->pendingBytes() < kHighWater) {
            if (sent >= kPerTurn) { // a reader as fast as this: the rest from the next turn
                more = true;
                break;
            }
            QByteArray chunk(qsizetype(std::min<qint64>(kDataChunk, t.size - t.done)), Qt::Uninitialized);
            const ssize_t n = ::pread(t.fd, chunk.data(), size_t(chunk.size()), t.done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                t.failed = n < 0 ? ioError(errno, t.path, "cannot read")
                                 : makeError(ErrorCode::IoError,
                                     QStringLiteral("'%1' shrank while it was copied (%2 of %3 bytes)")
                                         .arg(t.path)
                                         .arg(t.done)
                                         .arg(t.size));
                break;
            }
            chunk.resize(n);
            conn->sendData(id, chunk);
            t.done += n;
            sent += n;
        }
        if (t.done < t.size && !t.failed)
            continue;
        QJsonObject told{{QStringLiteral("transfer"), double(id)}, {QStringLiteral("bytes"), double(t.done)}};
        if (t.failed)
            told.insert(
                QStringLiteral("error"), makeErrorReply(QJsonValue(), *t.failed).value(QStringLiteral("error")));
        conn->send(makeNotification(QStringLiteral("fs.transfer"), told));
        ended.push_back(id);
    }
    for (quint32 id : ended)
        end(conn, id);
    if (more)
        QTimer::singleShot(0, this, [this, conn = QPointer<Connection>(conn)] {
            if (conn)
                pump(conn);
        });
}

void FileTransfers::end(Connection *conn, quint32 id)
{
    auto mine = m_transfers.find(conn);
    if (mine == m_transfers.end())
        return;
    if (auto it = mine->find(id); it != mine->end()) {
        ::close(it->second.fd);
        mine->erase(it);
        --m_open;
    }
    if (mine->empty())
        m_transfers.erase(mine);
}

void FileTransfers::drop(Connection *conn)
{
    auto mine = m_transfers.find(conn);
    if (mine == m_transfers.end())
        return;
    for (auto &[id, t] : *mine) {
        ::close(t.fd);
        --m_open;
    }
    m_transfers.erase(mine);
}

} // namespace airlock::rpc
