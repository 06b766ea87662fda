// SPDX-License-Identifier: Apache-2.0
// airlockd: the composition root of the daemon. Probes the host, builds the engine, then the RPC
// server, takes over the sandboxes an earlier daemon left running, and runs until SIGTERM/SIGINT,
// when it lets them go on for the next daemon (or, with --sandboxes-end-with-daemon, takes every
// sandbox down) and exits 0.
#include "AppLogging.h"
#include "ManPage.h"
#include "StdioBridge.h"
#include "TokenCommand.h"
#include "approval/ApprovalBroker.h"
#include "daytona/DaytonaListener.h"
#include "engine/Engine.h"
#include "history/HistoryGate.h"
#include "history/HistoryReader.h"
#include "history/HistoryStore.h"
#include "log/Log.h"
#include "model/Units.h"
#include "policy/Policy.h"
#include "remote/RemoteListener.h"
#include "rpc/RpcServer.h"
#include "sandbox/GuestImage.h"
#include "sandbox/HostCapabilities.h"
#include "sandbox/HostUids.h"
#include "secrets/KeychainSecretStore.h"
#include "secrets/SecretStore.h"
#include "util/EpollEventDispatcher.h"
#include "util/HeapTrimmer.h"
#include "util/InstanceLock.h"
#include "util/Paths.h"
#include "util/ThreadDeadline.h"
#include "util/Version.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QPointer>
#include <QSocketNotifier>
#include <QThreadPool>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;

namespace {
QString defaultGuestPath()
{
    // Next to the daemon (a build tree), then where an install put it, then the system's place.
    const QString dir = QCoreApplication::applicationDirPath();
    const QStringList candidates{
        dir + QStringLiteral("/airlock-guest"), dir + QStringLiteral("/../libexec/airlock/airlock-guest")};
    for (const QString &candidate : candidates)
        if (QFileInfo(candidate).isExecutable())
            return QFileInfo(candidate).canonicalFilePath();
    return QStringLiteral("/usr/libexec/airlock/airlock-guest");
}

// The keyring when one answers (or when asked for), else the 0600 file.
Result<std::unique_ptr<SecretStore>> openSecretStore(const QString &choice)
{
    if (choice != QLatin1String("auto") && choice != QLatin1String("secret-service") && choice != QLatin1String("file"))
        return makeError(
            ErrorCode::InvalidArgument, QStringLiteral("--secret-store: expected auto, secret-service or file"));
    const QString file = paths::configDir() + QStringLiteral("/secrets.json");
    if (choice == QLatin1String("file"))
        return std::unique_ptr<SecretStore>(std::make_unique<FileSecretStore>(file));
    QString why;
    auto keyring = KeychainSecretStore::open(paths::configDir() + QStringLiteral("/secrets-index.json"), &why);
    if (!keyring) // a keyring may answer, but this install cannot reach it: never the file instead
        return makeError(
            keyring.error().code, QStringLiteral("--secret-store %1: %2").arg(choice, keyring.error().message));
    if (*keyring)
        return std::unique_ptr<SecretStore>(std::move(*keyring));
    if (choice == QLatin1String("secret-service"))
        return makeError(ErrorCode::BoundaryUnavailable, QStringLiteral("--secret-store secret-service: %1").arg(why));
    log::get("daemon")->info("no Secret Service ({}); secrets go to the file store", why.toStdString());
    return std::unique_ptr<SecretStore>(std::make_unique<FileSecretStore>(file));
}

void raiseFileLimit()
{
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
}
} // namespace

