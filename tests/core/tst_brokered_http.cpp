// SPDX-License-Identifier: Apache-2.0
// The credential broker's HTTP/1.1 reading of what a sandbox sends, as an attacker would write it:
// every head the broker and a host could read two ways (smuggling), every way to move the secret
// somewhere the policy does not say, and every oversize is refused with its status and reason; a
// chunked body ends exactly where it ends, fed whole or a byte at a time.
#include "net/BrokeredHttp.h"

#include <QTest>

using namespace airlock::net::http;

namespace {
const QString kHost = QStringLiteral("api.example.test");
const Credential kCredential{"x-api-key", "airlock-placeholder-0123", "sk-real-secret-value"};

RequestHead parsed(const QByteArray &bytes)
{
    const HeadParse p = parseRequestHead(bytes, kHost);
    if (const auto *r = std::get_if<Refusal>(&p))
        qFatal("refused: %d %s", r->status, qPrintable(r->reason));
    if (std::holds_alternative<NeedMore>(p))
        qFatal("needs more");
    return std::get<RequestHead>(p);
}

QByteArray rewritten(const RequestHead &head, const Credential &credential, bool *put)
{
    const auto out = rewriteHead(head, credential, put);
    if (const auto *r = std::get_if<Refusal>(&out))
        qFatal("refused: %d %s", r->status, qPrintable(r->reason));
    return std::get<QByteArray>(out);
}

// Feeds `body` to a ChunkedBody whole or a byte at a time: bytes it took, or -1 when malformed.
qsizetype chunkedEnd(const QByteArray &body, bool byteByByte)
{
    ChunkedBody chunked;
    qsizetype used = 0;
    for (qsizetype at = 0; at < body.size() && !chunked.done();) {
        const qsizetype n = byteByByte ? 1 : body.size() - at;
        const auto took = chunked.feed(QByteArrayView(body).sliced(at, n));
        if (!took)
            return -1;
        used += *took;
        at += n;
    }
    return chunked.done() ? used : -2;
}
} // namespace

