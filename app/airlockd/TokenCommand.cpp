// SPDX-License-Identifier: Apache-2.0
#include "TokenCommand.h"

#include "client/DaemonApi.h"
#include "remote/TokenStore.h"
#include "sandbox/SandboxRecord.h"
#include "util/Paths.h"

#include <QCommandLineParser>
#include <QJsonArray>

#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::app {

namespace {
int fail(const Error &e)
{
    std::fprintf(stderr, "airlockd token: %s\n", qPrintable(e.message));
    return e.code == ErrorCode::IoError ? 1 : 2;
}

// The sandboxes this user's daemon has now (name → id), to bind sandbox:NAME scopes to: asked of
// the running daemon, else read from the records of sandboxes that outlived it.
QHash<QString, QString> existingSandboxes()
{
    QHash<QString, QString> existing;
    DaemonClient client;
    ConnectOptions options;
    options.autostart = false;
    options.clientName = QStringLiteral("airlockd-token");
    options.timeoutMs = 3000;
    if (client.connectToDaemon(options)) {
        if (auto listed = DaemonApi(client).listSandboxes().wait(10000))
            for (const QJsonValue &v : std::as_const(*listed))
                existing.insert(v.toObject().value(QStringLiteral("name")).toString(),
                    v.toObject().value(QStringLiteral("id")).toString());
        return existing;
    }
    for (const auto &[id, record] : SandboxRecords(paths::dataDir() + QStringLiteral("/sandboxes")).readAll())
        if (record && record->ended.isEmpty())
            existing.insert(record->spec.name, record->id);
    return existing;
}

// `token create > file`: the shell made the file with its umask (0644, often) before we ran. A
// regular file of ours on stdout is made 0600 before the token is written to it.
void privateStdout()
{
    struct stat st { };
    if (::fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077))
        (void)::fchmod(STDOUT_FILENO, st.st_mode & 0700);
}
} // namespace

QList<QCommandLineOption> tokenOptions()
{
    return {{QStringLiteral("name"), QStringLiteral("The token's name (create)."), QStringLiteral("name")},
        {QStringLiteral("scope"),
            QStringLiteral(
                "full (default), read-only or sandbox:NAME (the sandbox of that name now, bound by its id, and those "
                "created through the token); repeatable, combinable (create)."),
            QStringLiteral("scope")}};
}

int runTokenCommand(const QStringList &arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Bearer tokens for remote clients of airlockd --listen."));
    parser.addPositionalArgument(QStringLiteral("action"), QStringLiteral("create, ls or revoke NAME"));
    const QList<QCommandLineOption> options = tokenOptions();
    const QCommandLineOption &nameOpt = options.at(0), &scopeOpt = options.at(1);
    parser.addOptions(options);
    parser.addHelpOption();
    if (!parser.parse(arguments))
        return fail(makeError(ErrorCode::InvalidArgument, parser.errorText()));
    if (parser.isSet(QStringLiteral("help"))) {
        std::printf("%s", qPrintable(parser.helpText()));
        return 0;
    }
    const QStringList args = parser.positionalArguments().mid(1); // after "token"
    remote::TokenStore store(paths::dataDir() + QStringLiteral("/tokens.json"));
    const QString action = args.value(0);
    if (action == QLatin1String("create") && args.size() == 1) {
        if (!parser.isSet(nameOpt))
            return fail(makeError(ErrorCode::InvalidArgument,
                QStringLiteral("create needs --name NAME (say which client will hold it)")));
        const QStringList scopes = parser.values(scopeOpt);
        const bool named = std::any_of(
            scopes.cbegin(), scopes.cend(), [](const QString &s) { return s.startsWith(QLatin1String("sandbox:")); });
        auto created
            = store.create(parser.value(nameOpt), scopes, named ? existingSandboxes() : QHash<QString, QString>());
        if (!created)
            return fail(created.error());
        privateStdout();
        // The token on stdout alone (for a pipe or a file); the rest on stderr.
        std::fprintf(stderr, "token '%s' (%s); it is shown once and stored only as a hash:\n",
            qPrintable(created->grant.tokenName), qPrintable(created->grant.describe()));
        std::printf("%s\n", qPrintable(created->token));
        return 0;
    }
    if (action == QLatin1String("ls") && args.size() == 1) {
        auto entries = store.entries();
        if (!entries)
            return fail(entries.error());
        std::printf("%-24s %-14s %-21s %s\n", "NAME", "ID", "CREATED", "SCOPE");
        for (const auto &e : std::as_const(*entries))
            std::printf("%-24s %-14s %-21s %s%s\n", qPrintable(e.grant.tokenName), qPrintable(e.grant.tokenId),
                qPrintable(e.created.toString(Qt::ISODate)), qPrintable(e.grant.describe()),
                e.revoked.isValid() ? qPrintable(QStringLiteral(" (revoked %1)").arg(e.revoked.toString(Qt::ISODate)))
                                    : "");
        return 0;
    }
    if (action == QLatin1String("revoke") && args.size() == 2) {
        if (Status revoked = store.revoke(args.at(1)); !revoked)
            return fail(revoked.error());
        std::fprintf(stderr, "token '%s' revoked; its connections close within a second\n", qPrintable(args.at(1)));
        return 0;
    }
    return fail(makeError(ErrorCode::InvalidArgument,
        QStringLiteral("expected: token create --name NAME [--scope S]…, token ls, token revoke NAME")));
}

} // namespace airlock::app
