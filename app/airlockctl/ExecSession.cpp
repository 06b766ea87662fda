// SPDX-License-Identifier: Apache-2.0
#include "ExecSession.h"
#include "model/EventKinds.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>
#include <QTimer>

#include <cerrno>
#include <csignal>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace airlock::cli {

namespace {
constexpr qsizetype kStdinChunk = 256 * 1024;
constexpr qsizetype kJsonCollectLimit = 16 * 1024 * 1024;
constexpr qint64 kResumeForMs = 5 * 60 * 1000; // how long a lost remote connection is tried again

sigset_t forwardedSignals()
{
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT})
        sigaddset(&set, s);
    return set;
}
} // namespace

ExecSession::ExecSession(DaemonClient &client, QTextStream &out, QTextStream &err, bool json)
    : m_client(client)
    , m_api(client)
    , m_out(out)
    , m_err(err)
    , m_json(json)
{
}

ExecSession::~ExecSession()
{
    if (m_rawTerminal)
        ::tcsetattr(STDIN_FILENO, TCSADRAIN, &m_savedTermios);
    if (m_signalFd >= 0) {
        const sigset_t set = forwardedSignals();
        ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
        ::close(m_signalFd);
    }
}

Result<int> ExecSession::run(const QString &sandbox, ExecRequest request, bool forwardStdin, bool raw)
{
    // An agent's command may wait for a person (the daemon denies it when that times out).
    return run([&](const ExecRequest &r) { return m_api.startExec(sandbox, r).wait(kStartWaitMs); }, std::move(request),
        forwardStdin, raw);
}

Result<int> ExecSession::run(const Start &start, ExecRequest request, bool forwardStdin, bool raw)
{
    if (!raw && !request.tty && !m_json)
        m_sink = OutputSink::forTerminals();
    const bool interactive = ::isatty(STDIN_FILENO);
    if (request.tty && interactive) {
        winsize ws{};
        if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
            request.rows = ws.ws_row;
            request.cols = ws.ws_col;
        }
    }
    request.stdinOpen = forwardStdin;

    const sigset_t set = forwardedSignals();
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    m_signalFd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    m_signals = new QSocketNotifier(m_signalFd, QSocketNotifier::Read, this);
    connect(m_signals, &QSocketNotifier::activated, this, &ExecSession::onSignal);
    connect(&m_client, &DaemonClient::eventReceived, this, &ExecSession::onEvent);
    connect(&m_client, &DaemonClient::disconnected, this, [this](const Error &why) {
        if (m_exitCode || m_resuming)
            return; // (resume() tries again itself when the daemon goes away under it)
        // The command goes on in its sandbox, also when this machine's daemon went away (it is
        // taken over by the next one): reconnect and continue where the output left off.
        if (m_exec) {
            const bool remote
                = !m_client.options().host.isEmpty() && !m_client.options().host.startsWith(QLatin1String("unix:"));
            m_err << "airlockctl: " << (remote ? "the connection was lost" : "airlockd went away") << " ("
                  << why.message << "); reconnecting, the command goes on in its sandbox" << Qt::endl;
            m_lostFor.start();
            m_retryMs = 250;
            QTimer::singleShot(m_retryMs, this, &ExecSession::resume);
            return;
        }
        m_err << "airlockctl: lost the daemon: " << why.message << Qt::endl;
        finish(1);
    });

    auto started = start(request);
    if (!started && m_abandonedBy) {
        // Ended while the start waited (for a person): the request was withdrawn, nothing ran.
        m_err << "airlockctl: SIG" << ::sigabbrev_np(m_abandonedBy)
              << " while the command waited to start: its request is withdrawn, "
              << "nothing ran" << Qt::endl;
        return 128 + m_abandonedBy;
    }
    if (!started)
        return started.error();
    m_sandboxId = started->sandbox;
    m_exec = started->exec;
    // Ctrl-C pressed while the start request was in flight was read then; it applies now.
    if (m_pendingSignal)
        sendSignal(std::exchange(m_pendingSignal, 0));
    const QList<Event> early = std::exchange(m_early, {});
    for (const Event &e : early)
        onEvent(e);

    if (request.tty && interactive && ::tcgetattr(STDIN_FILENO, &m_savedTermios) == 0) {
        termios raw = m_savedTermios;
        ::cfmakeraw(&raw);
        m_rawTerminal = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
    }
    if (forwardStdin) {
        m_stdin = new QSocketNotifier(STDIN_FILENO, QSocketNotifier::Read, this);
        connect(m_stdin, &QSocketNotifier::activated, this, &ExecSession::onStdinReadable);
    }
    if (!m_exitCode) {
        QEventLoop loop;
        connect(this, &QObject::destroyed, &loop, &QEventLoop::quit);
        while (!m_exitCode)
            loop.processEvents(QEventLoop::WaitForMoreEvents);
    }
    if (m_rawTerminal) {
        ::tcsetattr(STDIN_FILENO, TCSADRAIN, &m_savedTermios);
        m_rawTerminal = false;
    }
    if (m_json) {
        QJsonObject r = m_result;
        r.insert(QStringLiteral("sandbox"), m_sandboxId);
        r.insert(QStringLiteral("stdout"), QString::fromUtf8(m_collected[1]));
        r.insert(QStringLiteral("stderr"), QString::fromUtf8(m_collected[2]));
        m_out << QString::fromUtf8(QJsonDocument(r).toJson(QJsonDocument::Indented));
        m_out.flush();
    }
    return *m_exitCode;
}

