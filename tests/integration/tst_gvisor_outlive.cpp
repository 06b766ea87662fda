// SPDX-License-Identifier: Apache-2.0
// gVisor sandboxes that outlive their daemon (issue 22, decision 6; tst_gvisor for the rest): a
// killed daemon's sandbox comes back to the next one, its guest proving itself through the resume
// socket, and nothing that runs inside takes its place; a user's daemon runs gVisor rootless as
// that user, and its sandbox outlives it too.
#include "GvisorFixture.h"
#include "LoopbackServer.h"
#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestGvisorOutlive final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A gVisor sandbox outlives a killed daemon (decision 6): its guest comes back to the next one
    // through the resume socket and proves itself; egress goes through the new daemon's socket.
    // What runs inside can reach that socket too, and hammers it across the restart with a forged
    // proof and with silent connections: it hears nothing, and the guest still comes back.
    void aKilledDaemonsSandboxComesBackAndNothingInsideTakesItsPlace()
    {
        LoopbackServer web("web");
        TestDaemon d(args("--resolve", "allowed.test=127.0.0.1"));
        d.setSandboxesOutlive(true);
        QVERIFY(d.start());
        QCOMPARE(d.create(args("--name", "net", "--isolation", "gvisor", "--allow", "allowed.test")), q("net"));
        const QString url = QStringLiteral("http://allowed.test:%1/").arg(web.port());
        QCOMPARE(execIn(d, q("net"), args("curl", "-sS", "-m", "10", url + QStringLiteral("before"))).out,
            QByteArray("web GET /before\n"));
        const QString workspace = workspaceOf(d, q("net"));
        // Until a daemon takes it over, nothing listens there: the guest has its first channel.
        const QString tryIt = QStringLiteral(
            "import socket,errno\ntry:\n s=socket.socket(socket.AF_UNIX); s.connect('/.airlock/resume/sock'); "
            "print('connected')\nexcept OSError as e: print(errno.errorcode[e.errno])");
        QCOMPARE(execIn(d, q("net"), args("python3", "-c", tryIt)).out, QByteArray("ENOENT\n"));
        // The attacker: a forged proof (the right layout, a guessed token) every few ms, and
        // connections held open without a word; it writes down what it heard.
        const QString attack = QStringLiteral(
            "import socket,struct,time\n"
            "conns=heard=0; held=[]; end=time.time()+25\n"
            "while time.time()<end:\n"
            " try:\n"
            "  s=socket.socket(socket.AF_UNIX); s.settimeout(0.2); s.connect('/.airlock/resume/sock'); conns+=1\n"
            "  if len(held)<20: held.append(s); continue\n"
            "  s.sendall(struct.pack('<IB',36,0x8B)+b'g'*32+struct.pack('<I',4))\n"
            "  try: heard+=len(s.recv(100))\n"
            "  except OSError: pass\n"
            "  s.close()\n"
            " except OSError: pass\n"
            " for h in held:\n"
            "  try: h.setblocking(False); heard+=len(h.recv(100))\n"
            "  except OSError: pass\n"
            " open('/workspace/attack.log','w').write('%d %d\\n'%(conns,heard)); time.sleep(0.005)\n");
        QCOMPARE(
            execIn(d, q("net"), args("sh", "-c", "setsid python3 -c \"$0\" >/dev/null 2>&1 &", attack)).exitCode, 0);
        QVERIFY(waitFor([&] { return QFileInfo::exists(workspace + QStringLiteral("/attack.log")); }, 10000));
        const QList<qint64> gvisor = runscProcessesOf(workspace);
        QCOMPARE(gvisor.size(), 3);
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        QTest::qWait(1500);
        for (qint64 pid : gvisor)
            QVERIFY2(::kill(pid_t(pid), 0) == 0, "gVisor ended with its daemon");
        QVERIFY(d.start());
        QCOMPARE(sandboxInfo(d, q("net")).value(QStringLiteral("state")).toString(), q("running"));
        QCOMPARE(storedEvents(d, QStringLiteral("sandbox.adopted")).size(), 1);
        // Egress goes on, through the socket the new daemon listens on.
        QCOMPARE(execIn(d, q("net"), args("curl", "-sS", "-m", "10", url + QStringLiteral("after"))).out,
            QByteArray("web GET /after\n"));
        // The attacker reached the socket while the daemon listened there, and heard nothing.
        QByteArray log;
        QVERIFY2(waitFor(
                     [&] {
                         // Whole lines only: the attacker rewrites the file.
                         log = fileText(workspace + QStringLiteral("/attack.log"));
                         return log.endsWith('\n') && !log.startsWith("0 ");
                     },
                     10000),
            log.constData());
        QVERIFY2(log.endsWith(" 0\n"), log.constData());
        // Once the guest is back, nobody listens there any more.
        QCOMPARE(execIn(d, q("net"), args("python3", "-c", tryIt)).out, QByteArray("ECONNREFUSED\n"));
        // The token is nowhere a command can read: not on the guest's command line nor in its
        // environment (which gVisor shows anyone, unlike Linux: there is nothing in it but PATH and
        // HOME), and its memory is closed to the commands (it is not dumpable).
        const QByteArray recorded = QJsonDocument::fromJson(
            fileText(d.dataDir() + QStringLiteral("/sandboxes/")
                + sandboxInfo(d, q("net")).value(QStringLiteral("id")).toString() + QStringLiteral("/record.json")))
                                        .object()
                                        .value(QStringLiteral("token"))
                                        .toString()
                                        .toLatin1();
        QCOMPARE(recorded.size(), 64);
        const CliResult look = execIn(d, q("net"),
            args("sh", "-c",
                "tr '\\0' ' ' < /proc/1/cmdline; echo; tr '\\0' ' ' < /proc/1/environ; echo; "
                "readlink /proc/1/fd/1 /proc/1/fd/2; "
                "dd if=/proc/1/mem bs=1 count=1 skip=4194304 2>&1 >/dev/null | tail -1"));
        // (Nor do the guest's stdout and stderr lead to the daemon's log: gVisor lets a command
        // open them through /proc/1/fd, red team.)
        QVERIFY2(look.out.contains("--resume-socket /.airlock/resume/sock")
                && look.out.contains("\n/dev/null\n/dev/null\n")
                && look.out.contains("\nPATH=/usr/local/bin:/usr/bin:/bin HOME=/root \n")
                && look.out.endsWith("\ndd: failed to open '/proc/1/mem': Permission denied\n"),
            look.out.constData());
        QVERIFY(!look.out.contains(recorded) && !look.out.contains(QByteArray::fromHex(recorded)));
        // A daemon whose own sandboxes end with it still takes this one over, bundle and all (red
        // team: it took the bundle for an orphaned workspace and removed it under the sandbox).
        QVERIFY(::kill(pid_t(d.pid()), SIGKILL) == 0);
        QVERIFY(d.process().waitForFinished(5000));
        d.setSandboxesOutlive(false);
        QVERIFY(d.start());
        QCOMPARE(sandboxInfo(d, q("net")).value(QStringLiteral("state")).toString(), q("running"));
        QVERIFY(QFileInfo(workspace + QStringLiteral(".runtime/config.json")).isFile());
        QCOMPARE(execIn(d, q("net"), args("echo", "twice")).out, QByteArray("twice\n"));
        QCOMPARE(d.ctl(args("rm", "net")).exitCode, 0);
        QVERIFY(waitFor([&] { return runscProcessesOf(workspace).isEmpty(); }, 5000));
        QVERIFY(!QFileInfo::exists(workspace + QStringLiteral(".runtime")));
    }

    // The non-root path: a user's daemon runs runsc rootless as that user; gVisor's root is that
    // user to the host, and a read-only mount of the user's own folder stays read-only.
    void aUsersDaemonRunsGvisorAsThatUser()
    {
        UnprivilegedDaemon daemon;
        daemon.setSandboxesOutlive(true);
        QVERIFY(daemon.start());
        QTemporaryDir own;
        QFile mine(own.filePath(QStringLiteral("mine")));
        QVERIFY(mine.open(QIODevice::WriteOnly));
        mine.write("original\n");
        mine.close();
        for (const QString &path : {own.path(), mine.fileName()})
            QCOMPARE(
                ::chown(QFile::encodeName(path).constData(), UnprivilegedDaemon::kUid, UnprivilegedDaemon::kUid), 0);
        QCOMPARE(::chmod(QFile::encodeName(own.path()).constData(), 0755), 0);
        auto [code, out] = daemon.ctl(args("create", "--name", "u", "--isolation", "gvisor", "--allow", "allowed.test",
            "--mount", own.path() + QStringLiteral(":/data:ro")));
        QVERIFY2(code == 0, out.constData());
        std::tie(code, out) = daemon.ctl(args("exec", "u", "--", "sh", "-c",
            "uname -r; echo x > /data/mine; rm /data/mine; echo y > /workspace/w; cat /data/mine"));
        QCOMPARE(out, // stdout, then stderr
            QByteArray("4.4.0\noriginal\nsh: 1: cannot create /data/mine: Read-only file system\n"
                       "rm: cannot remove '/data/mine': Read-only file system\n"));
        std::tie(code, out) = daemon.ctl(args("info", "u"));
        const QByteArray identity = QByteArray("\nidentity:    root inside gVisor, host uid ")
            + QByteArray::number(UnprivilegedDaemon::kUid) + ", no capabilities on the host, no_new_privs\n";
        QVERIFY2(out.contains(identity), out.constData());
        // Its bundle is its own alone, with no group: runsc runs as the user, whose primary group
        // may have other members (red team).
        std::tie(code, out) = daemon.ctl(args("info", "u", "--json"));
        const QString bundle
            = jsonObject(out).value(QStringLiteral("workspace")).toString() + QStringLiteral(".runtime");
        QCOMPARE(octalMode(bundle), q("700"));
        QCOMPARE(octalMode(bundle + QStringLiteral("/config.json")), q("400"));
        QCOMPARE(octalMode(bundle + QStringLiteral("/egress")), q("700"));
        QCOMPARE(octalMode(bundle + QStringLiteral("/egress/sock")), q("600"));
        QCOMPARE(runscProcessesOf(daemon.dataDir()).size(), 3);
        for (qint64 pid : runscProcessesOf(daemon.dataDir()))
            QCOMPARE(procStatusField(pid, "Uid:"), qint64(UnprivilegedDaemon::kUid));
        // It outlives the user's daemon, killed, and comes back to the next one, through a socket
        // of the user's alone.
        const QList<qint64> gvisor = runscProcessesOf(daemon.dataDir());
        daemon.kill();
        QVERIFY(daemon.start());
        QCOMPARE(runscProcessesOf(daemon.dataDir()), gvisor);
        std::tie(code, out) = daemon.ctl(args("exec", "u", "--", "cat", "/workspace/w"));
        QCOMPARE(out, QByteArray("y\n"));
        QCOMPARE(octalMode(bundle + QStringLiteral("/resume")), q("700"));
        QCOMPARE(octalMode(bundle + QStringLiteral("/resume/sock")), q("600"));
        QCOMPARE(daemon.ctl(args("rm", "u")).first, 0);
        QVERIFY(waitFor([&] { return runscProcessesOf(daemon.dataDir()).isEmpty(); }, 5000));
    }
};

QTEST_GUILESS_MAIN(TestGvisorOutlive)
#include "tst_gvisor_outlive.moc"
