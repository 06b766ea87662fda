// SPDX-License-Identifier: Apache-2.0
// The Daytona API's parts on their own: its sandbox record across restarts, and its HTTP reader and
// multipart codec: requests in pieces of any size,
// the head before the body, the limits (framing counted), and the WebSocket accept of RFC 6455.
#include "TestHelpers.h"
#include "daytona/DaytonaStore.h"
#include "daytona/HttpMessage.h"
#include "daytona/Multipart.h"

#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock::daytona;

class TestDaytonaHttp final : public QObject {
    Q_OBJECT

    // Every request the bytes hold, fed `piece` bytes at a time.
    static QList<HttpRequest> readAll(
        const QByteArray &bytes, qsizetype piece, qint64 maxBody, int *failed = nullptr, QString *why = nullptr)
    {
        HttpRequestReader reader(maxBody);
        QList<HttpRequest> out;
        for (qsizetype at = 0; at < bytes.size() && !reader.failed(); at += piece) {
            reader.append(QByteArrayView(bytes).sliced(at, std::min(piece, bytes.size() - at)));
            while (auto r = reader.next())
                out.append(*r);
        }
        if (failed)
            *failed = reader.failStatus();
        if (why)
            *why = reader.failure();
        return out;
    }

private Q_SLOTS:
    void requestsInPiecesOfAnySize()
    {
        const QByteArray bytes
            = "POST /toolbox/a%2Fb/files?path=x%20y HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
              "4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\n\r\n"
              "GET /api/sandbox HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi";
        for (qsizetype piece : {1, 2, 3, 7, 64, 4096}) {
            const QList<HttpRequest> got = readAll(bytes, piece, 100);
            QCOMPARE(got.size(), 2);
            QCOMPARE(got.at(0).segments,
                QStringList({QStringLiteral("toolbox"), QStringLiteral("a/b"), QStringLiteral("files")}));
            QCOMPARE(got.at(0).queryValue(QStringLiteral("path")), QStringLiteral("x y"));
            QCOMPARE(got.at(0).body, QByteArray("abcdefg"));
            QVERIFY(got.at(0).keepAlive);
            QCOMPARE(got.at(1).body, QByteArray("hi"));
            QVERIFY(!got.at(1).keepAlive);
        }
    }

