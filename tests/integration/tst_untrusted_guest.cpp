// SPDX-License-Identifier: Apache-2.0
// The daemon treats the agent inside every sandbox as untrusted: airlock-bad-guest stands in for
// airlock-guest and breaks the wire protocol, lies about executions, or abuses the connections it
// hands over, in the way the sandbox's name asks. Each gets a typed failure, costs only that
// sandbox, and leaves the daemon serving and no guest behind. (Clients on the socket:
// tst_robustness.)
#include "LoopbackServer.h"
#include "RawClient.h"
#include "TestHelpers.h"
#include "sandbox/GuestWire.h"

#include <QDir>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QTest>

#include <algorithm>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

namespace {
// Host processes running this executable (found by content: sandboxes run the daemon's copy of
// it, /.airlock/guest inside).
QList<qint64> pidsRunning(const QString &executable)
{
    QFile file(executable);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray want = file.readAll();
    QList<qint64> pids;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool ok = false;
        const qint64 pid = e.toLongLong(&ok);
        const QString exe = QStringLiteral("/proc/%1/exe").arg(e);
        struct stat st { };
        if (!ok || ::stat(QFile::encodeName(exe).constData(), &st) != 0 || st.st_size != want.size())
            continue;
        QFile running(exe);
        if (running.open(QIODevice::ReadOnly) && running.readAll() == want)
            pids.append(pid);
    }
    return pids;
}

// Every process below `pid` (children, grandchildren, ...), as "pid state cmdline" lines.
QStringList descendantsOf(qint64 root)
{
    QHash<qint64, qint64> parent;
    QHash<qint64, QString> text;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool ok = false;
        const qint64 pid = e.toLongLong(&ok);
        QFile stat(QStringLiteral("/proc/%1/stat").arg(e));
        if (!ok || !stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray line = stat.readAll();
        const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
        if (fields.size() < 2)
            continue;
        parent.insert(pid, fields.at(1).toLongLong());
        QFile cmd(QStringLiteral("/proc/%1/cmdline").arg(e));
        cmd.open(QIODevice::ReadOnly);
        text.insert(pid,
            QStringLiteral("%1 %2 %3")
                .arg(pid)
                .arg(QString::fromLatin1(fields.at(0)),
                    QString::fromLocal8Bit(cmd.readAll().replace('\0', ' ').left(120))));
    }
    QStringList out;
    for (auto it = parent.cbegin(); it != parent.cend(); ++it) {
        for (qint64 p = it.value(), hops = 0; p > 1 && hops < 64; p = parent.value(p, 0), ++hops) {
            if (p == root) {
                out.append(text.value(it.key()));
                break;
            }
        }
    }
    return out;
}
} // namespace

class TestUntrustedGuest final : public QObject {
    Q_OBJECT
    std::unique_ptr<LoopbackServer> m_web; // relay.test, for tunnels through the egress proxy
    std::unique_ptr<TestDaemon> m_bad; // runs airlock-bad-guest as the sandbox agent
    QString m_badWorkspaces; // where m_bad keeps sandbox workspaces

