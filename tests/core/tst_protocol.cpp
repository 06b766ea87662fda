// SPDX-License-Identifier: Apache-2.0
// The RPC framing: exact bytes on the wire, hard limits, and typed errors for malformed input.
#include "rpc/Protocol.h"

#include <QJsonDocument>
#include <QTest>
#include <QtEndian>

using namespace airlock;
using namespace airlock::rpc;

namespace {
QByteArray rawFrame(char kind, const QByteArray &payload)
{
    QByteArray f(4, '\0');
    qToBigEndian(quint32(payload.size() + 1), f.data());
    return f + kind + payload;
}
} // namespace

class TestProtocol final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void jsonFrameHasBigEndianLengthAndKind()
    {
        const QByteArray f = encodeJson({{QStringLiteral("jsonrpc"), QStringLiteral("2.0")}});
        QCOMPARE(f.left(5), QByteArray::fromHex("00000012") + 'J');
        QCOMPARE(f.mid(5), QByteArray(R"({"jsonrpc":"2.0"})"));
    }

    void framesSurviveAnySplit()
    {
        Event e;
        e.kind = QStringLiteral("exec.output");
        e.sandbox = QStringLiteral("abc");
        e.seq = 42;
        e.exec = 7;
        e.stream = 2;
        e.data = QByteArray("\x00\x1b]52;c;evil\x07 raw bytes\xff", 24);
        const QByteArray wire
            = encodeJson(makeNotification(QStringLiteral("event"), {})) + encodeOutputHeader(e) + e.data;
        for (int split = 0; split <= wire.size(); ++split) {
            FrameReader r;
            // Frames refer to the reader's buffer until the next append: decode them at once.
            QList<char> kinds;
            std::optional<Result<Event>> decoded;
            auto drain = [&] {
                for (auto f = r.next(); f && f->has_value(); f = r.next()) {
                    kinds.append((*f)->kind);
                    if ((*f)->kind == kOutputFrame)
                        decoded = decodeOutput((*f)->payload);
                }
            };
            r.append(wire.first(split));
            drain();
            r.append(wire.sliced(split));
            drain();
            QCOMPARE(kinds.size(), 2);
            QCOMPARE(kinds[1], kOutputFrame);
            QVERIFY(decoded.has_value());
            QVERIFY(*decoded);
            QCOMPARE((*decoded)->data, e.data); // raw bytes, exactly
            QCOMPARE((*decoded)->seq, 42u);
            QCOMPARE((*decoded)->exec, 7u);
            QCOMPARE((*decoded)->stream, 2);
        }
    }

    void malformedFrames_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("code");
        QTest::newRow("length above the hard maximum")
            << QByteArray::fromHex("00500001") + 'J' << int(ErrorCode::FrameTooLarge);
        QTest::newRow("zero length") << QByteArray::fromHex("00000000") << int(ErrorCode::ProtocolError);
        QTest::newRow("unknown kind") << rawFrame('X', "{}") << int(ErrorCode::ProtocolError);
    }
    void malformedFrames()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, code);
        FrameReader r;
        r.append(bytes);
        const auto f = r.next();
        QVERIFY(!f);
        QCOMPARE(int(f.error().code), code);
    }

    void malformedMessages_data()
    {
        QTest::addColumn<QByteArray>("payload");
        QTest::addColumn<QString>("message");
        QTest::newRow("not JSON") << QByteArray("{nope") << "invalid JSON at offset";
        QTest::newRow("an array") << QByteArray("[1]") << "must be an object";
        QTest::newRow("no jsonrpc member") << QByteArray(R"({"id":1})") << "jsonrpc";
    }
    void malformedMessages()
    {
        QFETCH(QByteArray, payload);
        QFETCH(QString, message);
        const auto r = decodeJson(payload);
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::ProtocolError);
        QVERIFY2(r.error().message.contains(message), qPrintable(r.error().message));
    }

    void outputHeaderIsBounded()
    {
        QByteArray payload(4, '\0');
        qToBigEndian(quint32(1 << 20), payload.data());
        QVERIFY(!decodeOutput(QByteArray(payload + "{}")));
        QVERIFY(!decodeOutput(QByteArray("\0\0", 2)));
        QByteArray bad(4, '\0');
        const QByteArray header = R"({"sandbox":"a","stream":3})";
        qToBigEndian(quint32(header.size()), bad.data());
        QVERIFY(!decodeOutput(QByteArray(bad + header))); // stream 3 does not exist
    }

    // cp's data frames: a transfer id and the bytes as they are; a chunk above 1 MiB or without
    // its id is refused.
    void dataFramesCarryRawBytesOfOneTransfer()
    {
        QByteArray bytes(300000, Qt::Uninitialized);
        for (qsizetype i = 0; i < bytes.size(); ++i)
            bytes[i] = char(i * 7);
        FrameReader r;
        r.append(encodeDataHeader(0xA1B2C3D4, bytes.size()) + bytes);
        const auto f = r.next();
        QVERIFY(f && *f);
        QCOMPARE((*f)->kind, kDataFrame);
        const auto chunk = decodeData((*f)->payload);
        QVERIFY(chunk);
        QCOMPARE(chunk->transfer, 0xA1B2C3D4u);
        QVERIFY(chunk->bytes == QByteArrayView(bytes));
        QCOMPARE(encodeDataHeader(1, 0).toHex(), QByteArray("000000054400000001"));
        const auto tooShort = decodeData(QByteArrayView("\0\0", 2));
        QVERIFY(!tooShort && tooShort.error().code == ErrorCode::ProtocolError);
        const QByteArray big(4 + kMaxDataChunk + 1, 'x');
        const auto tooBig = decodeData(big);
        QVERIFY(!tooBig);
        QCOMPARE(tooBig.error().message, QStringLiteral("data frame of 1048577 bytes exceeds the 1048576-byte chunk"));
    }

    void errorsKeepTheirTypeAcrossTheWire()
    {
        const QJsonObject reply = makeErrorReply(5, makeError(ErrorCode::PathEscape, QStringLiteral("nope")));
        const QJsonObject err = reply.value(QStringLiteral("error")).toObject();
        QCOMPARE(err.value(QStringLiteral("data")).toObject().value(QStringLiteral("type")).toString(),
            QStringLiteral("path_escape"));
        const Error back = errorFromReply(err);
        QCOMPARE(back.code, ErrorCode::PathEscape);
        QCOMPARE(back.message, QStringLiteral("nope"));
        QCOMPARE(jsonRpcCode(ErrorCode::InvalidArgument), -32602);
    }
};

QTEST_GUILESS_MAIN(TestProtocol)
#include "tst_protocol.moc"