    void theHeadComesBeforeItsBody()
    {
        HttpRequestReader reader(1000);
        reader.append("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nab");
        const HttpRequest *head = reader.head();
        QVERIFY(head);
        QCOMPARE(head->method, QByteArray("PUT"));
        QVERIFY(!reader.next()); // the body is not all here
        QVERIFY(reader.wantsContinue());
        QVERIFY(!reader.wantsContinue()); // once
        reader.append("cde");
        const auto r = reader.next();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArray("abcde"));
    }

    void limitsAndMalformedRequests_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("status");
        QTest::newRow("head too long") << QByteArray("GET / HTTP/1.1\r\nX: " + QByteArray(9000, 'a')) << 431;
        QTest::newRow("body too long") << QByteArray("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n") << 413;
        QTest::newRow("chunks too long") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n")
                                         << 413;
        // Framing counts: 1-byte chunks with long extensions stop well before the body's limit.
        QByteArray tiny = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (int i = 0; i < 2200; ++i) // 2,200 bytes of body in 136 KiB
            tiny += "1;" + QByteArray(58, 'e') + "\r\nx\r\n";
        QTest::newRow("framing") << tiny << -413;
        QTest::newRow("both lengths") << QByteArray(
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
                                      << 400;
        QTest::newRow("negative chunk") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n")
                                        << 400;
        QTest::newRow("chunk without CRLF")
            << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n") << 400;
        QTest::newRow("gzip") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") << 501;
        QTest::newRow("dot dot") << QByteArray("GET /toolbox/%2e%2e/x HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("NUL") << QByteArray("GET /a%00b HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("twice") << QByteArray("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") << 400;
        QTest::newRow("HTTP/1.0") << QByteArray("GET / HTTP/1.0\r\n\r\n") << 400;
        // Strict, as a proxy in front would read it.
        QTest::newRow("0x chunk") << QByteArray(
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nab\r\n0\r\n\r\n")
                                  << 400;
        QTest::newRow("+length") << QByteArray("POST / HTTP/1.1\r\nContent-Length: +2\r\n\r\nab") << 400;
    }
    void limitsAndMalformedRequests()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, status);
        // A negative status: the same with a body limit of 100,000 (that the framing reaches first).
        int failed = 0;
        QVERIFY(readAll(bytes, status < 0 ? 4096 : 5, status < 0 ? 100000 : 100, &failed).isEmpty());
        QCOMPARE(failed, std::abs(status));
    }

    // The head as RFC 9112 writes it, read by remote::parseRequestHead (the WebSocket gate's too):
    // each refused by the rule that names what was wrong.
    void theHeadIsReadStrictly_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("why");
        QTest::newRow("HTTP/1.10") << QByteArray("GET / HTTP/1.10\r\n\r\n") << QStringLiteral("HTTP/1.1 exactly");
        QTest::newRow("two spaces") << QByteArray("GET  / HTTP/1.1\r\n\r\n") << QStringLiteral("HTTP/1.1 exactly");
        QTest::newRow("folded") << QByteArray("GET / HTTP/1.1\r\nA: b\r\n c: d\r\n\r\n")
                                << QStringLiteral("a folded header line");
        QTest::newRow("bare LF") << QByteArray("GET / HTTP/1.1\nHost: h\r\n\r\n")
                                 << QStringLiteral("otherwise than with CRLF");
        // Two readings of one head: a reader that ends lines at CR sees a Content-Length here.
        QTest::newRow("bare CR") << QByteArray("POST / HTTP/1.1\r\nX: a\rContent-Length: 5\r\n\r\nhello")
                                 << QStringLiteral("otherwise than with CRLF");
    }
    void theHeadIsReadStrictly()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, why);
        int failed = 0;
        QString failure;
        QVERIFY(readAll(bytes, 4096, 100, &failed, &failure).isEmpty());
        QCOMPARE(failed, 400);
        QVERIFY2(failure.contains(why), qPrintable(failure));
    }

    void multipartRoundTrips()
    {
        const QList<FormPart> parts{{QStringLiteral("files[0].path"), {}, "/a \"q\".txt", {}},
            {QStringLiteral("files[0].file"), QStringLiteral("a.bin"), QByteArray("\r\n--x\r\n\0\xff", 9), {}}};
        const QByteArray boundary = freshBoundary(parts);
        const QByteArray body = writeMultipart(parts, boundary);
        auto found = multipartBoundary("multipart/form-data; boundary=" + boundary);
        QVERIFY(found);
        auto read = parseMultipart(body, *found, 10);
        QVERIFY(read);
        QCOMPARE(read->size(), 2);
        QCOMPARE(read->at(0).name, QStringLiteral("files[0].path"));
        QCOMPARE(read->at(0).data, QByteArray("/a \"q\".txt"));
        QCOMPARE(read->at(1).filename, QStringLiteral("a.bin"));
        QCOMPARE(read->at(1).data, QByteArray("\r\n--x\r\n\0\xff", 9));
        QVERIFY(!parseMultipart(body, *found, 1)); // more parts than allowed
        QVERIFY(!multipartBoundary("application/json"));
        QVERIFY(!parseMultipart(body.left(body.size() - 10), *found, 10)); // cut short
        // A filename cannot end its header early.
        const QByteArray hostile
            = writeMultipart({{QStringLiteral("file"), QStringLiteral("x\"\r\nX-Evil: 1"), "d", {}}}, "B");
        QVERIFY2(!hostile.contains("\r\nX-Evil"), hostile.constData());
    }

    // What the API keeps of its sandboxes survives the daemon: a new store reads what the last
    // one wrote (0600), a name finds the newest sandbox of that key only, and a damaged file is an
    // error that says where it is.
    void theStoreSurvivesARestart()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("daytona.json"));
        {
            DaytonaStore store(path);
            QVERIFY(store.load());
            DaytonaStore::Entry old;
            old.id = QStringLiteral("id-old");
            old.name = QStringLiteral("app");
            old.tokenId = QStringLiteral("key-a");
            old.created = QDateTime::fromMSecsSinceEpoch(1000, Qt::UTC);
            DaytonaStore::Entry fresh = old;
            fresh.id = QStringLiteral("id-new");
            fresh.created = QDateTime::fromMSecsSinceEpoch(2000, Qt::UTC);
            fresh.labels = {{QStringLiteral("role"), QStringLiteral("app")}};
            fresh.env = {{QStringLiteral("A"), QStringLiteral("1")}};
            fresh.networkAllowList = QStringLiteral("pypi.org");
            fresh.autoStop = 15;
            QVERIFY(store.put(fresh));
            QVERIFY(store.put(old));
        }
        QCOMPARE(airlock::test::octalMode(path), QStringLiteral("600"));
        DaytonaStore again(path);
        QVERIFY(again.load());
        const auto byName = again.find(QStringLiteral("key-a"), QStringLiteral("app"));
        QVERIFY(byName);
        QCOMPARE(byName->id, QStringLiteral("id-new"));
        QCOMPARE(byName->labels.value(QStringLiteral("role")).toString(), QStringLiteral("app"));
        QCOMPARE(byName->env.value(QStringLiteral("A")).toString(), QStringLiteral("1"));
        QCOMPARE(byName->networkAllowList, QStringLiteral("pypi.org"));
        QCOMPARE(byName->autoStop, 15);
        QVERIFY(!again.find(QStringLiteral("key-b"), QStringLiteral("id-new"))); // another key's, by id
        QVERIFY(!again.find(QStringLiteral("key-b"), QStringLiteral("app"))); // and by name
        QCOMPARE(again.entriesOf(QStringLiteral("key-a")).size(), 2);
        QFile damaged(path);
        QVERIFY(damaged.open(QIODevice::WriteOnly) && damaged.write("{not json") > 0);
        damaged.close();
        const airlock::Status read = DaytonaStore(path).load();
        QVERIFY(!read);
        QVERIFY2(read.error().message.contains(path), qPrintable(read.error().message));
    }

    void webSocketAcceptAndFrames()
    {
        QCOMPARE(webSocketAccept("dGhlIHNhbXBsZSBub25jZQ=="), QByteArray("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        QCOMPARE(webSocketFrame("hi"), QByteArray("\x82\x02hi"));
        QCOMPARE(webSocketFrame(QByteArray(200, 'a')).left(4), QByteArray("\x82\x7e\x00\xc8", 4));
        QCOMPARE(webSocketFrame(QByteArray(70000, 'a')).left(10),
            QByteArray("\x82\x7f\x00\x00\x00\x00\x00\x01\x11\x70", 10));
    }
};

QTEST_GUILESS_MAIN(TestDaytonaHttp)
#include "tst_daytona_http.moc"
