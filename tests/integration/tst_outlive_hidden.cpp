// SPDX-License-Identifier: Apache-2.0
// What a sandbox whose daemon it may outlive cannot reach of airlockd's own (tst_outlive for the
// rest): the daemon's folders, covered in any mount that holds them (a sandbox could otherwise
// read another's record, or the history), and its guest's resume socket and token. Run under
// both runtimes (AIRLOCK_TEST_ISOLATION, as tst_outlive_hidden_gvisor).
#include "OutliveFixture.h"
#include "TestHelpers.h"

#include <QByteArray>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QTest>

#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestOutliveHidden : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A mount that holds airlockd's own directories (a home, ~/.local/share) shows them empty:
    // otherwise a sandbox could read another's record and take it over through its guest's
    // socket, or read the history. A mount inside them is refused.
    void airlockdsOwnDirectoriesAreHiddenInMounts()
    {
        TestDaemon d;
        QString error;
        const QString victim = startWithSandbox(d, {}, &error);
        QVERIFY2(!victim.isEmpty(), qPrintable(error));
        const QString parent = QFileInfo(d.dataDir()).path();
        const QString attacker = d.create(args("--mount", parent + QStringLiteral(":/host:ro")), &error);
        QVERIFY2(!attacker.isEmpty(), qPrintable(error));
        // As root the data directory is root's alone, out of reach of the sandbox's uid (it needs no
        // cover); a user's daemon, whose sandboxes share its uid, covers it (below).
        const CliResult look = execIn(d, attacker,
            args("sh", "-c",
                // mountinfo: the filesystem type is the field after the " - " that ends the
                // optional fields (how many there are varies by kernel and mount).
                "ls /host/airlock 2>&1; awk '$5 == \"/host/airlock\" { for (i = 7; i < NF; ++i) if ($i == \"-\") "
                "{ print $(i + 1), $6; break } }' /proc/self/mountinfo"));
        if (::geteuid() == 0)
            QVERIFY2(look.out.contains("Permission denied") && !look.out.contains("tmpfs"), look.out.constData());
        else
            QVERIFY2(look.out.endsWith("tmpfs ro,nosuid,nodev,relatime\n"), look.out.constData());
        // Not even by making its way around the cover: it is a mount point, not a folder to rename.
        QVERIFY(execIn(d, attacker, args("sh", "-c", "mv /host/airlock /host/x")).exitCode != 0);
        const CliResult inside = d.ctl(args("create", "--mount", d.dataDir() + QStringLiteral("/sandboxes:/x:ro")));
        QVERIFY(inside.exitCode != 0);
        QVERIFY2(inside.err.contains("inside airlockd's own"), inside.err.constData());
        // Written to, such a mount could move the covered folder aside and make one of its own
        // where the next sandbox's record goes: refused.
        const CliResult writable = d.ctl(args("create", "--mount", parent + QStringLiteral(":/host:rw")));
        QVERIFY(writable.exitCode != 0);
        QVERIFY2(writable.err.contains("read-write: it holds airlockd's own"), writable.err.constData());
        // Nor may another mount go inside the cover (bwrap would make its mount point there).
        const CliResult planted = d.ctl(args("create", "--mount", parent + QStringLiteral(":/host:ro"), "--mount",
            d.rootDir() + QStringLiteral(":/host/airlock/sandboxes/deadbeef0000:ro")));
        QVERIFY(planted.exitCode != 0);
        QVERIFY2(planted.err.contains("which shows airlockd's own folder (covered, or out of the sandbox's reach)"),
            planted.err.constData());
        QVERIFY(!QFileInfo::exists(d.dataDir() + QStringLiteral("/sandboxes/deadbeef0000")));
    }

    // The same for a user's own daemon, whose sandboxes run as the user: the history is right
    // there in a mounted ~/.local/share, unless covered.
    void aUsersDaemonHidesItsDirectoriesToo()
    {
        UnprivilegedDaemon u;
        QVERIFY(u.start());
        const QString share = QFileInfo(u.dataDir()).path();
        QVERIFY(QFileInfo::exists(u.dataDir() + QStringLiteral("/history.db")));
        const auto created = u.ctl(args("create", "--name", "mine", "--mount", share + QStringLiteral(":/share:ro")));
        QVERIFY2(created.first == 0, created.second.constData());
        const auto look = u.ctl(args("exec", "mine", "--", "sh", "-c",
            "ls -A /share/airlock | wc -l; cat /share/airlock/history.db 2>&1 | head -c 60"));
        QCOMPARE(look.first, 0);
        QVERIFY2(look.second.startsWith("0\ncat: /share/airlock/history.db: No such file or directory"),
            look.second.constData());
        // The person's own folder (secrets, policy, tools) too, made first when it is missing: a
        // secret stored after the sandbox was made is not there either.
        const QString config = u.home().filePath(QStringLiteral("config"));
        const auto reader = u.ctl(args("create", "--name", "reader", "--mount", config + QStringLiteral(":/cfg:ro")));
        QVERIFY2(reader.first == 0, reader.second.constData());
        QCOMPARE(u.ctl(args("secret", "set", "TOKEN"), "sekrit-value").first, 0);
        QVERIFY(QFileInfo::exists(config + QStringLiteral("/airlock/secrets.json")));
        const auto secrets = u.ctl(args("exec", "reader", "--", "ls", "-A", "/cfg/airlock"));
        QCOMPARE(secrets, (std::pair{0, QByteArray()}));
    }

    void nothingInsideTheSandboxReachesItsGuestsResumeSocket()
    {
        if (underGvisor())
            QSKIP("gVisor's guest listens for nobody: it comes back to the daemon's socket, which what runs inside "
                  "can reach (tst_gvisor_outlive's aKilledDaemonsSandboxComesBackAndNothingInsideTakesItsPlace "
                  "attacks it)");
        TestDaemon d;
        QString error;
        const QString sb = startWithSandbox(d, {}, &error);
        QVERIFY2(!sb.isEmpty(), qPrintable(error));
        const QString id = sandboxInfo(d, sb).value(QStringLiteral("id")).toString();
        // The socket is in the daemon's own directory, which the sandbox does not see; the guest's
        // descriptors cannot be taken through /proc (it is not dumpable).
        const QString socket = d.dataDir() + QStringLiteral("/sandboxes/") + id + QStringLiteral("/guest.sock");
        QVERIFY(QFileInfo(socket).exists());
        QCOMPARE(QFileInfo(d.dataDir() + QStringLiteral("/sandboxes")).permissions()
                & (QFile::ReadGroup | QFile::ReadOther | QFile::ExeGroup | QFile::ExeOther),
            QFileDevice::Permissions());
        const CliResult look = execIn(
            d, sb, args("sh", "-c", "ls /proc/1/fd 2>&1; find / -name guest.sock 2>/dev/null | head -1; echo done"));
        QVERIFY2(
            look.out.contains("Permission denied") && look.out.endsWith("done\n") && !look.out.contains("guest.sock"),
            look.out.constData());
        // The token is not on the guest's command line.
        const QByteArray token = recordOf(d, id).value(QStringLiteral("token")).toString().toLatin1();
        QCOMPARE(token.size(), 64);
        const CliResult cmdline = execIn(d, sb, args("cat", "/proc/1/cmdline"));
        QVERIFY(cmdline.out.contains("--resume-fd"));
        QVERIFY(!cmdline.out.contains(token) && !cmdline.out.contains(QByteArray::fromHex(token)));
    }
};

QTEST_GUILESS_MAIN(TestOutliveHidden)
#include "tst_outlive_hidden.moc"
