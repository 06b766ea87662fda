// SPDX-License-Identifier: Apache-2.0
#include "rpc/FileTransfers.h"

#include "engine/Engine.h"
#include "rpc/Connection.h"
#include "rpc/Params.h"
#include "rpc/RpcSession.h"
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

namespace {
// fs.write: a chunk of at most kMaxChunk at a valid offset.
Status writeCheck(const QJsonObject &p)
{
    auto path = stringParam(p, "path");
    auto data = base64Param(p, "data");
    if (!path || !data)
        return !path ? path.error() : data.error();
    const double offset = p.value(QStringLiteral("offset")).toDouble(0);
    if (offset < 0 || offset > 1e15 || data->size() > FileTransfers::kMaxChunk)
        return invalid(QStringLiteral("params.offset/data: chunks of at most 1 MiB at a valid offset"));
    return Ok{};
}

// fs.read: at most kMaxChunk.
Status readCheck(const QJsonObject &p)
{
    auto path = stringParam(p, "path");
    if (!path)
        return path.error();
    const double offset = p.value(QStringLiteral("offset")).toDouble(0);
    const double length = p.value(QStringLiteral("length")).toDouble(double(FileTransfers::kMaxChunk));
    if (offset < 0 || offset > 1e15 || length < 0 || length > double(FileTransfers::kMaxChunk))
        return invalid(QStringLiteral("params.offset/length: at most 1 MiB per read"));
    return Ok{};
}
} // namespace

QList<Method> FileTransfers::methods()
{
    // Every one acts on one sandbox's workspace: for agents too, and for tokens scoped to it.
    const auto declare = [this](method::Name name, void (FileTransfers::*handler)(Call &), ParamCheck check = nullptr) {
        return Method{name, access::sandboxed, NeedsSandbox, [this, handler](Call &c) { (this->*handler)(c); }, check};
    };
    return {
        declare(method::FsWrite, &FileTransfers::write, writeCheck),
        declare(method::FsRead, &FileTransfers::read, readCheck),
        declare(method::FsUpload, &FileTransfers::upload),
        declare(method::FsDownload, &FileTransfers::download),
        declare(method::FsFinish, &FileTransfers::finish),
        declare(method::FsMkdir, &FileTransfers::makeDirectory),
        declare(method::FsList, &FileTransfers::list),
    };
}

void FileTransfers::write(Call &c)
{
    const QJsonObject &p = c.params; // checked: writeCheck
    const QString path = p.value(QStringLiteral("path")).toString();
    const auto data = base64Param(p, "data");
    const double offset = p.value(QStringLiteral("offset")).toDouble(0);
    const int mode = p.value(QStringLiteral("mode")).toInt(0644);
    auto written = m_engine.files(*c.sandbox)
                       .write(path, p.value(QStringLiteral("name")).toString(), *data, qint64(offset),
                           p.value(QStringLiteral("truncate")).toBool(offset == 0), mode);
    c.reply(written ? Result<QJsonObject>(QJsonObject{{QStringLiteral("path"), *written}})
                    : Result<QJsonObject>(written.error()));
}

void FileTransfers::read(Call &c)
{
    const QJsonObject &p = c.params; // checked: readCheck
    const double offset = p.value(QStringLiteral("offset")).toDouble(0);
    const double length = p.value(QStringLiteral("length")).toDouble(double(kMaxChunk));
    auto chunk
        = m_engine.files(*c.sandbox).read(p.value(QStringLiteral("path")).toString(), qint64(offset), qint64(length));
    if (!chunk)
        return c.reply(chunk.error());
    c.reply(QJsonObject{{QStringLiteral("data"), QString::fromLatin1(chunk->data.toBase64())},
        {QStringLiteral("size"), double(chunk->size)}, {QStringLiteral("eof"), chunk->eof}});
}

void FileTransfers::makeDirectory(Call &c)
{
    auto path = stringParam(c.params, "path");
    auto mode = modeParam(c.params);
    if (!path || !mode)
        return c.reply(!path ? path.error() : mode.error());
    bool existed = false;
    auto made = m_engine.files(*c.sandbox).makeDirectory(*path, *mode, &existed);
    c.reply(made
            ? Result<QJsonObject>(QJsonObject{{QStringLiteral("path"), *made}, {QStringLiteral("existed"), existed}})
            : Result<QJsonObject>(made.error()));
}

