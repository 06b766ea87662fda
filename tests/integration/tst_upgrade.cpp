// SPDX-License-Identifier: Apache-2.0
// An upgrade in place (issue 19, item 1): the airlockd that runs is another release than the
// airlockctl just installed (airlockd-other-version: today's code saying it is 0.0.0-other). The
// CLI says so and works on; restarting the daemon keeps every sandbox and the commands in them.
#include "TestDaemon.h"
#include "TestHelpers.h"
#include "util/Version.h"

#include <QProcess>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestUpgrade final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anUpgradeInPlaceKeepsSandboxesAndTheirCommands()
    {
        TestDaemon d;
        d.setProgram(binDir() + QStringLiteral("/airlockd-other-version"));
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QString error;
        const QString sb = d.create(args("--name", "kept"), &error);
        QVERIFY2(sb == QLatin1String("kept"), qPrintable(error));
        QCOMPARE(execIn(d, sb, args("sh", "-c", "echo from-the-old-daemon > work.txt")).exitCode, 0);

        // The CLI works on against the other release, and says which is which and what to do.
        const CliResult listed = d.ctl(args("ls"));
        QCOMPARE(listed.exitCode, 0);
        QVERIFY2(listed.out.contains("kept"), qPrintable(listed.describe()));
        QCOMPARE(listed.err,
            QByteArray("airlockctl: airlockd is version 0.0.0-other, this airlockctl ") + airlock::version().toUtf8()
                + "; restart it to run the new one (systemctl --user restart airlockd): sandboxes go on\n");

        // A command runs across the restart that runs the new release.
        QProcess ctl;
        ctl.setProcessEnvironment(d.environment());
        ctl.start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "exec", sb, "--", "sh", "-c", "echo before; sleep 2; echo after; exit 4"));
        QVERIFY(ctl.waitForStarted(5000));
        QVERIFY(waitFor([&] { return ctl.peek(100).contains("before"); }, 10000));
        d.stop();
        QVERIFY(!pidsWithCommandLine("echo before; sleep 2").isEmpty()); // it goes on meanwhile
        d.setProgram({});
        QVERIFY(d.start());
        QVERIFY(ctl.waitForFinished(20000));
        QCOMPARE(ctl.readAllStandardOutput(), QByteArray("before\nafter\n"));
        QCOMPARE(ctl.exitCode(), 4);

        // The new release has the sandbox, its files and its history, and nothing to say about
        // versions.
        const QJsonObject info = sandboxInfo(d, sb);
        QCOMPARE(info.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        const CliResult cat = execIn(d, sb, args("cat", "work.txt"));
        QCOMPARE(cat.out, QByteArray("from-the-old-daemon\n"));
        QVERIFY2(cat.err.isEmpty(), qPrintable(cat.describe()));
        const QList<QJsonObject> adopted = storedEvents(d, QStringLiteral("sandbox.adopted"));
        QCOMPARE(adopted.size(), 1);
        const CliResult daemonInfo = d.ctl(args("info"));
        const QByteArray daemonLine = "daemon:      airlockd " + airlock::version().toUtf8() + " (pid ";
        QVERIFY2(daemonInfo.out.startsWith(daemonLine), qPrintable(daemonInfo.describe()));
        QCOMPARE(d.ctl(args("rm", sb)).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestUpgrade)
#include "tst_upgrade.moc"
