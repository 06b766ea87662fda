// SPDX-License-Identifier: Apache-2.0
// The daemon treats both of its peers as untrusted: clients on its socket (raw frames written by
// hand here) and the agent inside every sandbox (airlock-bad-guest). Each malformed input gets a
// typed answer, costs only the offending connection or sandbox, and leaves the daemon serving.
#include "TestDaemon.h"
#include "rpc/Protocol.h"
#include "sandbox/GuestWire.h"

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

namespace {

QByteArray header(quint32 length, char kind)
{
    QByteArray h(4, '\0');
    qToBigEndian(length, h.data());
    h.append(kind);
    return h;
}

QByteArray frame(char kind, const QByteArray &payload)
{
    return header(quint32(payload.size() + 1), kind) + payload;
}

QByteArray jsonFrame(const QJsonObject &o)
{
    return frame(rpc::kJsonFrame, QJsonDocument(o).toJson(QJsonDocument::Compact));
}

QByteArray request(qint64 id, const QString &method, const QJsonObject &params = {})
{
    return jsonFrame(rpc::makeRequest(id, method, params));
}

QByteArray hello(int protocol = rpc::kProtocolVersion)
{
    return request(1, QStringLiteral("hello"),
        {{QStringLiteral("protocol"), protocol}, {QStringLiteral("client"), QStringLiteral("raw")}});
}

// A client that speaks the frame format by hand.
class RawClient final {
public:
    struct Frame {
        char kind = 0;
        QByteArray payload;
        QJsonObject json() const { return QJsonDocument::fromJson(payload).object(); }
    };

    explicit RawClient(const QString &socketPath)
    {
        QObject::connect(&m_socket, &QLocalSocket::readyRead, [this] { pump(); });
        m_socket.connectToServer(socketPath);
    }
    bool waitConnected(int ms = 5000) { return m_socket.waitForConnected(ms); }
    void send(const QByteArray &bytes)
    {
        m_socket.write(bytes);
        m_socket.flush();
    }
    bool isClosed() const { return m_socket.state() == QLocalSocket::UnconnectedState; }
    // Waits until the daemon has closed the connection.
    bool waitClosed(int ms = 5000)
    {
        return waitFor(
            [this] {
                pump();
                return isClosed();
            },
            ms);
    }
    void disconnect() { m_socket.abort(); }

    // The next frame, or nullopt on timeout.
    std::optional<Frame> next(int ms = 10000)
    {
        if (!waitFor(
                [this] {
                    pump();
                    return !m_frames.isEmpty() || m_bad;
                },
                ms)
            || m_frames.isEmpty())
            return std::nullopt;
        return m_frames.takeFirst();
    }
    // The reply to request `id` (event notifications in between are skipped).
    std::optional<QJsonObject> reply(qint64 id, int ms = 10000)
    {
        QJsonObject found;
        const bool ok = waitFor(
            [&] {
                pump();
                for (qsizetype i = 0; i < m_frames.size(); ++i) {
                    const QJsonObject o = m_frames.at(i).json();
                    if (m_frames.at(i).kind == rpc::kJsonFrame
                        && o.value(QStringLiteral("id")).toDouble(-1) == double(id)) {
                        found = o;
                        m_frames.removeAt(i);
                        return true;
                    }
                }
                return false;
            },
            ms);
        return ok ? std::optional<QJsonObject>(found) : std::nullopt;
    }
    bool hasReply(qint64 id)
    {
        pump();
        for (const Frame &f : std::as_const(m_frames))
            if (f.json().value(QStringLiteral("id")).toDouble(-1) == double(id))
                return true;
        return false;
    }
    qsizetype pendingFrames() const { return m_frames.size(); }

private:
    void pump()
    {
        m_buf.append(m_socket.readAll());
        while (m_buf.size() >= 5) {
            const quint32 len = qFromBigEndian<quint32>(m_buf.constData());
            if (len == 0 || len > rpc::kMaxFrameBytes) {
                m_bad = true;
                return;
            }
            if (m_buf.size() < 4 + qsizetype(len))
                return;
            m_frames.append({m_buf.at(4), m_buf.mid(5, len - 1)});
            m_buf.remove(0, 4 + len);
        }
    }

