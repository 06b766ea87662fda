// SPDX-License-Identifier: Apache-2.0
// Agent profiles (resources/agents, core/agents/AgentProfile): what a profile may say and the
// error that names what it said wrong; where an agent's program is found and how the sandbox
// reaches it; what `agent run` asks the daemon for, merged with the person's own choices.
#include "agents/AgentProfile.h"
#include "policy/Policy.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::agents;

namespace {
QJsonObject parse(const char *json)
{
    return QJsonDocument::fromJson(json).object();
}
const char *kMinimal = R"({"version": 1, "title": "T", "command": "t",
    "api": {"host": "api.example.com", "secret": "key", "env": "KEY", "header": "x-api-key"}})";

bool makeExecutable(const QString &path)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write("#!/bin/sh\n") > 0
        && f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
}
} // namespace

class TestAgentProfile final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Every shipped profile loads, and brokers its key for its API host in its header.
    void theShippedProfilesLoad()
    {
        for (const QString &name : builtinAgentNames()) {
            auto p = builtinAgent(name);
            QVERIFY2(p, qPrintable(p ? QString() : p.error().message));
            QCOMPARE(p->name, name);
            QVERIFY(!p->api.host.isEmpty() && !p->install.isEmpty());
            const QJsonObject layer = p->policyLayer();
            QVERIFY2(policy::validate(layer), qPrintable(name));
            const QJsonObject grant
                = layer[QStringLiteral("credentials")][QStringLiteral("grants")].toArray().first().toObject();
            QCOMPARE(grant[QStringLiteral("broker")][QStringLiteral("host")].toString(), p->api.host);
            QCOMPARE(grant[QStringLiteral("env")].toString(), p->api.env);
            QVERIFY(layer[QStringLiteral("network")][QStringLiteral("allow")].toArray().contains(p->api.host));
        }
        QCOMPARE(builtinAgent(QStringLiteral("claude"))->api.header, QStringLiteral("x-api-key"));
        QCOMPARE(builtinAgent(QStringLiteral("codex"))->api.header, QStringLiteral("authorization"));
        const auto missing = builtinAgent(QStringLiteral("nope"));
        QVERIFY(!missing);
        QCOMPARE(missing.error().code, ErrorCode::NotFound);
        QVERIFY(missing.error().message.contains(QLatin1String("claude, codex, gemini")));
    }

    // A profile that says something wrong is refused with the field and what was expected.
    void aBadProfileNamesTheField_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("error");
        QTest::newRow("unknown field") << QByteArray(R"({"version": 1, "title": "T", "command": "t", "sandbox": 1})")
                                       << "/sandbox: unknown field";
        QTest::newRow("version") << QByteArray(R"({"version": 2, "title": "T", "command": "t"})")
                                 << "/version: expected 1";
        QTest::newRow("no command") << QByteArray(R"({"version": 1, "title": "T"})") << "/command: expected a text";
        QTest::newRow("relative path") << QByteArray(R"({"version": 1, "title": "T", "command": "bin/t"})")
                                       << "/command: expected a program's name or an absolute path";
        QTest::newRow("api without header") << QByteArray(R"({"version": 1, "title": "T", "command": "t",
                "api": {"host": "api.example.com", "secret": "key", "env": "KEY"}})")
                                            << "/api/header: expected a text";
        QTest::newRow("framing header") << QByteArray(R"({"version": 1, "title": "T", "command": "t",
                "api": {"host": "api.example.com", "secret": "key", "env": "KEY", "header": "host"}})")
                                        << "/credentials/grants/0/broker/header";
        QTest::newRow("address as host") << QByteArray(R"({"version": 1, "title": "T", "command": "t",
                "api": {"host": "10.0.0.1", "secret": "key", "env": "KEY", "header": "x-api-key"}})")
                                         << "/credentials/grants/0/broker/host";
        QTest::newRow("bad registry") << QByteArray(
            R"({"version": 1, "title": "T", "command": "t", "registries": ["host:99999"]})")
                                      << "/registries";
        QTest::newRow("state outside the home")
            << QByteArray(R"({"version": 1, "title": "T", "command": "t", "state": ["/etc"]})")
            << "/state: expected paths in the home";
        QTest::newRow("bad variable") << QByteArray(
            R"({"version": 1, "title": "T", "command": "t", "env": {"A=B": "1"}})")
                                      << "/env/A=B";
        QTest::newRow("empty api") << QByteArray(R"({"version": 1, "title": "T", "command": "t", "api": {}})")
                                   << "/api/host: expected a text";
        QTest::newRow("control character in the title")
            << QByteArray("{\"version\": 1, \"title\": \"T\\u001b[2K\", \"command\": \"t\"}")
            << "/title: expected printable";
        QTest::newRow("line separator in the title")
            << QByteArray("{\"version\": 1, \"title\": \"Claude\\u2028Code\", \"command\": \"t\"}")
            << "/title: expected printable";
        QTest::newRow("variable not text")
            << QByteArray(R"({"version": 1, "title": "T", "command": "t", "env": {"A": 1}})") << "/env/A";
    }
    void aBadProfileNamesTheField()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, error);
        const auto p = AgentProfile::fromJson(QJsonDocument::fromJson(json).object(), QStringLiteral("t"));
        QVERIFY(!p);
        QCOMPARE(p.error().code, ErrorCode::InvalidArgument);
        QVERIFY2(p.error().message.contains(error), qPrintable(p.error().message));
    }
    void aProfileNameIsChecked()
    {
        const auto p = AgentProfile::fromJson(parse(kMinimal), QStringLiteral("../x"));
        QVERIFY(!p);
        QVERIFY(p.error().message.contains(QLatin1String("lower-case letters")));
    }

    // A program under /usr runs as it is (the sandbox sees /usr); one elsewhere is reached by its
    // package's root, mounted read-only; what is not there says how to install it.
    void theProgramIsFoundAndItsPackageMounted()
    {
        auto profile = AgentProfile::fromJson(parse(kMinimal), QStringLiteral("t"));
        QVERIFY(profile);
        const auto system = locateProgram(*profile, QStringLiteral("/usr/bin/env"));
        QVERIFY(system);
        QCOMPARE(system->sandboxPath, QFileInfo(QStringLiteral("/usr/bin/env")).canonicalFilePath());
        QVERIFY(!system->mount);

        QTemporaryDir dir; // under /tmp: the sandbox's own, so under /opt/airlock/NAME
        const QString root = QFileInfo(dir.path()).canonicalFilePath() + QStringLiteral("/node_modules");
        const QString cli = root + QStringLiteral("/@scope/agent/node_modules/dep/cli.js");
        QVERIFY(makeExecutable(cli));
        QVERIFY(QFile::link(cli, dir.filePath(QStringLiteral("agent"))));
        const auto npm = locateProgram(*profile, dir.filePath(QStringLiteral("agent")));
        QVERIFY2(npm, qPrintable(npm ? QString() : npm.error().message));
        QVERIFY(npm->mount);
        QCOMPARE(npm->mount->hostPath, root); // the outermost node_modules
        QCOMPARE(npm->mount->sandboxPath, QStringLiteral("/opt/airlock/t/node_modules"));
        QVERIFY(!npm->mount->writable);
        QCOMPARE(npm->sandboxPath, QStringLiteral("/opt/airlock/t/node_modules/@scope/agent/node_modules/dep/cli.js"));

        const QString venv = QFileInfo(dir.path()).canonicalFilePath() + QStringLiteral("/venv");
        QVERIFY(makeExecutable(venv + QStringLiteral("/bin/agent")));
        QFile cfg(venv + QStringLiteral("/pyvenv.cfg"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.close();
        const auto python = locateProgram(*profile, venv + QStringLiteral("/bin/agent"));
        QVERIFY(python);
        QCOMPARE(python->mount->hostPath, venv);

        QFile plain(dir.filePath(QStringLiteral("plain")));
        QVERIFY(plain.open(QIODevice::WriteOnly));
        plain.close();
        const auto notExecutable = locateProgram(*profile, plain.fileName());
        QVERIFY(!notExecutable);
        QVERIFY(notExecutable.error().message.contains(QLatin1String("not an executable file")));

        // A folder that is more than a package: the person's home (their keys and sockets), the top.
        const QByteArray home = qgetenv("HOME");
        qputenv("HOME", QFileInfo(dir.path()).canonicalFilePath().toLocal8Bit());
        QVERIFY(makeExecutable(dir.filePath(QStringLiteral("tool"))));
        const auto inHome = locateProgram(*profile, dir.filePath(QStringLiteral("tool")));
        qputenv("HOME", home);
        QVERIFY(!inHome);
        QVERIFY2(inHome.error().message.contains(QLatin1String("would be mounted whole")),
            qPrintable(inHome.error().message));
        const auto atTop = locateProgram(*profile, dir.filePath(QStringLiteral("tool")));
        QVERIFY(atTop); // the same folder, not the home
        QCOMPARE(atTop->mount->hostPath, QFileInfo(dir.path()).canonicalFilePath());

        profile->command = QStringLiteral("airlock-no-such-agent");
        profile->install = QStringLiteral("npm install -g no-such-agent");
        const auto absent = locateProgram(*profile);
        QVERIFY(!absent);
        QCOMPARE(absent.error().code, ErrorCode::NotFound);
        QVERIFY2(absent.error().message.contains(QLatin1String("npm install -g no-such-agent"))
                && absent.error().message.contains(QLatin1String("--program")),
            qPrintable(absent.error().message));
    }

    // The profile's hosts and key join the person's own layer; the person's rules stay; the
    // agent's command is its program, the profile's arguments, then the person's.
    void theRunMergesTheProfileIntoThePersonsChoices()
    {
        auto profile = AgentProfile::fromJson(parse(R"({"version": 1, "title": "T", "command": "t",
            "args": ["--yolo"], "env": {"A": "1"}, "registries": ["registry.npmjs.org"],
            "api": {"host": "api.example.com", "secret": "key", "env": "KEY", "header": "x-api-key"}})"),
            QStringLiteral("t"));
        QVERIFY(profile);
        QTemporaryDir dir;
        const QString project = QFileInfo(dir.path()).canonicalFilePath();
        CreateSandboxRequest base;
        base.policy = parse(R"({"version": 1, "network": {"allow": ["pypi.org"]},
            "commands": {"rules": [{"decision": "deny", "command": "rm -rf"}]}})");
        const AgentProgram program{QStringLiteral("/usr/bin/t"), QStringLiteral("/usr/bin/t"), std::nullopt};
        const auto run
            = planAgentRun(*profile, program, {project, true, {QStringLiteral("-p"), QStringLiteral("hi")}}, base);
        QVERIFY2(run, qPrintable(run ? QString() : run.error().message));
        const QJsonObject own = *run->sandbox.policy;
        QCOMPARE(own[QStringLiteral("network")][QStringLiteral("allow")].toArray(),
            (QJsonArray{
                QStringLiteral("pypi.org"), QStringLiteral("api.example.com"), QStringLiteral("registry.npmjs.org")}));
        QCOMPARE(own[QStringLiteral("commands")][QStringLiteral("rules")].toArray().size(), 1);
        QCOMPARE(own[QStringLiteral("credentials")][QStringLiteral("grants")].toArray().size(), 1);
        QCOMPARE(run->sandbox.network, std::optional(NetworkMode::Allowlist));
        QCOMPARE(run->exec.argv,
            (QStringList{
                QStringLiteral("/usr/bin/t"), QStringLiteral("--yolo"), QStringLiteral("-p"), QStringLiteral("hi")}));
        QCOMPARE(run->exec.forAgent, QStringLiteral("t"));
        QCOMPARE(run->exec.env, (QList<QPair<QString, QString>>{{QStringLiteral("A"), QStringLiteral("1")}}));
        // A project under /tmp (the sandbox's own) is at /project/NAME, writable, the working directory.
        QCOMPARE(run->projectPath, QStringLiteral("/project/") + QFileInfo(project).fileName());
        QCOMPARE(run->exec.cwd, run->projectPath);
        QCOMPARE(run->sandbox.mounts.size(), 1);
        QVERIFY(run->sandbox.mounts.first().writable);

        // The key goes through the egress proxy: a network of another kind is refused.
        base.network = NetworkMode::Full;
        const auto full = planAgentRun(*profile, program, {}, base);
        QVERIFY(!full);
        QVERIFY2(full.error().message.contains(QLatin1String("--network full")), qPrintable(full.error().message));
        // Unless asked for read-write, the project is copy-on-write: its edits wait for a review. The
        // sandbox is named for the agent and the project, with a random end.
        base.network.reset();
        const auto reviewed = planAgentRun(*profile, program, {project, false, {}}, base);
        QVERIFY(reviewed);
        QVERIFY(reviewed->sandbox.mounts.first().copyOnWrite && reviewed->sandbox.mounts.first().writable);
        QVERIFY(!run->sandbox.mounts.first().copyOnWrite);
        QVERIFY2(QRegularExpression(QStringLiteral("^t-%1-[0-9a-f]{4}$").arg(QFileInfo(project).fileName().toLower()))
                     .match(reviewed->sandbox.name)
                     .hasMatch(),
            qPrintable(reviewed->sandbox.name));
        // Elsewhere (not the sandbox's own /tmp), at the same path as on the host.
        QTemporaryDir elsewhere(QStringLiteral("/var/tmp/airlock-project-XXXXXX"));
        const QString there = QFileInfo(elsewhere.path()).canonicalFilePath();
        const auto same = planAgentRun(*profile, program, {there, true, {}}, base);
        QVERIFY2(same, qPrintable(same ? QString() : same.error().message));
        QCOMPARE(same->projectPath, there);
        QCOMPARE(same->exec.cwd, there);
        // The name under /project is the folder's own, however it was written.
        const auto slash = planAgentRun(*profile, program, {project + QStringLiteral("/"), true, {}}, base);
        QVERIFY(slash);
        QCOMPARE(slash->projectPath, QStringLiteral("/project/") + QFileInfo(project).fileName());
        // A program inside the project would be writable through it: refused.
        const AgentProgram inside{project + QStringLiteral("/node_modules/a/cli.js"),
            QStringLiteral("/opt/airlock/t/node_modules/a/cli.js"),
            Mount{project + QStringLiteral("/node_modules"), QStringLiteral("/opt/airlock/t/node_modules"), false}};
        const auto writable = planAgentRun(*profile, inside, {project, true, {}}, base);
        QVERIFY(!writable);
        QVERIFY2(writable.error().message.contains(QLatin1String("would make its program writable")),
            qPrintable(writable.error().message));
        // A program under /usr, inside a person's writable --mount: refused too.
        CreateSandboxRequest mounted = base;
        mounted.mounts = {Mount{QStringLiteral("/usr"), QStringLiteral("/data"), true}};
        const AgentProgram system{QStringLiteral("/usr/bin/env"), QStringLiteral("/usr/bin/env"), std::nullopt};
        const auto viaMount = planAgentRun(*profile, system, {}, mounted);
        QVERIFY(!viaMount);
        QVERIFY2(viaMount.error().message.contains(QLatin1String("would make its program writable")),
            qPrintable(viaMount.error().message));
        mounted.mounts.first().writable = false; // read-only: nothing to refuse
        QVERIFY(planAgentRun(*profile, system, {}, mounted));
        // A project that is or holds the home is more than a project.
        const QByteArray home = qgetenv("HOME");
        qputenv("HOME", project.toLocal8Bit());
        const auto homeProject = planAgentRun(*profile, program, {project, true, {}}, base);
        const auto aboveHome = planAgentRun(*profile, program, {QFileInfo(project).path(), true, {}}, base);
        qputenv("HOME", home);
        QVERIFY(!homeProject && !aboveHome);
        QVERIFY2(homeProject.error().message.contains(QLatin1String("more than a project")),
            qPrintable(homeProject.error().message));
        const auto notADir = planAgentRun(*profile, program, {dir.filePath(QStringLiteral("none")), true, {}}, base);
        QVERIFY(!notADir);
        QCOMPARE(notADir.error().code, ErrorCode::NotFound);
    }
};

QTEST_GUILESS_MAIN(TestAgentProfile)
#include "tst_agent_profile.moc"
