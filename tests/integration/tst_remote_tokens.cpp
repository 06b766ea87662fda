// SPDX-License-Identifier: Apache-2.0
// Tokens over wss:// against a "remote" host (the fixture of tst_remote_wss): a revoked token's
// live connection cut off; read-only and scoped tokens refused, by name, every method beyond their
// grant (sandboxes, approvals, events, copies), a scope bound to sandboxes rather than names; and
// token commands that run at once losing nothing.
#include "WssFixture.h"
#include "remote/RefusalLog.h"
#include "rpc/Protocol.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QSslKey>
#include <QSslSocket>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QWebSocket>

#include <algorithm>
#include <tuple>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestRemoteTokens final : public QObject, public WssFixture {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (::geteuid() != 0)
            QSKIP("network namespaces and veth pairs need root");
        startRemoteHost();
    }
    void cleanupTestCase()
    {
        m_daemon.reset();
        m_link.reset();
    }

    void revokedTokensAreRefusedAndCutOff()
    {
        const QString token = newToken(QStringLiteral("old"));
        auto live = openSocket(token);
        QVERIFY(live);
        QProcess revoke;
        revoke.setProcessEnvironment(m_daemon->environment());
        revoke.start(binDir() + QStringLiteral("/airlockd"), args("token", "revoke", "old"));
        QVERIFY(revoke.waitForFinished(10000) && revoke.exitCode() == 0);
        QVERIFY2(waitFor([&] { return live->state() == QAbstractSocket::UnconnectedState; }, 5000),
            "a revoked token's connection stayed open");
        QCOMPARE(live->closeReason(), QStringLiteral("token revoked"));
        QVERIFY(raw(upgradeRequest("Bearer " + token.toLatin1()))
                    .status.startsWith("HTTP/1.1 401 token 'old' was revoked at "));
    }

    void scopedTokensStayInTheirLane()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "theirs")).exitCode, 0);
        const QString mine = newToken(QStringLiteral("ci"), {QStringLiteral("sandbox:mine")});
        QCOMPARE(remote(args("create", "--name", "mine"), mine).exitCode, 0);
        QCOMPARE(remote(args("exec", "mine", "-n", "--", "true"), mine).exitCode, 0);
        const CliResult other = remote(args("exec", "theirs", "-n", "--", "true"), mine);
        QCOMPARE(other.exitCode, 6);
        QVERIFY2(other.err.contains("token 'ci' (sandboxes mine): sandbox 'theirs' is outside it"),
            qPrintable(other.describe()));
        const CliResult listed = remote(args("ls"), mine);
        QVERIFY2(listed.out.contains("mine") && !listed.out.contains("theirs"), qPrintable(listed.describe()));
        // What sandboxes are doing (their last output, their agents) is theirs to see too.
        const CliResult stats = remote(args("stats", "--json"), mine);
        QCOMPARE(stats.exitCode, 0);
        QCOMPARE(jsonArray(stats.out).size(), 1);
        QCOMPARE(
            jsonArray(stats.out).first().toObject().value(QStringLiteral("name")).toString(), QStringLiteral("mine"));
        const CliResult foreign = remote(args("stats", "theirs"), mine);
        QVERIFY2(foreign.exitCode != 0 && foreign.err.contains("no sandbox 'theirs'"), qPrintable(foreign.describe()));
        const CliResult secrets = remote(args("secret", "ls"), mine);
        QVERIFY2(secrets.exitCode != 0 && secrets.err.contains("secrets.list reaches beyond its sandboxes"),
            qPrintable(secrets.describe()));

        const QString reader = newToken(QStringLiteral("viewer"), {QStringLiteral("read-only")});
        QVERIFY(remote(args("ls"), reader).out.contains("theirs"));
        const CliResult write = remote(args("exec", "theirs", "-n", "--", "true"), reader);
        QVERIFY2(write.exitCode == 6
                && write.err.contains("token 'viewer' (read-only): exec.start is not allowed: the token is read-only"),
            qPrintable(write.describe()));

        // Naming one of its sandboxes does not open what lies beyond it.
        QCOMPARE(m_daemon->ctl(args("exec", "theirs", "-n", "--", "echo", "their-output")).exitCode, 0);
        DaemonClient scoped;
        ConnectOptions options;
        options.host = m_url;
        options.token = mine;
        options.autostart = false;
        QVERIFY(scoped.connectToDaemon(options));
        const QJsonObject inScope{{QStringLiteral("sandbox"), QStringLiteral("mine")}};
        const std::pair<const char *, QJsonObject> beyond[] = {
            {"history.output", QJsonObject{{QStringLiteral("execution"), 1}}},
            {"history.show", QJsonObject{{QStringLiteral("execution"), QStringLiteral("theirs:1")}}},
            {"history.runs", {}},
            {"history.prune", QJsonObject{{QStringLiteral("keepBytes"), 0}}},
            {"history.events", QJsonObject{{QStringLiteral("run"), QStringLiteral("x")}}},
            {"secrets.set",
                QJsonObject{{QStringLiteral("name"), QStringLiteral("GITHUB_TOKEN")},
                    {QStringLiteral("value"), QStringLiteral("c3RvbGVuLXN0b2xlbg==")}}},
            {"secrets.list", {}},
            {"policy.defaults.get", {}},
            {"policy.defaults.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
            {"policy.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
        };
        for (const auto &[method, params] : beyond) {
            QJsonObject withSandbox = params;
            for (auto it = inScope.begin(); it != inScope.end(); ++it)
                withSandbox.insert(it.key(), it.value());
            auto r = scoped.call(QString::fromLatin1(method), withSandbox);
            const bool refused = !r && r.error().code == ErrorCode::Denied
                && (r.error().message.contains(QStringLiteral("reaches beyond its sandboxes"))
                    || r.error().message.contains(QStringLiteral("must name one of its sandboxes")));
            QVERIFY2(refused,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        auto mounted = scoped.call(QStringLiteral("sandbox.create"),
            {{QStringLiteral("spec"),
                QJsonObject{{QStringLiteral("name"), QStringLiteral("mine")},
                    {QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/etc")},
                            {QStringLiteral("path"), QStringLiteral("/mnt/etc")}}}}}}});
        QVERIFY2(!mounted && mounted.error().message.contains(QStringLiteral("default policy only")),
            qPrintable(mounted ? QString() : mounted.error().message));
        // A draft to try: a person's (it names the patterns and what they are tried on, and
        // mounts whose host paths would be looked at); a limited token is refused, and is not
        // shown what the person's defaults say now.
        const QJsonObject probe{{QStringLiteral("sandbox"), QStringLiteral("mine")},
            {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}},
            {QStringLiteral("policy"),
                QJsonObject{{QStringLiteral("filesystem"),
                    QJsonObject{{QStringLiteral("mounts"),
                        QJsonArray{QJsonObject{{QStringLiteral("host"), QStringLiteral("/root/.ssh")},
                            {QStringLiteral("path"), QStringLiteral("/data")}}}}}}}}};
        for (DaemonClient *limited : {&scoped}) {
            auto drafted = limited->call(QStringLiteral("policy.check"), probe);
            QVERIFY2(!drafted && drafted.error().code == ErrorCode::Denied
                    && drafted.error().message
                        == QStringLiteral("token 'ci' (sandboxes mine): policy drafts need a token with full access"),
                qPrintable(drafted ? QStringLiteral("allowed") : drafted.error().message));
        }
        auto plain = scoped.call(QStringLiteral("policy.check"),
            {{QStringLiteral("sandbox"), QStringLiteral("mine")},
                {QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}});
        QVERIFY2(
            plain && !plain->contains(QStringLiteral("draft")), qPrintable(plain ? QString() : plain.error().message));
        auto shown = scoped.call(QStringLiteral("policy.get"),
            {{QStringLiteral("sandbox"), QStringLiteral("mine")}, {QStringLiteral("effective"), true}});
        QVERIFY(shown && shown->contains(QStringLiteral("sources")) && !shown->contains(QStringLiteral("below")));
        DaemonClient viewer;
        options.token = reader;
        QVERIFY(viewer.connectToDaemon(options));
        auto viewed = viewer.call(QStringLiteral("policy.check"), probe);
        QVERIFY2(!viewed
                && viewed.error().message
                    == QStringLiteral("token 'viewer' (read-only): policy drafts need a token with full access"),
            qPrintable(viewed ? QStringLiteral("allowed") : viewed.error().message));
        QCOMPARE(m_daemon->ctl(args("rm", "theirs", "mine")).exitCode, 0);
    }

    // A read-only token is refused every method that changes something, each with its reason,
    // and answered the rest (rpc/MethodTable.h's Token::Full, as RpcServerGrants' isRead was).
    void aReadOnlyTokenIsRefusedEveryChangeByName()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "looked-at")).exitCode, 0);
        const QString glance = newToken(QStringLiteral("glance"), {QStringLiteral("read-only")});
        DaemonClient viewer;
        ConnectOptions options;
        options.host = m_url;
        options.token = glance;
        options.autostart = false;
        QVERIFY(viewer.connectToDaemon(options));
        const QJsonObject sb{{QStringLiteral("sandbox"), QStringLiteral("looked-at")}};
        const auto with = [&](QJsonObject p) {
            p.insert(QStringLiteral("sandbox"), QStringLiteral("looked-at"));
            return p;
        };
        const std::pair<const char *, QJsonObject> changes[] = {
            {"sandbox.create", QJsonObject{{QStringLiteral("spec"), QJsonObject{}}}},
            {"sandbox.delete", sb},
            {"sandbox.kill", sb},
            {"exec.start", with({{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}})},
            {"exec.stdin", with({{QStringLiteral("exec"), 1}})},
            {"exec.signal", with({{QStringLiteral("exec"), 1}})},
            {"exec.resize",
                with({{QStringLiteral("exec"), 1}, {QStringLiteral("rows"), 24}, {QStringLiteral("cols"), 80}})},
            {"fs.write", with({{QStringLiteral("path"), QStringLiteral("/workspace/x")}})},
            {"fs.read", with({{QStringLiteral("path"), QStringLiteral("/etc/hostname")}})},
            {"fs.upload", with({{QStringLiteral("path"), QStringLiteral("/workspace/x")}})},
            {"fs.download", with({{QStringLiteral("path"), QStringLiteral("/etc/hostname")}})},
            {"fs.finish", with({{QStringLiteral("transfer"), 1}})},
            {"fs.mkdir", with({{QStringLiteral("path"), QStringLiteral("/workspace/d")}})},
            {"fs.list", with({{QStringLiteral("path"), QStringLiteral("/workspace")}})},
            {"policy.set", with({{QStringLiteral("policy"), QJsonObject{}}})},
            {"policy.defaults.set", QJsonObject{{QStringLiteral("policy"), QJsonObject{}}}},
            {"approvals.decide", QJsonObject{}},
            {"approvals.withdraw", QJsonObject{}},
            {"secrets.set", QJsonObject{{QStringLiteral("name"), QStringLiteral("X")}}},
            {"secrets.remove", QJsonObject{{QStringLiteral("name"), QStringLiteral("X")}}},
            {"tools.call", with({{QStringLiteral("tool"), QStringLiteral("package.version")}})},
            {"history.prune", QJsonObject{{QStringLiteral("keepBytes"), 1e12}}},
        };
        for (const auto &[method, params] : changes) {
            auto r = viewer.call(QString::fromLatin1(method), params);
            const QString why = QStringLiteral("token 'glance' (read-only): %1 is not allowed: the token is read-only")
                                    .arg(QLatin1String(method));
            QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        const std::pair<const char *, QJsonObject> reads[] = {
            {"daemon.info", {}},
            {"sandbox.list", {}},
            {"sandbox.stats", {}},
            {"sandbox.info", sb},
            {"approvals.list", {}},
            {"events.subscribe", sb},
            {"policy.presets", {}},
            {"policy.get", sb},
            {"policy.check", with({{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}})},
            {"policy.defaults.get", {}},
            {"tools.list", sb},
            {"secrets.list", {}},
            {"history.list", {}},
            {"history.runs", {}},
            {"history.events", sb},
        };
        for (const auto &[method, params] : reads) {
            auto r = viewer.call(QString::fromLatin1(method), params);
            QVERIFY2(
                r, qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(method), r ? QString() : r.error().message)));
        }
        QCOMPARE(m_daemon->ctl(args("rm", "looked-at")).exitCode, 0);
    }

    // A token scoped to its sandboxes neither sees nor decides nor withdraws what waits for a
    // person in another sandbox (by the approval's id, or with none), hears none of that
    // sandbox's events when it asks for every event, and finishes no copy there.
    void aScopedTokenStaysOutOfAnotherSandboxsApprovalsEventsAndCopies()
    {
        QCOMPARE(m_daemon->ctl(args("create", "--name", "far-theirs")).exitCode, 0);
        const QString theirs = jsonObject(m_daemon->ctl(args("info", "far-theirs", "--json")).out)
                                   .value(QStringLiteral("id"))
                                   .toString();
        QVERIFY(!theirs.isEmpty());
        const QString lane = newToken(QStringLiteral("lane"), {QStringLiteral("sandbox:lane")});
        QCOMPARE(remote(args("create", "--name", "lane"), lane).exitCode, 0);
        DaemonClient scoped;
        ConnectOptions options;
        options.host = m_url;
        options.token = lane;
        options.autostart = false;
        QVERIFY(scoped.connectToDaemon(options));
        QList<Event> heard;
        QObject::connect(&scoped, &DaemonClient::eventReceived, &scoped, [&heard](const Event &e) { heard.append(e); });
        QVERIFY(scoped.call(QStringLiteral("events.subscribe")));

        // An agent's command in their sandbox waits for a person.
        QProcess agent;
        agent.setProcessEnvironment(m_daemon->environment());
        agent.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--agent", "bot", "exec", "far-theirs", "-n", "--", "touch", "/workspace/asked"));
        QVERIFY(agent.waitForStarted());
        auto person = m_daemon->connect();
        QVERIFY(person);
        QJsonObject waiting;
        QVERIFY(waitFor(
            [&] {
                auto listed = person->call(QStringLiteral("approvals.list"));
                waiting
                    = listed ? listed->value(QStringLiteral("approvals")).toArray().first().toObject() : QJsonObject();
                return !waiting.isEmpty();
            },
            10000));
        const QString approval = waiting.value(QStringLiteral("id")).toString();
        QCOMPARE(waiting.value(QStringLiteral("sandbox")).toString(), theirs);

        auto seen = scoped.call(QStringLiteral("approvals.list"));
        QVERIFY(seen && seen->value(QStringLiteral("approvals")).toArray().isEmpty());
        const QString outside = QStringLiteral("token 'lane' (sandboxes lane): sandbox 'far-theirs' is outside it");
        const QJsonObject decision{{QStringLiteral("id"), approval},
            {QStringLiteral("nonce"), waiting.value(QStringLiteral("nonce"))},
            {QStringLiteral("decision"), QStringLiteral("allow")}, {QStringLiteral("always"), true}};
        const std::tuple<const char *, QJsonObject, QString> refused[] = {
            {"approvals.decide", decision, outside},
            {"approvals.withdraw", QJsonObject{{QStringLiteral("id"), approval}}, outside},
            // Without an id a decision names no approval in its sandboxes (only withdraw goes
            // without one: this connection's own requests).
            {"approvals.decide",
                QJsonObject{{QStringLiteral("nonce"), waiting.value(QStringLiteral("nonce"))},
                    {QStringLiteral("decision"), QStringLiteral("allow")}},
                QStringLiteral("token 'lane' (sandboxes lane): approval '' waits in none of its sandboxes")},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), QStringLiteral("far-theirs")}}, outside},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), theirs}}, outside},
            {"events.subscribe", QJsonObject{{QStringLiteral("sandbox"), theirs.left(8)}}, outside},
        };
        for (const auto &[method, params, why] : refused) {
            auto r = scoped.call(QString::fromLatin1(method), params);
            QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                qPrintable(QStringLiteral("%1: %2").arg(
                    QLatin1String(method), r ? QStringLiteral("allowed") : r.error().message)));
        }
        auto own = scoped.call(QStringLiteral("approvals.withdraw"));
        QVERIFY(own && own->value(QStringLiteral("withdrawn")).toArray().isEmpty()); // it has none
        auto still = person->call(QStringLiteral("approvals.list"));
        QVERIFY(still && still->value(QStringLiteral("approvals")).toArray().size() == 1);

        // A copy opened in its own sandbox is finished there only.
        auto opened = scoped.call(QStringLiteral("fs.upload"),
            {{QStringLiteral("sandbox"), QStringLiteral("lane")},
                {QStringLiteral("path"), QStringLiteral("/workspace/up")}});
        QVERIFY2(opened, qPrintable(opened ? QString() : opened.error().message));
        const QJsonValue transfer = opened->value(QStringLiteral("transfer"));
        for (const QString &ref : {QStringLiteral("far-theirs"), theirs}) {
            auto crossed = scoped.call(QStringLiteral("fs.finish"),
                {{QStringLiteral("sandbox"), ref}, {QStringLiteral("transfer"), transfer},
                    {QStringLiteral("bytes"), 0}});
            QVERIFY2(!crossed && crossed.error().code == ErrorCode::Denied && crossed.error().message == outside,
                qPrintable(crossed ? QStringLiteral("allowed") : crossed.error().message));
        }
        QVERIFY(scoped.call(QStringLiteral("fs.finish"),
            {{QStringLiteral("sandbox"), QStringLiteral("lane")}, {QStringLiteral("transfer"), transfer},
                {QStringLiteral("bytes"), 0}}));

        // Every event it asked for is of its own sandbox.
        QCOMPARE(m_daemon->ctl(args("exec", "far-theirs", "-n", "--", "echo", "their-words")).exitCode, 0);
        QCOMPARE(remote(args("exec", "lane", "-n", "--", "echo", "lane-words"), lane).exitCode, 0);
        const QString laneId
            = jsonObject(m_daemon->ctl(args("info", "lane", "--json")).out).value(QStringLiteral("id")).toString();
        QVERIFY(waitFor(
            [&] {
                return std::any_of(heard.cbegin(), heard.cend(),
                    [&](const Event &e) { return e.sandbox == laneId && e.kind == QLatin1String("exec.exited"); });
            },
            10000));
        QTest::qWait(300);
        for (const Event &e : std::as_const(heard))
            QVERIFY2(e.sandbox == laneId, qPrintable(QStringLiteral("%1 of %2").arg(e.kind, e.sandbox)));

        QCOMPARE(m_daemon->ctl(args("deny", approval)).exitCode, 0);
        QVERIFY(agent.waitForFinished(10000));
        QCOMPARE(agent.exitCode(), 6);
        QCOMPARE(m_daemon->ctl(args("rm", "far-theirs", "lane")).exitCode, 0);
    }

    // A scope names sandboxes, but reaches only the one that had the name when the token was made
    // and those created through the token: a later sandbox of the same name made by a person,
    // with a host folder and the host's network, is outside it for every method.
    void aScopeIsBoundToSandboxesNotToNames()
    {
        const QString byName = newToken(QStringLiteral("by-name"), {QStringLiteral("sandbox:alpha")});
        QVERIFY(!byName.isEmpty());
        QCOMPARE(remote(args("create", "--name", "alpha"), byName).exitCode, 0);
        QCOMPARE(remote(args("exec", "alpha", "-n", "--", "true"), byName).exitCode, 0);
        QCOMPARE(remote(args("rm", "alpha"), byName).exitCode, 0);
        QCOMPARE(remote(args("create", "--name", "alpha"), byName).exitCode, 0); // again: a new one, its own too
        QCOMPARE(remote(args("exec", "alpha", "-n", "--", "true"), byName).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("rm", "alpha")).exitCode, 0);
        QCOMPARE(
            m_daemon->ctl(args("create", "--name", "alpha", "--mount", "/etc:/mnt/etc", "--network", "full")).exitCode,
            0);
        const QString id
            = jsonObject(m_daemon->ctl(args("info", "alpha", "--json")).out).value(QStringLiteral("id")).toString();
        QVERIFY(!id.isEmpty());

        DaemonClient holder; // the attacker: the old token, and every method it was given
        ConnectOptions options;
        options.host = m_url;
        options.token = byName;
        options.autostart = false;
        QVERIFY(holder.connectToDaemon(options));
        const QString why = QStringLiteral(
            "token 'by-name' (sandboxes alpha): sandbox 'alpha' (id %1) is outside it: the token reaches only the "
            "sandboxes of that name created through it, and this one was created by a local client")
                                .arg(id);
        const QJsonObject exec{{QStringLiteral("exec"), 1}};
        const std::pair<const char *, QJsonObject> methods[] = {
            {"sandbox.info", {}},
            {"sandbox.delete", {}},
            {"sandbox.kill", {}},
            {"exec.start",
                QJsonObject{
                    {QStringLiteral("argv"), QJsonArray{QStringLiteral("cat"), QStringLiteral("/mnt/etc/shadow")}}}},
            {"exec.stdin", QJsonObject{{QStringLiteral("exec"), 1}, {QStringLiteral("data"), QString()}}},
            {"exec.signal", exec},
            {"exec.resize",
                QJsonObject{{QStringLiteral("exec"), 1}, {QStringLiteral("rows"), 24}, {QStringLiteral("cols"), 80}}},
            {"fs.write",
                QJsonObject{
                    {QStringLiteral("path"), QStringLiteral("/workspace/x")}, {QStringLiteral("data"), QString()}}},
            {"fs.read", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc/shadow")}}},
            {"fs.upload", QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/x")}}},
            {"fs.download", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc/shadow")}}},
            {"fs.finish", QJsonObject{{QStringLiteral("transfer"), 1}}},
            {"fs.mkdir", QJsonObject{{QStringLiteral("path"), QStringLiteral("/workspace/d")}}},
            {"fs.list", QJsonObject{{QStringLiteral("path"), QStringLiteral("/mnt/etc")}}},
            {"policy.get", {}},
            {"policy.check", QJsonObject{{QStringLiteral("argv"), QJsonArray{QStringLiteral("true")}}}},
            {"tools.list", {}},
            {"tools.call", QJsonObject{{QStringLiteral("tool"), QStringLiteral("package.version")}}},
            {"history.list", {}},
            {"history.events", {}},
            {"events.subscribe", {}},
        };
        for (const QString &ref : {QStringLiteral("alpha"), id, id.left(6)}) {
            for (const auto &[method, params] : methods) {
                QJsonObject p = params;
                p.insert(QStringLiteral("sandbox"), ref);
                auto r = holder.call(QString::fromLatin1(method), p);
                QVERIFY2(!r && r.error().code == ErrorCode::Denied && r.error().message == why,
                    qPrintable(
                        QStringLiteral("%1 on %2: %3")
                            .arg(QLatin1String(method), ref, r ? QStringLiteral("allowed") : r.error().message)));
            }
        }
        auto listed = holder.call(QStringLiteral("sandbox.list"));
        QVERIFY(listed && listed->value(QStringLiteral("sandboxes")).toArray().isEmpty());
        const CliResult cli = remote(args("exec", "alpha", "-n", "--", "cat", "/mnt/etc/hostname"), byName);
        QCOMPARE(cli.exitCode, 6);
        QCOMPARE(QString::fromUtf8(cli.err), QStringLiteral("airlockctl: %1\n").arg(why));
        QCOMPARE(m_daemon->ctl(args("rm", "alpha")).exitCode, 0);

        // A sandbox that had the name when the token was made: bound by its id, not by the name.
        QCOMPARE(m_daemon->ctl(args("create", "--name", "beta")).exitCode, 0);
        const QString first
            = jsonObject(m_daemon->ctl(args("info", "beta", "--json")).out).value(QStringLiteral("id")).toString();
        const QString byId = newToken(QStringLiteral("by-id"), {QStringLiteral("sandbox:beta")});
        QCOMPARE(remote(args("exec", "beta", "-n", "--", "true"), byId).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("rm", "beta")).exitCode, 0);
        QCOMPARE(m_daemon->ctl(args("create", "--name", "beta", "--network", "full")).exitCode, 0);
        const QString second
            = jsonObject(m_daemon->ctl(args("info", "beta", "--json")).out).value(QStringLiteral("id")).toString();
        const CliResult rebound = remote(args("exec", "beta", "-n", "--", "true"), byId);
        QCOMPARE(rebound.exitCode, 6);
        QCOMPARE(QString::fromUtf8(rebound.err),
            QStringLiteral(
                "airlockctl: token 'by-id' (sandboxes beta (id %1)): sandbox 'beta' (id %2) is outside it: the token "
                "was bound to "
                "sandbox %1, which had the name when the token was made, and this one was created by a local client\n")
                .arg(first, second));
        QCOMPARE(m_daemon->ctl(args("rm", "beta")).exitCode, 0);
    }

    void concurrentTokenCommandsLoseNothing()
    {
        std::vector<std::unique_ptr<QProcess>> running;
        for (int i = 0; i < 6; ++i) {
            auto p = std::make_unique<QProcess>();
            p->setProcessEnvironment(m_daemon->environment());
            p->start(binDir() + QStringLiteral("/airlockd"),
                args("token", "create", "--name") + QStringList{QStringLiteral("burst-%1").arg(i)});
            running.push_back(std::move(p));
        }
        auto revoke = std::make_unique<QProcess>();
        revoke->setProcessEnvironment(m_daemon->environment());
        revoke->start(binDir() + QStringLiteral("/airlockd"), args("token", "revoke", "laptop-2"));
        for (auto &p : running)
            QVERIFY(p->waitForFinished(20000) && p->exitCode() == 0);
        QVERIFY(revoke->waitForFinished(20000));
        QProcess ls;
        ls.setProcessEnvironment(m_daemon->environment());
        ls.start(binDir() + QStringLiteral("/airlockd"), args("token", "ls"));
        QVERIFY(ls.waitForFinished(10000));
        const QByteArray listed = ls.readAllStandardOutput();
        for (int i = 0; i < 6; ++i)
            QVERIFY2(listed.contains(QStringLiteral("burst-%1 ").arg(i).toLatin1()), listed.constData());
    }
};

QTEST_GUILESS_MAIN(TestRemoteTokens)
#include "tst_remote_tokens.moc"
