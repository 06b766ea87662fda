// SPDX-License-Identifier: Apache-2.0
// A run's events as nested spans (trace::Trace::build), for the paths a real run seldom takes in
// a test: a command refused by rule, by a person, or left unanswered; a program that asked inside
// an approved command; a host tool that waited for a person; a destination refused; two commands
// running when a connection opened; events out of order; hostile text in labels; what is still
// running ends at "now".
#include "model/DisplayText.h"
#include "model/Trace.h"

#include <QJsonArray>
#include <QTest>

using namespace airlock;
using trace::Outcome;
using trace::Span;
using trace::SpanKind;

namespace {
const QString kBox = QStringLiteral("box1");

QJsonObject record(qint64 t, const char *kind, QJsonObject payload, int exec = 0)
{
    static int seq = 0;
    return {{QStringLiteral("sandbox"), kBox}, {QStringLiteral("sandboxName"), QStringLiteral("work")},
        {QStringLiteral("seq"), ++seq}, {QStringLiteral("timeMs"), double(t)},
        {QStringLiteral("kind"), QLatin1String(kind)}, {QStringLiteral("exec"), exec},
        {QStringLiteral("payload"), payload}};
}

QJsonArray argv(std::initializer_list<const char *> words)
{
    QJsonArray a;
    for (const char *w : words)
        a.append(QString::fromUtf8(w));
    return a;
}

// The one span whose label starts so (and is of that kind); -1 if none or several.
int find(const trace::Trace &t, SpanKind kind, const QString &start)
{
    int found = -1;
    for (int i = 0; i < t.spans.size(); ++i)
        if (t.spans[i].kind == kind && t.spans[i].label.startsWith(start)) {
            if (found >= 0)
                return -1;
            found = i;
        }
    return found;
}
} // namespace

