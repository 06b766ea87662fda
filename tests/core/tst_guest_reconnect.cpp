// SPDX-License-Identifier: Apache-2.0
// The daemon's side of a gVisor guest coming back (GuestReconnect): a real listening socket, real
// connections, and what connects as an attacker would from inside the sandbox (everything there
// can reach the socket): it never hears a byte, and it cannot keep the guest out.
#include "TestDaemon.h"
#include "sandbox/GuestReconnect.h"
#include "sandbox/GuestWire.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace airlock;

namespace {
const QByteArray kToken("0123456789abcdef0123456789ABCDEF");

std::string proof(const QByteArray &token, uint32_t version = wire::kProtocolVersion)
{
    return wire::Writer(wire::Type::Reconnect)
        .bytes(std::string_view(token.constData(), size_t(token.size())))
        .u32(version)
        .take();
}

// What the peer of `fd` did: "closed" (end of file, nothing said), "said N bytes" or "open".
QByteArray fate(int fd, int timeoutMs)
{
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) != 1)
        return "open";
    char buf[256];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
        return "closed";
    return "said " + QByteArray::number(qint64(n)) + " bytes";
}
} // namespace

class TestGuestReconnect final : public QObject {
    Q_OBJECT
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;

    int listen()
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, QFile::encodeName(m_path).constData(), sizeof sa.sun_path - 1);
        if (::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || ::listen(fd, 16) != 0
            || ::chmod(sa.sun_path, 0777) != 0) {
            ::close(fd);
            return -1;
        }
        return fd;
    }
    int connectAndSay(const std::string &bytes)
    {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::strncpy(sa.sun_path, QFile::encodeName(m_path).constData(), sizeof sa.sun_path - 1);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0
            || (!bytes.empty() && ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != ssize_t(bytes.size()))) {
            ::close(fd);
            return -1;
        }
        return fd;
    }