void ExecSession::writeOut(int stream, QByteArrayView data)
{
    if (m_sink.broken())
        return;
    // Nobody reads our output any more (EPIPE): stop the remote command as a pipe would.
    if (!m_sink.write(stream, data))
        sendSignal(SIGKILL);
}

// Writes what is new of a piece of a stream: a piece seen before (replayed from the history after
// a reconnect, or live again) is skipped, so that resuming neither repeats nor loses anything.
void ExecSession::deliver(int stream, qint64 offset, const QByteArray &bytes)
{
    if (stream != 1 && stream != 2)
        return;
    qint64 &have = m_offset[stream];
    if (offset + bytes.size() <= have)
        return;
    if (offset > have && !m_json) // the history kept the head and tail of a long output only
        m_err << "\nairlockctl: [" << (offset - have) << " bytes of this output were not kept]" << Qt::endl;
    const QByteArray data = offset < have ? bytes.mid(have - offset) : bytes;
    have = offset + bytes.size();
    if (m_json) {
        QByteArray &buf = m_collected[stream];
        if (buf.size() < kJsonCollectLimit)
            buf.append(data.left(kJsonCollectLimit - buf.size()));
    } else {
        writeOut(stream, data);
    }
}

void ExecSession::resume()
{
    if (m_exitCode)
        return;
    if (Status again = m_client.connectToDaemon(m_client.options()); !again) {
        if (m_lostFor.elapsed() > kResumeForMs) {
            m_err << "airlockctl: gave up reconnecting after " << kResumeForMs / 1000 << " s: " << again.error().message
                  << Qt::endl;
            return finish(1);
        }
        m_retryMs = std::min(m_retryMs * 2, 5000);
        QTimer::singleShot(m_retryMs, this, &ExecSession::resume);
        return;
    }
    // Live events first (held until the stored part is written), then what was stored meanwhile.
    m_resuming = true;
    auto subscribed = m_api.subscribe(m_sandboxId).wait();
    // A sandbox that ended with the daemon before it (--sandboxes-end-with-daemon): the history
    // says how its command ended.
    if (!subscribed && subscribed.error().code == ErrorCode::NotFound)
        subscribed = QJsonObject{};
    auto shown = subscribed ? m_api.historyShow(QStringLiteral("%1:%2").arg(m_sandboxId).arg(m_exec)).wait()
                            : Result<QJsonObject>(subscribed.error());
    QJsonValue after = 0;
    while (shown && !after.isNull()) {
        auto page = m_api.historyOutput(shown->value(QStringLiteral("id")), after).wait();
        if (!page) {
            shown = page.error();
            break;
        }
        for (const QJsonValue &v : page->value(QStringLiteral("chunks")).toArray()) {
            const QJsonObject chunk = v.toObject();
            deliver(chunk.value(QStringLiteral("stream")).toInt(),
                qint64(chunk.value(QStringLiteral("offset")).toDouble()),
                QByteArray::fromBase64(chunk.value(QStringLiteral("data")).toString().toLatin1()));
        }
        after = page->value(QStringLiteral("next"));
    }
    m_resuming = false;
    if (!shown && !m_client.isConnected()) {
        // Gone again before it was done (a daemon that keeps being restarted): once more.
        m_retryMs = std::min(m_retryMs * 2, 5000);
        QTimer::singleShot(m_retryMs, this, &ExecSession::resume);
        return;
    }
    if (!shown) {
        m_err << "airlockctl: reconnected, but cannot continue the output: " << shown.error().message << Qt::endl;
        return finish(1);
    }
    m_err << "airlockctl: reconnected after " << m_lostFor.elapsed() / 1000.0 << " s" << Qt::endl;
    const QList<Event> held = std::exchange(m_held, {});
    for (const Event &e : held)
        onEvent(e);
    // It ended while nobody was connected: the history says how.
    if (!m_exitCode && shown->value(QStringLiteral("status")).toString() != QLatin1String("running"))
        finishAs(*shown);
}