namespace {
QString manualPage(const QList<QCommandLineOption> &options)
{
    app::ManPage page(
        QStringLiteral("airlockd"), QStringLiteral("the Airlock daemon: owns this user's sandboxes on a host"));
    page.synopsis(QStringLiteral("[options]"))
        .synopsis(QStringLiteral("token create --name NAME [--scope SCOPE]... | ls | revoke NAME"));
    page.paragraphs(QStringLiteral("Description"),
        QStringLiteral(
            "airlockd runs one per user and host. It creates the sandboxes (bubblewrap, seccomp, Landlock, cgroups and "
            "rlimits), runs commands in them, holds agents' requests until a person decides, keeps the history of "
            "every run in SQLite, and serves airlock(1) and airlockctl(1) on a unix socket. Clients start it on "
            "demand; a systemd user socket unit (airlockd.socket) can start it instead.\n\n"
            "With --listen it also serves remote clients over wss:// (TLS 1.3 with its own certificate, whose "
            "fingerprint clients pin) with bearer tokens from 'airlockd token create'."));
    page.options(QStringLiteral("Options"), options);
    page.subsection(QStringLiteral("token create --name NAME [--scope SCOPE]... | ls | revoke NAME"),
        QStringLiteral(
            "Bearer tokens for remote clients: created tokens are printed once and stored only as a hash; revoked "
            "tokens' connections close within a second."),
        app::tokenOptions());
    page.definitions(QStringLiteral("Files"),
        {{QStringLiteral("$XDG_RUNTIME_DIR/airlock/airlockd.sock"),
             QStringLiteral("The socket (without XDG_RUNTIME_DIR: /run/user/UID/airlock/ when yours, else "
                            "$XDG_STATE_HOME/airlock/run/).")},
            {QStringLiteral("$XDG_DATA_HOME/airlock/history.db"), QStringLiteral("The history.")},
            {QStringLiteral("$XDG_DATA_HOME/airlock/tls/"), QStringLiteral("The key and certificate for --listen.")},
            {QStringLiteral("$XDG_DATA_HOME/airlock/tokens.json"), QStringLiteral("Token hashes.")},
            {QStringLiteral("$XDG_STATE_HOME/airlock/airlockd.log"), QStringLiteral("The log.")},
            {QStringLiteral("$XDG_CONFIG_HOME/airlock/airlockd.env"),
                QStringLiteral("AIRLOCKD_OPTIONS for the systemd user service.")}});
    page.paragraphs(QStringLiteral("See also"), QStringLiteral("airlockctl(1), airlock(1), bwrap(1)"));
    return page.render(airlock::version());
}

// The first of quick_check's findings that says something ("*** in database main ***" heads them).
QString firstFinding(const QString &findings)
{
    for (const QString &line : findings.split(QLatin1Char('\n')))
        if (!line.startsWith(QLatin1String("***")) && !line.trimmed().isEmpty())
            return line.left(300);
    return findings.left(300);
}
} // namespace

