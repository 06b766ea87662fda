// SPDX-License-Identifier: Apache-2.0
// The egress proxy's parser, fed what a hostile client might send: every answer is checked to the
// byte, and nothing malformed yields a destination.
#include "net/ProxyHandshake.h"

#include <QTest>

using namespace airlock::net;

class TestProxyHandshake final : public QObject {
    Q_OBJECT

    // Feeds one byte at a time: a request split anywhere parses the same.
    static ProxyHandshake::Step feedBytewise(ProxyHandshake &h, const QByteArray &bytes, QByteArray *replies = nullptr)
    {
        ProxyHandshake::Step last;
        for (char c : bytes) {
            last = h.feed(QByteArrayView(&c, 1));
            if (replies)
                *replies += last.reply;
            if (last.target || !last.error.isEmpty())
                break;
        }
        return last;
    }

private Q_SLOTS:
    void connectWithEarlyData()
    {
        ProxyHandshake h;
        const auto step = feedBytewise(h, "CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
        QVERIFY(step.target);
        QCOMPARE(step.target->protocol, ProxyProtocol::HttpConnect);
        QCOMPARE(step.target->host, QStringLiteral("Example.COM")); // normalised by the rules, not here
        QCOMPARE(step.target->port, quint16(443));
        QCOMPARE(h.success(), QByteArray("HTTP/1.1 200 Connection established\r\n\r\n"));

        // A client that sends its TLS hello right behind the request loses none of it.
        ProxyHandshake early;
        const auto s2 = early.feed("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n\x16\x03\x01hello");
        QVERIFY(s2.target);
        QCOMPARE(s2.target->host, QStringLiteral("[::1]"));
        QCOMPARE(s2.target->upstreamFirst, QByteArray("\x16\x03\x01hello"));
    }

    void absoluteFormIsRewrittenForTheDestination()
    {
        ProxyHandshake h;
        const auto step = feedBytewise(h,
            "POST http://api.example.com/v1?q=1 HTTP/1.1\r\nHost: API.example.com:80\r\nProxy-Authorization: x\r\n"
            "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nContent-Length: 4\r\n\r\n");
        QVERIFY(step.target);
        QCOMPARE(step.target->protocol, ProxyProtocol::HttpForward);
        QCOMPARE(step.target->port, quint16(80));
        QCOMPARE(step.target->upstreamFirst,
            QByteArray(
                "POST /v1?q=1 HTTP/1.1\r\nHost: API.example.com:80\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"));
        QCOMPARE(step.target->upstreamLimit, 4); // the body, and not a byte after it
        QCOMPARE(h.success(), QByteArray()); // the destination answers

        ProxyHandshake noHost;
        const auto s2 = noHost.feed("GET http://example.com:8080 HTTP/1.0\r\n\r\nbody");
        QVERIFY(s2.target);
        QCOMPARE(s2.target->upstreamFirst,
            QByteArray("GET / HTTP/1.0\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n"));
        QCOMPARE(s2.target->upstreamLimit, 0);

        // A second request behind the first (for another host) never reaches the destination.
        ProxyHandshake pipelined;
        const auto s3
            = pipelined.feed("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 2\r\n\r\nhi"
                             "GET http://a.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n");
        QVERIFY(s3.target);
        QVERIFY(s3.target->upstreamFirst.endsWith("\r\n\r\nhi"));
        QVERIFY(!s3.target->upstreamFirst.contains("evil"));
        QCOMPARE(s3.target->upstreamLimit, 0);
    }

    void malformedHttpIsRefusedWithA400_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<QString>("error");
        QTest::newRow("host mismatch") << QByteArray("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n")
                                       << QStringLiteral("the Host header does not match the request target");
        QTest::newRow("two hosts") << QByteArray(
            "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n")
                                   << QStringLiteral("the Host header does not match the request target");
        QTest::newRow("bare LF") << QByteArray("GET http://a.example/ HTTP/1.1\nHost: a.example\r\n\r\n")
                                 << QStringLiteral("the request head has a bare CR or LF");
        QTest::newRow("folded header")
            << QByteArray("GET http://a.example/ HTTP/1.1\r\nX: 1\r\n 2\r\n\r\n")
            << QStringLiteral("malformed header line 3 (folded lines and spaces before ':' are not accepted)");
        QTest::newRow("NUL") << QByteArray("CONNECT a.example:443\0 HTTP/1.1\r\n\r\n", 36)
                             << QStringLiteral("the request head contains a NUL byte");
        QTest::newRow("no port") << QByteArray("CONNECT a.example HTTP/1.1\r\n\r\n")
                                 << QStringLiteral(
                                        "CONNECT needs host:port (a name or address, and a port from 1 to 65535)");
        QTest::newRow("port 0") << QByteArray("CONNECT a.example:0 HTTP/1.1\r\n\r\n")
                                << QStringLiteral(
                                       "CONNECT needs host:port (a name or address, and a port from 1 to 65535)");
        QTest::newRow("port too big") << QByteArray("CONNECT a.example:65536 HTTP/1.1\r\n\r\n")
                                      << QStringLiteral(
                                             "CONNECT needs host:port (a name or address, and a port from 1 to 65535)");
        QTest::newRow("percent in host")
            << QByteArray("CONNECT a%2eexample:443 HTTP/1.1\r\n\r\n")
            << QStringLiteral("CONNECT needs host:port (a name or address, and a port from 1 to 65535)");
        QTest::newRow("userinfo") << QByteArray("GET http://u:p@a.example/ HTTP/1.1\r\n\r\n")
                                  << QStringLiteral("user names and passwords in proxy URLs are not accepted");
        QTest::newRow("fragment") << QByteArray("GET http://a.example/#x HTTP/1.1\r\n\r\n")
                                  << QStringLiteral("a request target cannot carry a fragment");
        QTest::newRow("chunked body") << QByteArray(
            "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n")
                                      << QStringLiteral(
                                             "request bodies in chunks are not relayed; send a Content-Length");
        QTest::newRow("two lengths") << QByteArray(
            "POST http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
                                     << QStringLiteral("the Content-Length header is malformed");
        QTest::newRow("HTTP/2 preface")
            << QByteArray("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            << QStringLiteral(
                   "expected a request line like 'CONNECT host:443 HTTP/1.1' or 'GET http://host/path HTTP/1.1'");
    }
    void malformedHttpIsRefusedWithA400()
    {
        QFETCH(QByteArray, request);
        QFETCH(QString, error);
        ProxyHandshake h;
        const auto step = h.feed(request);
        QVERIFY(!step.target);
        QCOMPARE(step.error, error);
        QVERIFY2(step.reply.startsWith("HTTP/1.1 400 Bad Request\r\n"), step.reply.constData());
        QVERIFY(step.reply.endsWith(QByteArray("\r\n\r\nairlock: " + error.toUtf8() + "\n")));
        QVERIFY(!h.feed("more").target); // finished: nothing after an error
    }

    void anEndlessHeadIsCut()
    {
        ProxyHandshake h;
        QByteArray head = "GET http://a.example/ HTTP/1.1\r\nX: ";
        head += QByteArray(ProxyHandshake::kMaxHead, 'a');
        const auto step = h.feed(head);
        QCOMPARE(step.error, QStringLiteral("the request head is longer than 32768 bytes"));
    }

    void socksHostnameAndAddresses()
    {
        ProxyHandshake h;
        QByteArray replies;
        const QByteArray request = QByteArray("\x05\x02\x02\x00", 4)
            + QByteArray("\x05\x01\x00\x03\x0b"
                         "example.com\x01\xbb",
                18)
            + "early";
        const auto step = feedBytewise(h, request, &replies);
        QCOMPARE(replies, QByteArray("\x05\x00", 2)); // "no authentication" chosen
        QVERIFY(step.target);
        QCOMPARE(step.target->protocol, ProxyProtocol::Socks5);
        QCOMPARE(step.target->host, QStringLiteral("example.com"));
        QCOMPARE(step.target->port, quint16(443));
        QVERIFY(step.target->upstreamFirst.isEmpty()); // one byte at a time: "early" came after
        QCOMPARE(h.success(), QByteArray("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10));
        QCOMPARE(h.failure(ProxyFailure::Denied, QStringLiteral("x")),
            QByteArray("\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00", 10));

        ProxyHandshake v4;
        const auto s4 = v4.feed(QByteArray("\x05\x01\x00\x05\x01\x00\x01\xa9\xfe\xa9\xfe\x00\x50", 13));
        QVERIFY(s4.target);
        QCOMPARE(s4.target->host, QStringLiteral("169.254.169.254"));
        QCOMPARE(s4.target->port, quint16(80));

        ProxyHandshake v6;
        const auto s6 = v6.feed(QByteArray(QByteArray("\x05\x01\x00\x05\x01\x00\x04", 7) + QByteArray(10, '\0')
            + QByteArray("\xff\xff\x7f\x00\x00\x01\x00\x50", 8)));
        QVERIFY(s6.target);
        QCOMPARE(s6.target->host, QStringLiteral("[0:0:0:0:0:ffff:7f00:1]")); // the rules read it as 127.0.0.1
    }

    void socksRefusals()
    {
        ProxyHandshake auth; // only username/password offered
        auto s = auth.feed(QByteArray("\x05\x01\x02", 3));
        QCOMPARE(s.reply, QByteArray("\x05\xff", 2));
        QCOMPARE(s.error, QStringLiteral("SOCKS5 clients must offer 'no authentication'"));

        ProxyHandshake bind;
        s = bind.feed(QByteArray("\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", 13));
        QCOMPARE(s.reply, QByteArray("\x05\x00", 2) + QByteArray("\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00", 10));
        QVERIFY(!s.target);

        ProxyHandshake badName;
        s = badName.feed(QByteArray("\x05\x01\x00\x05\x01\x00\x03\x05"
                                    "a/b@c\x00\x50",
            15));
        QCOMPARE(s.error, QStringLiteral("the SOCKS5 host name is malformed"));
        QVERIFY(!s.target);

        ProxyHandshake badType;
        s = badType.feed(QByteArray("\x05\x01\x00\x05\x01\x00\x09", 7));
        QCOMPARE(s.reply.right(10), QByteArray("\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00", 10));
    }
};

QTEST_GUILESS_MAIN(TestProxyHandshake)
#include "tst_proxy_handshake.moc"
