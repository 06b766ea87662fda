// SPDX-License-Identifier: Apache-2.0
// airlockctl and files: cp in both directions, byte for byte, and every way a path could leave the
// workspace refused; and `history`, what ran, read back from the daemon's SQLite history.
#include "CliFixture.h"

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
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestCliFiles final : public QObject, public CliFixture {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QString error;
        QVERIFY2(startFixture(&error), qPrintable(error));
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // ---- cp ----

    // A pipeline through airlockctl, in the daemon's environment: what a person types in a shell.
    CliResult pipeline(const QString &script) const
    {
        QProcess p;
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("CTL"), binDir() + QStringLiteral("/airlockctl --no-autostart"));
        p.setProcessEnvironment(env);
        p.start(
            QStringLiteral("bash"), {QStringLiteral("-o"), QStringLiteral("pipefail"), QStringLiteral("-c"), script});
        p.waitForFinished(60000);
        CliResult r;
        r.exitCode = p.exitCode();
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        return r;
    }

    void cpReadsAPipeToItsEndAndRefusesADevice()
    {
        // A slow writer: three MiB in pieces with pauses; all of it arrives (it stopped at the first MiB).
        const CliResult piped
            = pipeline(QStringLiteral("(for i in 1 2 3; do head -c 1048576 /dev/zero | tr '\\0' x; sleep 0.2; done) | "
                                      "$CTL cp /dev/stdin %1:/workspace/piped.txt")
                           .arg(m_sb));
        QVERIFY2(piped.exitCode == 0, qPrintable(piped.describe()));
        const CliResult size
            = sh(QStringLiteral("stat -c %s /workspace/piped.txt; tr -d x < /workspace/piped.txt | wc -c"));
        QCOMPARE(size.out, QByteArray("3145728\n0\n"));
        // A FIFO, written after cp opened it.
        const QString fifo = hostFile(QStringLiteral("fifo"));
        QVERIFY(::mkfifo(QFile::encodeName(fifo).constData(), 0600) == 0);
        const CliResult fromFifo = pipeline(
            QStringLiteral("(sleep 0.3; printf 'through a fifo' > %1) & $CTL cp %1 %2:/workspace/fifo.txt; wait")
                .arg(fifo, m_sb));
        QVERIFY2(fromFifo.exitCode == 0, qPrintable(fromFifo.describe()));
        QCOMPARE(sh(QStringLiteral("cat /workspace/fifo.txt")).out, QByteArray("through a fifo"));
        // A device never ends: refused, with the way to do it, and nothing written.
        const CliResult device
            = ctl({QStringLiteral("cp"), QStringLiteral("/dev/zero"), m_sb + QStringLiteral(":/workspace/zero")});
        QCOMPARE(device.exitCode, 2);
        QVERIFY2(device.err.contains("/dev/zero is not a regular file or a pipe"), qPrintable(device.describe()));
        QCOMPARE(sh(QStringLiteral("test -e /workspace/zero; echo $?")).out, QByteArray("1\n"));
    }

    void cpToAFullDiskFailsAndLeavesNoShortFile()
    {
        QVERIFY(sh(QStringLiteral("head -c 200000 /dev/zero > /workspace/some.bin")).exitCode == 0);
        // /dev/full: every write fails with ENOSPC; cp says so and exits nonzero (it said "copied").
        const CliResult full
            = ctl({QStringLiteral("cp"), m_sb + QStringLiteral(":/workspace/some.bin"), QStringLiteral("/dev/full")});
        QVERIFY2(full.exitCode != 0 && full.err.contains("cannot write /dev/full")
                && full.err.contains("No space left on device"),
            qPrintable(full.describe()));
        // And the device is still a device (a file is never renamed over it).
        struct stat st { };
        QVERIFY(::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
        // Through our own stdout appended to a file: the shell's descriptor is written (the file
        // keeps what it had and what the shell writes after), never renamed over.
        const QString log = hostFile(QStringLiteral("appended.log"));
        QVERIFY(writeFile(log, "before\n"));
        const CliResult appended = pipeline(
            QStringLiteral("{ echo a; $CTL cp %1:/workspace/some.bin /dev/stdout; echo b; } >> %2").arg(m_sb, log));
        QVERIFY2(appended.exitCode == 0, qPrintable(appended.describe()));
        QCOMPARE(readFile(log), QByteArray("before\na\n") + QByteArray(200000, '\0') + QByteArray("b\n"));
        // Through a symbolic link: the kernel follows it; the link stays a link.
        const QString target = hostFile(QStringLiteral("link-target")), link = hostFile(QStringLiteral("link"));
        QVERIFY(writeFile(target, "old"));
        QVERIFY(QFile::link(target, link));
        QVERIFY(ctl({QStringLiteral("cp"), m_sb + QStringLiteral(":/workspace/some.bin"), link}).exitCode == 0);
        QVERIFY(QFileInfo(link).isSymLink());
        QCOMPARE(readFile(target).size(), 200000);
        // To a file, through a pipe to a reader: the bytes arrive whole.
        const CliResult streamed
            = pipeline(QStringLiteral("$CTL cp %1:/workspace/some.bin /dev/stdout | wc -c").arg(m_sb));
        QVERIFY2(streamed.exitCode == 0, qPrintable(streamed.describe()));
        QCOMPARE(streamed.out.trimmed(), QByteArray("200000"));
    }

    void inputFromAPipeIsReadToItsEndOrRefused()
    {
        // A policy written slowly arrives whole (only what the first read returned was kept).
        const CliResult slow = pipeline(QStringLiteral(
            "(printf '{\"commands\": '; sleep 0.3; printf '{\"default\": \"deny\"}}') | $CTL policy set %1 -")
                                            .arg(m_sb));
        QVERIFY2(slow.exitCode == 0, qPrintable(slow.describe()));
        const QJsonObject shown = QJsonDocument::fromJson(
            ctl({QStringLiteral("policy"), QStringLiteral("show"), m_sb, QStringLiteral("--json")}).out)
                                      .object();
        QCOMPARE(shown.value(QStringLiteral("policy"))
                     .toObject()
                     .value(QStringLiteral("commands"))
                     .toObject()
                     .value(QStringLiteral("default"))
                     .toString(),
            QStringLiteral("deny"));
        // Past the cap: refused, nothing kept.
        const CliResult big = pipeline(
            QStringLiteral("(head -c 2000000 /dev/zero | tr '\\0' ' '; printf '{}') | $CTL policy set %1 -").arg(m_sb));
        QVERIFY2(big.exitCode == 2 && big.err.contains("the policy - is larger than 1048576 bytes: refused"),
            qPrintable(big.describe()));
        QCOMPARE(QJsonDocument::fromJson(
                     ctl({QStringLiteral("policy"), QStringLiteral("show"), m_sb, QStringLiteral("--json")}).out)
                     .object(),
            shown);
        QVERIFY(pipeline(QStringLiteral("printf '{}' | $CTL policy set %1 -").arg(m_sb)).exitCode == 0);
        // A secret written in two pieces is both pieces: the sandbox granted it sees 12 bytes.
        const CliResult secret
            = pipeline(QStringLiteral("(printf 'first-'; sleep 0.3; printf 'second') | $CTL secret set SLOW_SECRET"));
        QVERIFY2(secret.exitCode == 0, qPrintable(secret.describe()));
        const QString policy = hostFile(QStringLiteral("grant.json"));
        QVERIFY(writeFile(policy, R"({"credentials": {"grants": [{"secret": "SLOW_SECRET", "env": "SLOW"}]}})"));
        QString error;
        const QString granted = m_daemon->create(
            {QStringLiteral("--name"), QStringLiteral("slow-secret"), QStringLiteral("--policy"), policy}, &error);
        QVERIFY2(granted == QLatin1String("slow-secret"), qPrintable(error));
        const CliResult seen = ctl({QStringLiteral("exec"), granted, QStringLiteral("--no-stdin"), QStringLiteral("--"),
            QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("printf %s \"$SLOW\" | wc -c")});
        QCOMPARE(seen.out.trimmed(), QByteArray("12"));
        QCOMPARE(ctl({QStringLiteral("rm"), granted}).exitCode, 0);
    }

    void cpRoundTripIsByteIdentical()
    {
        QByteArray data(3 * 1024 * 1024 + 123, Qt::Uninitialized);
        QRandomGenerator rng(1234);
        for (char &c : data)
            c = char(rng.bounded(256));
        const QString src = hostFile(QStringLiteral("big.bin")), back = hostFile(QStringLiteral("big.back"));
        QVERIFY(writeFile(src, data));
        const CliResult up = ctl({QStringLiteral("cp"), src, m_sb + QStringLiteral(":/workspace/big.bin")});
        QVERIFY2(up.exitCode == 0, qPrintable(up.describe()));
        // The sandbox sees the same bytes (not just a symmetric round trip).
        const QByteArray sha = QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex();
        const CliResult sum = sh(QStringLiteral("sha256sum < /workspace/big.bin; stat -c '%s %u' /workspace/big.bin"));
        QVERIFY2(sum.exitCode == 0, qPrintable(sum.describe()));
        QCOMPARE(sum.out, sha + "  -\n" + QByteArray::number(data.size()) + " 1000\n");
        const CliResult down = ctl({QStringLiteral("cp"), m_sb + QStringLiteral(":big.bin"), back});
        QVERIFY2(down.exitCode == 0, qPrintable(down.describe()));
        const QByteArray got = readFile(back);
        QCOMPARE(got.size(), data.size());
        QVERIFY(got == data);
        // A second, shorter upload truncates instead of leaving the old tail behind.
        QVERIFY(writeFile(src, "short"));
        QCOMPARE(ctl({QStringLiteral("cp"), src, m_sb + QStringLiteral(":big.bin")}).exitCode, 0);
        QCOMPARE(sh(QStringLiteral("cat big.bin")).out, QByteArray("short"));
    }

    void cpIntoADirectoryUsesTheFileName()
    {
        const QString src = hostFile(QStringLiteral("named.txt"));
        QVERIFY(writeFile(src, "named content\n"));
        const CliResult r
            = ctl({QStringLiteral("cp"), QStringLiteral("--json"), src, m_sb + QStringLiteral(":/workspace/")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value(QStringLiteral("path")).toString(), QStringLiteral("/workspace/named.txt"));
        QCOMPARE(o.value(QStringLiteral("bytes")).toInt(), 14);
        QCOMPARE(sh(QStringLiteral("cat /workspace/named.txt")).out, QByteArray("named content\n"));
        // And downloading into a host directory uses the sandbox file's name.
        QTemporaryDir into;
        const CliResult down = ctl({QStringLiteral("cp"), m_sb + QStringLiteral(":named.txt"), into.path()});
        QVERIFY2(down.exitCode == 0, qPrintable(down.describe()));
        QCOMPARE(readFile(into.filePath(QStringLiteral("named.txt"))), QByteArray("named content\n"));
    }

    void cpRefusesEscapes_data()
    {
        QTest::addColumn<QString>("setup"); // run in the sandbox first
        QTest::addColumn<bool>("upload");
        QTest::addColumn<QString>("sandboxPath");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("reading '..' is refused") << "" << false << "../x" << 6 << "'../x' contains '..'; refused";
        QTest::newRow("writing '..' is refused")
            << "" << true << "/workspace/a/../../x" << 6 << "'/workspace/a/../../x' contains '..'; refused";
        QTest::newRow("reading an absolute path outside the workspace is refused")
            << "" << false << "/etc/passwd" << 6
            << "'/etc/passwd' is outside the workspace: cp reaches only /workspace";
        QTest::newRow("writing an absolute path outside the workspace is refused")
            << "" << true << "/tmp/x" << 6 << "'/tmp/x' is outside the workspace: cp reaches only /workspace";
        QTest::newRow("reading through a symlink that leads out is refused")
            << "ln -sfn /etc /workspace/esc" << false << "esc/passwd" << 6
            << "'esc/passwd' resolves outside the workspace (a symlink leads out); refused";
        QTest::newRow("a symlink to a host file is refused")
            << "ln -sfn /etc/passwd /workspace/pw" << false << "pw" << 6
            << "'pw' resolves outside the workspace (a symlink leads out); refused";
        QTest::newRow("a relative symlink that climbs out is refused")
            << "ln -sfn ../../../../../../etc /workspace/up" << false << "up/passwd" << 6
            << "'up/passwd' resolves outside the workspace (a symlink leads out); refused";
        QTest::newRow("a FIFO is refused at once, not read forever")
            << "rm -f /workspace/p; mkfifo /workspace/p" << false << "p" << 2 << "'p' is not a regular file";
        QTest::newRow("a missing file is not found")
            << "" << false << "nope.txt" << 3 << "'nope.txt' does not exist in the workspace";
    }
    void cpRefusesEscapes()
    {
        QFETCH(QString, setup);
        QFETCH(bool, upload);
        QFETCH(QString, sandboxPath);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        if (!setup.isEmpty()) {
            const CliResult s = sh(setup);
            QVERIFY2(s.exitCode == 0, qPrintable(s.describe()));
        }
        const QString local = hostFile(QStringLiteral("refused-%1")
                                           .arg(QString::fromUtf8(QTest::currentDataTag()))
                                           .replace(QLatin1Char(' '), QLatin1Char('_'))
                                           .left(200));
        if (upload)
            QVERIFY(writeFile(local, "payload"));
        QElapsedTimer t;
        t.start();
        const QString remote = m_sb + QLatin1Char(':') + sandboxPath;
        const CliResult r = upload ? ctl({QStringLiteral("cp"), local, remote}, {}, 10000)
                                   : ctl({QStringLiteral("cp"), remote, local}, {}, 10000);
        QVERIFY2(!r.crashed, qPrintable(QStringLiteral("cp hung or crashed: ") + r.describe()));
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
        QVERIFY2(r.exitCode == exitCode, qPrintable(r.describe()));
        QCOMPARE(QString::fromUtf8(r.err), QStringLiteral("airlockctl: ") + message + QLatin1Char('\n'));
        QCOMPARE(r.out, QByteArray());
        if (!upload)
            QVERIFY2(!QFileInfo::exists(local), "a refused download still created the host file");
    }

    void cpCannotWriteThroughASymlinkOntoTheHost()
    {
        QVERIFY(sh(QStringLiteral("ln -sfn /etc /workspace/esc")).exitCode == 0);
        const QString name = QStringLiteral("airlock-evil-%1").arg(::getpid());
        const QString hostTarget = QStringLiteral("/etc/") + name;
        QFile::remove(hostTarget);
        const QString src = hostFile(QStringLiteral("evil"));
        QVERIFY(writeFile(src, "owned"));
        for (const QString &path : QStringList{
                 QStringLiteral("esc/") + name, QStringLiteral("/workspace/esc/") + name, QStringLiteral("esc")}) {
            const CliResult r = ctl({QStringLiteral("cp"), src, m_sb + QLatin1Char(':') + path});
            QVERIFY2(r.exitCode == 6, qPrintable(path + QStringLiteral(": ") + r.describe()));
            QVERIFY2(r.err.contains("(a symlink leads out); refused"), qPrintable(r.describe()));
            QVERIFY2(!QFileInfo::exists(hostTarget), "cp wrote through the symlink onto the host");
            QVERIFY(!QFileInfo::exists(QStringLiteral("/etc/evil")));
        }
        // A symlink to a host *file*: overwriting it must not touch the file.
        const QString victim = hostFile(QStringLiteral("victim"));
        QVERIFY(writeFile(victim, "original"));
        QVERIFY(sh(QStringLiteral("ln -sfn %1 /workspace/victim").arg(victim)).exitCode == 0);
        const CliResult r = ctl({QStringLiteral("cp"), src, m_sb + QStringLiteral(":victim")});
        QVERIFY2(r.exitCode == 6, qPrintable(r.describe()));
        QCOMPARE(readFile(victim), QByteArray("original"));
    }

    void cpIntoAFifoDoesNotHang()
    {
        QVERIFY(sh(QStringLiteral("rm -f /workspace/p; mkfifo /workspace/p")).exitCode == 0);
        const QString src = hostFile(QStringLiteral("into-fifo"));
        QVERIFY(writeFile(src, "data"));
        QElapsedTimer t;
        t.start();
        const CliResult r = ctl({QStringLiteral("cp"), src, m_sb + QStringLiteral(":p")}, {}, 10000);
        QVERIFY2(!r.crashed && t.elapsed() < 5000, qPrintable(r.describe()));
        // Opened non-blocking, a FIFO without a reader fails at once (ENXIO): refused like any non-file.
        QVERIFY2(r.exitCode == 2, qPrintable(r.describe()));
        QCOMPARE(QString::fromUtf8(r.err), QStringLiteral("airlockctl: 'p' is not a regular file\n"));
    }

    void cpOfAGrowingFileStopsAtItsSizeWhenTheCopyBegan()
    {
        // A sandbox that keeps appending must not make the copy run (and fill the host disk) forever.
        const CliResult created = ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("grow")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        QProcess grower;
        grower.setProcessEnvironment(m_daemon->environment());
        grower.start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("exec"), QStringLiteral("grow"), QStringLiteral("-n"), QStringLiteral("--"),
                QStringLiteral("sh"), QStringLiteral("-c"),
                QStringLiteral("head -c 3000000 /dev/zero > /workspace/g; while :; do head -c 65536 /dev/zero >> "
                               "/workspace/g; done")});
        QVERIFY(waitFor(
            [&] {
                return ctl({QStringLiteral("exec"), QStringLiteral("grow"), QStringLiteral("-n"), QStringLiteral("--"),
                               QStringLiteral("sh"), QStringLiteral("-c"),
                               QStringLiteral("test $(stat -c %s /workspace/g) -ge 3000000 && echo y")})
                    .out.startsWith("y");
            },
            10000));
        const QString dst = hostFile(QStringLiteral("grown"));
        QElapsedTimer t;
        t.start();
        const CliResult r = ctl({QStringLiteral("cp"), QStringLiteral("grow:g"), dst}, {}, 20000);
        const qint64 elapsed = t.elapsed();
        ctl({QStringLiteral("rm"), QStringLiteral("grow")});
        grower.waitForFinished(5000);
        QVERIFY2(r.exitCode == 0 && elapsed < 10000, qPrintable(r.describe()));
        QVERIFY(QFileInfo(dst).size() >= 3000000);
        QVERIFY2(QFileInfo(dst).size() < 200 * 1024 * 1024, qPrintable(QString::number(QFileInfo(dst).size())));
    }

    void cpOfAMissingHostFileIsNotFound()
    {
        const CliResult r
            = ctl({QStringLiteral("cp"), hostFile(QStringLiteral("does-not-exist")), m_sb + QStringLiteral(":x")});
        QVERIFY2(r.exitCode == 3, qPrintable(r.describe()));
        QVERIFY2(r.err.startsWith(QByteArray(QByteArray("airlockctl: cannot read ")
                     + hostFile(QStringLiteral("does-not-exist")).toUtf8() + ": ")),
            qPrintable(r.describe()));
        const CliResult sb = ctl({QStringLiteral("cp"), QStringLiteral("nosuch:x"), hostFile(QStringLiteral("y"))});
        QVERIFY2(sb.exitCode == 3, qPrintable(sb.describe()));
        QCOMPARE(
            QString::fromUtf8(sb.err), QStringLiteral("airlockctl: no sandbox named 'nosuch' (see 'airlockctl ls')\n"));
    }

    void uploadedExecutablesStayExecutable()
    {
        const QString script = hostFile(QStringLiteral("tool.sh"));
        QVERIFY(writeFile(script, "#!/bin/sh\necho tool ran \"$@\"\n"));
        QVERIFY(
            QFile::setPermissions(script, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        QCOMPARE(ctl({QStringLiteral("cp"), script, m_sb + QStringLiteral(":/workspace/tool.sh")}).exitCode, 0);
        const CliResult r = ctl({QStringLiteral("exec"), m_sb, QStringLiteral("-n"), QStringLiteral("--"),
            QStringLiteral("./tool.sh"), QStringLiteral("x")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.describe()));
        QCOMPARE(r.out, QByteArray("tool ran x\n"));
    }

    // cp -r (issue 19, item 7): folders both ways, each file's mode kept (a new host file less the
    // umask), symbolic links and special files skipped and said, never followed.
    void cpCopiesFoldersBothWaysKeepingModes()
    {
        QTemporaryDir tree;
        const QString top = tree.filePath(QStringLiteral("proj"));
        QVERIFY(QDir().mkpath(top + QStringLiteral("/src/deep/er")));
        QVERIFY(QDir().mkpath(top + QStringLiteral("/empty")));
        QVERIFY(writeFile(top + QStringLiteral("/run.sh"), "#!/bin/sh\necho ran\n"));
        QVERIFY(writeFile(top + QStringLiteral("/src/secret.txt"), "only mine\n"));
        QVERIFY(writeFile(top + QStringLiteral("/src/deep/er/data.bin"), QByteArray(200000, 'x')));
        QCOMPARE(::chmod(QFile::encodeName(top + QStringLiteral("/run.sh")).constData(), 0750), 0);
        QCOMPARE(::chmod(QFile::encodeName(top + QStringLiteral("/src/secret.txt")).constData(), 0600), 0);
        QCOMPARE(::chmod(QFile::encodeName(top + QStringLiteral("/src/deep/er/data.bin")).constData(), 0644), 0);
        QVERIFY(QFile::link(QStringLiteral("/etc/passwd"), top + QStringLiteral("/src/passwd-link")));
        QCOMPARE(::mkfifo(QFile::encodeName(top + QStringLiteral("/a-fifo")).constData(), 0600), 0);

        // Without -r: refused, saying how.
        const CliResult flat = ctl({QStringLiteral("cp"), top, m_sb + QStringLiteral(":/workspace/")});
        QCOMPARE(flat.exitCode, 2);
        QCOMPARE(
            QString::fromUtf8(flat.err), QStringLiteral("airlockctl: %1 is a folder; copy it with cp -r\n").arg(top));

        // Into an existing folder: as proj/ inside it.
        const CliResult up = ctl({QStringLiteral("cp"), QStringLiteral("-r"), QStringLiteral("--json"), top,
            m_sb + QStringLiteral(":/workspace/")});
        QVERIFY2(up.exitCode == 0, qPrintable(up.describe()));
        const QJsonObject summary = QJsonDocument::fromJson(up.out).object();
        QCOMPARE(summary.value(QStringLiteral("path")).toString(), QStringLiteral("/workspace/proj"));
        QCOMPARE(summary.value(QStringLiteral("files")).toInt(), 3);
        QCOMPARE(summary.value(QStringLiteral("bytes")).toInt(), 19 + 10 + 200000);
        QCOMPARE(summary.value(QStringLiteral("skipped")).toArray().size(), 2);
        QVERIFY2(up.err.contains(QByteArray("airlockctl: skipped symbolic link " + QFile::encodeName(top)
                     + "/src/passwd-link (cp copies files and folders)\n"))
                && up.err.contains(
                    QByteArray("airlockctl: skipped special file " + QFile::encodeName(top) + "/a-fifo")),
            qPrintable(up.describe()));
        const CliResult seen
            = sh(QStringLiteral("cd /workspace/proj && find . -printf '%p %y %m %s\\n' | sort && ./run.sh"));
        QVERIFY2(seen.exitCode == 0, qPrintable(seen.describe()));
        QCOMPARE(QString::fromUtf8(seen.out),
            QStringLiteral(
                ". d 755 %1\n./empty d 755 %2\n./run.sh f 750 19\n./src d 755 %3\n./src/deep d 755 %4\n"
                "./src/deep/er d 755 %5\n./src/deep/er/data.bin f 644 200000\n./src/secret.txt f 600 10\nran\n")
                .arg(QString::fromUtf8(sh(QStringLiteral("stat -c %s /workspace/proj")).out.trimmed()))
                .arg(QString::fromUtf8(sh(QStringLiteral("stat -c %s /workspace/proj/empty")).out.trimmed()))
                .arg(QString::fromUtf8(sh(QStringLiteral("stat -c %s /workspace/proj/src")).out.trimmed()))
                .arg(QString::fromUtf8(sh(QStringLiteral("stat -c %s /workspace/proj/src/deep")).out.trimmed()))
                .arg(QString::fromUtf8(sh(QStringLiteral("stat -c %s /workspace/proj/src/deep/er")).out.trimmed())));

        // Back, with what a sandbox could plant: links out of the tree and to the host's root.
        QCOMPARE(sh(QStringLiteral("ln -s /etc/shadow /workspace/proj/src/shadow && ln -s ../../../.. "
                                   "/workspace/proj/src/deep/up && mkfifo /workspace/proj/p"))
                     .exitCode,
            0);
        QTemporaryDir home;
        const QString dest = home.filePath(QStringLiteral("copy"));
        const mode_t mask = ::umask(022);
        const CliResult down = ctl({QStringLiteral("cp"), QStringLiteral("-r"), m_sb + QStringLiteral(":proj"), dest});
        ::umask(mask);
        QVERIFY2(down.exitCode == 0, qPrintable(down.describe()));
        QVERIFY2(down.err.contains(QByteArray("skipped symbolic link " + m_sb.toUtf8() + ":proj/src/shadow"))
                && down.err.contains(":proj/src/deep/up")
                && down.err.contains(QByteArray("skipped special file " + m_sb.toUtf8() + ":proj/p")),
            qPrintable(down.describe()));
        QCOMPARE(readFile(dest + QStringLiteral("/run.sh")), QByteArray("#!/bin/sh\necho ran\n"));
        QCOMPARE(readFile(dest + QStringLiteral("/src/deep/er/data.bin")), QByteArray(200000, 'x'));
        const auto modeOf = [](const QString &path) {
            struct stat st { };
            return ::lstat(QFile::encodeName(path).constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
        };
        QCOMPARE(modeOf(dest + QStringLiteral("/run.sh")), 0750);
        QCOMPARE(modeOf(dest + QStringLiteral("/src/secret.txt")), 0600);
        QCOMPARE(modeOf(dest + QStringLiteral("/src/deep/er/data.bin")), 0644);
        QVERIFY(QFileInfo(dest + QStringLiteral("/empty")).isDir());
        QVERIFY(!QFileInfo::exists(dest + QStringLiteral("/src/shadow"))
            && !QFileInfo(dest + QStringLiteral("/src/shadow")).isSymLink());
        QVERIFY(!QFileInfo(dest + QStringLiteral("/src/deep/up")).isSymLink()
            && !QFileInfo::exists(dest + QStringLiteral("/p")));
        // Without -r, a sandbox folder is refused the same way.
        const CliResult flatDown
            = ctl({QStringLiteral("cp"), m_sb + QStringLiteral(":proj"), home.filePath(QStringLiteral("x"))});
        QCOMPARE(flatDown.exitCode, 2);
        QCOMPARE(QString::fromUtf8(flatDown.err), QStringLiteral("airlockctl: proj is a folder; copy it with cp -r\n"));
    }

    // cp -r's folders: a sandbox that swaps each new folder for a link to a host file (an atomic
    // exchange, as fast as it can) never gets the root daemon to change that file's mode: the mode
    // is set through a descriptor of the folder made, never by its name.
    void aFolderSwappedForALinkNeverChangesAHostFilesMode()
    {
        const QString victim = hostFile(QStringLiteral("victim"));
        QVERIFY(writeFile(victim, "keep me 0600\n"));
        QCOMPARE(::chmod(QFile::encodeName(victim).constData(), 0600), 0);
        const QByteArray racer = "import ctypes, os\n"
                                 "libc = ctypes.CDLL(None, use_errno=True)\n"
                                 "os.makedirs('/workspace/race', exist_ok=True)\n"
                                 "os.chdir('/workspace/race')\n"
                                 "if not os.path.islink('.swap'):\n"
                                 "    os.symlink('"
            + QFile::encodeName(victim)
            + "', '.swap')\n"
              "while True:\n"
              "    if libc.syscall(316, -100, b'x', -100, b'.swap', 2) == 0:\n" // renameat2(RENAME_EXCHANGE)
              "        libc.syscall(316, -100, b'x', -100, b'.swap', 2)\n"
              "        if os.path.isdir('x') and not os.path.islink('x'):\n"
              "            os.rmdir('x')\n";
        QCOMPARE(ctl({QStringLiteral("exec"), m_sb, QStringLiteral("-i"), QStringLiteral("--"), QStringLiteral("sh"),
                         QStringLiteral("-c"), QStringLiteral("cat > /workspace/racer.py")},
                     racer)
                     .exitCode,
            0);
        auto running = startCtl(
            {QStringLiteral("exec"), m_sb, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("timeout"),
                QStringLiteral("60"), QStringLiteral("python3"), QStringLiteral("/workspace/racer.py")});
        QVERIFY(running->waitForStarted(5000));
        QVERIFY(
            QTest::qWaitFor([&] { return sh(QStringLiteral("test -L /workspace/race/.swap")).exitCode == 0; }, 10000));
        auto client = m_daemon->connect();
        QVERIFY(client);
        int made = 0;
        for (int attempt = 0; attempt < 20000 && made < 2000; ++attempt) {
            auto r = client->call(QStringLiteral("fs.mkdir"),
                {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("path"), QStringLiteral("race/x")},
                    {QStringLiteral("mode"), 0777}});
            made += r && !r->value(QStringLiteral("existed")).toBool();
        }
        QCOMPARE(sh(QStringLiteral("pkill python3; true")).exitCode, 0);
        qInfo("%d folders made while the sandbox swapped them", made);
        running->waitForFinished(10000);
        QVERIFY2(made >= 200, qPrintable(QStringLiteral("only %1 folders made: the race was hardly tried").arg(made)));
        struct stat st { };
        QCOMPARE(::stat(QFile::encodeName(victim).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0600);
        QCOMPARE(readFile(victim), QByteArray("keep me 0600\n"));
    }

    // A tree deeper than the walk goes is refused, not followed down (a sandbox can make one).
    void cpOfAFolderTooDeepIsRefused()
    {
        QCOMPARE(
            sh(QStringLiteral(
                   "mkdir -p /workspace/deep && cd /workspace/deep && for i in $(seq 70); do mkdir d && cd d; done"))
                .exitCode,
            0);
        QTemporaryDir home;
        const CliResult r = ctl({QStringLiteral("cp"), QStringLiteral("-r"), m_sb + QStringLiteral(":deep"),
            home.filePath(QStringLiteral("deep"))});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(QString::fromUtf8(r.err),
            QStringLiteral("airlockctl: 'deep' is more than 64 folders deep; copy a part of it\n"));
    }

    // On a terminal, cp shows how far it is (rewritten in place, cleared at the end); a pipe gets
    // none of it.
    void cpShowsProgressOnATerminal()
    {
        const QString src = hostFile(QStringLiteral("progress.bin"));
        QVERIFY(writeFile(src, QByteArray(48 * 1024 * 1024, 'p')));
        const CliResult up = m_daemon->ctlWatched({QStringLiteral("cp"), src, m_sb + QStringLiteral(":progress.bin")});
        QVERIFY2(up.exitCode == 0 && up.err.startsWith("\rcopying progress.bin  ") && up.err.contains(" of 48 MiB  ")
                && up.err.endsWith("\r\x1b[K"),
            qPrintable(up.describe()));
        const CliResult down = m_daemon->ctlWatched(
            {QStringLiteral("cp"), m_sb + QStringLiteral(":progress.bin"), hostFile(QStringLiteral("progress.back"))});
        QVERIFY2(down.exitCode == 0 && down.err.startsWith("\rcopying progress.bin  ") && down.err.endsWith("\r\x1b[K"),
            qPrintable(down.describe()));
        QCOMPARE(QFileInfo(hostFile(QStringLiteral("progress.back"))).size(), 48 * 1024 * 1024);
        const CliResult quiet = ctl({QStringLiteral("cp"), src, m_sb + QStringLiteral(":progress.bin")});
        QVERIFY2(quiet.exitCode == 0 && quiet.err.isEmpty(), qPrintable(quiet.describe()));
    }

    // What a client says about its own copy is checked: bytes it did not send are not a copy, and
    // data for a copy it does not hold ends its connection.
    void aClientCannotFakeOrCrossCopies()
    {
        auto client = m_daemon->connect();
        QVERIFY(client);
        auto opened = client->call(QStringLiteral("fs.upload"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("path"), QStringLiteral("claimed.bin")}});
        QVERIFY2(opened, qPrintable(opened ? QString() : opened.error().message));
        const quint32 transfer = quint32(opened->value(QStringLiteral("transfer")).toDouble());
        client->sendData(transfer, QByteArray(1000, 'a'));
        auto claimed = client->call(QStringLiteral("fs.finish"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("transfer"), double(transfer)},
                {QStringLiteral("bytes"), 5000}});
        QVERIFY(!claimed);
        QCOMPARE(claimed.error().message,
            QStringLiteral("'/workspace/claimed.bin': 1000 bytes arrived, 5000 were sent; the copy is incomplete"));
        // Finished (with that error): it is not open any more.
        auto again = client->call(QStringLiteral("fs.finish"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("transfer"), double(transfer)},
                {QStringLiteral("bytes"), 1000}});
        QVERIFY(!again && again.error().code == ErrorCode::InvalidArgument);
        // Another connection's copy: not this one's to write to.
        auto other = m_daemon->connect();
        auto theirs = other->call(QStringLiteral("fs.upload"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("path"), QStringLiteral("theirs.bin")}});
        QVERIFY(theirs);
        std::optional<Error> closed;
        QObject::connect(
            client.get(), &DaemonClient::disconnected, client.get(), [&](const Error &why) { closed = why; });
        client->sendData(quint32(theirs->value(QStringLiteral("transfer")).toDouble()), QByteArray("intruder"));
        QVERIFY(QTest::qWaitFor([&] { return closed.has_value(); }, 5000));
        QCOMPARE(closed->code, ErrorCode::ProtocolError);
        QVERIFY2(closed->message.startsWith(QStringLiteral("data for copy ")), qPrintable(closed->message));
        auto finished = other->call(QStringLiteral("fs.finish"),
            {{QStringLiteral("sandbox"), m_sb}, {QStringLiteral("transfer"), theirs->value(QStringLiteral("transfer"))},
                {QStringLiteral("bytes"), 0}});
        QVERIFY2(finished, qPrintable(finished ? QString() : finished.error().message));
        QCOMPARE(sh(QStringLiteral("wc -c < /workspace/theirs.bin")).out, QByteArray("0\n"));
    }

    // A workspace whose disk fills (one without a size of its own, on a disk that has less than
    // the reserve the daemon would otherwise keep): the upload stops as soon as the daemon cannot write (it says
    // so at once, not after the rest was sent) and fails with the reason, even from a pipe that
    // never ends.
    void anUploadToAFullWorkspaceStopsAndSaysWhy()
    {
        if (::geteuid() != 0)
            QSKIP("a small filesystem of its own (tmpfs) needs root");
        TestDaemon daemon({QStringLiteral("--disk-reserve"), QStringLiteral("16M")});
        // A root daemon keeps its workspaces in /var/lib/airlock/workspaces-HASH (of its data folder).
        const QString workspaces = rootWorkspacesDir(daemon.dataDir());
        QVERIFY(QDir().mkpath(workspaces));
        const QByteArray mountPoint = QFile::encodeName(workspaces);
        QCOMPARE(::mount("airlock-test", mountPoint.constData(), "tmpfs", 0, "size=96m,mode=0711"), 0);
        const auto unmount = qScopeGuard([&] {
            ::umount2(mountPoint.constData(), MNT_DETACH);
            ::rmdir(mountPoint.constData());
        });
        QVERIFY(daemon.start());
        QCOMPARE(daemon.create({QStringLiteral("--name"), QStringLiteral("small"), QStringLiteral("--disk"),
                     QStringLiteral("none")}),
            QStringLiteral("small"));
        // From a source that never ends: only the daemon's word stops the copy (else it runs
        // until `timeout` kills it, exit 124).
        QProcess p;
        QProcessEnvironment env = daemon.environment();
        env.insert(QStringLiteral("CTL"), binDir() + QStringLiteral("/airlockctl --no-autostart"));
        p.setProcessEnvironment(env);
        QElapsedTimer took;
        took.start();
        p.start(QStringLiteral("bash"),
            {QStringLiteral("-c"), QStringLiteral("yes | timeout 60 $CTL cp /dev/stdin small:endless.txt")});
        QVERIFY(p.waitForFinished(90000));
        QCOMPARE(p.exitCode(), 1);
        QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
            QStringLiteral("airlockctl: cannot write '/workspace/endless.txt': No space left on device\n"));
        qInfo("refused after %lld ms", took.elapsed());
        QCOMPARE(daemon.ctl({QStringLiteral("rm"), QStringLiteral("small")}).exitCode, 0);
        daemon.stop();
    }

    // The same as an ordinary user (no root, no chown): folders both ways, modes kept, the copy
    // back owned by the user.
    void anUnprivilegedUserCopiesFoldersKeepingModes()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to start the daemon as another, unprivileged user");
        UnprivilegedDaemon daemon;
        QVERIFY(daemon.start());
        QCOMPARE(daemon.ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("mine")}).first, 0);
        const QString proj = daemon.home().filePath(QStringLiteral("proj"));
        QVERIFY(QDir().mkpath(proj + QStringLiteral("/sub")));
        QCOMPARE(::chown(QFile::encodeName(proj).constData(), UnprivilegedDaemon::kUid, UnprivilegedDaemon::kUid), 0);
        QCOMPARE(::chown(QFile::encodeName(proj + QStringLiteral("/sub")).constData(), UnprivilegedDaemon::kUid,
                     UnprivilegedDaemon::kUid),
            0);
        const QString tool = daemon.file(QStringLiteral("proj/tool.sh"), "#!/bin/sh\necho tool ran\n");
        const QString notes = daemon.file(QStringLiteral("proj/sub/notes.txt"), "private\n");
        QCOMPARE(::chmod(QFile::encodeName(tool).constData(), 0750), 0);
        QCOMPARE(::chmod(QFile::encodeName(notes).constData(), 0600), 0);
        const auto up
            = daemon.ctl({QStringLiteral("cp"), QStringLiteral("-r"), proj, QStringLiteral("mine:/workspace/")});
        QVERIFY2(up.first == 0, up.second.constData());
        const auto seen = daemon.ctl({QStringLiteral("exec"), QStringLiteral("mine"), QStringLiteral("-n"),
            QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("stat -c '%n %a' proj/tool.sh proj/sub/notes.txt && ./proj/tool.sh")});
        QVERIFY2(seen.first == 0, seen.second.constData());
        QCOMPARE(seen.second, QByteArray("proj/tool.sh 750\nproj/sub/notes.txt 600\ntool ran\n"));
        const QString back = daemon.home().filePath(QStringLiteral("back"));
        const auto down = daemon.ctl({QStringLiteral("cp"), QStringLiteral("-r"), QStringLiteral("mine:proj"), back});
        daemon.stop();
        QVERIFY2(down.first == 0, down.second.constData());
        struct stat st { };
        QCOMPARE(::stat(QFile::encodeName(back + QStringLiteral("/tool.sh")).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0750);
        QCOMPARE(st.st_uid, UnprivilegedDaemon::kUid);
        QCOMPARE(::stat(QFile::encodeName(back + QStringLiteral("/sub/notes.txt")).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0600);
        QCOMPARE(readFile(back + QStringLiteral("/sub/notes.txt")), QByteArray("private\n"));
    }
};

QTEST_GUILESS_MAIN(TestCliFiles)
#include "tst_cli_files.moc"
