// SPDX-License-Identifier: Apache-2.0
// The daemon's side of the guest socket: every frame from the (untrusted) guest is bounded and
// validated, and the first violation is reported with what exactly was wrong.
#include "sandbox/GuestChannel.h"

#include <QSignalSpy>
#include <QTest>

#include <sys/socket.h>
#include <unistd.h>

using namespace airlock;

class TestGuestChannel final : public QObject {
    Q_OBJECT
private:
    int m_guest = -1;
    GuestChannel *m_channel = nullptr;

    // Writes all of it while letting the channel read (frames may exceed the socket buffer).
    void put(const std::string &frame)
    {
        size_t done = 0;
        while (done < frame.size()) {
            const ssize_t n = ::send(m_guest, frame.data() + done, frame.size() - done, MSG_DONTWAIT);
            if (n > 0)
                done += size_t(n);
            else if (!QTest::qWaitFor([] { return false; }, 5))
                continue;
        }
    }
    void hello() { put(wire::Writer(wire::Type::Hello).u32(wire::kProtocolVersion).i32(7).u32(1).take()); }
    QString violation()
    {
        QSignalSpy spy(m_channel, &GuestChannel::protocolViolated);
        if (!spy.wait(2000))
            return {};
        return spy.at(0).at(0).toString();
    }

private Q_SLOTS:
    void init()
    {
        int sv[2];
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        m_guest = sv[1];
        m_channel = new GuestChannel(sv[0]);
    }
    void cleanup()
    {
        delete m_channel;
        ::close(m_guest);
    }

    void spawnFrameCarriesEverythingExactly()
    {
        SpawnRequest r;
        r.execId = 9;
        r.argv = {QStringLiteral("printf"), QStringLiteral("%s\\n"), QStringLiteral("ü")};
        r.cwd = QStringLiteral("/workspace");
        r.env = {QStringLiteral("A=1")};
        r.tty = true;
        r.openFiles = 64;
        r.timeoutMs = 2500;
        m_channel->sendSpawn(r);
        char buf[4096];
        const ssize_t n = ::read(m_guest, buf, sizeof buf);
        QVERIFY(n > 5);
        const auto h = wire::peekHeader(buf, size_t(n));
        QVERIFY(h);
        QCOMPARE(h->type, wire::Type::Spawn);
        QCOMPARE(qsizetype(h->payloadLen + wire::kHeaderSize), qsizetype(n));
        wire::Reader rd(buf + wire::kHeaderSize, h->payloadLen);
        QCOMPARE(rd.u32(), 9u);
        QCOMPARE(rd.u8(), uint8_t(wire::SpawnTty));
        rd.u16(), rd.u16(), rd.u64(), rd.u64();
        QCOMPARE(rd.u64(), 64u);
        QCOMPARE(rd.u64(), 2500u);
        QCOMPARE(rd.str(), std::string_view("/workspace"));
        QCOMPARE(rd.u32(), 3u);
        QCOMPARE(rd.str(), std::string_view("printf"));
        QCOMPARE(rd.str(), std::string_view("%s\\n"));
        QCOMPARE(rd.str(), std::string_view("\xc3\xbc"));
        QCOMPARE(rd.u32(), 1u);
        QCOMPARE(rd.str(), std::string_view("A=1"));
        QVERIFY(rd.atEnd() && !rd.failed());
    }

    void outputIsDeliveredAsRawBytes()
    {
        hello();
        m_channel->setKnownExec(1, true);
        QSignalSpy out(m_channel, &GuestChannel::outputReceived);
        put(wire::Writer(wire::Type::Output).u32(1).u8(2).u64(123).bytes(std::string_view("\0\x1b[2J", 5)).take());
        QVERIFY(out.wait(2000));
        QCOMPARE(out.at(0).at(1).toInt(), 2);
    }

