// SPDX-License-Identifier: Apache-2.0
// airlock-guest's command line, run directly on this host: what does not fit together is refused
// by name, exit 2, before anything starts.
#include "TestDaemon.h"

#include <QProcess>
#include <QTest>

using namespace airlock::test;

class TestGuestArgs final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A command line that does not fit together is refused by name before anything starts.
    void aCommandLineThatDoesNotFitIsRefusedByName_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("error");
        const QStringList gvisor{QStringLiteral("--gvisor"), QStringLiteral("--seccomp-file"), QStringLiteral("/f")};
        QTest::newRow("egress socket without gvisor")
            << QStringList{QStringLiteral("--fd"), QStringLiteral("3"), QStringLiteral("--egress-socket"),
                   QStringLiteral("/s"), QStringLiteral("--proxy-port"), QStringLiteral("3128")}
            << QByteArray("--egress-socket is for --gvisor only (--proxy-fd hands connections over otherwise)");
        QTest::newRow("egress socket without a port")
            << gvisor + QStringList{QStringLiteral("--egress-socket"), QStringLiteral("/s")}
            << QByteArray("--proxy-port goes with --proxy-fd (not on --fd) or, under --gvisor, with --egress-socket");
        QTest::newRow("a port alone")
            << gvisor + QStringList{QStringLiteral("--proxy-port"), QStringLiteral("3128")}
            << QByteArray("--proxy-port goes with --proxy-fd (not on --fd) or, under --gvisor, with --egress-socket");
        QTest::newRow("relative egress socket")
            << gvisor + QStringList{QStringLiteral("--egress-socket"), QStringLiteral("s")}
            << QByteArray("invalid --egress-socket path: s");
        QTest::newRow("resume socket without gvisor")
            << QStringList{QStringLiteral("--fd"), QStringLiteral("3"), QStringLiteral("--resume-socket"),
                   QStringLiteral("/r")}
            << QByteArray("--resume-socket is for --gvisor only (--resume-fd and --resume-token-fd otherwise)");
        QTest::newRow("relative resume socket")
            << gvisor + QStringList{QStringLiteral("--resume-socket"), QStringLiteral("r")}
            << QByteArray("invalid --resume-socket path: r");
        QTest::newRow("gvisor with a resume descriptor")
            << gvisor + QStringList{QStringLiteral("--resume-fd"), QStringLiteral("5")}
            << QByteArray("--gvisor takes its channel from stdin and no other descriptor (--fd, --proxy-fd, --exec-fd, "
                          "--resume-fd)");
        QTest::newRow("gvisor with a proxy descriptor")
            << gvisor + QStringList{QStringLiteral("--proxy-fd"), QStringLiteral("5")}
            << QByteArray("--gvisor takes its channel from stdin and no other descriptor (--fd, --proxy-fd, --exec-fd, "
                          "--resume-fd)");
    }
    void aCommandLineThatDoesNotFitIsRefusedByName()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, error);
        QProcess guest; // with a descriptor 3 open, for --fd
        guest.start(QStringLiteral("/bin/sh"),
            QStringList{QStringLiteral("-c"), QStringLiteral("exec \"$0\" \"$@\" 3<>/dev/null"),
                binDir() + QStringLiteral("/airlock-guest")}
                + arguments);
        QVERIFY(guest.waitForFinished(10000));
        QCOMPARE(guest.exitCode(), 2);
        QCOMPARE(guest.readAllStandardError().split('\n').first(), "airlock-guest: " + error);
    }
};

QTEST_GUILESS_MAIN(TestGuestArgs)
#include "tst_guest_args.moc"