void FileTransfers::list(Call &c)
{
    auto path = stringParam(c.params, "path");
    if (!path)
        return c.reply(path.error());
    auto entries = m_engine.files(*c.sandbox).list(*path, kMaxListEntries, kMaxListBytes);
    if (!entries)
        return c.reply(entries.error());
    QJsonArray rows;
    for (const WorkspaceFiles::Entry &e : std::as_const(*entries))
        rows.append(QJsonObject{{QStringLiteral("path"), e.path}, {QStringLiteral("type"), typeName(e.type)},
            {QStringLiteral("size"), double(e.size)}, {QStringLiteral("mode"), e.mode}});
    const QJsonObject listed{{QStringLiteral("entries"), rows}};
    // Names full of escapes grow in JSON: the reply must still fit a frame.
    if (encodeJson(makeResult(QJsonValue(0), listed)).size() > kMaxFrameBytes - 4096)
        return c.reply(makeError(ErrorCode::InvalidArgument,
            QStringLiteral("'%1' holds too much to list at once; copy a part of it, or pack it first (exec tar)")
                .arg(*path)));
    c.reply(listed);
}

Result<std::pair<QString, quint32>> FileTransfers::openTransfer(Call &c)
{
    auto path = stringParam(c.params, "path");
    if (!path)
        return path.error();
    const auto &mine = m_transfers[c.session.conn];
    if (mine.size() >= size_t(kMaxTransfers))
        return makeError(ErrorCode::Busy,
            QStringLiteral("%1 copies are open on this connection; finish one first").arg(kMaxTransfers));
    if (m_open >= kMaxOpen)
        return makeError(ErrorCode::Busy,
            QStringLiteral("%1 copies are open on this daemon; try again when some are done").arg(kMaxOpen));
    quint32 id = m_next++;
    while (id == 0 || mine.count(id)) // after a wrap, never one still open
        id = m_next++;
    return std::pair{*path, id};
}

void FileTransfers::upload(Call &c)
{
    auto opening = openTransfer(c);
    if (!opening)
        return c.reply(opening.error());
    const auto &[path, id] = *opening;
    Connection *conn = c.session.conn;
    auto mode = modeParam(c.params);
    if (!mode)
        return c.reply(mode.error());
    auto opened
        = m_engine.files(*c.sandbox).openForWrite(path, c.params.value(QStringLiteral("name")).toString(), *mode);
    if (!opened)
        return c.reply(opened.error());
    m_transfers[conn].emplace(id, Transfer{opened->fd, true, c.sandbox->id(), opened->path, 0, 0, std::nullopt});
    ++m_open;
    c.reply(QJsonObject{{QStringLiteral("transfer"), double(id)}, {QStringLiteral("path"), opened->path}});
}

void FileTransfers::download(Call &c)
{
    auto opening = openTransfer(c);
    if (!opening)
        return c.reply(opening.error());
    const auto &[path, id] = *opening;
    Connection *conn = c.session.conn;
    auto opened = m_engine.files(*c.sandbox).openForRead(path);
    if (!opened)
        return c.reply(opened.error());
    m_transfers[conn].emplace(
        id, Transfer{opened->fd, false, c.sandbox->id(), opened->path, opened->size, 0, std::nullopt});
    ++m_open;
    c.reply(QJsonObject{{QStringLiteral("transfer"), double(id)}, {QStringLiteral("path"), opened->path},
        {QStringLiteral("size"), double(opened->size)}, {QStringLiteral("mode"), opened->mode}});
    pump(conn); // after the reply: its data frames follow it
}

void FileTransfers::finish(Call &c)
{
    Connection *conn = c.session.conn;
    const QJsonObject &p = c.params;
    const QString sandbox = c.sandbox->id();
    const Reply &reply = c.reply;
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
            conn->send(makeNotification(method::TransferNotification,
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
        conn->send(makeNotification(method::TransferNotification, told));
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
