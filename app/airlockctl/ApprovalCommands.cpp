// SPDX-License-Identifier: Apache-2.0
// approvals, approve, deny: a person's decisions on what agents asked to run. A decision carries
// the request's nonce, which only a fresh listing gives: it decides that request and nothing else.
#include "HistoryFormat.h"
#include "SandboxCommands.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>

#include <cstdio>
#include <unistd.h>

namespace airlock::cli {

namespace {
Result<QJsonArray> pendingApprovals(Context &ctx)
{
    auto client = ctx.client();
    if (!client)
        return client.error();
    return DaemonApi(**client).pendingApprovals().wait();
}

QString joined(const QJsonValue &list)
{
    QStringList parts;
    if (list.isString())
        return list.toString();
    for (const QJsonValue &v : list.toArray())
        parts.append(v.toString());
    return parts.isEmpty() ? QStringLiteral("none") : parts.join(QStringLiteral(", "));
}

// One request as a person should see it: everything, escaped, nothing elided.
void printCard(QTextStream &out, const QJsonObject &a)
{
    const QJsonObject caps = a.value(QStringLiteral("capabilities")).toObject();
    const qint64 left
        = (qint64(a.value(QStringLiteral("expiresMs")).toDouble()) - QDateTime::currentMSecsSinceEpoch()) / 1000;
    out << a.value(QStringLiteral("id")).toString() << "  sandbox "
        << format::escaped(a.value(QStringLiteral("sandboxName")).toString()) << " (run "
        << format::escaped(a.value(QStringLiteral("run")).toString()) << "), requested by "
        << format::escaped(a.value(QStringLiteral("requester")).toString()) << ", denied in "
        << std::max<qint64>(0, left) << " s\n";
    if (const QString risk = a.value(QStringLiteral("risk")).toString(); !risk.isEmpty())
        out << "  ! " << format::escaped(risk) << '\n';
    if (a.value(QStringLiteral("kind")).toString() == QLatin1String("network"))
        out << "  connect  " << format::escaped(a.value(QStringLiteral("destination")).toString()) << '\n';
    else if (a.value(QStringLiteral("kind")).toString() == QLatin1String("tool"))
        out << "  tool     " << format::escaped(a.value(QStringLiteral("tool")).toString()) << ' '
            << format::escaped(QString::fromUtf8(
                   QJsonDocument(a.value(QStringLiteral("arguments")).toObject()).toJson(QJsonDocument::Compact)))
            << '\n';
    else
        out << "  command  " << format::commandLine(a.value(QStringLiteral("argv")).toArray()) << '\n'
            << "  cwd      " << format::escaped(a.value(QStringLiteral("cwd")).toString()) << '\n';
    if (!a.value(QStringLiteral("env")).toArray().isEmpty())
        out << "  env      " << format::commandLine(a.value(QStringLiteral("env")).toArray()) << '\n';
    const QJsonArray parts = a.value(QStringLiteral("parts")).toArray();
    for (const QJsonValue &v : parts) {
        if (parts.size() < 2)
            break;
        const QJsonObject part = v.toObject();
        out << "  part     " << part.value(QStringLiteral("decision")).toString().leftJustified(5) << ' '
            << format::commandLine(part.value(QStringLiteral("argv")).toArray()) << "   (rule "
            << format::escaped(part.value(QStringLiteral("rule")).toString()) << ", "
            << format::escaped(part.value(QStringLiteral("layer")).toString()) << ")\n";
    }
    for (const QJsonValue &v : a.value(QStringLiteral("files")).toArray()) {
        const QJsonObject f = v.toObject();
        out << "  runs     " << format::escaped(f.value(QStringLiteral("path")).toString());
        if (f.contains(QStringLiteral("problem"))) {
            out << "  (not bound: " << format::escaped(f.value(QStringLiteral("problem")).toString()) << ")\n";
            continue;
        }
        out << "  sha256 " << f.value(QStringLiteral("sha256")).toString() << ", "
            << qint64(f.value(QStringLiteral("size")).toDouble()) << " bytes\n";
        for (const QJsonValue &line : f.value(QStringLiteral("head")).toArray())
            out << "           | " << format::escaped(line.toString()) << '\n';
    }
    for (const QJsonValue &v : a.value(QStringLiteral("chain")).toArray())
        if (!v.toString().isEmpty())
            out << "  from     " << format::escaped(v.toString()) << '\n';
    out << "  asks     " << format::escaped(a.value(QStringLiteral("reason")).toString()) << '\n'
        << "  it can   network " << format::escaped(joined(caps.value(QStringLiteral("network")))) << "; credentials "
        << format::escaped(joined(caps.value(QStringLiteral("credentials")))) << "; write "
        << format::escaped(joined(caps.value(QStringLiteral("writable")))) << "; tools "
        << format::escaped(joined(caps.value(QStringLiteral("tools")))) << '\n';
}

int decide(Context &ctx, const QString &id, bool allow, bool always, const QString &reason)
{
    auto pending = pendingApprovals(ctx);
    if (!pending)
        return Command::fail(ctx, pending.error());
    QString nonce;
    for (const QJsonValue &v : *pending)
        if (v.toObject().value(QStringLiteral("id")).toString() == id)
            nonce = v.toObject().value(QStringLiteral("nonce")).toString();
    if (nonce.isEmpty())
        return Command::fail(ctx,
            makeError(ErrorCode::NotFound,
                QStringLiteral("no pending approval %1 (decided, expired, or never asked; see 'airlockctl approvals')")
                    .arg(id)));
    auto decided = DaemonApi(**ctx.client()).decideApproval(id, nonce, allow, always, reason).wait();
    if (!decided)
        return Command::fail(ctx, decided.error());
    if (ctx.json)
        Command::printJson(ctx, *decided);
    else
        ctx.out << (allow ? (always ? "allowed (always) " : "allowed ") : "denied ") << id << Qt::endl;
    return ExitOk;
}
} // namespace

class ApprovalsCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("approvals"); }
    QString summary() const override
    {
        return QStringLiteral("List what agents are waiting to run, or 'watch' to decide as they come.");
    }
    QString usage() const override { return QStringLiteral("[watch]"); }
    int run(Context &ctx, const QCommandLineParser &, const QStringList &positional) override
    {
        if (positional.value(0) == QLatin1String("watch"))
            return watch(ctx);
        if (!positional.isEmpty())
            return fail(ctx, badUsage(QStringLiteral("usage: airlockctl approvals [watch]")));
        auto pending = pendingApprovals(ctx);
        if (!pending)
            return fail(ctx, pending.error());
        if (ctx.json) {
            printJson(ctx, QJsonObject{{QStringLiteral("approvals"), *pending}});
            return ExitOk;
        }
        if (pending->isEmpty())
            ctx.err << "nothing is waiting for approval" << Qt::endl;
        for (const QJsonValue &v : *pending) {
            printCard(ctx.out, v.toObject());
            ctx.out << "  decide   airlockctl approve " << v.toObject().value(QStringLiteral("id")).toString()
                    << " [--always]  |  airlockctl deny " << v.toObject().value(QStringLiteral("id")).toString()
                    << " [--reason TEXT]\n\n";
        }
        ctx.out.flush();
        return ExitOk;
    }

