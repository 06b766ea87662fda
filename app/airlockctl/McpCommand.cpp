// SPDX-License-Identifier: Apache-2.0
// mcp: an MCP server on stdin/stdout for agents (Claude Code, Codex, the Agents SDK, …). Each
// session is one run in the history, acts as the agent the client says it is, and reaches only
// the sandboxes it creates (or that the person shares with --sandbox).
#include "SandboxCommands.h"
#include "SpecOptions.h"
#include "mcp/McpServer.h"
#include "mcp/SandboxBackend.h"
#include "model/Units.h"
#include "policy/Policy.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QEventLoop>
#include <QJsonDocument>
#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/signalfd.h>
#include <unistd.h>

namespace airlock::cli {

namespace {
constexpr qint64 kMaxLine = 48 * 1024 * 1024; // a 32 MiB file, base64, in one message

// Newline-delimited messages on stdin; end of file when the client goes. Each line is taken out
// of the buffer before it is handed on, and stdin is not read while one is being handled: a
// handler that waits for the daemon (in a nested event loop) never sees the next line early.
class StdinLines final : public QObject {
    Q_OBJECT
public:
    explicit StdinLines(QObject *parent = nullptr)
        : QObject(parent)
        , m_notifier(STDIN_FILENO, QSocketNotifier::Read, this)
    {
        ::fcntl(STDIN_FILENO, F_SETFL, ::fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
        connect(&m_notifier, &QSocketNotifier::activated, this, &StdinLines::readable);
    }

Q_SIGNALS:
    void line(QByteArrayView line);
    void tooLong(qint64 limit);
    void ended();

private:
    void readable()
    {
        m_notifier.setEnabled(false);
        bool atEnd = false;
        char buf[65536];
        while (m_pending.size() <= kMaxLine) { // what is read is handled before more is
            const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (n <= 0) {
                atEnd = true;
                break;
            }
            m_pending.append(buf, n);
        }
        qsizetype end;
        while ((end = m_pending.indexOf('\n', m_scanned)) >= 0) {
            const QByteArray one = m_pending.left(end);
            m_pending.remove(0, end + 1);
            m_scanned = 0;
            if (!std::exchange(m_skipping, false))
                Q_EMIT line(one);
        }
        m_scanned = m_pending.size(); // a long line is searched once, not again from its start
        if (m_pending.size() > kMaxLine) { // dropped up to its end, and said so once
            if (!std::exchange(m_skipping, true))
                Q_EMIT tooLong(kMaxLine);
            m_pending.clear();
            m_scanned = 0;
        }
        if (!atEnd)
            return m_notifier.setEnabled(true);
        if (!m_skipping && !m_pending.trimmed().isEmpty())
            Q_EMIT line(m_pending);
        Q_EMIT ended();
    }

    QSocketNotifier m_notifier;
    QByteArray m_pending;
    qsizetype m_scanned = 0;
    bool m_skipping = false;
};

// The client's name as the daemon takes agent and run names: letters, digits and . _ : @ / + -.
QString agentName(const QString &clientName)
{
    QString name;
    for (const QChar c : clientName.left(100))
        name += c.isLetterOrNumber() && c.unicode() < 128 ? c
            : QStringLiteral("._:@/+-").contains(c)       ? c
                                                          : QLatin1Char('-');
    while (!name.isEmpty() && !name.at(0).isLetterOrNumber())
        name.remove(0, 1);
    return name.isEmpty() ? QStringLiteral("mcp-client") : name;
}

// One message per line on stdout; nothing else is written there.
bool writeLine(const QJsonObject &message)
{
    QByteArray bytes = QJsonDocument(message).toJson(QJsonDocument::Compact);
    bytes.append('\n');
    qsizetype done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, bytes.constData() + done, size_t(bytes.size() - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += n;
    }
    return true;
}
} // namespace

class McpCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("mcp"); }
    QString summary() const override
    {
        return QStringLiteral("Serve MCP on stdin/stdout: agents create sandboxes, run commands and move files through "
                              "Airlock, every call "
                              "under its policies, approvals and history.");
    }
    QString usage() const override
    {
        return QStringLiteral(
            "[--host NAME|URL] [--run NAME] [--preset NAME] [--allow HOST]... [--sandbox NAME]... [--lease 10s]");
    }
    QList<QCommandLineOption> options() const override
    {
        return {m_host, m_run, m_preset, m_allow, m_sandbox, m_lease};
    }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (!positional.isEmpty())
            return fail(ctx, badUsage(QStringLiteral("mcp takes no arguments (it reads MCP messages on stdin)")));
        // Here as well as before the command, as agents' configurations tend to put them.
        if (parser.isSet(m_host))
            ctx.host = parser.value(m_host);
        if (parser.isSet(m_run))
            ctx.connect.run = parser.value(m_run);
        mcp::SandboxBackend::Options options;
        if (parser.isSet(m_preset)) {
            auto preset = readPreset(parser.value(m_preset));
            if (!preset)
                return fail(ctx, preset.error());
            options.preset = *preset;
        }
        auto hosts = readAllowedHosts(parser.values(m_allow));
        if (!hosts)
            return fail(ctx, hosts.error());
        options.allow = *hosts;
        options.shared = parser.values(m_sandbox);
        if (parser.isSet(m_lease)) {
            auto lease = units::parseDurationMs(parser.value(m_lease));
            if (!lease || *lease < 1000)
                return fail(ctx, badUsage(QStringLiteral("--lease: expected a duration of at least 1s, e.g. 30s")));
            options.leaseMs = qint64(*lease);
        }