    static QString badGuest() { return binDir() + QStringLiteral("/airlock-bad-guest"); }
    // How many requests that start so have reached relay.test.
    int served(const QByteArray &request) const
    {
        const QList<QByteArray> heads = m_web->heads();
        return int(std::count_if(
            heads.cbegin(), heads.cend(), [&](const QByteArray &head) { return head.startsWith(request); }));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(QFileInfo::exists(badGuest()));
        m_web = std::make_unique<LoopbackServer>("relay");
        m_bad = std::make_unique<TestDaemon>(QStringList{QStringLiteral("--guest"), badGuest(),
            QStringLiteral("--resolve"), QStringLiteral("relay.test=127.0.0.1")});
        QVERIFY(m_bad->start());
        // An agent that says hello and idles gives a running sandbox: learn where workspaces live.
        const CliResult probe = m_bad->ctl(
            {QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--name"), QStringLiteral("ws-probe")});
        QVERIFY2(probe.exitCode == 0, qPrintable(probe.describe()));
        m_badWorkspaces
            = QFileInfo(QJsonDocument::fromJson(probe.out).object().value(QStringLiteral("workspace")).toString())
                  .path();
        QVERIFY2(QFileInfo(m_badWorkspaces).isDir(), qPrintable(m_badWorkspaces));
        QCOMPARE(m_bad->ctl({QStringLiteral("rm"), QStringLiteral("ws-probe")}).exitCode, 0);
        QCOMPARE(sandboxWorkspaces(m_badWorkspaces), QStringList());
    }
    void cleanupTestCase()
    {
        m_bad.reset();
        QVERIFY(pidsRunning(badGuest()).isEmpty());
    }

    void theBadGuestIsFoundByItsInode()
    {
        // Baseline for the "no bad guest left" checks: a sandbox whose agent said hello and then
        // merely idles is running, and its agent is visible on the host.
        const CliResult created
            = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("bg-calm")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        QVERIFY2(!pidsRunning(badGuest()).isEmpty(), "the bad guest of bg-calm is not visible on the host");
        QVERIFY(!pidsWithCommandLine("--hostname bg-calm ").isEmpty());
        QVERIFY(!descendantsOf(m_bad->pid()).isEmpty());
        QTest::qWait(500); // past the bad guest's 300 ms pause: still running, nothing broken
        const QJsonObject info = QJsonDocument::fromJson(
            m_bad->ctl({QStringLiteral("info"), QStringLiteral("--json"), QStringLiteral("bg-calm")}).out)
                                     .object();
        QCOMPARE(info.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        const CliResult rm = m_bad->ctl({QStringLiteral("rm"), QStringLiteral("bg-calm")});
        QVERIFY2(rm.exitCode == 0, qPrintable(rm.describe()));
        QVERIFY(pidsRunning(badGuest()).isEmpty());
        QVERIFY2(
            descendantsOf(m_bad->pid()).isEmpty(), qPrintable(descendantsOf(m_bad->pid()).join(QStringLiteral("; "))));
    }

    // Red team: the guest is untrusted, and Exited's ExitTimedOut is its word. For an execution the
    // daemon gave no deadline (no --timeout, no limits.wallMs) it cannot be true: the exit is
    // recorded as what the frame otherwise says (killed by SIGKILL), never as timed_out with
    // reason timeout (and the client's 124).
    void aGuestCannotSayAnExecutionWithoutATimeoutTimedOut()
    {
        const CliResult created
            = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), QStringLiteral("bg-false-timeout")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const auto removed = qScopeGuard([&] {
            m_bad->ctl({QStringLiteral("rm"), QStringLiteral("bg-false-timeout")});
        });
        QTest::qWait(500); // past the bad guest's 300 ms pause
        const CliResult untimed = m_bad->ctl(
            {QStringLiteral("exec"), QStringLiteral("bg-false-timeout"), QStringLiteral("--"), QStringLiteral("true")});
        QVERIFY2(untimed.exitCode == 128 + 9, qPrintable(untimed.describe()));
        // With a deadline the daemon gave, the guest's word is taken (what it is for).
        const CliResult timed = m_bad->ctl({QStringLiteral("exec"), QStringLiteral("--timeout"), QStringLiteral("1h"),
            QStringLiteral("bg-false-timeout"), QStringLiteral("--"), QStringLiteral("true")});
        QVERIFY2(timed.exitCode == 124, qPrintable(timed.describe()));
    }

    // Red team (issue 23): an egress connection is a socket the guest hands over, and a guest
    // that keeps its copy shares the daemon's open file: it can make it blocking again, then have
    // it poll readable with nothing an ordinary read returns (a byte out of band, on AF_UNIX). The
    // proxy reads with MSG_DONTWAIT; and since a unix socket could also carry descriptors of its
    // own, only TCP is taken now: this one ends the sandbox as a broken protocol. Either way the
    // daemon keeps serving everyone, and does not spin (its CPU over a second is measured).
    void aGuestCannotMakeTheProxyWaitOnItsConnection()
    {
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"),
            QStringLiteral("bg-blocking-egress"), QStringLiteral("--allow"), QStringLiteral("example.com")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const auto removed = qScopeGuard([&] {
            m_bad->ctl({QStringLiteral("rm"), QStringLiteral("bg-blocking-egress")});
        });
        // Past the bad guest's 300 ms pause and its connection's 200 ms: the out-of-band byte is
        // there. Without MSG_DONTWAIT the daemon hangs in read() at once.
        QTest::qWait(800);
        QElapsedTimer t;
        t.start();
        for (int round = 0; t.elapsed() < 2000; ++round) {
            QElapsedTimer asked;
            asked.start();
            const CliResult listed = m_bad->ctl({QStringLiteral("ls")}, {}, 3000);
            QVERIFY2(listed.exitCode == 0 && listed.out.contains("bg-blocking-egress"),
                qPrintable(QStringLiteral("round %1: %2").arg(round).arg(listed.describe())));
            QVERIFY2(asked.elapsed() < 2000, qPrintable(QString::number(asked.elapsed())));
            QTest::qWait(250);
        }
        // Nor does it spin on a connection that polls readable and gives nothing.
        const qint64 before = cpuTicks(m_bad->pid());
        QTest::qWait(1000);
        const qint64 used = cpuTicks(m_bad->pid()) - before;
        QVERIFY2(before >= 0 && used < 30, qPrintable(QStringLiteral("%1 ticks in 1 s").arg(used)));
        const QJsonObject info = QJsonDocument::fromJson(
            m_bad->ctl({QStringLiteral("info"), QStringLiteral("--json"), QStringLiteral("bg-blocking-egress")}).out)
                                     .object();
        QCOMPARE(info.value(QStringLiteral("failure")).toString(),
            QStringLiteral("the guest broke the protocol: an egress connection that is not one TCP socket"));
    }

    // Red team (issue 23): once the proxy has let a tunnel through, the relay copies it, and the
    // client socket is still the one the guest handed over and kept. A guest that makes it
    // blocking again and sends one request had the relay wait in splice(2) for more, for good:
    // every tunnel of every sandbox stopped (and the daemon could not stop). The relay reads and
    // writes with MSG_DONTWAIT, so another sandbox's tunnel is served after it.
    void aGuestCannotMakeTheRelayWaitOnItsTunnel()
    {
        const QString port = QString::number(m_web->port());
        const QString attacker = QStringLiteral("bg-blocking-tunnel-") + port;
        const QString victim = QStringLiteral("bg-tunnel-") + port;
        const auto removed = qScopeGuard([&] {
            m_bad->ctl({QStringLiteral("rm"), attacker});
            m_bad->ctl({QStringLiteral("rm"), victim});
        });
        auto reached = [&](const QByteArray &request) { return waitFor([&] { return served(request) > 0; }, 5000); };
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), attacker,
            QStringLiteral("--allow"), QStringLiteral("relay.test")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        // Through the tunnel, on the socket made blocking again: the relay has read it and looked for more.
        QVERIFY2(reached("GET /blocked "), "the attacking guest's tunnel was not made");
        QTest::qWait(300);
        const CliResult other = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), victim,
            QStringLiteral("--allow"), QStringLiteral("relay.test")});
        QVERIFY2(other.exitCode == 0, qPrintable(other.describe()));
        QVERIFY2(reached("GET /served "), "another sandbox's tunnel was not served after the attack");
    }

    // Red team: a guest that closes its channel while the daemon is not reading it (a client that
    // does not read holds the sandbox's output) is not seen to have gone, and the daemon's next
    // frame to it fails with EPIPE. The daemon kept that frame to write it when the socket said it
    // could, which a socket whose peer has gone always says: its loop spun at a whole core for as
    // long as the client held. What cannot be written is dropped now; the close is seen once the
    // hold ends.
    void aGuestThatClosesWhileItsOutputIsHeldCostsNoCpu()
    {
        const QString name = QStringLiteral("bg-flood-then-close");
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), name});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        const QString ctl = binDir() + QStringLiteral("/airlockctl --no-autostart exec ") + name;
        QProcess holding; // its output goes into a pipe nobody reads: it stops reading, the daemon holds
        holding.setProcessEnvironment(m_bad->environment());
        holding.start(QStringLiteral("sh"), {QStringLiteral("-c"), ctl + QStringLiteral(" -- flood | sleep 60")});
        QProcess next; // the daemon's next frame to the guest: another execution's Spawn
        next.setProcessEnvironment(m_bad->environment());
        const auto ended = qScopeGuard([&] {
            holding.kill();
            next.kill();
            holding.waitForFinished(5000);
            next.waitForFinished(5000);
            m_bad->ctl({QStringLiteral("rm"), name});
        });
        QVERIFY(holding.waitForStarted(5000));
        QTest::qWait(2500); // the flood stalls, and a second later the guest closes its channel
        next.start(binDir() + QStringLiteral("/airlockctl"),
            {QStringLiteral("--no-autostart"), QStringLiteral("exec"), name, QStringLiteral("--"),
                QStringLiteral("true")});
        QVERIFY(next.waitForStarted(5000));
        QTest::qWait(500);
        const qint64 before = cpuTicks(m_bad->pid());
        QTest::qWait(1000);
        const qint64 used = cpuTicks(m_bad->pid()) - before;
        QVERIFY2(before >= 0 && used < 30, qPrintable(QStringLiteral("%1 ticks in 1 s").arg(used)));
        QCOMPARE(m_bad->ctl({QStringLiteral("ls")}, {}, 3000).exitCode, 0);
    }

    // Red team: a TCP socket the guest hands over with SO_LINGER on and a send queue that cannot
    // drain, after closing its own copy: Linux waits in the last close() whatever O_NONBLOCK says,
    // and that close was the daemon's. On its main thread (the proxy ending a connection that
    // closed before its request; a descriptor attached to the wire channel, which a plain read()
    // dropped in the kernel, closing it there) every client waited; on the relay's, every tunnel.
    // The daemon turns linger off and closes under a deadline of its thread's.
    void aSocketTheGuestMadeLingerHoldsNoThread_data()
    {
        QTest::addColumn<QString>("where");
        QTest::newRow("the proxy ends it (main thread)") << QStringLiteral("session");
        QTest::newRow("attached to the wire channel (main thread)") << QStringLiteral("channel");
        QTest::newRow("a tunnel that ends (relay thread)") << QStringLiteral("tunnel");
    }
    void aSocketTheGuestMadeLingerHoldsNoThread()
    {
        QFETCH(QString, where);
        const QString port = QString::number(m_web->port());
        const QString name = QStringLiteral("bg-linger-")
            + (where == QLatin1String("tunnel") ? QStringLiteral("tunnel-") + port : where);
        const QString victim = QStringLiteral("bg-tunnel-") + port;
        const auto removed = qScopeGuard([&] {
            m_bad->ctl({QStringLiteral("rm"), name});
            m_bad->ctl({QStringLiteral("rm"), victim});
        });
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), name,
            QStringLiteral("--allow"), QStringLiteral("relay.test")});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        if (where == QLatin1String("tunnel"))
            QVERIFY2(waitFor([&] { return served("GET /linger ") > 0; }, 5000), "the lingering tunnel was not made");
        QTest::qWait(1000); // handed over, and closed by the daemon by now
        QElapsedTimer asked;
        asked.start();
        const CliResult listed = m_bad->ctl({QStringLiteral("ls")}, {}, 3000);
        QVERIFY2(listed.exitCode == 0 && asked.elapsed() < 2000,
            qPrintable(QStringLiteral("%1 ms: %2").arg(asked.elapsed()).arg(listed.describe())));
        const int before = served("GET /served ");
        const CliResult other = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), victim,
            QStringLiteral("--allow"), QStringLiteral("relay.test")});
        QVERIFY2(other.exitCode == 0, qPrintable(other.describe()));
        QVERIFY2(
            waitFor([&] { return served("GET /served ") > before; }, 5000), "another sandbox's tunnel was not served");
    }

    void aRunningSandboxWhoseAgentBreaksTheProtocolFails_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("violation");
        QTest::newRow("an unknown frame type") << "bg-unknown-type"
                                               << "unknown frame type 0x77";
        QTest::newRow("output for an execution that does not exist") << "bg-unknown-exec"
                                                                     << "output frame for unknown execution 999";
        QTest::newRow("a truncated exited frame") << "bg-truncated"
                                                  << "malformed exited frame (2 bytes)";
        QTest::newRow("a second hello") << "bg-second-hello"
                                        << "second hello";
    }
    void aRunningSandboxWhoseAgentBreaksTheProtocolFails()
    {
        QFETCH(QString, name);
        QFETCH(QString, violation);
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), name});
        QVERIFY2(created.exitCode == 0, qPrintable(created.describe()));
        QCOMPARE(created.out, name.toUtf8() + '\n');
        const QString failure
            = QStringLiteral("the sandbox agent broke the protocol (%1); sandbox killed").arg(violation);
        QJsonObject info;
        QVERIFY2(waitFor(
                     [&] {
                         QThread::msleep(50);
                         info = QJsonDocument::fromJson(
                             m_bad->ctl({QStringLiteral("info"), QStringLiteral("--json"), name}).out)
                                    .object();
                         return info.value(QStringLiteral("state")) == QLatin1String("failed");
                     },
                     2500),
            qPrintable(describe(info)));
        QCOMPARE(info.value(QStringLiteral("failure")).toString(), failure);
        // The sandbox is dead: its agent and bwrap are gone even before rm, and exec says why.
        QVERIFY2(waitFor([&] { return pidsRunning(badGuest()).isEmpty(); }, 2000),
            "the bad guest outlived its failed sandbox");
        QStringList left;
        QVERIFY2(waitFor([&] { return (left = descendantsOf(m_bad->pid())).isEmpty(); }, 2000),
            qPrintable(QStringLiteral("processes left under the daemon: ") + left.join(QStringLiteral("; "))));
        const CliResult exec = m_bad->ctl(
            {QStringLiteral("exec"), name, QStringLiteral("-n"), QStringLiteral("--"), QStringLiteral("true")});
        QVERIFY2(exec.exitCode == 1, qPrintable(exec.describe()));
        QCOMPARE(
            QString::fromUtf8(exec.err), QStringLiteral("airlockctl: sandbox %1 is failed: %2\n").arg(name, failure));
        // The daemon is fine, and rm clears the failed sandbox.
        QString why;
        QVERIFY2(serves(*m_bad, &why), qPrintable(why));
        const CliResult rm = m_bad->ctl({QStringLiteral("rm"), name});
        QVERIFY2(rm.exitCode == 0, qPrintable(rm.describe()));
        QCOMPARE(m_bad->ctl({QStringLiteral("info"), name}).exitCode, 3);
        QVERIFY(pidsRunning(badGuest()).isEmpty());
        QCOMPARE(sandboxWorkspaces(m_badWorkspaces), QStringList());
    }

    void anAgentThatFailsDuringStartupFailsCreate_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("message");
        QTest::newRow("an oversized first frame") << "bg-oversize"
                                                  << "the sandbox agent broke the protocol (frame of 1048577 bytes "
                                                     "exceeds the 1048576-byte limit); sandbox killed";
        QTest::newRow("a frame before hello")
            << "bg-no-hello"
            << "the sandbox agent broke the protocol (frame type 0x82 before hello); sandbox killed";
        QTest::newRow("hello with protocol 99")
            << "bg-bad-version"
            << QStringLiteral("the sandbox agent broke the protocol (guest speaks protocol 99, daemon %1 (reinstall "
                              "Airlock so both match)); sandbox killed")
                   .arg(wire::kProtocolVersion);
        QTest::newRow("an agent that exits at once")
            << "bg-exit"
            << "bubblewrap could not create the sandbox: it exited without a message";
        QTest::newRow("an agent that reports a fatal setup error")
            << "bg-fatal"
            << "the sandbox agent failed: landlock_restrict_self failed: test";
    }
    void anAgentThatFailsDuringStartupFailsCreate()
    {
        QFETCH(QString, name);
        QFETCH(QString, message);
        QElapsedTimer t;
        t.start();
        const CliResult created = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--name"), name});
        QVERIFY2(created.exitCode == 5, qPrintable(created.describe()));
        QVERIFY2(t.elapsed() < 5000, "create waited for the hello timeout instead of failing at once");
        QCOMPARE(QString::fromUtf8(created.err), QStringLiteral("airlockctl: ") + message + QLatin1Char('\n'));
        QCOMPARE(created.out, QByteArray());
        // Nothing is left: no sandbox entry, no workspace, no agent, no bwrap.
        QCOMPARE(m_bad->ctl({QStringLiteral("info"), name}).exitCode, 3);
        QCOMPARE(sandboxWorkspaces(m_badWorkspaces), QStringList());
        QVERIFY2(waitFor([&] { return pidsRunning(badGuest()).isEmpty(); }, 2000),
            "the bad guest outlived the failed create");
        QStringList left;
        QVERIFY2(waitFor([&] { return (left = descendantsOf(m_bad->pid())).isEmpty(); }, 2000),
            qPrintable(QStringLiteral("processes left under the daemon: ") + left.join(QStringLiteral("; "))));
        QString why;
        QVERIFY2(serves(*m_bad, &why), qPrintable(why));
        // And the name is free again (the failed attempt did not keep it).
        const CliResult again
            = m_bad->ctl({QStringLiteral("create"), QStringLiteral("--json"), QStringLiteral("--name"), name});
        QCOMPARE(again.exitCode, 5);
        QCOMPARE(QJsonDocument::fromJson(again.out)
                     .object()
                     .value(QStringLiteral("error"))
                     .toObject()
                     .value(QStringLiteral("code"))
                     .toString(),
            QStringLiteral("boundary_unavailable"));
    }
};

QTEST_GUILESS_MAIN(TestUntrustedGuest)
#include "tst_untrusted_guest.moc"