    void violations_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("reason");
        QTest::newRow("frame above the size limit") << 0 << "exceeds the 1048576-byte limit";
        QTest::newRow("unknown frame type") << 1 << "unknown frame type 0x77";
        QTest::newRow("output for an execution the daemon never started") << 2 << "unknown execution 999";
        QTest::newRow("truncated exit frame") << 3 << "malformed exited frame";
        QTest::newRow("trailing bytes after a complete frame body") << 4 << "malformed started frame";
        QTest::newRow("a second hello") << 5 << "second hello";
        QTest::newRow("impossible exit status") << 6 << "impossible status";
        QTest::newRow("invalid output stream") << 7 << "invalid stream 9";
        QTest::newRow("output chunk above the chunk limit") << 8 << "exceeds 262144";
        QTest::newRow("more stdin consumed than was sent") << 9 << "reports 5 bytes, 3 were sent";
        QTest::newRow("a tool call above its limit") << 10 << "tool call of 262145 bytes exceeds 262144";
        QTest::newRow("a tool call id reused while in flight") << 11 << "tool call 4 reused an id";
        QTest::newRow("more tool calls in flight than allowed") << 12 << "exceeded 16 in flight";
        QTest::newRow("an exit with a flag no guest sets") << 13 << "unknown flags 0x02";
    }
    void violations()
    {
        QFETCH(int, kind);
        QFETCH(QString, reason);
        hello();
        m_channel->setKnownExec(1, true);
        switch (kind) {
        case 0: {
            char header[wire::kHeaderSize];
            wire::writeHeader(header, wire::Type::Output, wire::kMaxPayload + 1);
            QCOMPARE(::write(m_guest, header, sizeof header), ssize_t(sizeof header));
            break;
        }
        case 1:
            put(wire::Writer(static_cast<wire::Type>(0x77)).take());
            break;
        case 2:
            put(wire::Writer(wire::Type::Output).u32(999).u8(1).u64(0).bytes("x").take());
            break;
        case 3:
            put(wire::Writer(wire::Type::Exited).u32(1).u8(0).take());
            break;
        case 4:
            put(wire::Writer(wire::Type::Started).u32(1).i32(5).u8(0).take());
            break;
        case 5:
            hello();
            break;
        case 6:
            put(wire::Writer(wire::Type::Exited).u32(1).u8(1).i32(999).u64(0).u64(0).u64(0).u64(0).u8(0).take());
            break;
        case 7:
            put(wire::Writer(wire::Type::Output).u32(1).u8(9).u64(0).bytes("x").take());
            break;
        case 9:
            m_channel->sendStdin(1, QByteArray("abc"));
            put(wire::Writer(wire::Type::StdinConsumed).u32(1).u32(5).take());
            break;
        case 8:
            put(wire::Writer(wire::Type::Output)
                    .u32(1)
                    .u8(1)
                    .u64(0)
                    .bytes(std::string(wire::kMaxOutputChunk + 1, 'x'))
                    .take());
            break;
        case 10:
            put(wire::Writer(wire::Type::ToolCall).u32(1).bytes(std::string(wire::kMaxToolRequest + 1, 'x')).take());
            break;
        case 11:
            put(wire::Writer(wire::Type::ToolCall).u32(4).bytes("{}").take());
            put(wire::Writer(wire::Type::ToolCall).u32(4).bytes("{}").take());
            break;
        case 12:
            for (uint32_t id = 1; id <= wire::kMaxToolCalls + 1; ++id)
                put(wire::Writer(wire::Type::ToolCall).u32(id).bytes("{}").take());
            break;
        case 13:
            put(wire::Writer(wire::Type::Exited).u32(1).u8(1).i32(9).u64(0).u64(0).u64(0).u64(0).u8(2).take());
            break;
        }
        const QString why = violation();
        QVERIFY2(why.contains(reason), qPrintable(why));
    }

    void anExitSaysWhetherTheGuestKilledItAtItsDeadline()
    {
        hello();
        m_channel->setKnownExec(1, true);
        m_channel->setKnownExec(2, true);
        QList<GuestExit> exits;
        connect(m_channel, &GuestChannel::execExited, this, [&](const GuestExit &x) { exits.append(x); });
        const auto exited = [](uint32_t id, uint8_t flags) {
            return wire::Writer(wire::Type::Exited).u32(id).u8(1).i32(9).u64(0).u64(0).u64(0).u64(0).u8(flags).take();
        };
        put(exited(1, wire::ExitTimedOut));
        put(exited(2, 0));
        QVERIFY(QTest::qWaitFor([&] { return exits.size() == 2; }, 2000));
        QCOMPARE(exits.at(0).execId, 1u);
        QVERIFY(exits.at(0).timedOut && exits.at(0).signaled);
        QCOMPARE(exits.at(1).execId, 2u);
        QVERIFY(!exits.at(1).timedOut);
    }

    void toolCallsAreAnsweredOnceEach()
    {
        hello();
        QSignalSpy calls(m_channel, &GuestChannel::toolCallReceived);
        put(wire::Writer(wire::Type::ToolCall).u32(7).bytes(R"({"tool":"x"})").take());
        QVERIFY(calls.wait(2000));
        QCOMPARE(calls.at(0).at(0).toUInt(), 7u);
        QCOMPARE(calls.at(0).at(1).toByteArray(), QByteArray(R"({"tool":"x"})"));
        m_channel->sendToolResult(7, true, "{\"ok\":1}");
        m_channel->sendToolResult(7, true, "{\"again\":1}"); // answered already: nothing more is sent
        m_channel->sendToolResult(8, false, "denied never asked");
        QByteArray got;
        QVERIFY(QTest::qWaitFor(
            [&] {
                char buf[256];
                const ssize_t n = ::recv(m_guest, buf, sizeof buf, MSG_DONTWAIT);
                if (n > 0)
                    got.append(buf, n);
                return got.size() >= qsizetype(wire::kHeaderSize + 5 + 8);
            },
            2000));
        QTest::qWait(50);
        char extra[64];
        QCOMPARE(::recv(m_guest, extra, sizeof extra, MSG_DONTWAIT), ssize_t(-1));
        QCOMPARE(got,
            QByteArray::fromStdString(wire::Writer(wire::Type::ToolResult).u32(7).u8(1).bytes("{\"ok\":1}").take()));
        // The id is free again.
        put(wire::Writer(wire::Type::ToolCall).u32(7).bytes("{}").take());
        QVERIFY(calls.wait(2000));
    }

    void stdinStaysWithinTheWindowSoSignalsGetThrough()
    {
        hello();
        m_channel->setKnownExec(1, true);
        m_channel->sendStdin(1, QByteArray(3 * 1024 * 1024, 'x'));
        m_channel->sendSignal(1, 9);
        // Read what reached the guest: 1 MiB of stdin (the window), then the signal, nothing more.
        qint64 stdinBytes = 0;
        bool signalSeen = false;
        std::string buf;
        QVERIFY(QTest::qWaitFor(
            [&] {
                char chunk[65536];
                const ssize_t n = ::recv(m_guest, chunk, sizeof chunk, MSG_DONTWAIT);
                if (n > 0)
                    buf.append(chunk, size_t(n));
                while (auto h = wire::peekHeader(buf.data(), buf.size())) {
                    if (buf.size() < wire::kHeaderSize + h->payloadLen)
                        break;
                    if (h->type == wire::Type::Stdin)
                        stdinBytes += h->payloadLen - 4;
                    signalSeen = signalSeen || h->type == wire::Type::Signal;
                    buf.erase(0, wire::kHeaderSize + h->payloadLen);
                }
                return signalSeen && stdinBytes == wire::kStdinWindow;
            },
            5000));
        QCOMPARE(m_channel->stdinBacklog(), qint64(3 * 1024 * 1024));
        put(wire::Writer(wire::Type::StdinConsumed).u32(1).u32(wire::kStdinWindow).take());
        QVERIFY(QTest::qWaitFor([&] { return m_channel->stdinBacklog() == 2 * 1024 * 1024; }, 2000));
    }

    void nothingBeforeHello()
    {
        m_channel->setKnownExec(1, true);
        put(wire::Writer(wire::Type::Started).u32(1).i32(5).take());
        QVERIFY(violation().contains(QStringLiteral("before hello")));
    }

    void versionMismatchIsAViolation()
    {
        put(wire::Writer(wire::Type::Hello).u32(99).i32(7).u32(1).take());
        QVERIFY(violation().contains(QStringLiteral("protocol 99")));
    }
};

QTEST_GUILESS_MAIN(TestGuestChannel)
#include "tst_guest_channel.moc"
