// SPDX-License-Identifier: Apache-2.0
// What airlockctl makes of what a person types: bad input refused with the reason and exit 2,
// sizes, durations and limits' ranges, completion by position, the console's --version without a
// display, usage errors, options after the sandbox's name, rm --keep. (Commands running, their
// streams, terminals and signals are tst_cli.)
#include "CliFixture.h"
#include "util/Version.h"
#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalServer>
#include <QLocalSocket>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestCliInput final : public QObject, public CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // ---- bad input ----

    void badInputIsRefusedWithTheReason_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("an invalid sandbox name is a usage error")
            << QStringList{QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("Bad/Name")} << 2
            << "airlockctl: invalid sandbox name 'Bad/Name': use 1-63 characters a-z 0-9 _ . -, starting with a letter "
               "or digit\n";
        QTest::newRow("exec in an unknown sandbox is not found") << QStringList{QStringLiteral("exec"),
            QStringLiteral("nosuch"), QStringLiteral("--"),
            QStringLiteral("true")} << 3 << "airlockctl: no sandbox named 'nosuch' (see 'airlockctl ls')\n";
        QTest::newRow("info of an unknown sandbox is not found") << QStringList{QStringLiteral("info"),
            QStringLiteral("nosuch")} << 3 << "airlockctl: no sandbox named 'nosuch' (see 'airlockctl ls')\n";
        QTest::newRow("rm of an unknown sandbox is not found") << QStringList{QStringLiteral("rm"),
            QStringLiteral("nosuch")} << 3 << "airlockctl: no sandbox named 'nosuch' (see 'airlockctl ls')\n";
        QTest::newRow("a limit that is not a size names --memory")
            << QStringList{QStringLiteral("create"), QStringLiteral("--memory"), QStringLiteral("lots")} << 2
            << "airlockctl: --memory: invalid size 'lots': expected a positive number (example: 512M); it takes from "
               "8.0 MiB to 4096 TiB\n";
        QTest::newRow("a limit with an unknown unit names --memory")
            << QStringList{QStringLiteral("create"), QStringLiteral("--memory"), QStringLiteral("5X")} << 2
            << "airlockctl: --memory: invalid size '5X': unknown unit 'X' (example: 512M); it takes from 8.0 MiB to "
               "4096 TiB\n";
        QTest::newRow("a size beyond 64 bits names --memory and its range")
            << QStringList{QStringLiteral("create"), QStringLiteral("--memory"), QStringLiteral("1e30")} << 2
            << "airlockctl: --memory: invalid size '1e30': too large (example: 512M); it takes from 8.0 MiB to 4096 "
               "TiB\n";
        QTest::newRow("more processes than the kernel has pids is a range error, not a cgroup failure")
            << QStringList{QStringLiteral("create"), QStringLiteral("--pids"), QStringLiteral("1e9")} << 2
            << "airlockctl: --pids 1e9: 1000000000 is out of range: from 2 to 4194304\n";
        QTest::newRow("a negative count names --pids and its range")
            << QStringList{QStringLiteral("create"), QStringLiteral("--pids"), QStringLiteral("-1")} << 2
            << "airlockctl: --pids: invalid count '-1': must be greater than zero (example: 256); it takes from 2 to "
               "4194304\n";
        QTest::newRow("more open files than fs.nr_open is a range error")
            << QStringList{QStringLiteral("create"), QStringLiteral("--open-files"), QStringLiteral("2000000")} << 2
            << "airlockctl: --open-files 2000000: 2000000 is out of range: from 1 to 1048576\n";
        QTest::newRow("an unknown command is a usage error")
            << QStringList{QStringLiteral("frobnicate")} << 2
            << "airlockctl: unknown command 'frobnicate' (see 'airlockctl --help')\n";
        QTest::newRow("a duplicate name already exists")
            << QStringList{QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("cli")} << 2
            << "airlockctl: a sandbox named 'cli' already exists; pick another --name or remove it with 'airlockctl rm "
               "cli'\n";
        QTest::newRow("a mount of a missing host path is refused")
            << QStringList{QStringLiteral("create"), QStringLiteral("--mount"),
                   QStringLiteral("/no/such/airlock/path:/data")}
            << 2 << "airlockctl: mount source '/no/such/airlock/path' does not exist\n";
        QTest::newRow("a mount onto a reserved path is refused")
            << QStringList{QStringLiteral("create"), QStringLiteral("--mount"), QStringLiteral("/usr:/workspace/usr")}
            << 2
            << "airlockctl: mount target '/workspace/usr' is reserved by Airlock (/, /proc, /dev, /tmp, /workspace, "
               "/.airlock, /home/sandbox and its startup files); "
               "choose another path\n";
        QTest::newRow("an unknown network mode is refused")
            << QStringList{QStringLiteral("create"), QStringLiteral("--network"), QStringLiteral("sideways")} << 2
            << "airlockctl: invalid --network 'sideways': expected none, allowlist or full\n";
        QTest::newRow("an invalid variable name is refused")
            << QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("--env"), QStringLiteral("1X=2"),
                   QStringLiteral("--"), QStringLiteral("true")}
            << 2
            << "airlockctl: invalid environment assignment '1X=2': expected NAME=VALUE with NAME made of letters, "
               "digits and _\n";
        QTest::newRow("an assignment without = is refused")
            << QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("--env"), QStringLiteral("NOVALUE"),
                   QStringLiteral("--"), QStringLiteral("true")}
            << 2
            << "airlockctl: invalid environment assignment 'NOVALUE': expected NAME=VALUE with NAME made of letters, "
               "digits and _\n";
        QTest::newRow("an invalid --timeout is refused")
            << QStringList{QStringLiteral("exec"), m_sb, QStringLiteral("--timeout"), QStringLiteral("soon"),
                   QStringLiteral("--"), QStringLiteral("true")}
            << 2 << "airlockctl: --timeout: invalid duration 'soon': expected a positive number (example: 30s)\n";
        QTest::newRow("a relative --cwd is refused") << QStringList{QStringLiteral("exec"), m_sb,
            QStringLiteral("--cwd"), QStringLiteral("tmp"), QStringLiteral("--"),
            QStringLiteral("true")} << 2 << "airlockctl: /cwd: expected an absolute path inside the sandbox\n";
        QTest::newRow("exec without a command is refused") << QStringList{
            QStringLiteral("exec"), m_sb} << 2 << "airlockctl: no command given: put it after --, e.g. -- ls -la\n";
        QTest::newRow("cp between two host paths is refused")
            << QStringList{QStringLiteral("cp"), QStringLiteral("/etc/hostname"), QStringLiteral("/tmp/x")} << 2
            << "airlockctl: exactly one side must be SANDBOX:PATH (e.g. cp ./data.csv sb1:/workspace/)\n";
    }
    void badInputIsRefusedWithTheReason()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const int before = sandboxCount();
        const CliResult r = ctl(args);
        QVERIFY2(r.exitCode == exitCode, qPrintable(r.describe()));
        QCOMPARE(QString::fromUtf8(r.err), message);
        QCOMPARE(r.out, QByteArray());
        QCOMPARE(sandboxCount(), before); // nothing was created
    }

    void sizesTakeDecimalsAndDurationsDays()
    {
        const CliResult created = ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("decimal"),
            QStringLiteral("--memory"), QStringLiteral("1.5G"), QStringLiteral("--exec-timeout"), QStringLiteral("1d"),
            QStringLiteral("--cpu-time"), QStringLiteral("0.5d")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const CliResult info = ctl({QStringLiteral("info"), QStringLiteral("decimal"), QStringLiteral("--json")});
        const QJsonObject limits
            = QJsonDocument::fromJson(info.out).object().value(QStringLiteral("limits")).toObject();
        QCOMPARE(limits.value(QStringLiteral("memoryBytes")).toObject().value(QStringLiteral("value")).toDouble(),
            1536.0 * 1024 * 1024);
        QCOMPARE(
            limits.value(QStringLiteral("wallMs")).toObject().value(QStringLiteral("value")).toDouble(), 86'400'000.0);
        QCOMPARE(
            limits.value(QStringLiteral("cpuSeconds")).toObject().value(QStringLiteral("value")).toDouble(), 43'200.0);
        QCOMPARE(ctl({QStringLiteral("rm"), QStringLiteral("decimal")}).exitCode, 0);
        for (const char *option : {"--timeout", "--lease"}) {
            const CliResult r = ctl({QStringLiteral("exec"), m_sb, QString::fromLatin1(option), QStringLiteral("1d"),
                QStringLiteral("--no-stdin"), QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("day")});
            QVERIFY2(r.exitCode == 0 && r.out == "day\n", qPrintable(r.describe()));
        }
    }

    // The completion as bash runs it (the script airlockctl writes, sourced; the function called
    // with COMP_WORDS), against this daemon: sandbox names only where a sandbox goes.
    void completionOffersSandboxesOnlyWhereOneGoes_data()
    {
        QTest::addColumn<QString>("line"); // the last word is the one being completed
        QTest::addColumn<QString>("offered");
        QTest::newRow("exec takes a sandbox") << "exec c"
                                              << "cli";
        QTest::newRow("rm takes any number") << "rm cli c"
                                             << "cli";
        QTest::newRow("--sandbox takes one") << "history --sandbox c"
                                             << "cli";
        QTest::newRow("a policy sub-command, then its sandbox") << "policy show c"
                                                                << "cli";
        QTest::newRow("policy's sub-commands") << "policy c"
                                               << "check";
        QTest::newRow("a command is not a sandbox") << "c"
                                                    << "create cp";
        QTest::newRow("the command after -- is the shell's to complete") << "exec cli -- c"
                                                                         << "";
        QTest::newRow("the value of --name is not a sandbox") << "create --name c"
                                                              << "";
        QTest::newRow("the value of --timeout is not a sandbox") << "exec cli --timeout c"
                                                                 << "";
        QTest::newRow("create takes no sandbox") << "create c"
                                                 << "";
        QTest::newRow("cp's paths are files") << "cp c"
                                              << "";
        QTest::newRow("exec's second word is not a sandbox") << "exec cli c"
                                                             << "";
        QTest::newRow("--host takes a saved host") << "--host l"
                                                   << "local";
        QTest::newRow("hosts use takes a saved host") << "hosts use l"
                                                      << "local";
        QTest::newRow("hosts' sub-commands") << "hosts u"
                                             << "use";
    }
    void completionOffersSandboxesOnlyWhereOneGoes()
    {
        QFETCH(QString, line);
        QFETCH(QString, offered);
        const QString script = hostFile(QStringLiteral("completion.bash"));
        if (!QFileInfo::exists(script)) {
            const CliResult written = ctl({QStringLiteral("--completion"), QStringLiteral("bash")});
            QVERIFY2(written.exitCode == 0 && writeFile(script, written.out), qPrintable(written.describe()));
        }
        QProcess bash;
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("PATH"), binDir() + QLatin1Char(':') + env.value(QStringLiteral("PATH")));
        bash.setProcessEnvironment(env);
        QStringList words{QStringLiteral("airlockctl")};
        words += line.split(QLatin1Char(' '));
        bash.start(QStringLiteral("bash"),
            QStringList{QStringLiteral("-c"),
                QStringLiteral("source \"$1\"; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _airlockctl; "
                               "echo \"${COMPREPLY[*]}\""),
                QStringLiteral("bash"), script}
                + words);
        QVERIFY(bash.waitForFinished(20000));
        QCOMPARE(QString::fromUtf8(bash.readAllStandardOutput()).trimmed(), offered);
        QCOMPARE(bash.readAllStandardError(), QByteArray());
    }

    void theConsoleAnswersVersionAndHelpWithoutADisplay()
    {
        const QString console = binDir() + QStringLiteral("/airlock");
        if (!QFileInfo::exists(console))
            QSKIP("the desktop console is not built (AIRLOCK_BUILD_GUI=OFF)");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
            env.remove(QString::fromLatin1(name));
        for (const char *option : {"--version", "--help"}) {
            QProcess p;
            p.setProcessEnvironment(env);
            p.start(console, {QString::fromLatin1(option)});
            QVERIFY(p.waitForFinished(20000));
            const QByteArray out = p.readAllStandardOutput();
            QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
                qPrintable(QStringLiteral("%1: exit %2, %3")
                               .arg(QLatin1String(option))
                               .arg(p.exitCode())
                               .arg(QString::fromUtf8(p.readAllStandardError()))));
            if (qstrcmp(option, "--version") == 0)
                QCOMPARE(out, QByteArray("airlock " + airlock::version().toUtf8() + "\n"));
            else
                QVERIFY2(out.contains("--no-autostart"), out.constData());
        }
    }

    void unknownOptionIsAUsageError()
    {
        const CliResult r = ctl({QStringLiteral("ls"), QStringLiteral("--bogus")});
        QVERIFY2(r.exitCode == 2, qPrintable(r.describe()));
        QVERIFY2(r.err.contains("Unknown option 'bogus'") && r.err.contains("(see 'airlockctl ls --help')"),
            qPrintable(r.describe()));
        const CliResult global = ctl({QStringLiteral("--bogus"), QStringLiteral("ls")});
        QVERIFY2(global.exitCode == 2, qPrintable(global.describe()));
        QCOMPARE(QString::fromUtf8(global.err),
            QStringLiteral("airlockctl: unknown option --bogus (see 'airlockctl --help')\n"));
    }

    void optionsMayFollowTheSandboxName_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QByteArray>("stdoutStart");
        QTest::newRow("info NAME --json: the option after the name") << QStringList{QStringLiteral("info"),
            QStringLiteral("cli"), QStringLiteral("--json")} << 0 << QByteArray("{\n");
        QTest::newRow("exec NAME --no-stdin -- ...: an exec option after the name") << QStringList{
            QStringLiteral("exec"), QStringLiteral("cli"), QStringLiteral("--no-stdin"), QStringLiteral("--"),
            QStringLiteral("echo"), QStringLiteral("ok")} << 0 << QByteArray("ok\n");
        QTest::newRow("exec NAME CMD --json without --: options after the command's first word are the command's")
            << QStringList{QStringLiteral("exec"), QStringLiteral("cli"), QStringLiteral("-n"),
                   QStringLiteral("printf"), QStringLiteral("%s|"), QStringLiteral("--json"), QStringLiteral("-la")}
            << 0 << QByteArray("--json|-la|");
        QTest::newRow("exec NAME -- CMD --help: after -- nothing is airlockctl's")
            << QStringList{QStringLiteral("exec"), QStringLiteral("cli"), QStringLiteral("-n"), QStringLiteral("--"),
                   QStringLiteral("printf"), QStringLiteral("%s"), QStringLiteral("--help")}
            << 0 << QByteArray("--help");
    }
    void optionsMayFollowTheSandboxName()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QByteArray, stdoutStart);
        const CliResult r = ctl(args);
        QVERIFY2(r.exitCode == exitCode, qPrintable(r.describe()));
        QVERIFY2(r.out.startsWith(stdoutStart), qPrintable(r.describe()));
        if (stdoutStart.startsWith('{')) {
            QString error;
            QCOMPARE(parseJson(r.out, &error).object().value(QStringLiteral("name")).toString(), QStringLiteral("cli"));
            QVERIFY2(error.isEmpty(), qPrintable(error));
        } else {
            QCOMPARE(r.out, stdoutStart);
        }
        QCOMPARE(r.err, QByteArray());
    }

    void rmKeepKeepsTheWorkspace_data()
    {
        QTest::addColumn<QStringList>("rmArgs"); // %1 = the sandbox
        QTest::newRow("rm --keep NAME") << QStringList{
            QStringLiteral("rm"), QStringLiteral("--keep"), QStringLiteral("%1")};
        QTest::newRow("rm NAME --keep (as in the usage line)")
            << QStringList{QStringLiteral("rm"), QStringLiteral("%1"), QStringLiteral("--keep")};
    }
    void rmKeepKeepsTheWorkspace()
    {
        QFETCH(QStringList, rmArgs);
        const QString name = QStringLiteral("keep");
        const CliResult created
            = ctl({QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--name"), name});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const QJsonObject c = QJsonDocument::fromJson(created.out).object();
        const QString workspace = c.value(QStringLiteral("workspace")).toString(),
                      id = c.value(QStringLiteral("id")).toString();
        QCOMPARE(ctl({QStringLiteral("exec"), name, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("sh"),
                         QStringLiteral("-c"), QStringLiteral("echo precious > /workspace/precious.txt")})
                     .exitCode,
            0);
        const CliResult r = ctl(rmArgs.replaceInStrings(QStringLiteral("%1"), name));
        QCOMPARE(ctl({QStringLiteral("info"), name}).exitCode, 3); // the sandbox is gone either way
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        static const QRegularExpression kept(QStringLiteral("^keep \\(workspace kept at (/.+)\\)\n$"));
        const auto m = kept.match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), qPrintable(r.describe()));
        const QString keptAt = m.captured(1);
        QVERIFY2(keptAt.endsWith(QStringLiteral("/keep-") + id), qPrintable(keptAt));
        QCOMPARE(readFile(keptAt + QStringLiteral("/precious.txt")), QByteArray("precious\n"));
        QVERIFY(!QFileInfo::exists(workspace)); // moved, not copied
        QVERIFY(QDir(keptAt).removeRecursively());
    }
};

QTEST_GUILESS_MAIN(TestCliInput)
#include "tst_cli_input.moc"