        // The daemon is reached when the client says who it is: the session acts as that agent,
        // in a run of its own unless --run names one.
        DaemonClient person;
        std::unique_ptr<mcp::SandboxBackend> backend;
        auto connect = [&ctx, &person](bool asAgent) -> Result<DaemonClient *> {
            auto agent = ctx.client();
            if (!agent || asAgent)
                return agent;
            if (!person.isConnected()) {
                ConnectOptions as = (*agent)->options();
                as.agent.clear();
                as.clientName = QStringLiteral("airlockctl mcp (the person's preset and hosts)");
                if (Status s = person.connectToDaemon(as); !s)
                    return s.error();
            }
            return &person;
        };
        auto open = [&](const QString &clientName) -> Result<mcp::SandboxBackend *> {
            if (ctx.connect.agent.isEmpty())
                ctx.connect.agent = agentName(clientName);
            if (ctx.connect.run.isEmpty())
                ctx.connect.run = QStringLiteral("%1-%2-%3")
                                      .arg(agentName(clientName).left(60),
                                          QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))
                                      .arg(QCoreApplication::applicationPid());
            ctx.connect.clientName = QStringLiteral("airlockctl mcp (%1)").arg(clientName);
            backend = std::make_unique<mcp::SandboxBackend>(options, connect);
            if (Status opened = backend->open(); !opened)
                return opened.error();
            return backend.get();
        };
        QEventLoop loop;
        bool outputGone = false;
        mcp::McpServer server(open, [&](const QJsonObject &message) {
            if (!outputGone && !writeLine(message)) {
                outputGone = true; // the client stopped reading: as if it had left
                QMetaObject::invokeMethod(
                    &loop, [&] { server.endOfInput(); }, Qt::QueuedConnection);
            }
        });
        StdinLines input;
        QObject::connect(&input, &StdinLines::line, &server, &mcp::McpServer::receive);
        QObject::connect(&input, &StdinLines::tooLong, &server, &mcp::McpServer::refuseLongLine);
        QObject::connect(&input, &StdinLines::ended, &server, &mcp::McpServer::endOfInput);
        QObject::connect(&server, &mcp::McpServer::finished, &loop, &QEventLoop::quit);
        // Told to stop (the client's SIGTERM, Ctrl-C): as if the client had left, what runs is
        // killed first.
        sigset_t stopping;
        sigemptyset(&stopping);
        for (int signo : {SIGTERM, SIGINT, SIGHUP})
            sigaddset(&stopping, signo);
        ::sigprocmask(SIG_BLOCK, &stopping, nullptr);
        const int signals = ::signalfd(-1, &stopping, SFD_CLOEXEC | SFD_NONBLOCK);
        QSocketNotifier stop(signals, QSocketNotifier::Read);
        QObject::connect(&stop, &QSocketNotifier::activated, &server, [&] {
            signalfd_siginfo info{};
            while (::read(signals, &info, sizeof info) == sizeof info) { }
            server.endOfInput();
        });
        loop.exec();
        ::close(signals);
        return ExitOk;
    }

private:
    QCommandLineOption m_host{QStringLiteral("host"),
        QStringLiteral("The daemon to use: a name from 'airlockctl hosts', or a URL (as before the command)."),
        QStringLiteral("name|url")};
    QCommandLineOption m_run{QStringLiteral("run"),
        QStringLiteral("The run to record the session in (default: the client's name and the time)."),
        QStringLiteral("name")};
    QCommandLineOption m_preset{QStringLiteral("preset"),
        QStringLiteral("Create the session's sandboxes with this preset (see 'airlockctl policy presets')."),
        QStringLiteral("name")};
    QCommandLineOption m_allow{QStringLiteral("allow"),
        QStringLiteral("A host the agent may ask for in a sandbox's network allowlist (repeatable)."),
        QStringLiteral("host")};
    QCommandLineOption m_sandbox{QStringLiteral("sandbox"),
        QStringLiteral("One of your sandboxes the session may use too, not delete (repeatable)."),
        QStringLiteral("name")};
    QCommandLineOption m_lease{QStringLiteral("lease"),
        QStringLiteral("Kill the session's commands this long after it is gone (default 10s)."),
        QStringLiteral("duration")};
};

void addMcpCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<McpCommand>());
}

} // namespace airlock::cli

#include "McpCommand.moc"