private:
    // Asks about each new request on this terminal: a(llow once), A(lways), d(eny), s(kip).
    int watch(Context &ctx)
    {
        if (!::isatty(STDIN_FILENO))
            return fail(ctx,
                badUsage(
                    QStringLiteral("approvals watch needs a terminal to ask on; use 'approve' and 'deny' in scripts")));
        QSet<QString> seen;
        ctx.err << "waiting for requests (Ctrl-C to stop)" << Qt::endl;
        for (;;) {
            auto pending = pendingApprovals(ctx);
            if (!pending)
                return fail(ctx, pending.error());
            for (const QJsonValue &v : *pending) {
                const QString id = v.toObject().value(QStringLiteral("id")).toString();
                if (seen.contains(id))
                    continue;
                seen.insert(id);
                printCard(ctx.out, v.toObject());
                ctx.out << "  [a]llow once, [A]lways, [d]eny, [s]kip? " << Qt::flush;
                char answer[64] = {};
                if (!std::fgets(answer, sizeof answer, stdin))
                    return ExitOk;
                if (answer[0] == 'a' || answer[0] == 'A')
                    decide(ctx, id, true, answer[0] == 'A', {});
                else if (answer[0] == 'd')
                    decide(ctx, id, false, false, QStringLiteral("denied from the terminal"));
            }
            QThread::msleep(300);
        }
    }
};

class ApproveCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("approve"); }
    QString summary() const override
    {
        return QStringLiteral("Let a waiting agent request run (once, or --always: adds a rule).");
    }
    QString usage() const override { return QStringLiteral("ID [--always]"); }
    QList<QCommandLineOption> options() const override { return {m_always}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (positional.size() != 1)
            return fail(ctx, badUsage(QStringLiteral("approve takes the request's id (see 'airlockctl approvals')")));
        return decide(ctx, positional.first(), true, parser.isSet(m_always), {});
    }

private:
    QCommandLineOption m_always{QStringLiteral("always"),
        QStringLiteral("Also add an allow rule for this exact command to the sandbox's policy.")};
};

class DenyCommand final : public Command {
public:
    QString name() const override { return QStringLiteral("deny"); }
    QString summary() const override { return QStringLiteral("Refuse a waiting agent request, saying why."); }
    QString usage() const override { return QStringLiteral("ID [--reason TEXT]"); }
    QList<QCommandLineOption> options() const override { return {m_reason}; }
    int run(Context &ctx, const QCommandLineParser &parser, const QStringList &positional) override
    {
        if (positional.size() != 1)
            return fail(ctx, badUsage(QStringLiteral("deny takes the request's id (see 'airlockctl approvals')")));
        return decide(ctx, positional.first(), false, false, parser.value(m_reason));
    }

private:
    QCommandLineOption m_reason{
        QStringLiteral("reason"), QStringLiteral("Why (the agent is told)."), QStringLiteral("text")};
};

void addApprovalCommands(std::vector<std::unique_ptr<Command>> &commands)
{
    commands.push_back(std::make_unique<ApprovalsCommand>());
    commands.push_back(std::make_unique<ApproveCommand>());
    commands.push_back(std::make_unique<DenyCommand>());
}

} // namespace airlock::cli
