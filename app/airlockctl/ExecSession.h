// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "OutputSink.h"
#include "client/DaemonApi.h"
#include "model/ExecRequest.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QTextStream>

#include <termios.h>

class QSocketNotifier;

namespace airlock::cli {

// Runs one execution attached to this terminal: streams its output to our stdout/stderr, forwards
// stdin (one chunk in flight at a time), forwards Ctrl-C (a second one, or SIGTERM, kills it),
// withdraws a start still waiting (for a person) on Ctrl-C, SIGTERM, SIGHUP or SIGQUIT (returning
// 128+N), keeps a remote PTY the size of ours, and returns the exit code (128+N for signal N, 124 for a
// timeout). With json, output is collected and printed as one JSON document at the end.
class ExecSession final : public QObject {
    Q_OBJECT
public:
    ExecSession(DaemonClient &client, QTextStream &out, QTextStream &err, bool json);
    ~ExecSession() override;

    // The command's exit code, or the error that kept it from starting. Unless raw (or a --tty
    // session, which needs the terminal's full language), output bound for a terminal goes
    // through a TerminalFilter: only colours reach it; other control sequences show as text.
    Result<int> run(const QString &sandbox, ExecRequest request, bool forwardStdin, bool raw = false);
    // The same, started by `start` (waiting for its answer): sandbox.run's one-shot, for one.
    static constexpr int kStartWaitMs = 86'400'000; // a start may wait for a person (who may be away)
    using Start = std::function<Result<ExecStarted>(const ExecRequest &request)>;
    Result<int> run(const Start &start, ExecRequest request, bool forwardStdin, bool raw = false);

    // Ended by a signal while the start waited: nothing ran, and nothing more should.
    bool abandoned() const { return m_abandonedBy != 0; }

private:
    void onEvent(const Event &event);
    void onStdinReadable();
    void onSignal();
    void sendSignal(int signo);
    void withdraw(int signo); // ended before the start was answered
    void finish(int code);
    void writeOut(int stream, QByteArrayView data);
    void deliver(int stream, qint64 offset, const QByteArray &bytes);
    void finishAs(const QJsonObject &exitPayload);
    void resume(); // after a remote connection dropped

    DaemonClient &m_client;
    DaemonApi m_api;
    QTextStream &m_out;
    QTextStream &m_err;
    bool m_json;
    QString m_sandboxId;
    uint32_t m_exec = 0;
    QList<Event> m_early; // events that arrived before the exec id was known
    QSocketNotifier *m_stdin = nullptr;
    QSocketNotifier *m_signals = nullptr;
    int m_signalFd = -1;
    bool m_stdinInFlight = false;
    int m_interrupts = 0;
    int m_pendingSignal = 0; // signal requested before the exec id was known
    int m_abandonedBy = 0; // the signal that ended us while the start was waiting
    std::optional<int> m_exitCode;
    QJsonObject m_result;
    QByteArray m_collected[3];
    OutputSink m_sink = OutputSink::filtered(false);
    bool m_rawTerminal = false;
    qint64 m_offset[3] = {0, 0, 0}; // per stream: how much has been written
    bool m_resuming = false;
    QList<Event> m_held; // live events while the stored output is fetched
    QElapsedTimer m_lostFor;
    int m_retryMs = 250;
    termios m_savedTermios{};
};

} // namespace airlock::cli