class TestBrokeredHttp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theSecretGoesInItsHeaderAndTheHeadIsSentAsRead()
    {
        const QByteArray request = "POST /v1/messages?beta=true HTTP/1.1\r\n"
                                   "Host: API.example.test:443\r\n"
                                   "X-Api-Key:   airlock-placeholder-0123  \r\n"
                                   "Content-Length: 5\r\n"
                                   "Accept-Encoding: gzip, br\r\n"
                                   "Proxy-Authorization: Basic Zm9v\r\n"
                                   "anthropic-version: 2023-06-01\r\n"
                                   "\r\n"
                                   "hello";
        const RequestHead head = parsed(request);
        QCOMPARE(head.size, request.size() - 5);
        QCOMPARE(int(head.body.kind), int(BodyFraming::Kind::Length));
        QCOMPARE(head.body.length, 5u);
        bool substituted = false;
        QCOMPARE(rewritten(head, kCredential, &substituted),
            QByteArray("POST /v1/messages?beta=true HTTP/1.1\r\n"
                       "Host: API.example.test:443\r\n"
                       "X-Api-Key: sk-real-secret-value\r\n"
                       "Content-Length: 5\r\n"
                       "anthropic-version: 2023-06-01\r\n"
                       "Accept-Encoding: identity\r\n\r\n"));
        QVERIFY(substituted);
    }

    // The placeholder in any other header, in the target or in the body stays the placeholder:
    // code in the sandbox cannot have the secret echoed back by putting it somewhere else.
    void theSecretGoesNowhereElse()
    {
        const QByteArray request = "GET /echo?key=airlock-placeholder-0123 HTTP/1.1\r\n"
                                   "Host: api.example.test\r\n"
                                   "X-Echo: airlock-placeholder-0123\r\n"
                                   "Authorization: Bearer airlock-placeholder-0123\r\n"
                                   "Content-Length: 24\r\n\r\n";
        bool substituted = true;
        const QByteArray out = rewritten(parsed(request), kCredential, &substituted);
        QVERIFY(!substituted);
        QVERIFY(!out.contains("sk-real-secret-value"));
        // As an Authorization credential, there only.
        const QByteArray bearer
            = rewritten(parsed(request), {"authorization", "airlock-placeholder-0123", "sk-b"}, &substituted);
        QVERIFY(substituted);
        QVERIFY(bearer.contains("\r\nAuthorization: Bearer sk-b\r\n"));
        QVERIFY(bearer.contains("GET /echo?key=airlock-placeholder-0123 HTTP/1.1\r\n"));
        QVERIFY(bearer.contains("\r\nX-Echo: airlock-placeholder-0123\r\n"));
    }

    // Next to text of the sandbox's, the secret could come back in part (an API that quotes a wrong
    // key's first and last characters); twice, one header could be read and the other echoed.
    void theSecretIsNeverNextToTheSandboxsText_data()
    {
        QTest::addColumn<QByteArray>("headers");
        QTest::addColumn<int>("status"); // 0: put in
        QTest::addColumn<QString>("reason");
        QTest::newRow("alone") << QByteArray("x-api-key: airlock-placeholder-0123\r\n") << 0 << "";
        QTest::newRow("after a scheme") << QByteArray("x-api-key: Bearer airlock-placeholder-0123\r\n") << 0 << "";
        QTest::newRow("text before it") << QByteArray("x-api-key: aaaairlock-placeholder-0123\r\n") << 400
                                        << "other text around it";
        QTest::newRow("text after it") << QByteArray("x-api-key: airlock-placeholder-0123bbb\r\n") << 400
                                       << "other text around it";
        QTest::newRow("twice in one") << QByteArray("x-api-key: airlock-placeholder-0123, airlock-placeholder-0123\r\n")
                                      << 400 << "other text around it";
        QTest::newRow("a scheme that is no token")
            << QByteArray("x-api-key: Bear(er airlock-placeholder-0123\r\n") << 400 << "other text around it";
        QTest::newRow("bearer in lower case")
            << QByteArray("x-api-key: bearer airlock-placeholder-0123\r\n") << 0 << "";
        // The host would decode it, and could answer with the decoded bytes, which no search finds.
        QTest::newRow("a scheme other than Bearer")
            << QByteArray("x-api-key: Basic airlock-placeholder-0123\r\n") << 400 << "after Bearer";
        QTest::newRow("two headers, in two cases")
            << QByteArray("X-Api-Key: airlock-placeholder-0123\r\nx-api-key: x\r\n") << 400
            << "more than one x-api-key header";
    }
    void theSecretIsNeverNextToTheSandboxsText()
    {
        QFETCH(QByteArray, headers);
        QFETCH(int, status);
        QFETCH(QString, reason);
        const RequestHead head = parsed("GET / HTTP/1.1\r\nHost: api.example.test\r\n" + headers + "\r\n");
        bool put = false;
        const auto out = rewriteHead(head, kCredential, &put);
        if (status == 0) {
            QVERIFY(std::holds_alternative<QByteArray>(out));
            QVERIFY(put);
            QCOMPARE(std::get<QByteArray>(out).count("sk-real-secret-value"), 1);
            return;
        }
        QVERIFY(std::holds_alternative<Refusal>(out));
        QCOMPARE(std::get<Refusal>(out).status, status);
        QVERIFY2(std::get<Refusal>(out).reason.contains(reason), qPrintable(std::get<Refusal>(out).reason));
        // A secret that would break the head out of its line is never put anywhere.
        const auto broken = rewriteHead(
            parsed("GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n"), {"x-api-key", "p", "a\r\nX-Injected: 1"}, &put);
        QVERIFY(std::holds_alternative<Refusal>(broken));
        QCOMPARE(std::get<Refusal>(broken).status, 500);
    }

    // What would let an answer come back compressed or in pieces (where a search for the whole
    // secret would miss it) is not sent on; a length goes as a plain number.
    void whatCouldBringTheSecretBackInPiecesIsLeftOut()
    {
        const RequestHead head = parsed("POST / HTTP/1.1\r\nHost: api.example.test\r\nTE: gzip\r\nRange: bytes=0-3\r\n"
                                        "If-Range: \"x\"\r\nAccept-Encoding: br\r\nContent-Length: 0005\r\n\r\n");
        QCOMPARE(rewritten(head, kCredential, nullptr),
            QByteArray(
                "POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 5\r\nAccept-Encoding: identity\r\n\r\n"));
    }

    void headsThatCouldBeReadTwoWaysAreRefused_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("reason");
        const QByteArray host = "Host: api.example.test\r\n";
        QTest::newRow("a bare LF") << QByteArray("GET / HTTP/1.1\n" + host + "\r\n") << 400 << "CRLF";
        QTest::newRow("a bare CR in a value")
            << QByteArray("GET / HTTP/1.1\r\n" + host + "X: a\rb\r\n\r\n") << 400 << "CRLF";
        QTest::newRow("a folded header") << QByteArray("GET / HTTP/1.1\r\n" + host + "X: a\r\n b\r\n\r\n") << 400
                                         << "folded";
        QTest::newRow("a blank before the colon")
            << QByteArray("GET / HTTP/1.1\r\nHost : api.example.test\r\n\r\n") << 400 << "NAME: VALUE";
        // A proxy at the host drops the headers Connection names: Content-Length, say.
        QTest::newRow("Connection naming a header") << QByteArray(
            "POST / HTTP/1.1\r\n" + host + "Connection: keep-alive, Content-Length\r\nContent-Length: 3\r\n\r\n")
                                                    << 400 << "only close and keep-alive";
        QTest::newRow("a header without a colon")
            << QByteArray("GET / HTTP/1.1\r\n" + host + "X\r\n\r\n") << 400 << "NAME: VALUE";
        QTest::newRow("Content-Length and chunked")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
            << 400 << "read two ways";
        QTest::newRow("Content-Length twice, the same")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nContent-Length: 3\r\n\r\n") << 400
            << "repeats";
        QTest::newRow("Content-Length as a list")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: 3, 3\r\n\r\n") << 400 << "not a number";
        QTest::newRow("a negative Content-Length")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n") << 400 << "not a number";
        QTest::newRow("Content-Length in hex")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: 0x10\r\n\r\n") << 400 << "not a number";
        QTest::newRow("a Content-Length of 19 digits")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Content-Length: 1000000000000000000\r\n\r\n") << 400
            << "not a number";
        QTest::newRow("a coding before chunked")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n") << 501
            << "only Transfer-Encoding: chunked";
        QTest::newRow("chunked twice") << QByteArray(
            "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n")
                                       << 400 << "repeats";
        QTest::newRow("chunked with a blank inside")
            << QByteArray("POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chun ked\r\n\r\n") << 501
            << "only Transfer-Encoding";
        QTest::newRow("no Host") << QByteArray("GET / HTTP/1.1\r\n\r\n") << 400 << "0 Host headers";
        QTest::newRow("two Hosts") << QByteArray("GET / HTTP/1.1\r\n" + host + host + "\r\n") << 400
                                   << "2 Host headers";
        QTest::newRow("another host") << QByteArray("GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n") << 421
                                      << "the request is for evil.test; this connection is to api.example.test";
        QTest::newRow("another port") << QByteArray("GET / HTTP/1.1\r\nHost: api.example.test:8443\r\n\r\n") << 421
                                      << "is for api.example.test:8443";
        QTest::newRow("HTTP/1.0") << QByteArray("GET / HTTP/1.0\r\n" + host + "\r\n") << 505 << "only HTTP/1.1";
        QTest::newRow("HTTP/2's preface") << QByteArray("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") << 501 << "method PRI";
        QTest::newRow("a fourth word in the request line")
            << QByteArray("GET / HTTP/1.1 x\r\n" + host + "\r\n") << 400 << "METHOD TARGET HTTP/1.1";
        QTest::newRow("two blanks in the request line")
            << QByteArray("GET  / HTTP/1.1\r\n" + host + "\r\n") << 400 << "METHOD TARGET HTTP/1.1";
        QTest::newRow("an absolute target")
            << QByteArray("GET http://evil.test/ HTTP/1.1\r\n" + host + "\r\n") << 400 << "origin form";
        QTest::newRow("a control byte in the target")
            << QByteArray("GET /a\x01 HTTP/1.1\r\n" + host + "\r\n") << 400 << "control or non-ASCII";
        QTest::newRow("a non-ASCII target")
            << QByteArray("GET /\xc3\xa4 HTTP/1.1\r\n" + host + "\r\n") << 400 << "control or non-ASCII";
        QTest::newRow("CONNECT (the host would read a tunnel)")
            << QByteArray("CONNECT / HTTP/1.1\r\n" + host + "\r\nPOST / HTTP/1.1\r\n" + host + "\r\n") << 501
            << "method CONNECT is not brokered";
        QTest::newRow("TRACE (the host would echo the head)")
            << QByteArray("TRACE / HTTP/1.1\r\n" + host + "\r\n") << 501 << "method TRACE";
        QTest::newRow("a method in lower case")
            << QByteArray("get / HTTP/1.1\r\n" + host + "\r\n") << 501 << "method get";
        QTest::newRow("a tab in the target")
            << QByteArray("GET /a\tHTTP/1.0 HTTP/1.1\r\n" + host + "\r\n") << 400 << "control or non-ASCII";
        QTest::newRow("a method that is no token")
            << QByteArray("G(T / HTTP/1.1\r\n" + host + "\r\n") << 400 << "not a token";
        QTest::newRow("a NUL in a value")
            << QByteArray("GET / HTTP/1.1\r\n" + host + "X: a" + QByteArray(1, '\0') + "b\r\n\r\n") << 400
            << "control character";
        QTest::newRow("an Upgrade") << QByteArray("GET / HTTP/1.1\r\n" + host + "Upgrade: websocket\r\n\r\n") << 501
                                    << "upgrades";
        QTest::newRow("Connection: upgrade")
            << QByteArray("GET / HTTP/1.1\r\n" + host + "Connection: keep-alive, Upgrade\r\n\r\n") << 501 << "upgrades";
        QByteArray many = "GET / HTTP/1.1\r\n" + host;
        for (int i = 0; i < kMaxHeaders; ++i)
            many += "X-" + QByteArray::number(i) + ": y\r\n";
        QTest::newRow("101 headers") << QByteArray(many + "\r\n") << 431 << "more than 100 headers";
        QTest::newRow("a head over 64 KiB")
            << QByteArray("GET / HTTP/1.1\r\n" + host + "X: " + QByteArray(kMaxHead, 'a')) << 431
            << "larger than 64 KiB";
    }
    void headsThatCouldBeReadTwoWaysAreRefused()
    {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        QFETCH(QString, reason);
        const HeadParse p = parseRequestHead(request, kHost);
        const auto *refusal = std::get_if<Refusal>(&p);
        QVERIFY2(refusal, std::holds_alternative<NeedMore>(p) ? "needs more" : "accepted");
        QCOMPARE(refusal->status, status);
        QVERIFY2(refusal->reason.contains(reason), qPrintable(refusal->reason));
    }

    void aHeadInPiecesNeedsMoreAndRequestsFollowEachOther()
    {
        const QByteArray first = "GET /a HTTP/1.1\r\nHost: api.example.test\r\n\r\n";
        const QByteArray second = "POST /b HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (qsizetype cut = 0; cut < first.size(); ++cut)
            QVERIFY(std::holds_alternative<NeedMore>(parseRequestHead(first.first(cut), kHost)));
        // A byte at a time, each call told how much the last searched: the end is found where it is.
        for (qsizetype cut = 1; cut < first.size(); ++cut)
            QVERIFY(std::holds_alternative<NeedMore>(parseRequestHead(first.first(cut), kHost, cut - 1)));
        const HeadParse whole = parseRequestHead(first, kHost, first.size() - 1);
        QVERIFY(std::holds_alternative<RequestHead>(whole));
        QCOMPARE(std::get<RequestHead>(whole).size, first.size());
        const QByteArray both = first + second;
        const RequestHead a = parsed(both);
        QCOMPARE(a.size, first.size());
        QCOMPARE(int(a.body.kind), int(BodyFraming::Kind::None));
        const RequestHead b = parsed(both.sliced(a.size));
        QCOMPARE(b.target, QByteArray("/b"));
        QCOMPARE(int(b.body.kind), int(BodyFraming::Kind::Chunked));
        QCOMPARE(int(parsed("POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 0\r\n\r\n").body.kind),
            int(BodyFraming::Kind::None));
    }

    void aChunkedBodyEndsWhereItEnds_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("end"); // bytes of the body; -1: malformed
        QTest::newRow("two chunks") << QByteArray("5\r\nhello\r\n1\r\n!\r\n0\r\n\r\nGET / HTTP/1.1\r\n") << 21;
        QTest::newRow("hex of either case") << QByteArray("A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n") << 35;
        QTest::newRow("an extension (none are taken)") << QByteArray("5;name=value\r\nhello\r\n0\r\n\r\n") << -1;
        QTest::newRow("a trailer (none are taken)") << QByteArray("0\r\nX-Checksum: 1\r\n\r\nnext") << -1;
        QTest::newRow("data that looks like the end") << QByteArray("7\r\n0\r\n\r\nxx\r\n0\r\n\r\n") << 17;
        QTest::newRow("a bare LF after the size") << QByteArray("5\nhello\r\n0\r\n\r\n") << -1;
        QTest::newRow("no CRLF after the data") << QByteArray("5\r\nhelloXX0\r\n\r\n") << -1;
        QTest::newRow("a size that is no number") << QByteArray("zz\r\n") << -1;
        QTest::newRow("a blank before the size") << QByteArray(" 5\r\nhello\r\n0\r\n\r\n") << -1;
        QTest::newRow("a blank after the size") << QByteArray("5 \r\nhello\r\n0\r\n\r\n") << -1;
        QTest::newRow("a size of 16 hex digits") << QByteArray("1000000000000000\r\n") << -1;
        QTest::newRow("a signed size") << QByteArray("-5\r\n") << -1;
        QTest::newRow("a control byte in an extension") << QByteArray("5;a\x01\r\nhello\r\n0\r\n\r\n") << -1;
        QTest::newRow("a trailer that is no header") << QByteArray("0\r\nnot a header\r\n\r\n") << -1;
        QTest::newRow("an endless size line") << QByteArray(9000, '1') << -1;
        QByteArray trailers = "0\r\n";
        for (int i = 0; i < 1000; ++i)
            trailers += "X-T: 0123456789\r\n";
        QTest::newRow("trailers over 8 KiB") << QByteArray(trailers + "\r\n") << -1;
    }
    void aChunkedBodyEndsWhereItEnds()
    {
        QFETCH(QByteArray, body);
        QFETCH(int, end);
        QCOMPARE(chunkedEnd(body, false), qsizetype(end));
        QCOMPARE(chunkedEnd(body, true), qsizetype(end));
    }

    // The host's answer is passed on as the host framed it: the broker must find its end exactly,
    // or it would pass part of one answer as the next.
    void answersAreFramedAsTheHostFramedThem_data()
    {
        QTest::addColumn<QByteArray>("response");
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<int>("status");
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("length");
        const int none = int(BodyFraming::Kind::None), length = int(BodyFraming::Kind::Length),
                  chunked = int(BodyFraming::Kind::Chunked), untilClose = int(BodyFraming::Kind::UntilClose);
        QTest::newRow("a length") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                                  << QByteArray("GET") << 200 << length << 5;
        QTest::newRow("chunked (server-sent events)")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            << QByteArray("POST") << 200 << chunked << 0;
        QTest::newRow("until the host closes") << QByteArray("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                                               << QByteArray("GET") << 200 << untilClose << 0;
        QTest::newRow("HTTP/1.0") << QByteArray("HTTP/1.0 200 OK\r\n\r\n") << QByteArray("GET") << 200 << untilClose
                                  << 0;
        QTest::newRow("no reason phrase")
            << QByteArray("HTTP/1.1 401\r\nContent-Length: 2\r\n\r\n{}") << QByteArray("POST") << 401 << length << 2;
        QTest::newRow("after HEAD, no body whatever it says")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n") << QByteArray("HEAD") << 200 << none << 0;
        QTest::newRow("204") << QByteArray("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n") << QByteArray("GET")
                             << 204 << none << 0;
        QTest::newRow("304") << QByteArray("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n")
                             << QByteArray("GET") << 304 << none << 0;
        QTest::newRow("100 Continue (a final answer follows)")
            << QByteArray("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n") << QByteArray("POST") << 100 << none << 0;
        QTest::newRow("a zero length") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                                       << QByteArray("GET") << 200 << none << 0;
    }
    void answersAreFramedAsTheHostFramedThem()
    {
        QFETCH(QByteArray, response);
        QFETCH(QByteArray, method);
        QFETCH(int, status);
        QFETCH(int, kind);
        QFETCH(int, length);
        const ResponseParse p = parseResponseHead(response, method);
        if (const auto *refusal = std::get_if<Refusal>(&p))
            QFAIL(qPrintable(refusal->reason));
        QVERIFY(!std::holds_alternative<NeedMore>(p));
        const ResponseHead h = std::get<ResponseHead>(p);
        QCOMPARE(h.status, status);
        QCOMPARE(int(h.body.kind), kind);
        QCOMPARE(qint64(h.body.length), qint64(length));
        QCOMPARE(h.size, response.indexOf("\r\n\r\n") + 4);
        QCOMPARE(h.interim(), status == 100);
    }

    void answersThatCouldBePassedOnWronglyAreRefused_data()
    {
        QTest::addColumn<QByteArray>("response");
        QTest::addColumn<QString>("reason");
        QTest::newRow("a length and chunked")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
            << "read two ways";
        QTest::newRow("two lengths") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
                                     << "repeats";
        QTest::newRow("a coding besides chunked")
            << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
            << "only Transfer-Encoding: chunked";
        QTest::newRow("switching protocols")
            << QByteArray("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n") << "switched protocols";
        QTest::newRow("HTTP/2") << QByteArray("HTTP/2 200\r\n\r\n") << "HTTP/1.x status line";
        QTest::newRow("a status of two digits") << QByteArray("HTTP/1.1 99 Odd\r\n\r\n") << "HTTP/1.x status line";
        QTest::newRow("a status of four digits") << QByteArray("HTTP/1.1 2000 OK\r\n\r\n") << "HTTP/1.x status line";
        QTest::newRow("a status above 599") << QByteArray("HTTP/1.1 600 OK\r\n\r\n") << "HTTP/1.x status line";
        QTest::newRow("a folded header") << QByteArray("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n") << "folded";
        QTest::newRow("a bare LF") << QByteArray("HTTP/1.1 200 OK\nContent-Length: 1\r\n\r\n") << "CRLF";
        QTest::newRow("a control byte in the reason")
            << QByteArray("HTTP/1.1 200 O\x01K\r\n\r\n") << "control character";
        QTest::newRow("a head over 64 KiB")
            << QByteArray("HTTP/1.1 200 OK\r\nX: " + QByteArray(kMaxHead, 'a')) << "larger than 64 KiB";
        // Asked for identity: a compressed answer could carry the secret past the search for it.
        QTest::newRow("compressed all the same")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\n")
            << "Content-Encoding: gzip";
    }
    void answersThatCouldBePassedOnWronglyAreRefused()
    {
        QFETCH(QByteArray, response);
        QFETCH(QString, reason);
        const ResponseParse p = parseResponseHead(response, "GET");
        const auto *refusal = std::get_if<Refusal>(&p);
        QVERIFY2(refusal, std::holds_alternative<NeedMore>(p) ? "needs more" : "accepted");
        QCOMPARE(refusal->status, 502);
        QVERIFY2(refusal->reason.contains(reason), qPrintable(refusal->reason));
    }

    void onlySecretsThatFitAHeaderAreBrokered()
    {
        QVERIFY(fitsInHeaderValue("sk-ant-api03-abc_DEF"));
        QVERIFY(fitsInHeaderValue("Bearer a b"));
        QVERIFY(!fitsInHeaderValue("a\r\nX-Injected: 1"));
        QVERIFY(!fitsInHeaderValue(QByteArray("a\0b", 3)));
        QVERIFY(!fitsInHeaderValue(" leading"));
        QVERIFY(!fitsInHeaderValue("trailing\t"));
    }

    // A body is followed to its end whatever the pieces it comes in: a length counts down, a
    // chunked body ends at its last chunk, one until the close ends with it; bytes after the end
    // are the next message's.
    void aBodyIsFollowedToItsEnd()
    {
        BodyReader length({BodyFraming::Kind::Length, 5});
        auto step = length.feed("abc", false);
        QVERIFY(step && step->take == 3 && !step->done);
        step = length.feed("deNEXT", false);
        QVERIFY(step && step->take == 2 && step->done);

        BodyReader chunked({BodyFraming::Kind::Chunked, 0});
        step = chunked.feed("3\r\nabc\r\n0\r", false);
        QVERIFY(step && step->take == 10 && !step->done);
        step = chunked.feed("\n\r\nGET / HTTP/1.1", false);
        QVERIFY(step && step->take == 3 && step->done);
        QVERIFY(!BodyReader({BodyFraming::Kind::Chunked, 0}).feed("3;ext\r\nabc", false)); // malformed

        BodyReader untilClose({BodyFraming::Kind::UntilClose, 0});
        step = untilClose.feed("all of it", false);
        QVERIFY(step && step->take == 9 && !step->done);
        step = untilClose.feed({}, true);
        QVERIFY(step && step->take == 0 && step->done);

        step = BodyReader().feed("GET / HTTP/1.1", false); // none: the bytes are the next message's
        QVERIFY(step && step->take == 0 && step->done);
    }

    // Whether a connection goes on after a message: HTTP/1.1 unless Connection: close (a list,
    // any case); an HTTP/1.0 answer only with keep-alive.
    void keepAliveIsReadFromConnection()
    {
        const auto request = [](const QByteArray &more) {
            const QByteArray head = "GET / HTTP/1.1\r\nHost: api.example.com\r\n" + more + "\r\n";
            const auto parsed = parseRequestHead(head, QStringLiteral("api.example.com"));
            return std::get<RequestHead>(parsed).keepAlive;
        };
        QVERIFY(request({}));
        QVERIFY(!request("Connection: keep-alive, Close\r\n"));
        const auto response = [](const QByteArray &head) {
            const QByteArray whole = head + "\r\n";
            return std::get<ResponseHead>(parseResponseHead(whole, "GET")).keepAlive;
        };
        QVERIFY(response("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"));
        QVERIFY(!response("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n"));
        QVERIFY(!response("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n"));
        QVERIFY(response("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n"));
    }
};

QTEST_GUILESS_MAIN(TestBrokeredHttp)
#include "tst_brokered_http.moc"
