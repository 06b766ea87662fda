// SPDX-License-Identifier: Apache-2.0
// The daemon treats the clients on its socket as untrusted (raw frames written by hand here): each
// malformed input gets a typed answer, costs only the offending connection, and leaves the daemon
// serving. (The agent inside every sandbox: tst_untrusted_guest.)
#include "RawClient.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocalSocket>
#include <QScopeGuard>
#include <QTest>
#include <QThread>
#include <QtEndian>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace airlock;
using namespace airlock::test;

class TestRobustness final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon;

private Q_SLOTS:
    void initTestCase()
    {
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
    }
    void cleanupTestCase() { m_daemon.reset(); }

    // ---- malformed traffic: a typed error, then the connection is closed ----

    void malformedInputClosesTheConnectionWithATypedError_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message"); // a prefix of the error message
        const int frameTooLarge = rpc::jsonRpcCode(ErrorCode::FrameTooLarge);
        const QString tooLarge = QStringLiteral("frame of %1 bytes exceeds the %2-byte limit")
                                     .arg(rpc::kMaxFrameBytes + 1)
                                     .arg(rpc::kMaxFrameBytes);
        QTest::newRow("a frame one byte above kMaxFrameBytes is frame_too_large (before payload arrives)")
            << header(rpc::kMaxFrameBytes + 1, rpc::kJsonFrame) << "frame_too_large" << frameTooLarge << tooLarge;
        QTest::newRow("a frame above kMaxFrameBytes after hello is frame_too_large too")
            << hello() + header(rpc::kMaxFrameBytes + 1, rpc::kJsonFrame) + QByteArray(1000, 'x') << "frame_too_large"
            << frameTooLarge << tooLarge;
        QTest::newRow("a 4 GiB length is frame_too_large")
            << header(0xffffffffu, rpc::kJsonFrame) << "frame_too_large" << frameTooLarge
            << QStringLiteral("frame of 4294967295 bytes exceeds the %1-byte limit").arg(rpc::kMaxFrameBytes);
        QTest::newRow("invalid JSON is protocol_error")
            << frame(rpc::kJsonFrame, "{\"jsonrpc\": \"2.0\", \"id\": 1, oops") << "protocol_error" << -32600
            << "invalid JSON at offset";
        QTest::newRow("invalid UTF-8 garbage is protocol_error")
            << frame(rpc::kJsonFrame, QByteArray("\xff\xfe\x00\x01", 4)) << "protocol_error" << -32600
            << "invalid JSON at offset";
        QTest::newRow("a JSON array is protocol_error") << frame(rpc::kJsonFrame, "[1,2,3]") << "protocol_error"
                                                        << -32600 << "a JSON-RPC message must be an object";
        QTest::newRow("a message without jsonrpc 2.0 is protocol_error")
            << frame(rpc::kJsonFrame, "{\"id\":1,\"method\":\"hello\",\"params\":{\"protocol\":1}}") << "protocol_error"
            << -32600 << "missing \"jsonrpc\": \"2.0\"";
        QTest::newRow("a request before hello is handshake_required")
            << request(7, QStringLiteral("sandbox.list")) << "handshake_required"
            << rpc::jsonRpcCode(ErrorCode::HandshakeRequired)
            << "the first request must be \"hello\" with the protocol version";
        QTest::newRow("hello with protocol 99 is version_mismatch")
            << hello(99) << "version_mismatch" << rpc::jsonRpcCode(ErrorCode::VersionMismatch)
            << "client speaks protocol 99, this daemon speaks 1; use matching Airlock versions";
        QTest::newRow("hello without a protocol is version_mismatch")
            << request(1, QStringLiteral("hello")) << "version_mismatch" << rpc::jsonRpcCode(ErrorCode::VersionMismatch)
            << "client speaks protocol -1, this daemon speaks 1";
        QTest::newRow("an unknown frame kind is protocol_error")
            << frame('X', "{}") << "protocol_error" << -32600 << "unknown frame kind 0x58";
        QTest::newRow("an unknown frame kind after hello is protocol_error")
            << hello() + frame('\x01', "{}") << "protocol_error" << -32600 << "unknown frame kind 0x01";
        QTest::newRow("an empty frame (length 0) is protocol_error")
            << QByteArray(4, '\0') << "protocol_error" << -32600 << "empty frame";
        QTest::newRow("an output frame with a bad header length is protocol_error")
            << hello() + frame(rpc::kOutputFrame, QByteArray("\x00\x00\x10\x00{}", 6)) << "protocol_error" << -32600
            << "output frame header length 4096 is invalid";
    }
    void malformedInputClosesTheConnectionWithATypedError()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, type);
        QFETCH(int, code);
        QFETCH(QString, message);
        RawClient c(m_daemon->socketPath());
        QVERIFY(c.waitConnected());
        c.send(bytes);
        const bool greeted = bytes.startsWith(hello());
        if (greeted) {
            const auto h = c.reply(1);
            QVERIFY(h && h->contains(QStringLiteral("result")));
        }
        const auto f = c.next();
        QVERIFY2(f, "no error frame before the connection closed");
        QCOMPARE(f->kind, rpc::kJsonFrame);
        const QJsonObject reply = f->json();
        QCOMPARE(reply.value(QStringLiteral("jsonrpc")).toString(), QStringLiteral("2.0"));
        QVERIFY2(reply.value(QStringLiteral("id")).isNull(), qPrintable(describe(reply)));
        const QJsonObject error = reply.value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("data")).toObject().value(QStringLiteral("type")).toString(), type);
        QCOMPARE(error.value(QStringLiteral("code")).toInt(), code);
        QVERIFY2(error.value(QStringLiteral("message")).toString().startsWith(message), qPrintable(describe(reply)));
        // Then the daemon hangs up; nothing else is said on this connection.
        QVERIFY2(c.waitClosed(), "the daemon kept a connection open after a malformed frame");
        QCOMPARE(c.pendingFrames(), 0);
        QString why;
        QVERIFY2(serves(*m_daemon, &why), qPrintable(why));
    }

    void aFrameOfExactlyTheMaximumIsAccepted()
    {
        // The limit is inclusive: a request padded to exactly kMaxFrameBytes (kind + payload) is served.
        QJsonObject req = rpc::makeRequest(2, QStringLiteral("sandbox.list"), {});
        req.insert(QStringLiteral("pad"), QString());
        const qsizetype base = QJsonDocument(req).toJson(QJsonDocument::Compact).size();
        req.insert(QStringLiteral("pad"), QString(qsizetype(rpc::kMaxFrameBytes) - 1 - base, QLatin1Char('p')));
        const QByteArray f = jsonFrame(req);
        QCOMPARE(qFromBigEndian<quint32>(f.constData()), rpc::kMaxFrameBytes);
        RawClient c(m_daemon->socketPath());
        QVERIFY(c.waitConnected());
        c.send(hello() + f);
        const auto r = c.reply(2);
        QVERIFY(r);
        QVERIFY2(r->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray(),
            qPrintable(describe(*r)));
        QVERIFY(!c.isClosed());
    }

    void framesMayArriveInAnyPieces()
    {
        // One byte per write: the daemon reassembles frames across reads.
        RawClient slow(m_daemon->socketPath());
        QVERIFY(slow.waitConnected());
        const QByteArray bytes = hello() + request(2, QStringLiteral("sandbox.list"));
        for (char b : bytes) {
            slow.send(QByteArray(1, b));
            QCoreApplication::processEvents();
        }
        const auto list = slow.reply(2);
        QVERIFY(list);
        QVERIFY(list->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray());

        // Many requests in one write: every one is answered, in order.
        RawClient fast(m_daemon->socketPath());
        QVERIFY(fast.waitConnected());
        QByteArray burst = hello();
        for (int id = 2; id < 502; ++id)
            burst += request(id, QStringLiteral("sandbox.list"));
        fast.send(burst);
        QVERIFY(fast.reply(1));
        for (int id = 2; id < 502; ++id) {
            const auto f = fast.next(5000);
            QVERIFY2(f, qPrintable(QStringLiteral("no reply %1").arg(id)));
            QCOMPARE(f->json().value(QStringLiteral("id")).toInt(), id);
            QVERIFY(f->json().contains(QStringLiteral("result")));
        }
    }

    // ---- well-formed but wrong requests: an error reply, and the connection stays usable ----

    void badRequestsKeepTheConnection_data()
    {
        QTest::addColumn<QByteArray>("bytes"); // one request with id 5 (or a notification)
        QTest::addColumn<QJsonValue>("id");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("message"); // prefix
        QTest::newRow("an unknown method is -32601")
            << request(5, QStringLiteral("no.such.method")) << QJsonValue(5) << -32601 << "invalid_argument"
            << "unknown method 'no.such.method'";
        QTest::newRow("sandbox.create with network sideways is -32602 at /network")
            << request(5, QStringLiteral("sandbox.create"),
                   {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("network"), QStringLiteral("sideways")}}}})
            << QJsonValue(5) << -32602 << "invalid_argument"
            << "/network: expected \"none\", \"allowlist\" or \"full\"";
        QTest::newRow("sandbox.create with an unknown spec key is -32602")
            << request(5, QStringLiteral("sandbox.create"),
                   {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("privileged"), true}}}})
            << QJsonValue(5) << -32602 << "invalid_argument"
            << "/privileged:";
        QTest::newRow("exec.start with argv not an array is invalid_argument")
            << request(5, QStringLiteral("exec.start"),
                   {{QStringLiteral("sandbox"), QStringLiteral("whatever")},
                       {QStringLiteral("argv"), QStringLiteral("ls -la")}})
            << QJsonValue(5) << -32602 << "invalid_argument"
            << "/argv: expected a non-empty array of strings";
        QTest::newRow("exec.start with a number in argv is invalid_argument")
            << request(5, QStringLiteral("exec.start"),
                   {{QStringLiteral("sandbox"), QStringLiteral("whatever")},
                       {QStringLiteral("argv"), QJsonArray{QStringLiteral("ls"), 3}}})
            << QJsonValue(5) << -32602 << "invalid_argument"
            << "/argv/1: expected a string";
        QTest::newRow("params that are not an object are invalid_argument") << jsonFrame(
            {{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}, {QStringLiteral("id"), 5},
                {QStringLiteral("method"), QStringLiteral("sandbox.list")}, {QStringLiteral("params"), QJsonArray{1}}})
                                                                            << QJsonValue(5) << -32602
                                                                            << "invalid_argument"
                                                                            << "params: expected an object";
        QTest::newRow("a missing sandbox parameter is invalid_argument")
            << request(5, QStringLiteral("sandbox.info")) << QJsonValue(5) << -32602 << "invalid_argument"
            << "params.sandbox: expected a non-empty string";
        QTest::newRow("an unknown sandbox is not_found")
            << request(5, QStringLiteral("sandbox.info"), {{QStringLiteral("sandbox"), QStringLiteral("nosuch")}})
            << QJsonValue(5) << rpc::jsonRpcCode(ErrorCode::NotFound) << "not_found"
            << "no sandbox named 'nosuch'";
        QTest::newRow("a read above 1 MiB is invalid_argument") << request(5, QStringLiteral("fs.read"),
            {{QStringLiteral("sandbox"), QStringLiteral("x")}, {QStringLiteral("path"), QStringLiteral("f")},
                {QStringLiteral("length"), 2 * 1024 * 1024}}) << QJsonValue(5)
                                                                << -32602 << "invalid_argument"
                                                                << "params.offset/length: at most 1 MiB per read";
        QTest::newRow("a notification (no id) gets a protocol_error with id null")
            << jsonFrame(rpc::makeNotification(QStringLiteral("sandbox.list"), {})) << QJsonValue(QJsonValue::Null)
            << -32600 << "protocol_error"
            << "expected a request with \"id\" and \"method\"";
        QTest::newRow("a string id is echoed") << jsonFrame({{QStringLiteral("jsonrpc"), QStringLiteral("2.0")},
            {QStringLiteral("id"), QStringLiteral("five")}, {QStringLiteral("method"), QStringLiteral("nope")}})
                                               << QJsonValue(QStringLiteral("five")) << -32601 << "invalid_argument"
                                               << "unknown method 'nope'";
    }
    void badRequestsKeepTheConnection()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QJsonValue, id);
        QFETCH(int, code);
        QFETCH(QString, type);
        QFETCH(QString, message);
        RawClient c(m_daemon->socketPath());
        QVERIFY(c.waitConnected());
        c.send(hello());
        QVERIFY(c.reply(1));
        c.send(bytes);
        const auto f = c.next();
        QVERIFY(f);
        QCOMPARE(f->kind, rpc::kJsonFrame);
        const QJsonObject reply = f->json();
        QCOMPARE(reply.value(QStringLiteral("id")), id);
        QVERIFY2(!reply.contains(QStringLiteral("result")), qPrintable(describe(reply)));
        const QJsonObject error = reply.value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("code")).toInt(), code);
        QCOMPARE(error.value(QStringLiteral("data")).toObject().value(QStringLiteral("type")).toString(), type);
        QVERIFY2(error.value(QStringLiteral("message")).toString().startsWith(message), qPrintable(describe(reply)));
        // The same connection still answers.
        c.send(request(6, QStringLiteral("sandbox.list")));
        const auto list = c.reply(6);
        QVERIFY2(list, "the connection stopped answering after a well-formed bad request");
        QVERIFY(list->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray());
        QVERIFY(!c.isClosed());
    }

    // ---- clients that go away or crowd in ----

    void clientsThatHangUpMidFrame_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::newRow("half of a frame header") << QByteArray("\x00\x00", 2);
        QTest::newRow("a header that promises 100 bytes, then 10")
            << header(100, rpc::kJsonFrame) + QByteArray(10, '{');
        QTest::newRow("a complete hello, then half a request")
            << hello() + request(2, QStringLiteral("sandbox.list")).left(20);
        QTest::newRow("a 4 MiB frame cut off after 1 MiB")
            << header(rpc::kMaxFrameBytes, rpc::kJsonFrame) + QByteArray(1024 * 1024, ' ');
    }
    void clientsThatHangUpMidFrame()
    {
        QFETCH(QByteArray, bytes);
        {
            RawClient c(m_daemon->socketPath());
            QVERIFY(c.waitConnected());
            c.send(bytes);
            QTest::qWait(50);
            c.disconnect();
        }
        QTest::qWait(100);
        QString why;
        QVERIFY2(serves(*m_daemon, &why), qPrintable(why));
    }

    void aClientThatLeavesBeforeItsReply()
    {
        // sandbox.create answers asynchronously; the asking connection is gone by then.
        {
            RawClient c(m_daemon->socketPath());
            QVERIFY(c.waitConnected());
            c.send(hello()
                + request(2, QStringLiteral("sandbox.create"),
                    {{QStringLiteral("spec"), QJsonObject{{QStringLiteral("name"), QStringLiteral("orphan")}}}}));
            QVERIFY(c.reply(1));
            c.disconnect();
        }
        // The sandbox is still created (and then deletable); the daemon did not trip over the dead reply.
        QVERIFY(waitFor(
            [&] {
                QThread::msleep(50);
                return QJsonDocument::fromJson(
                           m_daemon->ctl({QStringLiteral("info"), QStringLiteral("--json"), QStringLiteral("orphan")})
                               .out)
                           .object()
                           .value(QStringLiteral("state"))
                    == QLatin1String("running");
            },
            10000));
        QString why;
        QVERIFY2(serves(*m_daemon, &why), qPrintable(why));
        const CliResult rm = m_daemon->ctl({QStringLiteral("rm"), QStringLiteral("orphan")});
        QVERIFY2(rm.exitCode == 0, qPrintable(rm.describe()));
    }

    void fiftyClientsAtOnce()
    {
        constexpr int kClients = 50;
        std::vector<std::unique_ptr<RawClient>> clients;
        for (int i = 0; i < kClients; ++i)
            clients.push_back(std::make_unique<RawClient>(m_daemon->socketPath()));
        for (auto &c : clients) {
            QVERIFY(c->waitConnected());
            c->send(hello() + request(2, QStringLiteral("sandbox.list")));
        }
        QVERIFY2(
            waitFor([&] { return std::all_of(clients.begin(), clients.end(), [](auto &c) { return c->hasReply(2); }); },
                20000),
            "not every client got its sandbox.list reply");
        for (auto &c : clients) {
            const auto h = c->reply(1, 0), l = c->reply(2, 0);
            QVERIFY(h && l);
            QCOMPARE(h->value(QStringLiteral("result")).toObject().value(QStringLiteral("protocol")).toInt(),
                rpc::kProtocolVersion);
            QVERIFY2(l->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray(),
                qPrintable(describe(*l)));
            QVERIFY(!c->isClosed());
        }
        // The daemon counts them as connected clients.
        {
            RawClient probe(m_daemon->socketPath());
            QVERIFY(probe.waitConnected());
            probe.send(hello() + request(2, QStringLiteral("daemon.info")));
            const auto info = probe.reply(2);
            QVERIFY(info);
            QVERIFY2(info->value(QStringLiteral("result")).toObject().value(QStringLiteral("clients")).toInt()
                    >= kClients + 1,
                qPrintable(describe(*info)));
        }
        clients.clear();
        QString why;
        QVERIFY2(serves(*m_daemon, &why), qPrintable(why));
    }
};

QTEST_GUILESS_MAIN(TestRobustness)
#include "tst_robustness.moc"