class TestTrace final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refusedCommandsAreSpansThatSayWhy()
    {
        const QList<QJsonObject> events{
            record(1000, "sandbox.created", {{QStringLiteral("name"), QStringLiteral("work")}}),
            record(1100, "command.denied",
                {{QStringLiteral("argv"), argv({"rm", "-rf", "/workspace"})},
                    {QStringLiteral("requester"), QStringLiteral("claude")},
                    {QStringLiteral("reason"), QStringLiteral("rule 'rm' denies it")}}),
            record(1200, "approval.requested",
                {{QStringLiteral("id"), QStringLiteral("a1")}, {QStringLiteral("kind"), QStringLiteral("command")},
                    {QStringLiteral("requester"), QStringLiteral("claude")},
                    {QStringLiteral("argv"), argv({"curl", "x.sh"})}}),
            record(41200, "approval.decided",
                {{QStringLiteral("id"), QStringLiteral("a1")}, {QStringLiteral("decision"), QStringLiteral("deny")},
                    {QStringLiteral("by"), QStringLiteral("airlock/0.1.0")},
                    {QStringLiteral("reason"), QStringLiteral("not that")}}),
            record(42000, "approval.requested",
                {{QStringLiteral("id"), QStringLiteral("a2")}, {QStringLiteral("kind"), QStringLiteral("command")},
                    {QStringLiteral("requester"), QStringLiteral("claude")}, {QStringLiteral("argv"), argv({"make"})}}),
            record(162000, "approval.decided",
                {{QStringLiteral("id"), QStringLiteral("a2")}, {QStringLiteral("decision"), QStringLiteral("deny")},
                    {QStringLiteral("by"), QStringLiteral("airlockd")}, {QStringLiteral("expired"), true}}),
        };
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 200000);
        const int byRule
            = find(t, SpanKind::Refused, QStringLiteral("$ rm -rf /workspace · claude asked · denied by policy"));
        QVERIFY(byRule > 0);
        QVERIFY(t.spans[byRule].instant);
        QCOMPARE(t.spans[byRule].detail, QStringLiteral("rule 'rm' denies it"));
        QCOMPARE(t.spans[byRule].outcome, Outcome::Denied);

        const int byPerson = find(t, SpanKind::Refused, QStringLiteral("$ curl x.sh · denied, not run"));
        QVERIFY(byPerson > 0);
        QCOMPARE(t.spans[byPerson].durationMs(), 40000);
        QCOMPARE(t.spans[byPerson].children.size(), 1);
        const Span &wait = t.spans[t.spans[byPerson].children.first()];
        QCOMPARE(wait.kind, SpanKind::Wait);
        QCOMPARE(wait.label,
            QStringLiteral("claude asked · denied by airlock after 40 s")); // the client's name, not its version
        QCOMPARE(wait.detail, QStringLiteral("not that"));

        const int unanswered = find(t, SpanKind::Refused, QStringLiteral("$ make · unanswered, not run"));
        QVERIFY(unanswered > 0);
        QCOMPARE(t.spans[t.spans[unanswered].children.first()].label,
            QStringLiteral("claude asked · nobody answered in 2 min 0 s"));
        // All in the sandbox, named from the events; the sandbox was never deleted: still open.
        const Span &box = t.spans[t.spans[byRule].parent];
        QCOMPARE(box.label, QStringLiteral("sandbox work"));
        QVERIFY(box.open);
        QCOMPARE(t.spans[unanswered].parent, t.spans[byRule].parent);
        QCOMPARE(t.startMs, 1000);
    }

    // An agent's brokered connection: whose key the proxy puts in, and each request inside it with
    // its answer, its time and whether the key went in; a request the broker refused, and a host it
    // refused, say so.
    void aBrokeredConnectionShowsItsRequests()
    {
        const QJsonObject opened{{QStringLiteral("connection"), 4},
            {QStringLiteral("host"), QStringLiteral("api.anthropic.com")}, {QStringLiteral("port"), 443},
            {QStringLiteral("decision"), QStringLiteral("allow")},
            {QStringLiteral("rule"), QStringLiteral("api.anthropic.com")}, {QStringLiteral("brokered"), true},
            {QStringLiteral("secret"), QStringLiteral("anthropic-api-key")}};
        QJsonObject closed = opened;
        closed.insert(QStringLiteral("bytesUp"), 62000);
        closed.insert(QStringLiteral("bytesDown"), 2100);
        const auto request = [](qint64 t, const char *target, int status, int took, const char *refused = nullptr) {
            QJsonObject p{{QStringLiteral("connection"), 4},
                {QStringLiteral("host"), QStringLiteral("api.anthropic.com")},
                {QStringLiteral("method"), QStringLiteral("POST")}, {QStringLiteral("target"), QLatin1String(target)},
                {QStringLiteral("status"), status}, {QStringLiteral("credential"), refused == nullptr},
                {QStringLiteral("bytesUp"), 61000}, {QStringLiteral("bytesDown"), 1000},
                {QStringLiteral("durationMs"), took}, {QStringLiteral("redacted"), refused ? 0 : 1}};
            if (refused)
                p.insert(QStringLiteral("refused"), QLatin1String(refused));
            return record(t, "network.request", p);
        };
        QJsonObject wrong = opened;
        wrong.insert(QStringLiteral("host"), QStringLiteral("wrong.example"));
        wrong.insert(QStringLiteral("decision"), QStringLiteral("deny"));
        wrong.insert(QStringLiteral("rule"), QStringLiteral("broker"));
        wrong.insert(QStringLiteral("reason"), QStringLiteral("the certificate of wrong.example failed verification"));
        const QList<QJsonObject> events{
            record(1000, "exec.started",
                {{QStringLiteral("argv"), argv({"claude", "-p", "go"})},
                    {QStringLiteral("agent"), QStringLiteral("claude")}},
                1),
            record(1001, "credential.injected",
                {{QStringLiteral("exec"), 1},
                    {QStringLiteral("grants"),
                        QJsonArray{QJsonObject{{QStringLiteral("secret"), QStringLiteral("anthropic-api-key")},
                            {QStringLiteral("env"), QStringLiteral("ANTHROPIC_API_KEY")},
                            {QStringLiteral("brokeredFor"), QStringLiteral("api.anthropic.com")}}}}},
                1),
            record(1500, "network.opened", opened),
            request(2500, "/v1/messages?beta=true", 200, 900),
            request(2600, "/v1/messages", 0, 0, "a second Authorization header"),
            record(3000, "network.closed", closed),
            record(3100, "network.denied", wrong),
            record(4000, "exec.exited",
                {{QStringLiteral("status"), QStringLiteral("succeeded")}, {QStringLiteral("exitCode"), 0}}, 1),
        };
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 5000);
        const int connection = find(t, SpanKind::Connection,
            QStringLiteral(
                "→ api.anthropic.com:443 · key brokered (anthropic-api-key) · allowed by rule 'api.anthropic.com'"));
        QVERIFY(connection > 0);
        QCOMPARE(t.spans[connection].durationMs(), 1500);
        const int turn = find(t, SpanKind::Request, QStringLiteral("POST /v1/messages?beta=true → 200 · key put in"));
        QVERIFY(turn > 0);
        QCOMPARE(t.spans[turn].parent, connection);
        QCOMPARE(t.spans[turn].startMs, 1600); // it began when its answer ended, less its time
        QCOMPARE(t.spans[turn].durationMs(), 900);
        QCOMPARE(t.spans[turn].outcome, Outcome::Allowed);
        QCOMPARE(t.spans[turn].detail, QStringLiteral("61000 up, 1000 down · the key was masked in the answer (1)"));
        QCOMPARE(t.spans[turn].exec, 1u);
        const int refused = find(t, SpanKind::Request, QStringLiteral("POST /v1/messages · refused"));
        QVERIFY(refused > 0);
        QCOMPARE(t.spans[refused].outcome, Outcome::Denied);
        QVERIFY(!t.spans[refused].label.contains(QLatin1String("key put in")));
        QVERIFY(t.spans[refused].detail.startsWith(QLatin1String("a second Authorization header")));
        QCOMPARE(t.spans[connection].children, (QList<int>{turn, refused}));
        QVERIFY(
            find(t, SpanKind::Note,
                QStringLiteral("secrets given: a placeholder for anthropic-api-key in $ANTHROPIC_API_KEY (the key is "
                               "put in on the way to api.anthropic.com)"))
            > 0);
        const int wrongHost = find(t, SpanKind::Connection,
            QStringLiteral("→ wrong.example:443 · key brokered (anthropic-api-key) · refused by the broker"));
        QVERIFY(wrongHost > 0);
        QCOMPARE(t.spans[wrongHost].outcome, Outcome::Denied);
        QVERIFY(t.spans[wrongHost].detail.contains(QLatin1String("failed verification")));
    }

    // What a command left changed in a copy-on-write project is a note under it, its counts and
    // first paths in the label (escaped: the names are the sandbox's), all of them in the detail.
    void theFilesACommandChangedAreUnderIt()
    {
        QJsonArray paths{QStringLiteral("M README.md"), QStringLiteral("A added.txt"), QStringLiteral("D old.txt"),
            QStringLiteral("A a"), QStringLiteral("A b"), QStringLiteral("A c\x1b[2J")};
        const QList<QJsonObject> events{
            record(1000, "exec.started", {{QStringLiteral("argv"), argv({"claude", "-p", "go"})}}, 1),
            record(4000, "exec.exited",
                {{QStringLiteral("status"), QStringLiteral("succeeded")}, {QStringLiteral("exitCode"), 0}}, 1),
            record(4001, "files.changed",
                {{QStringLiteral("exec"), 1},
                    {QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("path"), QStringLiteral("/project/app")},
                            {QStringLiteral("host"), QStringLiteral("/home/me/app")}, {QStringLiteral("changes"), 6},
                            {QStringLiteral("modified"), 1}, {QStringLiteral("added"), 4},
                            {QStringLiteral("deleted"), 1}, {QStringLiteral("paths"), paths}}}}},
                1),
        };
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 5000);
        const int files = find(t, SpanKind::Note,
            QStringLiteral("files changed in /project/app: 1 modified, 4 added, 1 deleted (M README.md, A added.txt, D "
                           "old.txt, A a, A b, …)"));
        QVERIFY(files > 0);
        const Span &command = t.spans[t.spans[files].parent];
        QCOMPARE(command.kind, SpanKind::Execution);
        QCOMPARE(command.exec, 1u);
        QVERIFY(t.spans[files].detail.startsWith(QLatin1String("in /home/me/app, kept in the sandbox until applied")));
        QVERIFY(!t.spans[files].detail.contains(QLatin1Char('\x1b')));
        QVERIFY(t.spans[files].detail.contains(QLatin1String("A c")));
    }

    void insideACommandProgramsToolsAndConnectionsNest()
    {
        // Delivered out of order: the builder orders by time, then sequence.
        QList<QJsonObject> events{
            record(2000, "exec.started",
                {{QStringLiteral("argv"), argv({"sh", "build.sh"})},
                    {QStringLiteral("cwd"), QStringLiteral("/workspace")},
                    {QStringLiteral("agent"), QStringLiteral("codex")}},
                1),
            record(2010, "exec.program",
                {{QStringLiteral("pid"), 10}, {QStringLiteral("parent"), 1},
                    {QStringLiteral("argv"), argv({"sh", "build.sh"})},
                    {QStringLiteral("decision"), QStringLiteral("allow")},
                    {QStringLiteral("rule"), QStringLiteral("covered")},
                    {QStringLiteral("path"), QStringLiteral("/usr/bin/sh")}},
                1),
            record(2020, "exec.program",
                {{QStringLiteral("pid"), 11}, {QStringLiteral("parent"), 10},
                    {QStringLiteral("argv"), argv({"pip", "install", "x"})},
                    {QStringLiteral("decision"), QStringLiteral("ask")},
                    {QStringLiteral("rule"), QStringLiteral("pip")}},
                1),
            record(5020, "exec.program",
                {{QStringLiteral("pid"), 11}, {QStringLiteral("parent"), 10},
                    {QStringLiteral("argv"), argv({"pip", "install", "x"})},
                    {QStringLiteral("decision"), QStringLiteral("allow")},
                    {QStringLiteral("rule"), QStringLiteral("person")},
                    {QStringLiteral("reason"), QStringLiteral("approved by alice")}},
                1),
            record(5100, "network.opened",
                {{QStringLiteral("connection"), 7}, {QStringLiteral("host"), QStringLiteral("pypi.org")},
                    {QStringLiteral("port"), 443}, {QStringLiteral("decision"), QStringLiteral("allow")},
                    {QStringLiteral("rule"), QStringLiteral("pypi.org")}}),
            record(5600, "network.closed",
                {{QStringLiteral("connection"), 7}, {QStringLiteral("host"), QStringLiteral("pypi.org")},
                    {QStringLiteral("port"), 443}, {QStringLiteral("bytesUp"), 900},
                    {QStringLiteral("bytesDown"), 120000}}),
            record(5700, "network.denied",
                {{QStringLiteral("host"), QStringLiteral("evil.example")}, {QStringLiteral("port"), 80},
                    {QStringLiteral("reason"), QStringLiteral("not in the allowlist")}}),
            record(6000, "tool.requested",
                {{QStringLiteral("call"), 3}, {QStringLiteral("tool"), QStringLiteral("send_mail")},
                    {QStringLiteral("requester"), QStringLiteral("codex")}}),
            record(6001, "approval.requested",
                {{QStringLiteral("id"), QStringLiteral("t1")}, {QStringLiteral("kind"), QStringLiteral("tool")},
                    {QStringLiteral("tool"), QStringLiteral("send_mail")},
                    {QStringLiteral("requester"), QStringLiteral("codex")}}),
            record(9001, "approval.decided",
                {{QStringLiteral("id"), QStringLiteral("t1")}, {QStringLiteral("decision"), QStringLiteral("allow")},
                    {QStringLiteral("by"), QStringLiteral("airlock/0.1")}, {QStringLiteral("always"), true}}),
            record(9500, "tool.finished",
                {{QStringLiteral("call"), 3}, {QStringLiteral("tool"), QStringLiteral("send_mail")},
                    {QStringLiteral("exitCode"), 0}}),
            record(12000, "exec.exited",
                {{QStringLiteral("status"), QStringLiteral("failed")}, {QStringLiteral("exitCode"), 2}}, 1),
        };
        std::reverse(events.begin(), events.end());
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 20000);
        const int exec = find(t, SpanKind::Execution, QStringLiteral("$ sh build.sh · failed, exit 2"));
        QVERIFY(exec > 0);
        QCOMPARE(t.spans[exec].durationMs(), 10000);
        QCOMPARE(t.spans[exec].outcome, Outcome::Failed);
        QCOMPARE(t.spans[exec].detail, QStringLiteral("asked by codex · in /workspace"));

        const int pip = find(t, SpanKind::Program, QStringLiteral("pip install x"));
        QVERIFY(pip > 0);
        QCOMPARE(t.spans[t.spans[pip].parent].label, QStringLiteral("sh build.sh")); // by parent process
        QCOMPARE(t.spans[t.spans[pip].parent].parent, exec);
        QCOMPARE(t.spans[pip].children.size(), 1);
        const Span &asked = t.spans[t.spans[pip].children.first()];
        QCOMPARE(asked.label, QStringLiteral("asked · approved by alice after 3.0 s"));
        QCOMPARE(asked.outcome, Outcome::Allowed);
        QCOMPARE(t.spans[pip].outcome, Outcome::Allowed);

        const int pypi = find(t, SpanKind::Connection, QStringLiteral("→ pypi.org:443 · allowed by rule 'pypi.org'"));
        QVERIFY(pypi > 0);
        QCOMPARE(t.spans[pypi].parent, exec); // by time: the command running then
        QCOMPARE(t.spans[pypi].durationMs(), 500);
        QVERIFY2(
            t.spans[pypi].detail.endsWith(QStringLiteral(" · 900 up, 120000 down")), qPrintable(t.spans[pypi].detail));
        QCOMPARE(t.spans[pypi].exec, 1u); // its output is the command's
        const int evil = find(t, SpanKind::Connection, QStringLiteral("→ evil.example:80 · denied"));
        QVERIFY(evil > 0);
        QVERIFY(t.spans[evil].instant);
        QCOMPARE(t.spans[evil].outcome, Outcome::Denied);

        const int mail = find(t, SpanKind::ToolCall, QStringLiteral("tool send_mail · done"));
        QVERIFY(mail > 0);
        QCOMPARE(t.spans[mail].parent, exec);
        QCOMPARE(t.spans[mail].children.size(), 1);
        QCOMPARE(t.spans[t.spans[mail].children.first()].label,
            QStringLiteral("codex asked to call send_mail · allowed by airlock after 3.0 s, always"));
        // Children in start order, each inside its parent.
        for (int i = 1; i < t.spans.size(); ++i) {
            const Span &s = t.spans[i], &p = t.spans[s.parent];
            QVERIFY2(s.startMs >= p.startMs && s.endMs <= p.endMs, qPrintable(s.label));
            for (qsizetype k = 1; k < s.children.size(); ++k)
                QVERIFY(t.spans[s.children[k - 1]].startMs <= t.spans[s.children[k]].startMs);
        }
        QCOMPARE(t.events, 12);
    }

    void whatStillRunsEndsNowAndSharedTimeIsSaid()
    {
        const QList<QJsonObject> events{
            record(1000, "exec.started", {{QStringLiteral("argv"), argv({"server"})}}, 1),
            record(2000, "exec.started", {{QStringLiteral("argv"), argv({"client"})}}, 2),
            record(3000, "network.opened",
                {{QStringLiteral("connection"), 1}, {QStringLiteral("host"), QStringLiteral("api.test")},
                    {QStringLiteral("port"), 443}, {QStringLiteral("decision"), QStringLiteral("approved")}}),
            record(4000, "approval.requested",
                {{QStringLiteral("id"), QStringLiteral("n1")}, {QStringLiteral("kind"), QStringLiteral("network")},
                    {QStringLiteral("requester"), QStringLiteral("client")},
                    {QStringLiteral("destination"), QStringLiteral("db.test:5432")}}),
        };
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("sandbox work"), 10000);
        const int server = find(t, SpanKind::Execution, QStringLiteral("$ server")),
                  client = find(t, SpanKind::Execution, QStringLiteral("$ client"));
        QVERIFY(server > 0 && client > 0);
        QVERIFY(t.spans[server].open && t.spans[client].open);
        QCOMPARE(t.spans[server].endMs, 10000); // running: up to now
        const int api = find(t, SpanKind::Connection, QStringLiteral("→ api.test:443 · approved by a person"));
        QCOMPARE(t.spans[api].parent, client); // the newest of the two, and it says so
        QVERIFY2(t.spans[api].detail.endsWith(QStringLiteral("2 commands were running; shown under the newest")),
            qPrintable(t.spans[api].detail));
        QVERIFY(t.spans[api].open);
        const int waiting
            = find(t, SpanKind::Wait, QStringLiteral("client asked to reach db.test:5432 · waiting for a person"));
        QVERIFY(waiting > 0);
        QVERIFY(t.spans[waiting].open);
        QCOMPARE(t.spans[waiting].durationMs(), 6000);
        QCOMPARE(t.endMs, 10000);
    }

    void labelsShowHostileTextInertly()
    {
        // What an agent controls (its argv, its name, a host) cannot reorder or hide text.
        const QString rlo = QString(QChar(0x202e));
        const QList<QJsonObject> events{
            record(1000, "command.denied",
                {{QStringLiteral("argv"),
                     QJsonArray{QStringLiteral("ls"), QString(rlo + QStringLiteral("txt.exe\n\x1b[2Jgone"))}},
                    {QStringLiteral("requester"), QStringLiteral("bot\x1b]0;x\x07")}}),
        };
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 2000);
        const Span &s = t.spans.last();
        QCOMPARE(s.kind, SpanKind::Refused);
        QVERIFY2(!s.label.contains(rlo) && !s.label.contains(QLatin1Char('\n')) && !s.label.contains(QChar(0x1b))
                && !s.label.contains(QChar(0x07)),
            qPrintable(s.label));
        QCOMPARE(s.label,
            QStringLiteral("$ ls '\\u{202e}txt.exe\\x0a\\x1b[2Jgone' · bot\\x1b]0;x\\x07 asked · denied by policy"));
    }

    void nothingIsAnEmptyTraceAtNow()
    {
        const trace::Trace t = trace::Trace::build({}, QStringLiteral("run r"), 5000);
        QCOMPARE(t.spans.size(), 1);
        QCOMPARE(t.startMs, 5000);
        QCOMPARE(t.endMs, 5000);
    }

    void aThousandProcessesDeepIsNoRecursion()
    {
        // Each program the parent of the next: the builder and depth() walk, they do not recurse.
        QList<QJsonObject> events{record(1000, "exec.started", {{QStringLiteral("argv"), argv({"sh"})}}, 1)};
        for (int pid = 2; pid < 20000; ++pid)
            events.append(record(1000 + pid, "exec.program",
                {{QStringLiteral("pid"), pid}, {QStringLiteral("parent"), pid - 1},
                    {QStringLiteral("argv"), argv({"sh"})}, {QStringLiteral("decision"), QStringLiteral("allow")},
                    {QStringLiteral("rule"), QStringLiteral("covered")}},
                1));
        const trace::Trace t = trace::Trace::build(events, QStringLiteral("run r"), 30000);
        QCOMPARE(t.depth(int(t.spans.size()) - 1), 19999 + 2 - 1);
    }
};

QTEST_MAIN(TestTrace)
#include "tst_trace.moc"