int main(int argc, char *argv[])
{
    // Block the termination signals before any thread exists; they are read from a signalfd.
    sigset_t termination;
    sigemptyset(&termination);
    sigaddset(&termination, SIGTERM);
    sigaddset(&termination, SIGINT);
    sigaddset(&termination, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &termination, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    ::umask(077); // the socket, logs and workspaces are this user's alone

    // Wake-ups that cost what is ready, not what is watched (AIRLOCK_QT_EVENT_LOOP=1: Qt's own, for
    // airlock-bench --scale to compare).
    if (qEnvironmentVariableIsEmpty("AIRLOCK_QT_EVENT_LOOP")) {
        auto *dispatcher = new airlock::EpollEventDispatcher;
        if (dispatcher->isValid())
            QCoreApplication::setEventDispatcher(dispatcher);
        else
            delete dispatcher;
    }
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("airlockd"));
    QCoreApplication::setApplicationVersion(airlock::version());
    if (app.arguments().value(1) == QLatin1String("token"))
        return app::runTokenCommand(app.arguments());

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Airlock daemon: owns this user's sandboxes on this host."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption socketOpt(QStringLiteral("socket"), QStringLiteral("Listen on this unix socket."),
        QStringLiteral("path"), paths::defaultSocketPath());
    const QCommandLineOption guestOpt(QStringLiteral("guest"),
        QStringLiteral("The airlock-guest binary to run in sandboxes."), QStringLiteral("path"), defaultGuestPath());
    const QCommandLineOption bwrapOpt(QStringLiteral("bwrap"),
        QStringLiteral("Use this bubblewrap instead of the one in PATH."), QStringLiteral("path"));
    const QCommandLineOption runscOpt(QStringLiteral("runsc"),
        QStringLiteral("Use this runsc (gVisor, for --isolation gvisor) instead of the one in PATH."),
        QStringLiteral("path"));
    const QCommandLineOption endWithDaemonOpt(QStringLiteral("sandboxes-end-with-daemon"),
        QStringLiteral("Sandboxes end when this daemon stops or dies (by default they go on, and "
                       "the next airlockd takes them over)."));
    const QCommandLineOption verboseOpt(
        QStringLiteral("verbose"), QStringLiteral("Log debug messages (also from the guest)."));
    const QCommandLineOption outputCapOpt(QStringLiteral("history-output-cap"),
        QStringLiteral("Output stored per execution, head and tail halves (default 16M)."), QStringLiteral("size"),
        QStringLiteral("16M"));
    const QCommandLineOption budgetOpt(QStringLiteral("history-budget"),
        QStringLiteral("Output stored in all; the oldest executions' output goes first (default 2G)."),
        QStringLiteral("size"), QStringLiteral("2G"));
    const QCommandLineOption approvalTimeoutOpt(QStringLiteral("approval-timeout"),
        QStringLiteral("How long an agent's request waits for a person before it is denied (default 120s)."),
        QStringLiteral("duration"), QStringLiteral("120s"));
    const QCommandLineOption resolveOpt(QStringLiteral("resolve"),
        QStringLiteral("Answer NAME with ADDR[,ADDR] in the egress proxy instead of DNS. Trusted: the addresses "
                       "are not checked against the refused ranges (loopback, private). Repeatable."),
        QStringLiteral("name=addr"));
    const QCommandLineOption upstreamCaOpt(QStringLiteral("upstream-ca"),
        QStringLiteral("Trust the certificates in this PEM file, besides the host's trust store, for hosts whose "
                       "credentials the egress proxy brokers. Repeatable."),
        QStringLiteral("file"));
    const QCommandLineOption toolsOpt(QStringLiteral("tools"),
        QStringLiteral("Load host tool declarations (*.json) from this directory (default: "
                       "$XDG_CONFIG_HOME/airlock/tools). Repeatable."),
        QStringLiteral("dir"));
    const QCommandLineOption secretStoreOpt(QStringLiteral("secret-store"),
        QStringLiteral("Where secrets are kept: secret-service (the session keyring), file (0600, weaker) "
                       "or auto (the keyring when one answers, default)."),
        QStringLiteral("backend"), QStringLiteral("auto"));
    const QCommandLineOption stdioOpt(QStringLiteral("stdio"),
        QStringLiteral("Relay stdin/stdout to this user's daemon (starting it if needed) and exit when either "
                       "ends: the far end of an ssh:// connection."));
    const QCommandLineOption listenOpt(QStringLiteral("listen"),
        QStringLiteral("Also serve remote clients on ADDR:PORT over wss:// (TLS 1.3, the daemon's own certificate; "
                       "clients need a token from 'airlockd token create')."),
        QStringLiteral("addr:port"));
    const QCommandLineOption daytonaOpt(QStringLiteral("daytona-api"),
        QStringLiteral(
            "Also serve Daytona's REST and toolbox APIs on ADDR:PORT (plain HTTP, a loopback address only): "
            "a framework's Daytona integration runs on this daemon with DAYTONA_API_URL=http://ADDR:PORT/api "
            "and DAYTONA_API_KEY set to a token from 'airlockd token create'."),
        QStringLiteral("addr:port"));
    const QCommandLineOption daytonaAllowOpt(QStringLiteral("daytona-allow"),
        QStringLiteral("A host (pattern, optional port) that a sandbox made through --daytona-api may be given when "
                       "the SDK asks for it in networkAllowList. Repeatable; none by default (no network)."),
        QStringLiteral("host"));
    const QCommandLineOption plainOpt(QStringLiteral("plain-ws"),
        QStringLiteral("Serve --listen as plain ws:// instead (a loopback address only: tests, or behind a tunnel)."));
    const QCommandLineOption allowHostOpt(QStringLiteral("allow-host"),
        QStringLiteral("Accept this name in a client's Host header besides the listening address. Repeatable."),
        QStringLiteral("name[:port]"));
    const QCommandLineOption allowOriginOpt(QStringLiteral("allow-origin"),
        QStringLiteral("Accept a WebSocket upgrade carrying this Origin (none by default). Repeatable."),
        QStringLiteral("origin"));
    const QCommandLineOption helloTimeoutOpt(QStringLiteral("hello-timeout"),
        QStringLiteral("Close a connection that has not said hello this long after it opened (default 10s)."),
        QStringLiteral("duration"), QStringLiteral("10s"));
    const QCommandLineOption hostUidsOpt(QStringLiteral("sandbox-uids"),
        QStringLiteral(
            "As root: the host uids sandboxes run as, one each (default %1). The daemon refuses to start "
            "(exit status 4) when an account, a group or a line of /etc/subuid or /etc/subgid reaches into them.")
            .arg(kDefaultHostUids.describe()),
        QStringLiteral("first-last"), kDefaultHostUids.describe());
    const QCommandLineOption diskReserveOpt(QStringLiteral("disk-reserve"),
        QStringLiteral("Refuse new workspaces when less than this is free on their disk, kept for the history "
                       "and the workspaces already there; the history keeps less output when its disk has less "
                       "than half of it free (default 512M)."),
        QStringLiteral("size"), QStringLiteral("512M"));
    const QList<QCommandLineOption> options{socketOpt, guestOpt, bwrapOpt, runscOpt, endWithDaemonOpt, verboseOpt,
        outputCapOpt, budgetOpt, approvalTimeoutOpt, resolveOpt, upstreamCaOpt, toolsOpt, secretStoreOpt, stdioOpt,
        listenOpt, daytonaOpt, daytonaAllowOpt, plainOpt, allowHostOpt, allowOriginOpt, helloTimeoutOpt, hostUidsOpt,
        diskReserveOpt};
    parser.addOptions(options);
    QCommandLineOption manOpt(QStringLiteral("man"), QStringLiteral("Print the manual page."));
    manOpt.setFlags(QCommandLineOption::HiddenFromHelp);
    parser.addOption(manOpt);
    parser.process(app);
    if (parser.isSet(manOpt)) {
        std::fputs(qPrintable(manualPage(options)), stdout);
        return 0;
    }
    if (parser.isSet(stdioOpt)) // stdout is the protocol's: nothing else may be written to it
        return app::runStdioBridge(parser.value(socketOpt));

    app::setupLogging({QStringLiteral("airlockd"), parser.isSet(verboseOpt), true, true});
    auto logger = log::get("daemon");
    raiseFileLimit();

    const HostCapabilities caps = HostCapabilities::probe(parser.value(bwrapOpt), parser.value(runscOpt));
    if (Status boundary = caps.checkBoundary(); !boundary)
        logger->warn("sandboxes cannot be created on this host: {}", boundary.error().message.toStdString());

    // Options are checked before anything is touched.
    auto approvalTimeout = units::parseDurationMs(parser.value(approvalTimeoutOpt));
    if (!approvalTimeout || *approvalTimeout > 86'400'000) {
        std::fprintf(stderr, "airlockd: --approval-timeout: expected a duration up to 24h, like 30s or 5m\n");
        return 2;
    }
    auto helloTimeout = units::parseDurationMs(parser.value(helloTimeoutOpt));
    if (!helloTimeout || *helloTimeout > 3'600'000) {
        std::fprintf(stderr, "airlockd: --hello-timeout: expected a duration up to 1h, like 10s or 500ms\n");
        return 2;
    }
    QHash<QString, QList<QHostAddress>> resolve;
    for (const QString &entry : parser.values(resolveOpt)) {
        auto parsed = policy::parseResolveEntry(entry);
        if (!parsed) {
            std::fprintf(stderr, "airlockd: --resolve %s: %s\n", qPrintable(entry), qPrintable(parsed.error().message));
            return 2;
        }
        resolve[parsed->first] += parsed->second;
    }
    QByteArray upstreamTrust;
    for (const QString &path : parser.values(upstreamCaOpt)) {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly) || !file.peek(64 * 1024).contains("-----BEGIN CERTIFICATE-----")) {
            std::fprintf(stderr, "airlockd: --upstream-ca %s: %s\n", qPrintable(path),
                file.isOpen() ? "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
                              : qPrintable(file.errorString()));
            return 2;
        }
        upstreamTrust += file.readAll() + '\n';
    }
    std::optional<remote::RemoteListener::Options> remoteOptions;
    if (parser.isSet(listenOpt)) {
        auto parsed = remote::parseListenAddress(parser.value(listenOpt));
        if (!parsed) {
            std::fprintf(stderr, "airlockd: --listen: %s\n", qPrintable(parsed.error().message));
            return 2;
        }
        remoteOptions = remote::RemoteListener::Options{parsed->first, parsed->second, parser.isSet(plainOpt),
            parser.values(allowHostOpt), parser.values(allowOriginOpt)};
        if (remoteOptions->plain && !remoteOptions->address.isLoopback()) {
            std::fprintf(stderr,
                "airlockd: --plain-ws: plain ws:// only on a loopback address (%s is not one); drop --plain-ws to "
                "serve wss://\n",
                qPrintable(parsed->first.toString()));
            return 2;
        }
    } else if (parser.isSet(plainOpt)) {
        std::fprintf(stderr, "airlockd: --plain-ws needs --listen ADDR:PORT\n");
        return 2;
    }
    std::optional<daytona::DaytonaListener::Options> daytonaOptions;
    if (parser.isSet(daytonaOpt)) {
        auto parsed = remote::parseListenAddress(parser.value(daytonaOpt));
        if (!parsed) {
            std::fprintf(stderr, "airlockd: --daytona-api: %s\n", qPrintable(parsed.error().message));
            return 2;
        }
        if (!parsed->first.isLoopback()) {
            std::fprintf(stderr,
                "airlockd: --daytona-api: plain HTTP only on a loopback address (%s is not one); reach it from "
                "elsewhere through a tunnel (ssh -L)\n",
                qPrintable(parsed->first.toString()));
            return 2;
        }
        daytonaOptions
            = daytona::DaytonaListener::Options{parsed->first, parsed->second, parser.values(allowHostOpt), {}};
        for (const QString &host : parser.values(daytonaAllowOpt)) {
            auto normal = policy::normaliseHostPattern(host);
            if (!normal) {
                std::fprintf(
                    stderr, "airlockd: --daytona-allow %s: %s\n", qPrintable(host), qPrintable(normal.error().message));
                return 2;
            }
            daytonaOptions->networkHosts.append(*normal);
        }
    } else if (parser.isSet(daytonaAllowOpt)) {
        std::fprintf(stderr, "airlockd: --daytona-allow needs --daytona-api ADDR:PORT\n");
        return 2;
    }
    auto diskReserve = units::parseBytes(parser.value(diskReserveOpt));
    if (!diskReserve) {
        std::fprintf(stderr, "airlockd: --disk-reserve: %s\n", qPrintable(diskReserve.error().message));
        return 2;
    }
    if (*diskReserve > (uint64_t(1) << 50)) { // past any disk; and sums of it stay in range
        std::fprintf(stderr, "airlockd: --disk-reserve: %s is more than any disk (at most 1P)\n",
            qPrintable(parser.value(diskReserveOpt)));
        return 2;
    }
    auto hostUids = parseHostUidRange(parser.value(hostUidsOpt));
    if (!hostUids) {
        std::fprintf(stderr, "airlockd: --sandbox-uids: %s\n", qPrintable(hostUids.error().message));
        return 2;
    }
    // Whoever could become one of these uids could enter its sandbox's workspace and signal what
    // runs there: a root daemon does not start beside such an account or subordinate range.
    if (Status free = caps.runningAsRoot ? checkHostUidRange(*hostUids) : Status(Ok{}); !free) {
        logger->error("{}", free.error().message.toStdString());
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(free.error().message));
        return 4;
    }
    auto secrets = openSecretStore(parser.value(secretStoreOpt));
    if (!secrets) {
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(secrets.error().message));
        return 2;
    }
    logger->info("secrets: {}", (*secrets)->backend().toStdString());
    // The lock comes before any file is touched: a daemon that is refused must leave no trace.
    auto lock = InstanceLock::acquire(parser.value(socketOpt), paths::dataDir());
    if (!lock) {
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(lock.error().message));
        return lock.error().code == ErrorCode::DaemonRunning ? 3 : 1;
    }
    // Opened before the engine so that it outlives it: an engine shutting down still publishes.
    HistoryStore::Options historyOptions;
    historyOptions.path = paths::dataDir() + QStringLiteral("/history.db");
    for (const auto &[option, target] : {std::pair{&outputCapOpt, &historyOptions.maxStoredOutputPerExec},
             std::pair{&budgetOpt, &historyOptions.maxStoredOutputTotal}}) {
        auto bytes = units::parseBytes(parser.value(*option));
        if (!bytes) {
            std::fprintf(stderr, "airlockd: --%s: %s\n", qPrintable(option->names().constFirst()),
                qPrintable(bytes.error().message));
            return 2;
        }
        *target = qint64(*bytes);
    }
    // Sandboxes are refused and stopped at the reserve; the history gives up its oldest output only
    // at half of it, so that it never fills the disk itself.
    historyOptions.keepFreeBytes = qint64(*diskReserve / 2);
    const bool outlive = !parser.isSet(endWithDaemonOpt);
    // What runs in sandboxes that outlived the last daemon is not "interrupted": it is taken over.
    historyOptions.liveSandboxes = Engine::liveSandboxes(paths::dataDir());
    // Damaged (truncated, overwritten, corrupt inside): kept aside, never deleted, and a new
    // history started, so the daemon works; said in its log, on stderr and in daemon.info. Found
    // by SQLite when it opens the file, or by the last daemon's check of all of it (below).
    const QString damageFound = historyOptions.path + QStringLiteral(".damage-found");
    QString aside, damage;
    if (QFile::remove(damageFound)) {
        if (auto moved
            = HistoryStore::setAsideIfDamaged(historyOptions.path)) { // (not when recovered by hand meanwhile)
            aside = *moved;
            damage = QStringLiteral("quick_check found damage inside");
        }
    }
    auto history = HistoryStore::open(historyOptions);
    if (!history && history.error().code != ErrorCode::HistoryUnavailable) {
        if (auto moved = HistoryStore::setAsideIfDamaged(historyOptions.path)) {
            aside = *moved;
            damage = history.error().message;
            history = HistoryStore::open(historyOptions);
        }
    }
    QString historyNotice;
    if (!aside.isEmpty()) {
        QString quoted = aside;
        quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
        historyNotice = QStringLiteral(
            "the history at %1 was damaged (%2); it was moved to %3 and a new one started. To recover what "
            "it held: sqlite3 '%4' .recover | sqlite3 recovered.db")
                            .arg(historyOptions.path, damage, aside, quoted);
        logger->warn("{}", historyNotice.toStdString());
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(historyNotice));
    }
    if (!history) {
        logger->error("{}", history.error().message.toStdString()); // an autostarted daemon has no terminal
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(history.error().message));
        return 1;
    }
    // The history sees every event before any client does: a fact is committed before anyone
    // hears of it (an exit before it is acknowledged, a start so that an execution the daemon dies
    // during is found and marked interrupted), output rides the 100 ms batch. While the store
    // cannot write, flush() says so at once and the RPC server refuses new work. Made before the
    // engine, so that what the engine publishes while it shuts down is stored too.
    HistoryGate gate(*history->get());
    ApprovalBroker approvals{int(*approvalTimeout)};
    const QStringList toolDirs
        = parser.isSet(toolsOpt) ? parser.values(toolsOpt) : QStringList{paths::configDir() + QStringLiteral("/tools")};
    const QStringList ownDirs = QStringList{QFileInfo(parser.value(socketOpt)).absolutePath()} + toolDirs;
    QString notStaged;
    const GuestImage guestImage(parser.value(guestOpt), lock->key(), &notStaged);
    if (guestImage.path().isEmpty())
        logger->warn("sandboxes mount the guest from {} (their mountinfo shows that path): {}",
            parser.value(guestOpt).toStdString(), notStaged.toStdString());
    // The main thread's deadline timer (exec-check receives, closes of the guests' sockets), made
    // before any sandbox could use up the pending signals timers are counted against.
    if (!ThreadDeadline::prepare())
        logger->error("no deadline timer for the main thread ({}): sandboxes' judged programs will wait unjudged",
            std::strerror(errno));
    EngineConfig engineConfig{parser.value(guestOpt), paths::dataDir(), lock->key(), parser.isSet(verboseOpt), {},
        resolve, secrets->get(), toolDirs, outlive, ownDirs, *hostUids, guestImage.path(), *diskReserve, {}};
    engineConfig.upstreamTrust = upstreamTrust;
    Engine engine(engineConfig, caps, approvals);
    QObject::connect(&engine, &Engine::eventPublished, &gate, &HistoryGate::take);
    // A sandbox's guest keeps its output until it is stored: then it may forget it.
    QObject::connect(&gate, &HistoryGate::published, &engine, &Engine::onEventStored);
    const HistoryReader stored(historyOptions.path);
    engine.adoptSandboxes([&stored](const QString &id) { return stored.storedSandbox(id); });
    rpc::RpcServer server(engine, history->get(), approvals);
    server.setHelloTimeout(int(*helloTimeout));
    if (!historyNotice.isEmpty())
        server.addNotice(historyNotice);
    QObject::connect(&gate, &HistoryGate::published, &server, &rpc::RpcServer::onEvent);

    // Remote clients, when asked for: before the local socket, so that whoever waits for that
    // socket finds the remote side (and its certificate) ready, and a daemon that cannot serve
    // both serves neither.
    remote::TokenStore tokens(paths::dataDir() + QStringLiteral("/tokens.json"));
    std::unique_ptr<remote::RemoteListener> remoteListener;
    if (remoteOptions) {
        std::optional<remote::TlsIdentity> identity;
        if (!remoteOptions->plain) {
            auto loaded = remote::TlsIdentity::loadOrCreate(paths::dataDir() + QStringLiteral("/tls"));
            if (!loaded) {
                std::fprintf(stderr, "airlockd: %s\n", qPrintable(loaded.error().message));
                return 1;
            }
            identity = *loaded;
        }
        remoteListener = std::make_unique<remote::RemoteListener>(
            *remoteOptions, tokens, [&server](QLocalSocket *socket, const remote::Grant &grant, const QString &peer) {
                server.adopt(socket, grant, peer);
            });
        if (Status listening = remoteListener->listen(identity ? &*identity : nullptr); !listening) {
            std::fprintf(stderr, "airlockd: %s\n", qPrintable(listening.error().message));
            return 1;
        }
        std::fprintf(stderr,
            "airlockd: remote clients connect with %s and a token from 'airlockd token create --name NAME'\n",
            qPrintable(remoteListener->connectionString()));
    }
    // The Daytona API, when asked for: its keys are the same tokens, each an agent of its own.
    std::unique_ptr<daytona::DaytonaStore> daytonaStore;
    std::unique_ptr<daytona::DaytonaListener> daytonaListener;
    if (daytonaOptions) {
        daytonaStore = std::make_unique<daytona::DaytonaStore>(paths::dataDir() + QStringLiteral("/daytona.json"));
        if (Status loaded = daytonaStore->load(); !loaded) {
            std::fprintf(stderr, "airlockd: %s\n", qPrintable(loaded.error().message));
            return 1;
        }
        daytonaListener = std::make_unique<daytona::DaytonaListener>(
            *daytonaOptions, tokens, *daytonaStore,
            [&server](QLocalSocket *socket, const remote::Grant &grant, const QString &peer) {
                server.adopt(socket, grant, peer);
            },
            [&server](QLocalSocket *socket) { server.adoptLocal(socket); });
        if (Status listening = daytonaListener->listen(); !listening) {
            std::fprintf(stderr, "airlockd: %s\n", qPrintable(listening.error().message));
            return 1;
        }
        std::fprintf(stderr,
            "airlockd: Daytona SDKs connect with DAYTONA_API_URL=%s and DAYTONA_API_KEY set to a token from "
            "'airlockd token create --name NAME'\n",
            qPrintable(daytonaListener->apiUrl()));
    }
    if (Status listening = server.listen(parser.value(socketOpt)); !listening) {
        std::fprintf(stderr, "airlockd: %s\n", qPrintable(listening.error().message));
        return 1;
    }
    // Started by a client that listened on our stderr until now: ready, so it goes to /dev/null
    // (that client stops reading; nothing this daemon starts may write into a closed pipe).
    if (qEnvironmentVariableIsSet("AIRLOCK_STDERR_UNTIL_READY")) {
        if (const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC); devnull >= 0) {
            ::dup2(devnull, STDERR_FILENO);
            ::close(devnull);
        }
        qunsetenv("AIRLOCK_STDERR_UNTIL_READY");
    }

    const int sigfd = ::signalfd(-1, &termination, SFD_CLOEXEC | SFD_NONBLOCK);
    QSocketNotifier signals(sigfd, QSocketNotifier::Read);
    QObject::connect(&signals, &QSocketNotifier::activated, &app, [&] {
        signalfd_siginfo info{};
        if (::read(sigfd, &info, sizeof info) != sizeof info)
            return;
        logger->info("signal {}: {}", info.ssi_signo, outlive ? "stopping; sandboxes go on" : "stopping every sandbox");
        engine.shutdown();
        QCoreApplication::exit(0);
    });
    // Damage in the middle of the file (what opening it does not read) is what SQLite's
    // quick_check finds, reading all of it: on a thread of its own, so that a big history does not
    // slow the start; what it finds is said in the log and by `airlockctl info`.
    // (A pool of its own, declared after the server: it is waited for before the server goes.)
    QThreadPool checks;
    checks.start([path = historyOptions.path, damageFound, target = QPointer<rpc::RpcServer>(&server), logger] {
        const auto found = HistoryReader(path).quickCheck();
        if (!found || *found == QLatin1String("ok"))
            return;
        QString quoted = path;
        quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
        // The next start sets it aside (writing where it is damaged would fail meanwhile).
        QFile(damageFound).open(QIODevice::WriteOnly);
        const QString notice = QStringLiteral(
            "the history at %1 is damaged inside (quick_check: %2). Restart airlockd (systemctl --user restart "
            "airlockd; sandboxes go on) to move it aside and start a new one, or stop it and recover it: "
            "sqlite3 '%3' .recover | sqlite3 recovered.db, then put recovered.db in its place")
                                   .arg(path, firstFinding(*found), quoted);
        logger->warn("{}", notice.toStdString());
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [target, notice] {
                if (target)
                    target->addNotice(notice);
            },
            Qt::QueuedConnection);
    });
    // After a flood of output the heap holds what nothing uses: given back when over 32 MiB.
    const HeapTrimmer trimmer(32ll << 20, 2000);
    logger->info("airlockd {} ready (pid {}, guest {})", version().toStdString(), ::getpid(),
        parser.value(guestOpt).toStdString());
    return QCoreApplication::exec();
}