    QLocalSocket m_socket;
    QByteArray m_buf;
    QList<Frame> m_frames;
    bool m_bad = false;
};

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

QString describe(const QJsonObject &o)
{
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

} // namespace

class TestRobustness final : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<TestDaemon> m_daemon;
    std::unique_ptr<TestDaemon> m_bad; // runs airlock-bad-guest as the sandbox agent
    QString m_badWorkspaces; // where m_bad keeps sandbox workspaces

    static QString badGuest() { return binDir() + QStringLiteral("/airlock-bad-guest"); }

    // A brand-new connection completes the handshake and lists sandboxes.
    static bool serves(TestDaemon &daemon, QString *why)
    {
        if (daemon.process().state() != QProcess::Running) {
            *why = QStringLiteral("the daemon is not running (exit %1)").arg(daemon.process().exitCode());
            return false;
        }
        RawClient c(daemon.socketPath());
        if (!c.waitConnected()) {
            *why = QStringLiteral("cannot connect");
            return false;
        }
        c.send(hello() + request(2, QStringLiteral("sandbox.list")));
        const auto h = c.reply(1), l = c.reply(2);
        if (!h
            || h->value(QStringLiteral("result")).toObject().value(QStringLiteral("protocol")).toInt()
                != rpc::kProtocolVersion) {
            *why = QStringLiteral("no hello result: ") + (h ? describe(*h) : QStringLiteral("timeout"));
            return false;
        }
        if (!l || !l->value(QStringLiteral("result")).toObject().value(QStringLiteral("sandboxes")).isArray()) {
            *why = QStringLiteral("no sandbox.list result: ") + (l ? describe(*l) : QStringLiteral("timeout"));
            return false;
        }
        return true;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(QFileInfo::exists(badGuest()));
        m_daemon = std::make_unique<TestDaemon>();
        QVERIFY(m_daemon->start());
        m_bad = std::make_unique<TestDaemon>(QStringList{QStringLiteral("--guest"), badGuest()});
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
        m_daemon.reset();
        m_bad.reset();
        QVERIFY(pidsRunning(badGuest()).isEmpty());
    }

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

    // ---- an untrusted sandbox agent ----

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
    // it poll readable with nothing an ordinary read returns (a byte out of band). The proxy reads
    // with MSG_DONTWAIT and ends a connection that keeps saying so: the daemon keeps serving
    // everyone, and does not spin on it (its CPU over a second is measured).
    void aGuestCannotMakeTheProxyWaitOnItsConnection()
    {
        int probe[2]; // the bad guest's byte needs out-of-band data on AF_UNIX (Linux 5.15+)
        QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, probe) == 0);
        const bool outOfBand = ::send(probe[1], "x", 1, MSG_OOB) == 1;
        ::close(probe[0]);
        ::close(probe[1]);
        if (!outOfBand)
            QSKIP("this kernel has no out-of-band data on AF_UNIX sockets (CONFIG_AF_UNIX_OOB)");
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
        auto cpuTicks = [&] {
            QFile stat(QStringLiteral("/proc/%1/stat").arg(m_bad->pid()));
            if (!stat.open(QIODevice::ReadOnly))
                return -1LL;
            const QList<QByteArray> fields = stat.readAll().split(')').last().split(' ');
            return fields.value(12).toLongLong() + fields.value(13).toLongLong(); // utime + stime
        };
        const qint64 before = cpuTicks();
        QTest::qWait(1000);
        const qint64 used = cpuTicks() - before;
        QVERIFY2(before >= 0 && used < 30, qPrintable(QStringLiteral("%1 ticks in 1 s").arg(used)));
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

QTEST_GUILESS_MAIN(TestRobustness)
#include "tst_robustness.moc"
