// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

#include <QByteArrayView>
#include <QHash>
#include <QJsonObject>
#include <QObject>

#include <functional>
#include <map>
#include <optional>

namespace airlock {
class Engine;
}

namespace airlock::rpc {

class Connection;

// cp's streamed copies (issue 19, item 7). fs.upload and fs.download open a file in a sandbox's
// workspace (resolved beneath it, as every cp path is) and name a transfer; its bytes travel as
// data frames ('D'), as fast as the disk and the socket go. An upload is written as its frames
// arrive (the socket's flow control holds a faster sender) and fs.finish checks the count; a
// download is sent while the connection's queue is short, its size fixed when it was opened, and
// ends with an "fs.transfer" notification. fs.mkdir and fs.list serve cp -r. A transfer belongs to
// its connection and ends with it.
class FileTransfers final : public QObject, public MethodGroup {
    Q_OBJECT
public:
    explicit FileTransfers(Engine &engine, QObject *parent = nullptr);
    ~FileTransfers() override;

    // fs.*: these copies, and fs.read / fs.write (a chunk at a time, in JSON) and fs.mkdir / fs.list.
    QList<Method> methods() override;
    // A data frame from `conn`: bytes of one of its uploads.
    void onData(Connection *conn, quint32 transfer, QByteArrayView bytes);
    // Its queue went down: more of its downloads.
    void pump(Connection *conn);
    // It closed: its transfers end, their files closed.
    void drop(Connection *conn);

    static constexpr int kMaxTransfers = 64; // open at once per connection
    static constexpr int kMaxOpen = 512; // and on the whole daemon (each is a descriptor)
    static constexpr int kMaxListEntries = 20000; // fs.list
    static constexpr qint64 kMaxChunk = 1024 * 1024; // fs.read, fs.write

private:
    struct Transfer {
        int fd = -1;
        bool upload = false;
        QString sandbox; // id
        QString path; // in the sandbox
        qint64 size = 0; // a download's, fixed when it was opened
        qint64 done = 0;
        std::optional<Error> failed;
    };
    void write(Call &call);
    void read(Call &call);
    void makeDirectory(Call &call);
    void list(Call &call);
    void upload(Call &call);
    void download(Call &call);
    void finish(Call &call);
    // The path a new copy names and its id, or why none may open now.
    Result<std::pair<QString, quint32>> openTransfer(Call &call);
    void end(Connection *conn, quint32 id);

    Engine &m_engine;
    QHash<Connection *, std::map<quint32, Transfer>> m_transfers;
    quint32 m_next = 1;
    int m_open = 0;
};

} // namespace airlock::rpc
