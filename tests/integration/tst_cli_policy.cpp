// SPDX-License-Identifier: Apache-2.0
// Policies from the command line, against a real daemon: presets, --policy files (validated, never
// partly applied), the layer every effective value came from (the user's defaults included), live
// changes recorded in the history, changes a running sandbox cannot honour refused, and `check`.
#include "CliFixture.h"
#include "TestHelpers.h"
#include "history/Sql.h"

#include <QDir>

using namespace airlock;
using namespace airlock::test;

class TestCliPolicy final : public QObject, private CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    void presetsAreListed()
    {
        const CliResult r = ctl(args("policy", "presets"));
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QVERIFY2(
            r.out.contains("locked ") && r.out.contains("package-install ") && r.out.contains("FULL (host network)"),
            qPrintable(r.describe()));
        QCOMPARE(
            jsonObject(ctl(args("policy", "presets", "--json")).out).value(QStringLiteral("presets")).toArray().size(),
            3);
    }

    void aPresetDecidesTheNetworkUnlessAFlagDoes()
    {
        const CliResult open = ctl(args("create", "--name", "po", "--preset", "open"));
        QVERIFY2(open.exitCode == 0 && open.err.contains("shares the host network"), qPrintable(open.describe()));
        QCOMPARE(sandboxInfo(*m_daemon, q("po")).value(QStringLiteral("network")).toString(), QStringLiteral("full"));
        QCOMPARE(sandboxInfo(*m_daemon, q("po")).value(QStringLiteral("preset")).toString(), QStringLiteral("open"));
        QCOMPARE(ctl(args("create", "--name", "pn", "--preset", "open", "--network", "none")).exitCode, 0);
        QCOMPARE(sandboxInfo(*m_daemon, q("pn")).value(QStringLiteral("network")).toString(), QStringLiteral("none"));
        // package-install: an empty network namespace and the egress proxy (tst_egress has the rest).
        const CliResult allowlist = ctl(args("create", "--name", "pi", "--preset", "package-install"));
        QVERIFY2(allowlist.exitCode == 0 && allowlist.err.contains("network only through the egress proxy"),
            qPrintable(allowlist.describe()));
        QCOMPARE(
            sandboxInfo(*m_daemon, q("pi")).value(QStringLiteral("network")).toString(), QStringLiteral("allowlist"));
        const CliResult pypi
            = ctl(args("policy", "check", "pi", "--url", "https://files.pythonhosted.org/packages/x.whl"));
        QVERIFY2(pypi.exitCode == 0 && pypi.out.contains("allow"), qPrintable(pypi.describe()));
        QCOMPARE(ctl(args("policy", "check", "pi", "--url", "https://example.com/")).out,
            QByteArray("deny: no rule names example.com:443\n"));
        // Its command rules allow installs that run no one's scripts, and nothing that builds the workspace.
        const CliResult npm
            = ctl(args("policy", "check", "pi", "--", "npm", "install", "--ignore-scripts", "left-pad"));
        QVERIFY2(npm.out.startsWith("allow: ")
                && npm.out.contains("'npm install --ignore-scripts' (preset:package-install)"),
            qPrintable(npm.describe()));
        const CliResult scripts = ctl(args("policy", "check", "pi", "--", "npm", "install", "left-pad"));
        QVERIFY2(scripts.out.startsWith("ask: no rule matches 'npm install left-pad'"), qPrintable(scripts.describe()));
        const CliResult upload = ctl(args(
            "policy", "check", "pi", "--", "git", "clone", "--upload-pack=touch /tmp/p", "https://github.com/a/b"));
        QVERIFY2(upload.out.startsWith("ask: ") && upload.out.contains("--upload-pack"), qPrintable(upload.describe()));
        const CliResult cargo = ctl(args("policy", "check", "pi", "--", "cargo", "build"));
        QVERIFY2(cargo.out.startsWith("ask: no rule matches 'cargo build'"), qPrintable(cargo.describe()));
        ctl(args("rm", "pi"));
        const int before = sandboxCount();
        QCOMPARE(ctl(args("create", "--preset", "nope")).exitCode, 2);
        QCOMPARE(sandboxCount(), before);
        ctl(args("rm", "po"));
        ctl(args("rm", "pn"));
    }

    void anInvalidPolicyFileNamesTheFieldAndCreatesNothing()
    {
        QVERIFY(writeFile(hostFile(QStringLiteral("bad.json")),
            R"({"network": {"mode": "none"}, "commands": {"rules": [{"decision": "permit", "command": "ls"}]}})"));
        const int before = sandboxCount();
        const CliResult r = ctl(args("create", "--name", "bad", "--policy", hostFile(QStringLiteral("bad.json"))));
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(QString::fromUtf8(r.err),
            QStringLiteral(
                "airlockctl: the policy %1: /commands/rules/0/decision: expected \"allow\", \"ask\" or \"deny\"\n")
                .arg(hostFile(QStringLiteral("bad.json"))));
        QCOMPARE(sandboxCount(), before);
        QVERIFY(writeFile(hostFile(QStringLiteral("notjson.json")), "{ nope"));
        QCOMPARE(ctl(args("create", "--policy", hostFile(QStringLiteral("notjson.json")))).exitCode, 2);
    }

    void theEffectivePolicySaysWhereEachValueCameFrom()
    {
        // The user's defaults, under the preset, under the sandbox's own file and flags.
        QVERIFY(QDir().mkpath(m_daemon->configDir()));
        const QString userFile = m_daemon->configDir() + QStringLiteral("/policy.json");
        QVERIFY(writeFile(userFile,
            R"({"commands": {"rules": [{"decision": "deny", "command": "curl"}]}, "limits": {"pids": 300}})"));
        auto removeUserFile = qScopeGuard([&] { QFile::remove(userFile); });
        QVERIFY(writeFile(hostFile(QStringLiteral("own.json")),
            R"({"commands": {"rules": [{"decision": "allow", "command": "make test"}]}})"));
        const CliResult created = ctl(
            args("create", "--name", "layered", "--policy", hostFile(QStringLiteral("own.json")), "--pids", "200"));
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const CliResult shown = ctl(args("policy", "show", "layered", "--effective"));
        QVERIFY2(shown.exitCode == 0, qPrintable(shown.describe()));
        auto line = [&](const QByteArray &setting) {
            for (const QByteArray &l : shown.out.split('\n'))
                if (l.startsWith(QByteArray(setting + ' ')))
                    return l.simplified();
            return QByteArray();
        };
        QCOMPARE(line("/commands/rules/0"), QByteArray("/commands/rules/0 deny curl user"));
        QCOMPARE(line("/commands/rules/1"), QByteArray("/commands/rules/1 allow ls preset:locked"));
        QCOMPARE(line("/network/mode"), QByteArray("/network/mode none preset:locked"));
        QCOMPARE(line("/limits/pids"), QByteArray("/limits/pids 200 sandbox")); // the flag beats the user's 300
        QVERIFY2(shown.out.contains("allow make test") && shown.out.contains(" sandbox"), qPrintable(shown.describe()));
        // The limit in force is the effective one.
        QCOMPARE(sandboxInfo(*m_daemon, q("layered"))
                     .value(QStringLiteral("limits"))
                     .toObject()
                     .value(QStringLiteral("pids"))
                     .toObject()
                     .value(QStringLiteral("value"))
                     .toInt(),
            200);
        const QJsonObject json = jsonObject(ctl(args("policy", "show", "layered", "--effective", "--json")).out);
        QCOMPARE(json.value(QStringLiteral("sources")).toObject().value(QStringLiteral("/commands/rules/0")).toString(),
            QStringLiteral("user"));
        // Without --effective: the sandbox's own layer only.
        const QJsonObject own = QJsonDocument::fromJson(ctl(args("policy", "show", "layered")).out).object();
        QCOMPARE(own.value(QStringLiteral("commands")).toObject().value(QStringLiteral("rules")).toArray().size(), 1);
        ctl(args("rm", "layered"));
    }

    void aLiveChangeAppliesAtOnceAndIsRecorded()
    {
        QCOMPARE(ctl(args("create", "--name", "live")).exitCode, 0);
        QCOMPARE(QString::fromUtf8(ctl(args("policy", "check", "live", "--", "cat", "notes")).out),
            QStringLiteral("allow: 'cat notes' matches rule 'cat' (preset:locked)\n"));
        const CliResult set = ctl(
            args("policy", "set", "live", "-"), R"({"commands": {"rules": [{"decision": "deny", "command": "cat"}]}})");
        QVERIFY2(set.exitCode == 0, qPrintable(set.describe()));
        QCOMPARE(set.out, QByteArray("policy of live is now version 2\n"));
        QCOMPARE(QString::fromUtf8(ctl(args("policy", "check", "live", "--", "cat", "notes")).out),
            QStringLiteral("deny: 'cat notes' matches rule 'cat' (sandbox)\n"));
        // What a running sandbox cannot honour is refused, and nothing changes.
        const CliResult mode = ctl(args("policy", "set", "live", "-"), R"({"network": {"mode": "full"}})");
        QCOMPARE(mode.exitCode, 2);
        QVERIFY2(mode.err.contains("/network/mode: the network mode of a running sandbox cannot change"),
            qPrintable(mode.describe()));
        const CliResult limits = ctl(args("policy", "set", "live", "-"), R"({"limits": {"pids": 5}})");
        QCOMPARE(limits.exitCode, 2);
        QCOMPARE(
            jsonObject(ctl(args("policy", "show", "live", "--json")).out).value(QStringLiteral("version")).toInt(), 2);
        const CliResult invalid = ctl(args("policy", "set", "live", "-"), R"({"commands": {"default": "sometimes"}})");
        QCOMPARE(invalid.exitCode, 2);
        QVERIFY2(invalid.err.contains("/commands/default: expected"), qPrintable(invalid.describe()));
        // The change is an event in the history: who, the old layer and the new one.
        const QString id = sandboxInfo(*m_daemon, q("live")).value(QStringLiteral("id")).toString();
        auto db = sql::open(m_daemon->dataDir() + QStringLiteral("/history.db"), true);
        QVERIFY(db);
        sql::Stmt st(db->get(), "SELECT payload FROM events WHERE sandbox_id = ? AND kind = 'policy.changed'");
        st.text(1, id);
        QVERIFY(st.step());
        const QJsonObject payload = QJsonDocument::fromJson(st.columnText(0).toUtf8()).object();
        QVERIFY2(payload.value(QStringLiteral("by")).toString().startsWith(QStringLiteral("airlockctl/")),
            qPrintable(st.columnText(0)));
        QCOMPARE(payload.value(QStringLiteral("version")).toInt(), 2);
        QCOMPARE(payload.value(QStringLiteral("old")).toObject(), QJsonObject());
        QCOMPARE(payload.value(QStringLiteral("new"))
                     .toObject()
                     .value(QStringLiteral("commands"))
                     .toObject()
                     .value(QStringLiteral("rules"))
                     .toArray()
                     .size(),
            1);
        QVERIFY(!st.step()); // the refused changes left no trace
        ctl(args("rm", "live"));
    }

    void checkExplainsWhatWouldHappen()
    {
        const CliResult compound = ctl(args("policy", "check", "cli", "--", "sh", "-c", "ls; rm -rf /workspace"));
        QCOMPARE(QString::fromUtf8(compound.out), QStringLiteral("ask: no rule matches 'rm -rf /workspace'\n"));
        const CliResult code = ctl(args("policy", "check", "cli", "--json", "--", "python3", "-c", "import os"));
        QCOMPARE(jsonObject(code.out).value(QStringLiteral("decision")).toString(), QStringLiteral("ask"));
        const CliResult escaped = ctl(args("policy", "check", "cli", "--", "echo", "\x1b]52;c;x\x07"));
        QVERIFY2(escaped.out.startsWith("allow: 'echo \\x1b]52;c;x\\x07' matches rule 'echo'"),
            qPrintable(escaped.describe()));
        QCOMPARE(ctl(args("policy", "check", "cli")).exitCode, 2);
        // URLs: the network rules, before anything is resolved.
        QCOMPARE(ctl(args("policy", "check", "cli", "--url", "https://pypi.org/simple")).out,
            QByteArray("deny: this sandbox has no network\n"));
        const QJsonObject url
            = jsonObject(ctl(args("policy", "check", "cli", "--json", "--url", "http://[::ffff:7f00:1]:8080/")).out);
        QCOMPARE(url.value(QStringLiteral("port")).toInt(), 8080);
        QCOMPARE(url.value(QStringLiteral("decision")).toString(), QStringLiteral("deny"));
        // Tools: the permission and its argument constraints.
        QVERIFY(writeFile(hostFile(QStringLiteral("tools.json")),
            R"({"tools": {"email.send": {"decision": "ask", "constraints": {"to": "*@example.com"}}}})"));
        QCOMPARE(
            ctl(args("create", "--name", "tools", "--policy", hostFile(QStringLiteral("tools.json")))).exitCode, 0);
        QCOMPARE(ctl(args("policy", "check", "tools", "--tool", "email.send", "{\"to\": \"a@example.com\"}")).out,
            QByteArray("ask: email.send is 'ask' for this sandbox (sandbox)\n"));
        QCOMPARE(ctl(args("policy", "check", "tools", "--tool", "email.send", "{\"to\": \"a@evil.example\"}")).out,
            QByteArray("deny: email.send: argument 'to' must match '*@example.com' (sandbox)\n"));
        QCOMPARE(ctl(args("policy", "check", "tools", "--tool", "shell.run")).out,
            QByteArray("deny: the policy does not give this sandbox the tool 'shell.run'\n"));
        QCOMPARE(ctl(args("policy", "check", "tools", "--tool", "email.send", "not json")).exitCode, 2);
        ctl(args("rm", "tools"));
        const CliResult badUrl = ctl(args("policy", "check", "cli", "--url", "not a url"));
        QCOMPARE(badUrl.exitCode, 2);
        QVERIFY2(badUrl.err.contains("is not a URL with a host"), qPrintable(badUrl.describe()));
        QCOMPARE(ctl(args("policy", "check", "nosuch", "--", "ls")).exitCode, 3);
        QCOMPARE(ctl(args("policy", "frobnicate", "cli")).exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestCliPolicy)
#include "tst_cli_policy.moc"
