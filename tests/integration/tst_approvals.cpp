// SPDX-License-Identifier: Apache-2.0
// Agents' commands go through the command rules and, when a rule asks, a person: denied by rule,
// approved once (and asked again next time), approved always (a rule is added), denied with a
// reason, timed out. Decisions are bound to the request's nonce and used once; an agent cannot
// decide; the sandbox cannot even see the daemon's socket; a person's own commands are not gated.
#include "TestHelpers.h"
#include "history/Sql.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <tuple>

using namespace airlock;
using namespace airlock::test;

class TestApprovals final : public QObject {
    Q_OBJECT
    std::unique_ptr<TestDaemon> m_daemon;
    QString m_sb;

    CliResult agent(const QStringList &command) const
    {
        return m_daemon->ctl(args("--agent", "bot", "exec", m_sb, "-n", "--") + command);
    }
    std::unique_ptr<QProcess> agentInBackground(const QStringList &command) const
    {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_daemon->environment());
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", m_sb, "-n", "--") + command);
        return p;
    }
    QJsonObject waitForRequest() const { return waitForApproval(*m_daemon); }
    std::unique_ptr<DaemonClient> client(const QString &agentName) const
    {
        auto c = std::make_unique<DaemonClient>();
        ConnectOptions options;
        options.socketPath = m_daemon->socketPath();
        options.autostart = false;
        options.clientName = QStringLiteral("test");
        options.agent = agentName;
        return c->connectToDaemon(options) ? std::move(c) : nullptr;
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>(args("--approval-timeout", "3s"));
        QVERIFY(m_daemon->start());
        QString error;
        m_sb = m_daemon->create(args("--name", "ap"), &error);
        QVERIFY2(m_sb == QLatin1String("ap"), qPrintable(error));
        const CliResult set = m_daemon->ctl(
            args("policy", "set", "ap", "-"), R"({"commands": {"rules": [{"decision": "deny", "command": "rm"}]}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // The record of what agents did is the person's: an agent cannot prune it (the person can).
    void anAgentCannotPruneTheHistory()
    {
        auto bot = client(QStringLiteral("bot"));
        QVERIFY(bot);
        auto pruned = bot->call(QStringLiteral("history.prune"), {{QStringLiteral("keepBytes"), 0}});
        QVERIFY(!pruned);
        QCOMPARE(pruned.error().code, ErrorCode::Denied);
        QCOMPARE(pruned.error().message, QStringLiteral("an agent connection cannot prune the history"));
        auto person = client(QString());
        QVERIFY(person);
        QVERIFY(person->call(QStringLiteral("history.prune"), {{QStringLiteral("keepBytes"), 1e12}}));
    }

    void aDenyRuleRefusesAtOnceAndSaysWhich()
    {
        const CliResult r = agent(args("rm", "-rf", "/workspace"));
        QCOMPARE(r.exitCode, 6);
        QCOMPARE(r.err, QByteArray("airlockctl: denied by policy: 'rm -rf /workspace' matches rule 'rm' (sandbox)\n"));
        // Hidden in a shell string, or behind a wrapper: the same.
        QCOMPARE(agent(args("sh", "-c", "ls; env X=1 rm -rf /workspace")).exitCode, 6);
        QCOMPARE(agent(args("echo", "allowed by the preset")).out, QByteArray("allowed by the preset\n"));
        // A person's own command is not gated (the sandbox is the boundary).
        const CliResult mine = m_daemon->ctl(args("exec", "ap", "-n", "--", "sh", "-c", "printf mine"));
        QCOMPARE(mine.out, QByteArray("mine"));
        QVERIFY(pendingApprovals(*m_daemon).isEmpty());
    }

    void anApprovalIsForThatRequestOnly()
    {
        auto waiting = agentInBackground(args("printf", "approved %s\\n", "once\x1b[2J"));
        QVERIFY(waiting->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY2(!request.isEmpty(), "no request appeared");
        // What the person is shown: the exact argv, cwd, why, and what the process could do.
        QCOMPARE(request.value(QStringLiteral("argv")).toArray(),
            QJsonArray({QStringLiteral("printf"), QStringLiteral("approved %s\\n"), QStringLiteral("once\x1b[2J")}));
        QCOMPARE(request.value(QStringLiteral("cwd")).toString(), QStringLiteral("/workspace"));
        QCOMPARE(request.value(QStringLiteral("requester")).toString(), QStringLiteral("bot"));
        QCOMPARE(request.value(QStringLiteral("reason")).toString(),
            QStringLiteral("no rule matches 'printf approved %s\\n once\x1b[2J'"));
        QCOMPARE(request.value(QStringLiteral("capabilities")).toObject().value(QStringLiteral("network")).toString(),
            QStringLiteral("none"));
        QVERIFY(request.value(QStringLiteral("capabilities"))
                    .toObject()
                    .value(QStringLiteral("writable"))
                    .toArray()
                    .contains(QStringLiteral("/workspace")));
        const CliResult listed = m_daemon->ctl(args("approvals"));
        QVERIFY2(listed.out.contains("command  printf 'approved %s\\n' 'once\\x1b[2J'") && !listed.out.contains('\x1b'),
            qPrintable(listed.describe()));
        const QString id = request.value(QStringLiteral("id")).toString();
        const QString nonce = request.value(QStringLiteral("nonce")).toString();

        // Forged decisions are refused: another nonce, and an agent's own connection.
        auto person = client({});
        auto bot = client(QStringLiteral("bot"));
        QVERIFY(person && bot);
        auto forged = person->call(QStringLiteral("approvals.decide"),
            {{QStringLiteral("id"), id}, {QStringLiteral("nonce"), QString(32, QLatin1Char('0'))},
                {QStringLiteral("decision"), QStringLiteral("allow")}});
        QVERIFY(!forged);
        QVERIFY2(forged.error().message.contains(QStringLiteral("the nonce does not match")),
            qPrintable(forged.error().message));
        auto self = bot->call(QStringLiteral("approvals.decide"),
            {{QStringLiteral("id"), id}, {QStringLiteral("nonce"), nonce},
                {QStringLiteral("decision"), QStringLiteral("allow")}});
        QVERIFY(!self);
        QCOMPARE(self.error().message, QStringLiteral("an agent connection cannot decide approvals"));
        auto agentView = bot->call(QStringLiteral("approvals.list"));
        QVERIFY(agentView);
        QCOMPARE(agentView->value(QStringLiteral("approvals")).toArray().size(), 1);
        QVERIFY(!agentView->value(QStringLiteral("approvals"))
                     .toArray()
                     .first()
                     .toObject()
                     .contains(QStringLiteral("nonce")));

        const CliResult approved = m_daemon->ctl(args("approve", id));
        QVERIFY2(approved.exitCode == 0, qPrintable(approved.describe()));
        QVERIFY(waiting->waitForFinished(10000));
        QCOMPARE(waiting->exitCode(), 0);
        QCOMPARE(waiting->readAllStandardOutput(), QByteArray("approved once\x1b[2J\n")); // a pipe gets the exact bytes
        // Used once: replaying the same decision is refused, and the same command asks again.
        auto replay = person->call(QStringLiteral("approvals.decide"),
            {{QStringLiteral("id"), id}, {QStringLiteral("nonce"), nonce},
                {QStringLiteral("decision"), QStringLiteral("allow")}});
        QVERIFY(!replay);
        QVERIFY2(
            replay.error().message.contains(QStringLiteral("already decided")), qPrintable(replay.error().message));
        auto again = agentInBackground(args("printf", "approved %s\\n", "once\x1b[2J"));
        QVERIFY(again->waitForStarted());
        const QJsonObject second = waitForRequest();
        QVERIFY(!second.isEmpty() && second.value(QStringLiteral("id")).toString() != id);
        QCOMPARE(m_daemon->ctl(args("deny", second.value(QStringLiteral("id")).toString(), "--reason", "not twice"))
                     .exitCode,
            0);
        QVERIFY(again->waitForFinished(10000));
        QCOMPARE(again->exitCode(), 6);
        const QByteArray againErr = again->readAllStandardError();
        QVERIFY2(againErr.endsWith(": not twice\n"), againErr.constData());
    }

    void aDenialCarriesItsReasonAndSilenceDenies()
    {
        auto denied = agentInBackground(args("touch", "/workspace/x"));
        QVERIFY(denied->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY(!request.isEmpty());
        QCOMPARE(
            m_daemon->ctl(
                        args("deny", request.value(QStringLiteral("id")).toString(), "--reason", "use the build tool"))
                .exitCode,
            0);
        QVERIFY(denied->waitForFinished(10000));
        QCOMPARE(denied->exitCode(), 6);
        const QByteArray err = denied->readAllStandardError();
        QVERIFY2(err.startsWith("airlockctl: denied by airlockctl/") && err.contains(": use the build tool"),
            err.constData());
        // Nobody answers: denied when the timeout (3 s here) runs out.
        QElapsedTimer t;
        t.start();
        const CliResult timedOut = agent(args("touch", "/workspace/y"));
        QCOMPARE(timedOut.exitCode, 6);
        QCOMPARE(timedOut.err, QByteArray("airlockctl: denied by airlockd: nobody decided within 3 s\n"));
        QVERIFY2(t.elapsed() >= 2950 && t.elapsed() < 15000, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(execIn(*m_daemon, m_sb, args("ls", "/workspace")).out, QByteArray()); // neither ran
    }

    void alwaysAddsARuleAndStopsAsking()
    {
        auto first = agentInBackground(args("date", "+%Y"));
        QVERIFY(first->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY(!request.isEmpty());
        const CliResult approved
            = m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString(), "--always"));
        QVERIFY2(
            approved.exitCode == 0 && approved.out.startsWith("allowed (always)"), qPrintable(approved.describe()));
        QVERIFY(first->waitForFinished(10000));
        QCOMPARE(first->exitCode(), 0);
        const CliResult check = m_daemon->ctl(args("policy", "check", "ap", "--", "date", "+%Y"));
        QCOMPARE(check.out, QByteArray("allow: 'date +%Y' matches rule 'date +%Y' (sandbox)\n"));
        QCOMPARE(agent(args("date", "+%Y")).exitCode, 0); // no request this time
        // A compound command cannot be allowed "always" by one rule: refused, nothing decided.
        auto compound = agentInBackground(args("sh", "-c", "date; uname"));
        QVERIFY(compound->waitForStarted());
        const QJsonObject c = waitForRequest();
        const CliResult refused = m_daemon->ctl(args("approve", c.value(QStringLiteral("id")).toString(), "--always"));
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("would not cover it"), qPrintable(refused.describe()));
        QCOMPARE(m_daemon->ctl(args("approve", c.value(QStringLiteral("id")).toString())).exitCode, 0); // once is fine
        QVERIFY(compound->waitForFinished(10000));
        QCOMPARE(compound->exitCode(), 0);
    }

    void anAgentCannotLoosenItsOwnLeash()
    {
        auto bot = client(QStringLiteral("bot"));
        QVERIFY(bot);
        auto loosen = bot->call(QStringLiteral("policy.set"),
            {{QStringLiteral("sandbox"), m_sb},
                {QStringLiteral("policy"),
                    QJsonObject{{QStringLiteral("commands"),
                        QJsonObject{{QStringLiteral("default"), QStringLiteral("allow")}}}}}});
        QVERIFY(!loosen);
        QCOMPARE(loosen.error().message, QStringLiteral("an agent connection cannot change policies"));
        auto open = bot->call(QStringLiteral("sandbox.create"),
            {{QStringLiteral("spec"), QJsonObject{}}, {QStringLiteral("preset"), QStringLiteral("open")}});
        QVERIFY(!open);
        QCOMPARE(open.error().code, ErrorCode::Denied);
        auto mounted = bot->call(QStringLiteral("sandbox.create"),
            {{QStringLiteral("spec"),
                QJsonObject{{QStringLiteral("mounts"),
                    QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/etc")},
                        {QStringLiteral("path"), QStringLiteral("/h")}}}}}}});
        QVERIFY(!mounted);
        // A person's execution is not the agent's to feed or signal.
        auto person = client({});
        QVERIFY(person);
        auto started = person->call(QStringLiteral("exec.start"),
            {{QStringLiteral("sandbox"), m_sb},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("sleep"), QStringLiteral("30")}}});
        QVERIFY(started);
        auto signal = bot->call(QStringLiteral("exec.signal"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("exec"), started->value(QStringLiteral("exec"))}});
        QVERIFY(!signal);
        QCOMPARE(signal.error().message,
            QStringLiteral("an agent connection can only feed or signal the executions it started"));
        QVERIFY(person->call(QStringLiteral("exec.signal"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("exec"), started->value(QStringLiteral("exec"))}}));
    }

    // Every method a person keeps from agents, refused with its reason whatever the request
    // holds, and however the sandbox is named (name, id, id prefix): the table's grants, as
    // the handlers' own checks said them before (rpc/MethodTable.h, rpc/AccessGate.cpp).
    void anAgentIsRefusedEveryPersonsMethodWithItsReason()
    {
        auto bot = client(QStringLiteral("bot"));
        auto person = client({});
        QVERIFY(bot && person);
        const QString id = person->call(QStringLiteral("sandbox.info"), {{QStringLiteral("sandbox"), m_sb}})
                               ->value(QStringLiteral("id"))
                               .toString();
        QCOMPARE(id.size(), 12);
        const QString decide = QStringLiteral("an agent connection cannot decide approvals");
        const QString policies = QStringLiteral("an agent connection cannot change policies");
        const QString secrets = QStringLiteral("an agent connection cannot manage secrets");
        const QString kill = QStringLiteral("an agent connection can only signal the executions it started");
        const QString defaults = QStringLiteral("an agent connection creates sandboxes with the default policy only "
                                                "(no policy, preset, network or mounts of its own)");
        for (const QString &ref : {m_sb, id, id.left(6)}) {
            const QJsonObject sb{{QStringLiteral("sandbox"), ref}};
            const auto with = [&](QJsonObject p) {
                p.insert(QStringLiteral("sandbox"), ref);
                return p;
            };
            const std::tuple<const char *, QJsonObject, QString> refused[] = {
                {"approvals.decide",
                    QJsonObject{{QStringLiteral("id"), QStringLiteral("00000000")},
                        {QStringLiteral("nonce"), QStringLiteral("x")},
                        {QStringLiteral("decision"), QStringLiteral("allow")}},
                    decide},
                {"approvals.decide", QJsonObject{}, decide}, // without an id too
                {"policy.set", with({{QStringLiteral("policy"), QJsonObject{}}}), policies},
                {"policy.defaults.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}, policies},
                {"secrets.set",
                    QJsonObject{{QStringLiteral("name"), QStringLiteral("STOLEN")},
                        {QStringLiteral("value"), QStringLiteral("eA==")}},
                    secrets},
                {"secrets.list", QJsonObject{}, secrets},
                {"secrets.remove", QJsonObject{{QStringLiteral("name"), QStringLiteral("STOLEN")}}, secrets},
                {"history.prune", QJsonObject{{QStringLiteral("keepBytes"), 0}},
                    QStringLiteral("an agent connection cannot prune the history")},
                {"sandbox.kill", sb, kill},
                {"policy.check",
                    with({{QStringLiteral("argv"), QJsonArray{QStringLiteral("rm")}},
                        {QStringLiteral("policy"), QJsonObject{}}}),
                    QStringLiteral("an agent connection cannot try policy drafts")},
                {"sandbox.create",
                    QJsonObject{{QStringLiteral("spec"), QJsonObject{}}, {QStringLiteral("policy"), QJsonObject{}}},
                    defaults},
                {"sandbox.create",
                    QJsonObject{{QStringLiteral("spec"), QJsonObject{}}, {QStringLiteral("policy"), QJsonValue::Null}},
                    defaults},
                {"sandbox.create",
                    QJsonObject{
                        {QStringLiteral("spec"), QJsonObject{}}, {QStringLiteral("preset"), QStringLiteral("open")}},
                    defaults},
                {"sandbox.create",
                    QJsonObject{
                        {QStringLiteral("spec"), QJsonObject{{QStringLiteral("network"), QStringLiteral("none")}}}},
                    defaults},
                {"sandbox.create",
                    QJsonObject{{QStringLiteral("spec"),
                        QJsonObject{{QStringLiteral("mounts"),
                            QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/etc")},
                                {QStringLiteral("path"), QStringLiteral("/h")}}}}}}},
                    defaults},
            };
            for (const auto &[method, params, why] : refused) {
                auto r = bot->call(QString::fromLatin1(method), params);
                QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                    qPrintable(
                        QStringLiteral("%1 on %2: %3")
                            .arg(QLatin1String(method), ref, r ? QStringLiteral("allowed") : r.error().message)));
            }
        }
        auto listed = person->call(QStringLiteral("secrets.list")); // a person's, as ever
        QVERIFY2(listed || listed.error().code != ErrorCode::Denied,
            qPrintable(listed ? QString() : listed.error().message));
    }

    // An agent feeds, signals and resizes only what its own connection started: a person's
    // execution and another agent connection's are refused, named by sandbox name, id or prefix;
    // its own are not.
    void anAgentTouchesOnlyItsOwnExecutions()
    {
        auto bot = client(QStringLiteral("bot"));
        auto other = client(QStringLiteral("bot"));
        auto person = client({});
        QVERIFY(bot && other && person);
        const QString id = person->call(QStringLiteral("sandbox.info"), {{QStringLiteral("sandbox"), m_sb}})
                               ->value(QStringLiteral("id"))
                               .toString();
        const auto start = [&](DaemonClient &c) {
            auto r = c.call(QStringLiteral("exec.start"),
                {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("argv"), QJsonArray{QStringLiteral("cat")}},
                    {QStringLiteral("stdin"), true}}); // it waits for its input
            return r ? r->value(QStringLiteral("exec")).toInt() : 0;
        };
        const int persons = start(*person), bots = start(*bot);
        QVERIFY(persons > 0 && bots > 0); // cat: allowed by the preset's rules
        const QString mine = QStringLiteral("an agent connection can only feed or signal the executions it started");
        const auto act = [&](DaemonClient &c, const char *method, const QString &ref, int exec) {
            QJsonObject p{{QStringLiteral("sandbox"), ref}, {QStringLiteral("exec"), exec}};
            if (QByteArrayView(method) == "exec.stdin")
                p.insert(QStringLiteral("data"), QStringLiteral("aGkK"));
            if (QByteArrayView(method) == "exec.resize") {
                p.insert(QStringLiteral("rows"), 24);
                p.insert(QStringLiteral("cols"), 80);
            }
            if (QByteArrayView(method) == "exec.signal")
                p.insert(QStringLiteral("signal"), SIGCONT); // harmless to its own
            return c.call(QString::fromLatin1(method), p);
        };
        for (const char *method : {"exec.stdin", "exec.resize", "exec.signal"}) {
            for (const QString &ref : {m_sb, id, id.left(6)}) {
                for (const auto &[who, exec] : {std::pair{bot.get(), persons}, std::pair{other.get(), bots}}) {
                    auto r = act(*who, method, ref, exec);
                    QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == mine,
                        qPrintable(QStringLiteral("%1 on %2:%3: %4")
                                       .arg(QLatin1String(method), ref)
                                       .arg(exec)
                                       .arg(r ? QStringLiteral("allowed") : r.error().message)));
                }
            }
            // Its own: not refused as someone else's (exec.resize may say it has no terminal).
            auto own = act(*bot, method, id.left(6), bots);
            QVERIFY2(own || own.error().code != ErrorCode::Denied, qPrintable(own ? QString() : own.error().message));
        }
        QVERIFY(person->call(QStringLiteral("sandbox.kill"), {{QStringLiteral("sandbox"), m_sb}})); // both cats
    }

    void theEnvironmentIsShownAndCanMakeAnAllowedCommandAsk()
    {
        // `ls` is allowed, but not with LD_PRELOAD set: a person sees the variable and decides.
        auto waiting = std::make_unique<QProcess>();
        waiting->setProcessEnvironment(m_daemon->environment());
        waiting->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", m_sb, "-n", "-e", "LD_PRELOAD=/workspace/evil.so", "--",
                "ls"));
        QVERIFY(waiting->waitForStarted());
        const QJsonObject request = waitForRequest();
        QCOMPARE(request.value(QStringLiteral("env")).toArray(),
            QJsonArray{QStringLiteral("LD_PRELOAD=/workspace/evil.so")});
        QVERIFY2(request.value(QStringLiteral("reason")).toString().contains(QStringLiteral("with LD_PRELOAD set")),
            qPrintable(request.value(QStringLiteral("reason")).toString()));
        QVERIFY2(
            m_daemon->ctl(args("approvals")).out.contains("env      LD_PRELOAD=/workspace/evil.so"), "env not shown");
        // The requester goes away: its request goes with it (nothing is left to approve).
        waiting->kill();
        waiting->waitForFinished();
        QVERIFY(waitFor([&] { return pendingApprovals(*m_daemon).isEmpty(); }, 5000));
    }

    // What the agent tried and did not get is a row of the history with its agent, as what it
    // ran is: "what did bot try that was refused" is one filter, in the CLI as in the console.
    void refusalsAreRowsOfTheHistoryWithTheirAgent()
    {
        const CliResult refused
            = m_daemon->ctl(args("history", "--json", "--sandbox", "ap", "--agent", "bot", "--status", "refused"));
        QVERIFY2(refused.exitCode == 0, qPrintable(refused.describe()));
        QStringList rows, decided; // oldest first
        for (const QJsonValue &v : jsonObject(refused.out).value(QStringLiteral("executions")).toArray()) {
            const QJsonObject e = v.toObject();
            QVERIFY2(e.value(QStringLiteral("exec")).isNull(), "a refused command got an execution number");
            QCOMPARE(e.value(QStringLiteral("agent")).toString(), QStringLiteral("bot"));
            QCOMPARE(e.value(QStringLiteral("storedBytes")).toInt(), 0);
            QVERIFY(e.value(QStringLiteral("endedMs")).toDouble() >= e.value(QStringLiteral("startedMs")).toDouble());
            QStringList argv;
            for (const QJsonValue &a : e.value(QStringLiteral("argv")).toArray())
                argv.append(a.toString());
            rows.prepend(e.value(QStringLiteral("status")).toString() + QLatin1Char('|') + argv.join(QLatin1Char(' ')));
            decided.prepend(e.value(QStringLiteral("decidedBy")).toString());
        }
        QCOMPARE(rows,
            QStringList({QStringLiteral("denied|rm -rf /workspace"),
                QStringLiteral("denied|sh -c ls; env X=1 rm -rf /workspace"),
                QStringLiteral("denied|printf approved %s\\n once\x1b[2J"), QStringLiteral("denied|touch /workspace/x"),
                QStringLiteral("unanswered|touch /workspace/y"), QStringLiteral("denied|ls")}));
        // Each says what the agent was told.
        QCOMPARE(decided.value(0), QStringLiteral("denied by policy: 'rm -rf /workspace' matches rule 'rm' (sandbox)"));
        QVERIFY2(decided.value(2).startsWith(QStringLiteral("denied by airlockctl"))
                && decided.value(2).endsWith(QStringLiteral(": not twice")),
            qPrintable(decided.value(2)));
        QCOMPARE(decided.value(4), QStringLiteral("nobody decided within 3 s"));
        QCOMPARE(decided.value(5), QStringLiteral("denied by airlockd: the requester disconnected"));
        // Only the timed-out one is unanswered; what ran says who asked and how it was allowed.
        QCOMPARE(jsonObject(m_daemon->ctl(args("history", "--json", "--sandbox", "ap", "--status", "unanswered")).out)
                     .value(QStringLiteral("executions"))
                     .toArray()
                     .size(),
            1);
        const QJsonArray ran
            = jsonObject(m_daemon->ctl(args("history", "--json", "--sandbox", "ap", "--status", "succeeded")).out)
                  .value(QStringLiteral("executions"))
                  .toArray();
        QStringList who;
        for (const QJsonValue &v : ran)
            who.prepend(v.toObject().value(QStringLiteral("agent")).toString() + QLatin1Char('|')
                + v.toObject().value(QStringLiteral("decidedBy")).toString().section(QLatin1Char(' '), 0, 1));
        // echo (the preset's rule), the person's own printf, the approved printf.
        QCOMPARE(who.mid(0, 3),
            QStringList({QStringLiteral("bot|allowed by"), QStringLiteral("|"), QStringLiteral("bot|approved by")}));
        // The table shows the agent, and no sandbox number for what never ran.
        const CliResult table = m_daemon->ctl(args("history", "--sandbox", "ap", "--status", "unanswered"));
        QVERIFY2(table.out.contains("AGENT") && table.out.contains(" bot ") && table.out.contains(" ap ")
                && !table.out.contains("ap:"),
            qPrintable(table.describe()));
        const CliResult bad = m_daemon->ctl(args("history", "--status", "refusd"));
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("refused (either)") || bad.err.contains("refused"), qPrintable(bad.describe()));
    }

    void everyDecisionIsInTheHistory()
    {
        const QString id = sandboxInfo(*m_daemon, m_sb).value(QStringLiteral("id")).toString();
        auto db = sql::open(m_daemon->dataDir() + QStringLiteral("/history.db"), true);
        QVERIFY(db);
        sql::Stmt st(db->get(),
            "SELECT kind, payload FROM events WHERE sandbox_id = ? AND kind IN "
            "('command.denied', 'approval.requested', 'approval.decided', 'policy.changed') ORDER BY seq");
        st.text(1, id);
        QMap<QString, int> kinds;
        QStringList decisions;
        while (st.step()) {
            kinds[st.columnText(0)] += 1;
            const QJsonObject p = QJsonDocument::fromJson(st.columnText(1).toUtf8()).object();
            QVERIFY2(!p.contains(QStringLiteral("nonce")), "a nonce reached the event stream");
            if (st.columnText(0) == QLatin1String("approval.decided"))
                decisions.append(p.value(QStringLiteral("decision")).toString()
                    + (p.value(QStringLiteral("always")).toBool() ? QStringLiteral("+always") : QString()));
        }
        QCOMPARE(kinds.value(QStringLiteral("command.denied")), 2);
        QCOMPARE(kinds.value(QStringLiteral("approval.requested")), 7);
        QCOMPARE(kinds.value(QStringLiteral("policy.changed")), 2); // the deny rule, and "always"
        QCOMPARE(decisions,
            QStringList({QStringLiteral("allow"), QStringLiteral("deny"), QStringLiteral("deny"),
                QStringLiteral("deny"), QStringLiteral("allow+always"), QStringLiteral("allow"),
                QStringLiteral("deny")})); // the last: requester gone
    }

    void theSandboxCannotReachTheDaemon()
    {
        // No socket, no runtime directory: nothing inside can ask, answer or forge an approval.
        const CliResult r = execIn(*m_daemon, m_sb,
            args("sh", "-c",
                QStringLiteral("test -e '%1' || test -e '%2'; echo $?")
                    .arg(m_daemon->socketPath(), m_daemon->runtimeDir())));
        QCOMPARE(r.out, QByteArray("1\n"));
    }

    void anApprovalGivenUnderAnotherPolicyRunsNothing()
    {
        // Approved for policy version N; the policy changed while it waited: nothing runs.
        auto waiting = agentInBackground(args("touch", "/workspace/after-change"));
        QVERIFY(waiting->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY(!request.isEmpty());
        const CliResult changed = m_daemon->ctl(
            args("policy", "set", "ap", "-"), R"({"commands": {"rules": [{"decision": "deny", "command": "rm"}]}})");
        QVERIFY2(changed.exitCode == 0, qPrintable(changed.describe()));
        QCOMPARE(m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(waiting->waitForFinished(10000));
        QCOMPARE(waiting->exitCode(), 6);
        QCOMPARE(waiting->readAllStandardError(),
            QByteArray("airlockctl: the sandbox or its policy changed while the request waited; ask again\n"));
        QCOMPARE(execIn(*m_daemon, m_sb, args("ls", "/workspace")).out, QByteArray());
    }

    // Only the connection that asked can take its question back.
    // The approval binds the script a command runs: rewritten between the question and the
    // decision, it is asked about again with its new content, and only what was seen runs.
    void aScriptChangedBeforeItRunsIsAskedAboutAgain()
    {
        QTemporaryDir dir;
        const auto put = [&](const QByteArray &content) {
            QFile f(dir.filePath(QStringLiteral("run.sh")));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write(content) == content.size());
            f.close();
            const CliResult r
                = m_daemon->ctl({QStringLiteral("cp"), f.fileName(), QStringLiteral("ap:/workspace/run.sh")});
            QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        };
        const auto sha = [](const QByteArray &b) {
            return QString::fromLatin1(QCryptographicHash::hash(b, QCryptographicHash::Sha256).toHex());
        };
        put("echo first version\n");
        auto waiting = agentInBackground(args("sh", "run.sh"));
        const QJsonObject asked = waitForRequest();
        const QJsonObject bound = asked.value(QStringLiteral("files")).toArray().first().toObject();
        QCOMPARE(bound.value(QStringLiteral("path")).toString(), QStringLiteral("/workspace/run.sh"));
        QCOMPARE(bound.value(QStringLiteral("sha256")).toString(), sha("echo first version\n"));
        QCOMPARE(bound.value(QStringLiteral("head")).toArray(), QJsonArray{QStringLiteral("echo first version")});

        put("echo second version\n"); // after the person looked, before the command runs
        // "Always" is not given for files that changed since the person saw them.
        const CliResult always
            = m_daemon->ctl(args("approve", asked.value(QStringLiteral("id")).toString(), "--always"));
        QVERIFY2(always.exitCode != 0
                && always.err.contains("/workspace/run.sh changed after the question was asked: nothing decided"),
            qPrintable(always.describe()));
        QVERIFY(!m_daemon->ctl(args("policy", "show", "ap")).out.contains("run.sh"));
        const CliResult approved = m_daemon->ctl(args("approve", asked.value(QStringLiteral("id")).toString()));
        QVERIFY2(approved.exitCode == 0, qPrintable(approved.describe()));
        QJsonObject again;
        QVERIFY(QTest::qWaitFor(
            [&] {
                again = waitForApproval(*m_daemon, 500);
                return !again.isEmpty() && again.value(QStringLiteral("id")) != asked.value(QStringLiteral("id"));
            },
            5000));
        QVERIFY2(again.value(QStringLiteral("reason"))
                     .toString()
                     .startsWith(QLatin1String("/workspace/run.sh changed after airlockctl/")),
            qPrintable(again.value(QStringLiteral("reason")).toString()));
        const QJsonObject rebound = again.value(QStringLiteral("files")).toArray().first().toObject();
        QCOMPARE(rebound.value(QStringLiteral("sha256")).toString(), sha("echo second version\n"));
        QVERIFY(waiting->state() != QProcess::NotRunning); // nothing ran meanwhile
        const CliResult shown = m_daemon->ctl(args("approvals"));
        QVERIFY2(shown.out.contains(QByteArray(
                     QByteArray("runs     /workspace/run.sh  sha256 ") + sha("echo second version\n").toLatin1())),
            qPrintable(shown.describe()));
        QVERIFY(shown.out.contains("           | echo second version\n"));
        QCOMPARE(m_daemon->ctl(args("approve", again.value(QStringLiteral("id")).toString())).exitCode, 0);
        QVERIFY(waiting->waitForFinished(10000));
        QCOMPARE(waiting->readAllStandardOutput(), QByteArray("second version\n"));
    }

    // An agent's airlockctl that is told to end while its command waits for a person takes the
    // question back at once (it does not wait out the timeout, nor leave the card to be approved
    // for nobody): exit 128+15, and nothing ran.
    void sigtermWithdrawsTheRequestItWaitsFor()
    {
        auto waiting = agentInBackground(args("touch", "/workspace/abandoned"));
        QVERIFY(waiting->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY(!request.isEmpty());
        QElapsedTimer t;
        t.start();
        QCOMPARE(::kill(pid_t(waiting->processId()), SIGTERM), 0);
        QVERIFY(waiting->waitForFinished(10000));
        QCOMPARE(waiting->exitStatus(), QProcess::NormalExit);
        QCOMPARE(waiting->exitCode(), 128 + SIGTERM);
        QCOMPARE(waiting->readAllStandardError(),
            QByteArray(
                "airlockctl: SIGTERM while the command waited to start: its request is withdrawn, nothing ran\n"));
        // Gone from the person's list well before the 3 s timeout would have taken it.
        const QJsonArray pending = pendingApprovals(*m_daemon);
        QVERIFY2(pending.isEmpty(), QJsonDocument(pending).toJson().constData());
        QVERIFY2(t.elapsed() < 2000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(m_daemon->ctl(args("approve", request.value(QStringLiteral("id")).toString())).exitCode
            != 0); // nothing left to approve
        QCOMPARE(execIn(*m_daemon, m_sb, args("ls", "/workspace/abandoned")).exitCode, 2);
    }

    void onlyTheRequesterWithdraws()
    {
        auto waiting = agentInBackground(args("touch", "/workspace/withdrawn"));
        QVERIFY(waiting->waitForStarted());
        const QJsonObject request = waitForRequest();
        QVERIFY(!request.isEmpty());
        auto other = m_daemon->connect();
        auto refused = other->call(
            QStringLiteral("approvals.withdraw"), {{QStringLiteral("id"), request.value(QStringLiteral("id"))}});
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, ErrorCode::Denied);
        QCOMPARE(refused.error().message,
            QStringLiteral("approval %1 is not this connection's to withdraw")
                .arg(request.value(QStringLiteral("id")).toString()));
        auto unknown
            = other->call(QStringLiteral("approvals.withdraw"), {{QStringLiteral("id"), QStringLiteral("00000000")}});
        QVERIFY(!unknown);
        QCOMPARE(unknown.error().code, ErrorCode::NotFound);
        QCOMPARE(m_daemon->ctl(args("deny", request.value(QStringLiteral("id")).toString())).exitCode,
            0); // still the person's to decide
        QVERIFY(waiting->waitForFinished(10000));
        QCOMPARE(waiting->exitCode(), 6);
    }
};

QTEST_GUILESS_MAIN(TestApprovals)
#include "tst_approvals.moc"
