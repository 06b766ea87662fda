// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/GuestWire.h"
#include "util/Result.h"

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
    bool timedOut = false; // the guest killed it at its deadline (wire::ExitTimedOut)
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
    uint64_t timeoutMs = 0; // 0 = none; the guest kills at it only if the daemon does not
};

// What a guest said about one execution when a daemon took its sandbox over (wire::Resumed).
struct ResumedExec {
    uint32_t execId = 0;
    wire::ResumeState state = wire::ResumeUnknown;
    int pid = 0;
    uint64_t from[2] = {0, 0}; // where its replayed stdout and stderr start
};

// An execution a daemon asks a guest about when it takes the sandbox over, with how much of each
// stream it has stored.
struct ResumeAsk {
    uint32_t execId = 0;
    uint64_t stored[2] = {0, 0}; // stdout, stderr
};

// Sends the Resume frame on a freshly connected socket, with the exec-check (and proxy) sockets.
Status sendResume(int fd, const QByteArray &token, const QList<ResumeAsk> &executions, const QList<int> &fds);

// The daemon's end of the socket to one airlock-guest. The guest is untrusted: every frame is
// bounded and validated here, and the first violation emits protocolViolated() and stops reading.
class GuestChannel final : public QObject {
    Q_OBJECT
public:
    // `resumed`: a connection on which a Resume was sent; the guest answers Resumed, not Hello.
    explicit GuestChannel(int fd, QObject *parent = nullptr, bool resumed = false);
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
    // Output up to `offset` of a stream (0: the execution's exit) is stored: the guest forgets it.
    void sendAck(uint32_t execId, uint8_t stream, uint64_t offset);
    // Reads what the guest has sent so far, now (a daemon taking sandboxes over before it serves).
    void readNow() { onReadable(); }

    // Backpressure: while paused, the guest's socket buffer fills and the guest stops reading output.
    void setReadingPaused(bool paused);
    void close();

Q_SIGNALS:
    void helloReceived(int landlockAbi, uint32_t guestPid);
    // The answer to a Resume; `version` is the guest's (a different one: nothing else follows).
    void resumed(uint32_t version, int landlockAbi, uint32_t guestPid, const QList<airlock::ResumedExec> &executions);
    // Output the guest read while no daemon was connected and could not keep.
    void gapReported(uint32_t execId, int stream, quint64 offset, quint64 bytes);
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
    bool m_resumed = false; // expects Resumed where a new sandbox's guest says Hello
    QSet<uint32_t> m_toolCalls; // tool calls the guest made that have no answer yet
    bool m_dead = false;
    bool m_paused = false;
    bool m_peerGone = false; // a write failed (EPIPE): nothing more is written; reading reports the close
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
