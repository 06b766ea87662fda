// SPDX-License-Identifier: Apache-2.0
// secret: the daemon's secret store. Values go in from stdin or a prompt (never argv, which other
// users can read in /proc) and never come back out: `ls` shows names, sizes and times.
#include "HistoryFormat.h"
#include "SandboxCommands.h"
#include "Table.h"

#include "secrets/SecretStore.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>

#include <termios.h>
#include <unistd.h>

namespace airlock::cli {

namespace {
// A value typed at a terminal without echo, or everything on stdin (one trailing newline dropped).
Result<QByteArray> readValue(Context &ctx, const QString &name)
{
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot read stdin"));
    if (!::isatty(STDIN_FILENO)) {
        auto read = readToEnd(in, 1024 * 1024, QStringLiteral("the value of %1 on stdin").arg(name));
        if (!read)
            return read.error();
        QByteArray value = *read;
        if (value.endsWith("\r\n"))
            value.chop(2);
        else if (value.endsWith('\n'))
            value.chop(1);
        return value;
    }
    termios saved{};
    ::tcgetattr(STDIN_FILENO, &saved);
    termios quiet = saved;
    quiet.c_lflag &= ~tcflag_t(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    ctx.err << "value for " << name << " (not shown): " << Qt::flush;
    QByteArray value = in.readLine(1024 * 1024);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    ctx.err << Qt::endl;
    if (value.endsWith('\n'))
        value.chop(1);
    return value;
}
} // namespace

class SecretCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("secret"); }
    QString summary() const override
    {
        return QStringLiteral("Keep secrets for sandboxes: set NAME (value from stdin or a prompt), ls, rm NAME.");
    }
    QString usage() const override { return QStringLiteral("set NAME | ls | rm NAME"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        const QString sub = positional.value(0);
        if (sub == QLatin1String("ls") && positional.size() == 1)
            return list(ctx);
        if (sub == QLatin1String("set") && positional.size() == 2)
            return set(ctx, positional.at(1));
        if (sub == QLatin1String("rm") && positional.size() == 2)
            return change(ctx, positional.at(1), QStringLiteral("removed"),
                [&](const DaemonApi &api) { return api.removeSecret(positional.at(1)); });
        if (sub == QLatin1String("set") && positional.size() > 2)
            return fail(ctx,
                badUsage(
                    QStringLiteral("a secret's value is never an argument (other users can read those); pipe it in: "
                                   "airlockctl secret set NAME < file")));
        return fail(ctx, badUsage(QStringLiteral("usage: airlockctl secret %1").arg(usage())));
    }

private:
    int set(Context &ctx, const QString &name)
    {
        if (Status valid = SecretStore::validateName(name); !valid)
            return fail(ctx, valid.error());
        auto value = readValue(ctx, name);
        if (!value)
            return fail(ctx, value.error());
        if (Status valid = SecretStore::validateValue(*value); !valid)
            return fail(ctx, valid.error());
        return change(
            ctx, name, QStringLiteral("set"), [&](const DaemonApi &api) { return api.setSecret(name, *value); });
    }

    // Sets or removes the secret `name` (what `request` asks of the daemon), then says it is `done`.
    int change(Context &ctx, const QString &name, const QString &done,
        const std::function<DaemonApi::Call<>(const DaemonApi &)> &request)
    {
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto r = request(DaemonApi(**client)).wait();
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json) {
            printJson(ctx, *r);
        } else {
            ctx.out << done << ' ' << name << Qt::endl;
            if (r->value(QStringLiteral("weaker")).toBool())
                ctx.err << "airlockctl: note: stored in the " << r->value(QStringLiteral("backend")).toString()
                        << Qt::endl;
        }
        return ExitOk;
    }

    int list(Context &ctx)
    {
        auto client = ctx.client();
        if (!client)
            return fail(ctx, client.error());
        auto r = DaemonApi(**client).listSecrets().wait();
        if (!r)
            return fail(ctx, r.error());
        if (ctx.json) {
            printJson(ctx, *r);
            return ExitOk;
        }
        Table table({QStringLiteral("NAME"), QStringLiteral("BYTES"), QStringLiteral("UPDATED")});
        for (const QJsonValue &v : r->value(QStringLiteral("secrets")).toArray()) {
            const QJsonObject s = v.toObject();
            table.add(
                {s.value(QStringLiteral("name")).toString(), QString::number(s.value(QStringLiteral("bytes")).toInt()),
                    format::timestamp(
                        QDateTime::fromString(s.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs)
                            .toMSecsSinceEpoch())});
        }
        table.print(ctx.out);
        ctx.err << "backend: " << r->value(QStringLiteral("backend")).toString() << Qt::endl;
        return ExitOk;
    }
};

void addSecretCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<SecretCommand>());
}

} // namespace airlock::cli
