// SPDX-License-Identifier: Apache-2.0
// WriteQueue over a real socket pair with a small send buffer: what the socket does not take at
// once waits as the caller's QByteArrays (shared, not copied), leaves in order once the peer
// reads, and a peer that is gone costs nothing (no SIGPIPE, nothing kept).
#include "rpc/Connection.h"
#include "rpc/WriteQueue.h"

#include <QLocalServer>
#include <QLocalSocket>
#include <QTemporaryDir>

#include <QSignalSpy>
#include <QTest>

#include <thread>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace airlock::rpc;

namespace {
QByteArray pattern(qsizetype size, char seed)
{
    QByteArray b(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        b[i] = char(seed + i % 251);
    return b;
}

QByteArray readAll(int fd)
{
    QByteArray got;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0)
            return got;
        got.append(buf, n);
    }
}
} // namespace

class TestWriteQueue : public QObject {
    Q_OBJECT
    int m_fds[2] = {-1, -1};

private Q_SLOTS:
    void init()
    {
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, m_fds), 0);
        const int small = 16 * 1024;
        ::setsockopt(m_fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    }
    void cleanup()
    {
        for (int &fd : m_fds)
            if (fd >= 0)
                ::close(std::exchange(fd, -1));
    }

    void whatTheSocketDoesNotTakeWaitsUncopiedAndLeavesInOrder()
    {
        WriteQueue q(m_fds[0], nullptr);
        const QByteArray header = "HDR1";
        const QByteArray big = pattern(1024 * 1024, 'a');
        const QByteArray second = pattern(300 * 1024, 'k');
        q.append(header, big);
        q.append(second);
        QVERIFY(q.pending() > 0);
        QVERIFY(q.pending() < header.size() + big.size() + second.size()); // some went at once
        // Waiting, they are the caller's arrays: one more reference each, no copy.
        QVERIFY(!big.isDetached());
        QVERIFY(!second.isDetached());
        QSignalSpy written(&q, &WriteQueue::written);
        bool emptied = false;
        q.whenEmpty([&] { emptied = true; });
        QVERIFY(!emptied);
        QByteArray got;
        QVERIFY(QTest::qWaitFor(
            [&] {
                got += readAll(m_fds[1]);
                return q.pending() == 0;
            },
            10000));
        got += readAll(m_fds[1]);
        QCOMPARE(got.size(), header.size() + big.size() + second.size());
        QVERIFY(got == header + big + second);
        QVERIFY(emptied);
        QVERIFY(written.count() > 0);
        QCOMPARE(written.last().at(0).toLongLong(), 0);
        QVERIFY(big.isDetached()); // let go once written
    }

    void appendWaitingWritesAllWhileThePeerReads()
    {
        WriteQueue q(m_fds[0], nullptr);
        const QByteArray data = pattern(2 * 1024 * 1024, 'z');
        QByteArray got;
        std::thread reader([&] {
            ::fcntl(m_fds[1], F_SETFL, 0); // blocking
            char buf[65536];
            while (got.size() < data.size() + 3) {
                const ssize_t n = ::read(m_fds[1], buf, sizeof buf);
                if (n <= 0)
                    break;
                got.append(buf, n);
            }
        });
        q.appendWaiting("DAT", data, 10000);
        QCOMPARE(q.pending(), 0); // nothing left to the loop
        reader.join();
        QVERIFY(got == "DAT" + data);
    }

    // The peer closed: the write fails with EPIPE, not SIGPIPE (which would end this process),
    // and nothing is kept for it.
    void aPeerThatIsGoneCostsNothing()
    {
        WriteQueue q(m_fds[0], nullptr);
        q.append(pattern(512 * 1024, 'q'));
        QVERIFY(q.pending() > 0);
        ::close(std::exchange(m_fds[1], -1));
        bool emptied = false;
        q.whenEmpty([&] { emptied = true; });
        QTRY_VERIFY(emptied); // the notifier fires, the write fails, the queue is dropped
        QCOMPARE(q.pending(), 0);
        q.append("more", pattern(64 * 1024, 'r'));
        QCOMPARE(q.pending(), 0);
    }

    // The socket's owner closes its descriptor (Qt does at the end of a connection) and the system
    // gives the number to a new socket: what waited goes nowhere near it (the queue writes to a
    // duplicate of its own; the red team's finding on a version that kept the number).
    void aReusedDescriptorNumberGetsNothingQueued()
    {
        auto *q = new WriteQueue(m_fds[0], nullptr);
        q->append(pattern(512 * 1024, 'x'));
        QVERIFY(q->pending() > 0);
        const int number = m_fds[0];
        ::close(std::exchange(m_fds[0], -1));
        int other[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, other), 0);
        QCOMPARE(other[0], number); // the number came back, as it does
        QTest::qWait(100);
        QCOMPARE(readAll(other[1]).size(), 0);
        QVERIFY(readAll(m_fds[1]).size() > 0); // it still goes to its own peer
        q->abandon();
        QCOMPARE(q->pending(), 0);
        delete q;
        ::close(other[0]);
        ::close(other[1]);
    }

    // A write that fails for good (here the peer shut its reading side) ends the connection both
    // ways, so that reading reports the end: the connection does not go on unable to answer.
    void aFailedWriteEndsTheConnection()
    {
        WriteQueue q(m_fds[0], nullptr);
        ::shutdown(m_fds[1], SHUT_RD);
        q.append("frame");
        QCOMPARE(q.pending(), 0);
        char c;
        QCOMPARE(::read(m_fds[0], &c, 1), 0); // end of stream, not EAGAIN
    }

    // A client leaves with replies still queued for it: the connection reports its end, and
    // nothing after it (the red team's crash: a 'written' after 'disconnected' reached the
    // daemon's handler of a session it had deleted).
    void aConnectionSaysNothingAfterItsEnd()
    {
        QTemporaryDir dir;
        QLocalServer server;
        QVERIFY(server.listen(dir.filePath(QStringLiteral("s"))));
        QLocalSocket client;
        client.connectToServer(server.fullServerName());
        QVERIFY(client.waitForConnected(2000));
        QVERIFY(server.waitForNewConnection(2000));
        Connection conn(server.nextPendingConnection());
        for (int i = 0; i < 16; ++i) // 16 MiB: far more than the socket takes
            conn.sendOutput("H", pattern(1024 * 1024, char('a' + i)));
        QVERIFY(conn.pendingBytes() > 0);
        QStringList heard;
        connect(&conn, &Connection::disconnected, this, [&] { heard.append(QStringLiteral("disconnected")); });
        connect(&conn, &Connection::bytesFlushed, this, [&] { heard.append(QStringLiteral("flushed")); });
        client.abort();
        QTRY_VERIFY(heard.contains(QStringLiteral("disconnected")));
        QTest::qWait(100); // a write notifier still armed would fire by now
        QCOMPARE(heard.last(), QStringLiteral("disconnected"));
        QCOMPARE(heard.count(QStringLiteral("disconnected")), 1);
        QCOMPARE(conn.pendingBytes(), 0);
    }
};

QTEST_GUILESS_MAIN(TestWriteQueue)
#include "tst_write_queue.moc"