private Q_SLOTS:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        m_path = m_dir->filePath(QStringLiteral("sock"));
    }

    // The guest's proof, even in pieces, gives it the channel: the very connection it made.
    void theGuestsProofGivesItTheChannel()
    {
        GuestReconnect back(listen(), kToken, ::getuid(), QStringLiteral("s1"), nullptr);
        QSignalSpy spy(&back, &GuestReconnect::reconnected);
        const std::string bytes = proof(kToken);
        const int guest = connectAndSay(bytes.substr(0, 7));
        QVERIFY(guest >= 0);
        QTest::qWait(100);
        QCOMPARE(spy.size(), 0);
        QCOMPARE(::send(guest, bytes.data() + 7, bytes.size() - 7, 0), ssize_t(bytes.size() - 7));
        QVERIFY(spy.wait(2000));
        const int channel = spy.at(0).at(0).toInt();
        QCOMPARE(::send(channel, "resume", 6, MSG_NOSIGNAL), ssize_t(6));
        char got[8] = {};
        QCOMPARE(::recv(guest, got, sizeof got, 0), ssize_t(6));
        QCOMPARE(QByteArray(got), QByteArray("resume"));
        // Nothing else is taken after it: the socket is not listened on any more.
        QCOMPARE(connectAndSay(proof(kToken)), -1);
        ::close(channel);
        ::close(guest);
    }

    // What connects without the token hears nothing, not even the token, and is closed: a wrong
    // token, another frame, a proof with more behind it, a short one that stops, or silence.
    void whatDoesNotProveItselfHearsNothing_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("closedWithinMs");
        QByteArray wrong = kToken;
        wrong[31] = 'G';
        QTest::newRow("wrong token") << QByteArray::fromStdString(proof(wrong)) << 1000;
        QTest::newRow("short token") << QByteArray::fromStdString(
            wire::Writer(wire::Type::Reconnect).bytes("0123456789abcdef").u32(4).take())
                                     << 1000;
        QTest::newRow("a Hello instead") << QByteArray::fromStdString(
            wire::Writer(wire::Type::Hello).bytes(std::string(36, 'x')).take())
                                         << 1000;
        QTest::newRow("more behind the proof")
            << QByteArray::fromStdString(proof(kToken) + "GET / HTTP/1.1\r\n\r\n") << 1000;
        QTest::newRow("http") << QByteArray("GET / HTTP/1.1\r\nHost: daemon\r\nContent-Length: 100\r\n\r\n") << 1000;
        QTest::newRow("half a proof") << QByteArray::fromStdString(proof(kToken).substr(0, 20))
                                      << wire::kResumeFrameTimeoutMs + 1000;
        QTest::newRow("silence") << QByteArray() << wire::kResumeFrameTimeoutMs + 1000;
    }
    void whatDoesNotProveItselfHearsNothing()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, closedWithinMs);
        GuestReconnect back(listen(), kToken, ::getuid(), QStringLiteral("s2"), nullptr);
        QSignalSpy spy(&back, &GuestReconnect::reconnected);
        const int attacker = connectAndSay(bytes.toStdString());
        QVERIFY(attacker >= 0);
        QByteArray said = "open";
        QVERIFY(test::waitFor(
            [&] {
                QCoreApplication::processEvents();
                said = fate(attacker, 10);
                return said != "open";
            },
            closedWithinMs));
        QCOMPARE(said, QByteArray("closed"));
        QCOMPARE(spy.size(), 0);
        ::close(attacker);
        // And the guest still comes back after it.
        const int guest = connectAndSay(proof(kToken));
        QVERIFY(spy.wait(2000));
        ::close(spy.at(0).at(0).toInt());
        ::close(guest);
    }

    // A daemon too slow to answer finds the guest's proof on a connection the guest has closed (it
    // gave up waiting for Resume and comes back anew): that one is not taken, the next is.
    void aProofOnAClosedConnectionIsNotTaken()
    {
        const int listener = listen();
        QVERIFY(listener >= 0);
        const int gaveUp = connectAndSay(proof(kToken)); // queued while the daemon was busy
        QVERIFY(gaveUp >= 0);
        ::close(gaveUp);
        const int again = connectAndSay(proof(kToken));
        QVERIFY(again >= 0);
        GuestReconnect back(listener, kToken, ::getuid(), QStringLiteral("s5"), nullptr);
        QSignalSpy spy(&back, &GuestReconnect::reconnected);
        QVERIFY(spy.wait(2000));
        const int channel = spy.at(0).at(0).toInt();
        QCOMPARE(::send(channel, "x", 1, MSG_NOSIGNAL), ssize_t(1)); // the live one
        char got = 0;
        QCOMPARE(::recv(again, &got, 1, 0), ssize_t(1));
        QCOMPARE(spy.size(), 1);
        ::close(channel);
        ::close(again);
    }

    // Connections held open without a word cannot keep the guest out: the oldest goes for each
    // one past kMaxPending, and the guest, last, is taken.
    void aFloodOfSilentConnectionsDoesNotKeepTheGuestOut()
    {
        GuestReconnect back(listen(), kToken, ::getuid(), QStringLiteral("s3"), nullptr);
        QSignalSpy spy(&back, &GuestReconnect::reconnected);
        QList<int> silent;
        for (int i = 0; i < 3 * GuestReconnect::kMaxPending; ++i) {
            silent.append(connectAndSay({}));
            QVERIFY(silent.last() >= 0);
            QCoreApplication::processEvents();
        }
        const int guest = connectAndSay(proof(kToken));
        QVERIFY(spy.wait(2000));
        // Every silent one is closed, unanswered.
        for (int fd : std::as_const(silent)) {
            QCOMPARE(fate(fd, 1000), QByteArray("closed"));
            ::close(fd);
        }
        ::close(spy.at(0).at(0).toInt());
        ::close(guest);
    }

    // Only the runtime's uid is the guest: another local user with the token (it cannot have it,
    // but say it had) is closed before its proof is read.
    void anotherUidIsRefusedEvenWithTheToken()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to connect as another uid");
        QCOMPARE(::chmod(QFile::encodeName(m_dir->path()).constData(), 0755), 0);
        GuestReconnect back(listen(), kToken, ::getuid(), QStringLiteral("s4"), nullptr);
        QSignalSpy spy(&back, &GuestReconnect::reconnected);
        int report[2];
        QCOMPARE(::pipe(report), 0);
        const std::string bytes = proof(kToken);
        const QByteArray path = QFile::encodeName(m_path);
        const pid_t child = ::fork();
        if (child == 0) {
            ::close(report[0]);
            char result = 'x';
            if (::setresgid(65534, 65534, 65534) == 0 && ::setresuid(65534, 65534, 65534) == 0) {
                const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
                sockaddr_un sa{};
                sa.sun_family = AF_UNIX;
                std::strncpy(sa.sun_path, path.constData(), sizeof sa.sun_path - 1);
                if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0) {
                    // (Closed already, the proof may not even go out: EPIPE.)
                    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
                    char c;
                    const timeval five{5, 0};
                    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
                    const ssize_t n = ::recv(fd, &c, 1, 0);
                    // closed, said something, open
                    result = n == 0 || (n < 0 && errno == ECONNRESET) ? 'c' : n > 0 ? 's' : 'o';
                }
            }
            (void)!::write(report[1], &result, 1);
            ::_exit(0);
        }
        ::close(report[1]);
        char result = 0;
        QVERIFY(test::waitFor(
            [&] {
                QCoreApplication::processEvents();
                pollfd p{report[0], POLLIN, 0};
                return ::poll(&p, 1, 10) == 1;
            },
            8000));
        QCOMPARE(::read(report[0], &result, 1), ssize_t(1));
        ::close(report[0]);
        ::waitpid(child, nullptr, 0);
        QCOMPARE(result, 'c');
        QCOMPARE(spy.size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestGuestReconnect)
#include "tst_guest_reconnect.moc"
