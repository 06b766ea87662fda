// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/GuestWire.h"

#include <QByteArray>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <cstdint>

class QSocketNotifier;

namespace airlock {

struct GuestExit {
    uint32_t execId = 0;
    bool signaled = false;
    int code = 0; // exit status, or the signal number when signaled
    uint64_t durationUs = 0;
    uint64_t userUs = 0;
    uint64_t systemUs = 0;
    uint64_t maxRssKb = 0;
};

struct SpawnRequest {
    uint32_t execId = 0;
    QStringList argv;
    QString cwd;
    QStringList env; // "K=V"
    bool tty = false;
    bool stdinOpen = false;
    bool judged = false; // every program it starts stops for the exec check
    uint16_t rows = 0, cols = 0;
    uint64_t cpuSeconds = 0, fileSizeBytes = 0, openFiles = 0;
};

// The daemon's end of the socket to one airlock-guest. The guest is untrusted: every frame is
// bounded and validated here, and the first violation emits protocolViolated() and stops reading.
class GuestChannel final : public QObject {
    Q_OBJECT
public:
    explicit GuestChannel(int fd, QObject *parent = nullptr);
    ~GuestChannel() override;

    // The guest may only talk about executions the daemon started.
    void setKnownExec(uint32_t execId, bool known);

    void sendSpawn(const SpawnRequest &request);
    // Queued per execution and sent within wire::kStdinWindow unconsumed bytes, so that stdin a
    // process does not read never blocks the Signal and Spawn frames behind it. Empty = EOF.
    void sendStdin(uint32_t execId, QByteArrayView data);
    // Stdin accepted from clients and not yet consumed by the guest.
    qint64 stdinBacklog() const;
    void sendSignal(uint32_t execId, int signo);
    void sendResize(uint32_t execId, uint16_t rows, uint16_t cols);
    // The answer to a ToolCall: the result as JSON, or an error code name and message.
    void sendToolResult(uint32_t callId, bool ok, const QByteArray &body);

    // Backpressure: while paused, the guest's socket buffer fills and the guest stops reading output.
    void setReadingPaused(bool paused);
    void close();

Q_SIGNALS:
    void helloReceived(int landlockAbi, uint32_t guestPid);
    void execStarted(uint32_t execId, int pid);
    void outputReceived(uint32_t execId, int stream, qint64 unixTimeNs, QByteArrayView data);
    void execExited(const GuestExit &exit);
    void spawnFailed(uint32_t execId, int errnum, const QString &message);
    void fatalReported(const QString &message);
    void protocolViolated(const QString &reason);
    void closed();
    void stdinProgressed(qint64 backlog); // the guest consumed stdin; stdinBacklog() now
    void toolCallReceived(uint32_t callId, const QByteArray &request);
private:
    qint64 pendingWriteBytes() const; // frames queued for the guest's socket
    void onReadable();
    void onWritable();
    void flush();
    void send(std::string frame);
    // Returns false (after emitting protocolViolated) when the frame is invalid.
    bool dispatch(wire::Type type, const char *payload, uint32_t size);
    void pumpStdin(uint32_t execId);
    void violate(const QString &reason);

    int m_fd = -1;
    QSocketNotifier *m_readNotifier = nullptr;
    QSocketNotifier *m_writeNotifier = nullptr;
    QByteArray m_in; // unparsed bytes from the guest
    qsizetype m_inStart = 0;
    QByteArray m_out; // [m_outStart, size) is still to be written
    qsizetype m_outStart = 0;
    bool m_helloSeen = false;
    QSet<uint32_t> m_toolCalls; // tool calls the guest made that have no answer yet
    bool m_dead = false;
    bool m_paused = false;
    QList<uint32_t> m_known;
    struct StdinQueue {
        QByteArray data; // [start, size) not yet sent
        qsizetype start = 0;
        bool eof = false;
        bool eofSent = false;
        qint64 unconsumed = 0; // sent, not yet reported consumed (an EOF counts as 1)
    };
    QHash<uint32_t, StdinQueue> m_stdin;
};

} // namespace airlock
