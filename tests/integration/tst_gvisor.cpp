// SPDX-License-Identifier: Apache-2.0
// --isolation gvisor (issue 22, decision 6): asked for, it is gVisor or nothing. Where runsc is
// missing the create fails with the reason and the fix, and no sandbox of another kind is made.
#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QJsonArray>
#include <QTest>

using namespace airlock;
using namespace airlock::test;

class TestGvisor final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void withoutRunscGvisorIsRefusedWithTheFix()
    {
        TestDaemon d({QStringLiteral("--runsc"), QStringLiteral("/nonexistent/runsc")});
        QVERIFY(d.start());
        const CliResult created = d.ctl(args("create", "--name", "strong", "--isolation", "gvisor"));
        QCOMPARE(created.exitCode, 5); // no boundary
        QCOMPARE(created.err,
            QByteArray("airlockctl: --isolation gvisor needs gVisor's runsc, which is not installed at "
                       "/nonexistent/runsc: install it with 'sudo apt install runsc' (or give airlockd --runsc "
                       "PATH)\n"));
        // Never another kind instead: nothing was made, nothing runs.
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        QVERIFY(pidsWithCommandLine(QFile::encodeName(d.dataDir())).isEmpty());
        const CliResult run = d.ctl(args("run", "--isolation", "gvisor", "--", "true"));
        QCOMPARE(run.exitCode, 5);
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
        // What the daemon has, for the person to see.
        const CliResult info = d.ctl(args("info"));
        QVERIFY2(
            info.out.contains("\ngVisor:      --isolation gvisor needs gVisor's runsc"), qPrintable(info.describe()));
    }

    // Not asked for, it is namespaces (bubblewrap), and info says which runtime holds a sandbox.
    void theDefaultIsNamespacesAndInfoSaysWhichHoldsIt()
    {
        TestDaemon d;
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "plain")), QStringLiteral("plain"));
        const QJsonObject isolation
            = sandboxInfo(d, QStringLiteral("plain")).value(QStringLiteral("isolation")).toObject();
        QCOMPARE(isolation.value(QStringLiteral("runtime")).toString(), QStringLiteral("namespaces"));
        QVERIFY(isolation.value(QStringLiteral("namespaces")).toArray().contains(QStringLiteral("net")));
        const CliResult info = d.ctl(args("info", "plain"));
        QVERIFY2(info.out.contains(
                     "\nisolation:   namespaces (bubblewrap: namespaces, seccomp and Landlock on the host's kernel)\n"),
            qPrintable(info.describe()));
        QCOMPARE(d.ctl(args("create", "--name", "asked", "--isolation", "namespaces")).exitCode, 0);
        QCOMPARE(sandboxInfo(d, QStringLiteral("asked"))
                     .value(QStringLiteral("isolation"))
                     .toObject()
                     .value(QStringLiteral("runtime")),
            QJsonValue(QStringLiteral("namespaces")));
    }

    void anIsolationThatDoesNotExistIsRefusedByName()
    {
        TestDaemon d;
        QVERIFY(d.start());
        const CliResult cli = d.ctl(args("create", "--isolation", "vm"));
        QCOMPARE(cli.exitCode, 2);
        QCOMPARE(cli.err, QByteArray("airlockctl: invalid --isolation 'vm': expected namespaces or gvisor\n"));
        // The daemon's own check, for a client that sends the request itself.
        auto client = d.connect();
        QVERIFY(client);
        const auto reply = client->call(QStringLiteral("sandbox.create"),
            QJsonObject{{QStringLiteral("spec"), QJsonObject{{QStringLiteral("isolation"), QStringLiteral("vm")}}}});
        QVERIFY(!reply);
        QCOMPARE(reply.error().code, ErrorCode::InvalidArgument);
        QVERIFY2(reply.error().message.contains(QStringLiteral("/isolation: expected \"namespaces\" or \"gvisor\"")),
            qPrintable(reply.error().message));
        QCOMPARE(jsonArray(d.ctl(args("ls", "--json")).out).size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestGvisor)
#include "tst_gvisor.moc"