void ExecSession::onEvent(const Event &event)
{
    if (m_resuming) {
        m_held.append(event);
        return;
    }
    if (m_exec == 0) {
        m_early.append(event);
        return;
    }
    if (event.sandbox != m_sandboxId || event.exec != m_exec)
        return;
    if (event.isOutput())
        return deliver(event.stream, event.offset, event.data);
    if (event.kind == event::ExecTruncated && !m_json) {
        m_err << "\nairlockctl: output exceeded the sandbox's limit of "
              << qint64(event.payload.value(QStringLiteral("limitBytes")).toDouble())
              << " bytes; the command was killed" << Qt::endl;
        return;
    }
    if (event.kind == event::ExecExited)
        finishAs(event.payload);
}

void ExecSession::finishAs(const QJsonObject &payload)
{
    m_result = payload;
    m_sink.finish();
    const QString status = payload.value(QStringLiteral("status")).toString();
    const QJsonValue code = payload.value(QStringLiteral("exitCode"));
    const QJsonValue sig = payload.value(QStringLiteral("signal"));
    if (!m_json) {
        if (payload.contains(QStringLiteral("error")))
            m_err << "airlockctl: " << payload.value(QStringLiteral("error")).toString() << Qt::endl;
        if (status == QLatin1String("timed_out"))
            m_err << "airlockctl: the command timed out and was killed" << Qt::endl;
        if (status == QLatin1String("interrupted") && !payload.contains(QStringLiteral("error")))
            m_err << "airlockctl: the command was interrupted: its sandbox ended while airlockd was away" << Qt::endl;
    }
    if (status == QLatin1String("timed_out"))
        finish(124);
    else if (!sig.isNull() && !sig.isUndefined())
        finish(128 + sig.toInt());
    else
        finish(code.toInt(1));
}

void ExecSession::onStdinReadable()
{
    if (m_stdinInFlight || m_exitCode)
        return;
    QByteArray buf(kStdinChunk, Qt::Uninitialized);
    const ssize_t n = ::read(STDIN_FILENO, buf.data(), size_t(buf.size()));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    buf.resize(std::max<ssize_t>(n, 0));
    const bool eof = n <= 0;
    if (eof)
        m_stdin->setEnabled(false);
    else
        m_stdin->setEnabled(false); // one chunk in flight: re-enabled by the reply
    m_stdinInFlight = true;
    m_api.writeStdin(m_sandboxId, m_exec, buf, eof).then([this, eof](Result<QJsonObject>) {
        m_stdinInFlight = false;
        if (!eof && m_stdin && !m_exitCode)
            m_stdin->setEnabled(true);
    });
}

void ExecSession::sendSignal(int signo)
{
    if (!m_exec) {
        // Not started yet: keep the strongest request (SIGKILL over SIGINT) for when it is.
        m_pendingSignal = m_pendingSignal == SIGKILL ? SIGKILL : signo;
        return;
    }
    m_api.signalExec(m_sandboxId, m_exec, signo).send();
}

void ExecSession::onSignal()
{
    signalfd_siginfo info{};
    while (::read(m_signalFd, &info, sizeof info) == sizeof info) {
        const int signo = int(info.ssi_signo);
        if (signo == SIGWINCH) {
            winsize ws{};
            if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col && m_exec)
                m_api.resizeExec(m_sandboxId, m_exec, ws.ws_row, ws.ws_col).send();
        } else {
            sendSignal(signo == SIGINT && ++m_interrupts == 1 ? SIGINT : SIGKILL);
            // Still waiting to start, maybe for a person: the question is taken back (the start
            // is then answered as denied); if it started meanwhile, the signal above reaches it.
            if (!m_exec)
                withdraw(signo);
        }
    }
}

void ExecSession::withdraw(int signo)
{
    if (m_abandonedBy)
        return;
    m_abandonedBy = signo;
    m_api.withdrawApprovals(QStringLiteral("airlockctl ended by SIG%1").arg(QLatin1String(::sigabbrev_np(signo))))
        .send();
}

void ExecSession::finish(int code)
{
    if (!m_exitCode)
        m_exitCode = code;
    if (m_stdin)
        m_stdin->setEnabled(false);
}

} // namespace airlock::cli
