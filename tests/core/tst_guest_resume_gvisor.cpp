// SPDX-License-Identifier: Apache-2.0
// gVisor's guest taken over (tst_guest_resume for the rest): it listens for nobody, and once its
// daemon is gone it comes back to the resume socket by itself (--resume-socket), proves itself
// first and takes only a daemon that proves itself in turn. The real airlock-guest, run directly
// on this host as --gvisor (with a seccomp program that allows all), spoken to through the wire
// format as a daemon would.
#include "GuestResumeFixture.h"
#include "TestDaemon.h"
#include "sandbox/GuestWire.h"

#include <QElapsedTimer>
#include <QTest>

#include <algorithm>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

class TestGuestResumeGvisor final : public QObject, private GuestResumeFixture {
    Q_OBJECT
private Q_SLOTS:
    void init() { setUp(); }
    void cleanup() { tearDown(); }

    // gVisor's guest (--resume-socket) listens for nobody: once its daemon is gone it connects to
    // the resume socket again and again until a daemon is there, proves itself first (Reconnect,
    // with the token that came first on its channel), then takes that daemon's Resume (no
    // descriptors) as bubblewrap's guest does: the output goes on byte for byte.
    void aGvisorGuestComesBackToTheNextDaemonAndProvesItselfFirst()
    {
        startGuest(true, true);
        const pid_t pid = spawn(shell(1, "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo $i; sleep 0.005; done"));
        QVERIFY(pid > 0);
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return std::count(out.begin(), out.end(), '\n') >= 20; }));
        const size_t received = out.size();
        m_link.reset(); // the daemon is gone
        QTest::qWait(2 * wire::kReconnectMostMs); // it tries at its slowest by now
        const int listener = listenForGuest();
        QVERIFY(listener >= 0);
        QElapsedTimer clock;
        clock.start();
        Link back;
        QVERIFY2(nextComeBack(listener, 5000, back) >= 0, "no Reconnect with the token");
        // (It tries every kReconnectMostMs at its slowest; the rest is slack for a loaded machine.)
        QVERIFY2(clock.elapsed() <= wire::kReconnectMostMs + 1000, qPrintable(QString::number(clock.elapsed())));
        QVERIFY(back.send(resumeFrame(m_token, {{1, received, 0}}, 0)));
        m_link.reset(::dup(back.fd()));
        back.reset();
        QCOMPARE(describeResumed(m_link.next(), m_guest), running(1, pid, received));
        QVERIFY(readStdout(1, out, [&] { return out.size() >= received + 1000; }));
        QVERIFY2(out == numberedLines(2000).substr(0, out.size()), out.c_str());
        ::close(listener);
    }

    // It takes no daemon that does not prove itself in turn (the token again in Resume), nor one
    // that hands it descriptors (gVisor's gets none), nor one that says nothing: each connection is
    // closed, and it comes back again until one does.
    void aGvisorGuestTakesNoDaemonWithoutTheTokenAndTriesAgain()
    {
        startGuest(true, true);
        m_link.reset();
        const int listener = listenForGuest();
        QVERIFY(listener >= 0);
        Link attempt;
        QVERIFY(nextComeBack(listener, 3000, attempt) >= 0);
        QVERIFY(attempt.send(resumeFrame(std::string(m_token.rbegin(), m_token.rend()), {}, 0)));
        QVERIFY2(attempt.closedWithin(1000), "the guest kept a daemon with the wrong token");

        QVERIFY(nextComeBack(listener, 3000, attempt) >= 0);
        int xv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, xv), 0);
        QVERIFY(sendWithFds(attempt.fd(), resumeFrame(m_token, {}, 1), {xv[1]}));
        ::close(xv[1]);
        QVERIFY2(attempt.closedWithin(1000), "the guest kept a daemon that handed it a descriptor");
        QVERIFY2(peerClosedWithin(xv[0], 1000), "the guest kept the descriptor");
        ::close(xv[0]);

        QVERIFY(nextComeBack(listener, 3000, attempt) >= 0);
        QElapsedTimer clock;
        clock.start();
        QVERIFY2(attempt.closedWithin(wire::kResumeFrameTimeoutMs + 1000), "the guest waited on a silent daemon");
        QVERIFY(clock.elapsed() >= wire::kResumeFrameTimeoutMs - 100);

        QVERIFY(nextComeBack(listener, 3000, attempt) >= 0);
        QVERIFY(attempt.send(resumeFrame(m_token, {}, 0)));
        m_link.reset(::dup(attempt.fd()));
        attempt.reset();
        QCOMPARE(describeResumed(m_link.next(), m_guest), QString());
        const pid_t pid = spawn(shell(1, "echo back"));
        QVERIFY(pid > 0);
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out == "back\n"; }));
        ::close(listener);
    }

    // A Spawn the daemon sent just before it went is run, and the next daemon hears of it (the
    // daemon had stored its start): nothing that waited in the socket is dropped with it.
    void aSpawnSentJustBeforeTheDaemonWentIsRun_data()
    {
        QTest::addColumn<bool>("comesBack");
        QTest::newRow("bubblewrap's guest") << false;
        QTest::newRow("gVisor's guest") << true;
    }
    void aSpawnSentJustBeforeTheDaemonWentIsRun()
    {
        QFETCH(bool, comesBack);
        startGuest(true, comesBack);
        QVERIFY(m_link.send(shell(1, "echo ran; exec sleep 30")));
        m_link.reset();
        // Its process, from the Resumed frame ("1 running PID"), for cleanup() to end.
        const auto remember = [this](const QString &resumed) {
            m_started.push_back(pid_t(resumed.section(QLatin1Char(' '), 2, 2).toInt()));
        };
        Link back;
        if (comesBack) {
            const int listener = listenForGuest();
            QVERIFY(nextComeBack(listener, 3000, back) >= 0);
            ::close(listener);
            QVERIFY(back.send(resumeFrame(m_token, {{1, 0, 0}}, 0)));
            m_link.reset(::dup(back.fd()));
            back.reset();
            const QString resumed = describeResumed(m_link.next(), m_guest);
            QVERIFY2(resumed.startsWith(QStringLiteral("1 running ")), qPrintable(resumed));
            remember(resumed);
        } else {
            QTest::qWait(200);
            const QString resumed = resume({{1, 0, 0}});
            QVERIFY2(resumed.startsWith(QStringLiteral("1 running ")), qPrintable(resumed));
            remember(resumed);
        }
        std::string out;
        QVERIFY(readStdout(1, out, [&] { return out == "ran\n"; }));
    }
};

QTEST_GUILESS_MAIN(TestGuestResumeGvisor)
#include "tst_guest_resume_gvisor.moc"
