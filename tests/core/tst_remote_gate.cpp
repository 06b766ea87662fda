// SPDX-License-Identifier: Apache-2.0
// The remote endpoint's decisions without a network: the upgrade request's head as parsed, the
// order of the gate's checks and the status each refusal gets, the per-address limiter's window,
// the token file (scopes, revocation, damaged entries granting nothing) and listen addresses.
#include "remote/RefusalLog.h"
#include "remote/RemoteListener.h"
#include "remote/TokenStore.h"
#include "remote/UpgradeGate.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace airlock;
using namespace airlock::remote;

namespace {
QByteArray head(const QByteArray &lines)
{
    return lines + "\r\n";
}
const QByteArray kGood = "GET / HTTP/1.1\r\nHost: 10.0.0.2:7443\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
} // namespace

class TestRemoteGate final : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    GateConfig config() const { return {{QStringLiteral("10.0.0.2"), QStringLiteral("10.0.0.2:7443")}, {}}; }
    GateDecision decide(const QByteArray &request, TokenStore &tokens) const
    {
        auto parsed = parseRequestHead(request);
        return parsed ? checkUpgrade(*parsed, config(), tokens)
                      : GateDecision{std::nullopt, 400, parsed.error().message.toUtf8()};
    }

private Q_SLOTS:
    void theHeadIsParsedStrictly()
    {
        auto ok = parseRequestHead(head(kGood));
        QVERIFY(ok);
        QCOMPARE(ok->method, QByteArray("GET"));
        QCOMPARE(ok->headers.value("upgrade"), QByteArray("websocket"));
        const QByteArray bad[] = {
            kGood, // no blank line
            head(kGood + "Host: evil.example\r\n"), // a second Host (which one would count?)
            head("GET / HTTP/1.1\r\nBad Header: x\r\n"), // a space in a name
            head("GET /\r\nHost: x\r\n"), // no version
            head("GET / HTTP/1.1\r\nno colon here\r\n"),
            head(kGood + "X: " + QByteArray(kMaxRequestHead, 'a') + "\r\n"), // too long
            head("GET / HTTP/1.1\r\nX: a\rUpgrade: websocket\r\n"), // a bare CR: two readings of the head
            head("GET / HTTP/1.1\r\nX: a\r\n Upgrade: websocket\r\n"), // a folded line
            head("GET / HTTP/1.10\r\nHost: x\r\n"), // not HTTP/1.1 exactly
        };
        for (const QByteArray &b : bad)
            QVERIFY2(!parseRequestHead(b), b.left(80).constData());
    }

    void eachRefusalHasItsStatusInOrder()
    {
        TokenStore tokens(m_dir.filePath(QStringLiteral("gate-tokens.json")));
        auto created = tokens.create(QStringLiteral("laptop"), {});
        QVERIFY(created);
        const QByteArray bearer = "Authorization: Bearer " + created->token.toLatin1() + "\r\n";
        QCOMPARE(decide(head(kGood + bearer), tokens).status, 101);
        QCOMPARE(decide(head(kGood + bearer), tokens).grant->tokenName, QStringLiteral("laptop"));
        QCOMPARE(decide(head(QByteArray(kGood).replace("GET", "POST") + bearer), tokens).status, 405);
        QCOMPARE(decide(head(QByteArray(kGood).replace("GET /", "GET /?token=x") + bearer), tokens).status, 400);
        QCOMPARE(decide(head(QByteArray(kGood).replace("GET /", "GET /admin") + bearer), tokens).status, 404);
        QCOMPARE(
            decide(head(QByteArray(kGood).replace("10.0.0.2:7443", "evil.example:7443") + bearer), tokens).status, 421);
        QCOMPARE(decide(head(kGood + "Origin: http://10.0.0.2:7443\r\n" + bearer), tokens).status,
            403); // even its own address: no page
        QCOMPARE(decide(head(QByteArray(kGood).replace("websocket", "h2c") + bearer), tokens).status, 426);
        QCOMPARE(decide(head(kGood), tokens).status, 401);
        QCOMPARE(decide(head(kGood + "Authorization: Basic YTpi\r\n"), tokens).status, 401);
        // The host check comes before the token: a rebinding page learns nothing about tokens.
        const GateDecision rebound = decide(head(QByteArray(kGood).replace("10.0.0.2:7443", "evil.example")), tokens);
        QCOMPARE(rebound.status, 421);
    }

    // --allow-origin lets exactly that Origin through (a page the person serves on purpose); a
    // look-alike is still refused, and the token is still asked for.
    void anAllowedOriginPassesAndOnlyIt()
    {
        TokenStore tokens(m_dir.filePath(QStringLiteral("origin-tokens.json")));
        auto created = tokens.create(QStringLiteral("page"), {});
        QVERIFY(created);
        const QByteArray bearer = "Authorization: Bearer " + created->token.toLatin1() + "\r\n";
        GateConfig allowing = config();
        allowing.origins = {QStringLiteral("https://console.example")};
        auto check = [&](const QByteArray &request) {
            auto parsed = parseRequestHead(request);
            return parsed ? checkUpgrade(*parsed, allowing, tokens).status : 400;
        };
        QCOMPARE(check(head(kGood + "Origin: https://console.example\r\n" + bearer)), 101);
        QCOMPARE(check(head(kGood + "Origin: https://console.example.evil\r\n" + bearer)), 403);
        QCOMPARE(check(head(kGood + "Origin: http://console.example\r\n" + bearer)), 403);
        QCOMPARE(check(head(kGood + "Origin: https://console.example\r\n")), 401);
    }

    void theLimiterCountsPerAddressWithinTheWindow()
    {
        AuthLimiter limiter;
        for (int i = 0; i < AuthLimiter::kMaxFailures - 1; ++i)
            limiter.failed(QStringLiteral("10.0.0.9"), 1000 + i);
        QVERIFY(!limiter.blocked(QStringLiteral("10.0.0.9"), 2000));
        limiter.failed(QStringLiteral("10.0.0.9"), 2000);
        QVERIFY(limiter.blocked(QStringLiteral("10.0.0.9"), 2001));
        QVERIFY(!limiter.blocked(QStringLiteral("10.0.0.8"), 2001));
        QCOMPARE(limiter.retryAfterMs(QStringLiteral("10.0.0.9"), 2001), AuthLimiter::kWindowMs - 1001);
        QVERIFY(!limiter.blocked(QStringLiteral("10.0.0.9"), 1000 + AuthLimiter::kWindowMs + 1)); // the oldest aged out
    }

    void anIPv6ClientIsItsSlash64()
    {
        QCOMPARE(addressBlock(QHostAddress(QStringLiteral("10.1.2.3"))), QStringLiteral("10.1.2.3"));
        QCOMPARE(addressBlock(QHostAddress(QStringLiteral("::ffff:10.1.2.3"))),
            QStringLiteral("10.1.2.3")); // v4-mapped: the IPv4 address
        QCOMPARE(addressBlock(QHostAddress(QStringLiteral("2001:db8:1:2:aaaa:bbbb:cccc:dddd"))),
            QStringLiteral("2001:db8:1:2::/64"));
        QCOMPARE(addressBlock(QHostAddress(QStringLiteral("2001:db8:1:2::1"))),
            addressBlock(QHostAddress(QStringLiteral("2001:db8:1:2:ffff::9"))));
        QVERIFY(addressBlock(QHostAddress(QStringLiteral("2001:db8:1:3::1")))
            != addressBlock(QHostAddress(QStringLiteral("2001:db8:1:2::1"))));
    }

    // A flood of refusals writes a bounded number of lines, then counts; the counts are said when
    // the minute is over, and what the peer sent stays inert.
    void refusalsAreLoggedThenCountedUnderAFlood()
    {
        RefusalLog log;
        QStringList lines;
        for (int i = 0; i < 1000; ++i)
            lines += log.refused(QStringLiteral("2001:db8::%1").arg(i + 1, 0, 16), QStringLiteral("2001:db8::/64"), 401,
                QStringLiteral("unknown token"), 1000 + i);
        QCOMPARE(lines.size(), RefusalLog::kPerBlock);
        QCOMPARE(lines.first(), QStringLiteral("refused a connection from 2001:db8::1: 401 unknown token"));
        QCOMPARE(log.counted(), 1000 - RefusalLog::kPerBlock);
        QVERIFY(log.flush(1000 + RefusalLog::kWindowMs - 1).isEmpty()); // the minute is not over
        QCOMPARE(log.flush(1000 + RefusalLog::kWindowMs),
            QStringList{QStringLiteral("refused another 990 connections from 2001:db8::/64 in the last 60 s, not each "
                                       "logged (the last: 401 unknown token)")});
        QVERIFY(log.flush(1000 + 3 * RefusalLog::kWindowMs).isEmpty()); // said once

        // Many addresses: at most kTotal lines in all, the largest counts first, the rest as one.
        const qint64 start = 10 * RefusalLog::kWindowMs;
        lines.clear();
        for (int i = 0; i < 500; ++i)
            for (int n = 0; n < (i < 3 ? 3 - i : 1); ++n) // 10.0.0.0 sends 3, 10.0.0.1 sends 2, the others 1
                lines += log.refused(QStringLiteral("10.0.%1.%2").arg(i / 256).arg(i % 256),
                    QStringLiteral("10.0.%1.%2").arg(i / 256).arg(i % 256), 403,
                    QStringLiteral("Origin 'https://evil.example\x1b[2J' is not allowed"), start + i);
        QCOMPARE(lines.size(), RefusalLog::kTotal);
        QVERIFY2(lines.first().endsWith(QStringLiteral("Origin 'https://evil.example\\x1b[2J' is not allowed")),
            qPrintable(lines.first()));
        const QStringList summary = log.refused(QStringLiteral("10.9.9.9"), QStringLiteral("10.9.9.9"), 401,
            QStringLiteral("no token"), start + RefusalLog::kWindowMs);
        QCOMPARE(summary.size(),
            RefusalLog::kSummaryLines + 2); // 20 counts, the rest together, then this refusal in a new minute
        QVERIFY2(summary.first().startsWith(QStringLiteral("refused another 1 connection from 10.0.0.")),
            qPrintable(summary.first()));
        QCOMPARE(summary.at(RefusalLog::kSummaryLines),
            QStringLiteral("refused another %1 connections from %2 other addresses in the last 60 s, not each logged")
                .arg(503 - RefusalLog::kTotal - RefusalLog::kSummaryLines)
                .arg(500 - 97 - RefusalLog::kSummaryLines));
        QCOMPARE(summary.last(), QStringLiteral("refused a connection from 10.9.9.9: 401 no token"));
    }

    void tokensAreScopedRevokedAndDamagedEntriesGrantNothing()
    {
        const QString path = m_dir.filePath(QStringLiteral("tokens.json"));
        TokenStore tokens(path);
        QVERIFY(!tokens.create(QStringLiteral("-x"), {}));
        QVERIFY(!tokens.create(QStringLiteral("ci"), {QStringLiteral("sandbox:")}));
        QVERIFY(!tokens.create(QStringLiteral("ci"), {QStringLiteral("admin")}));
        auto ci = tokens.create(QStringLiteral("ci"),
            {QStringLiteral("read-only"), QStringLiteral("sandbox:a"), QStringLiteral("sandbox:b")});
        QVERIFY(ci);
        QCOMPARE(ci->grant.describe(), QStringLiteral("read-only; sandboxes a, b"));
        QVERIFY(isTokenShaped(ci->token.toLatin1()));
        QCOMPARE(tokens.create(QStringLiteral("ci"), {}).error().code, ErrorCode::AlreadyExists);
        auto verified = tokens.verify(ci->token.toLatin1());
        QVERIFY(verified && verified->readOnly);
        // A name reaches the sandboxes of that name created through the token, and no other.
        const QString tokenId = verified->tokenId;
        QVERIFY(verified->coversSandbox(QStringLiteral("0123456789ab"), QStringLiteral("b"), tokenId));
        QVERIFY(!verified->coversSandbox(QStringLiteral("0123456789ab"), QStringLiteral("c"), tokenId));
        QCOMPARE(verified->outside(QStringLiteral("0123456789ab"), QStringLiteral("b"), {}),
            QStringLiteral("sandbox 'b' (id 0123456789ab) is outside it: the token reaches only the sandboxes of that "
                           "name created "
                           "through it, and this one was created by a local client"));
        QVERIFY(!verified->coversSandbox(
            QStringLiteral("0123456789ab"), QStringLiteral("b"), QStringLiteral("ffffffffffff")));

        // A name that a sandbox has when the token is made: bound to that sandbox's id, kept in the file.
        auto bound = tokens.create(QStringLiteral("bound"), {QStringLiteral("sandbox:a")},
            {{QStringLiteral("a"), QStringLiteral("aaaaaaaaaaaa")}});
        QVERIFY(bound);
        QCOMPARE(bound->grant.describe(), QStringLiteral("sandboxes a (id aaaaaaaaaaaa)"));
        auto reread = TokenStore(path).verify(bound->token.toLatin1());
        QVERIFY(reread && reread->coversSandbox(QStringLiteral("aaaaaaaaaaaa"), QStringLiteral("a"), {}));
        QVERIFY(!reread->coversSandbox(QStringLiteral("bbbbbbbbbbbb"), QStringLiteral("a"), {}));
        QVERIFY(reread->coversSandbox(QStringLiteral("bbbbbbbbbbbb"), QStringLiteral("a"), reread->tokenId));
        QVERIFY(tokens.revoke(QStringLiteral("bound")));

        QVERIFY(tokens.revoke(QStringLiteral("ci")));
        QVERIFY(tokens.verify(ci->token.toLatin1())
                    .error()
                    .message.startsWith(QLatin1String("token 'ci' was revoked at ")));
        QVERIFY(!tokens.isLive(ci->grant.tokenId));
        QVERIFY(tokens.create(QStringLiteral("ci"), {})); // the name is free again; the old token stays dead
        QVERIFY(!tokens.verify(ci->token.toLatin1()));

        // Someone edits the file: a scope of the wrong shape grants nothing rather than everything.
        auto wide = tokens.create(QStringLiteral("edited"), {QStringLiteral("sandbox:mine")});
        QVERIFY(wide);
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
        file.close();
        QJsonArray entries = doc.value(QStringLiteral("tokens")).toArray();
        for (qsizetype i = 0; i < entries.size(); ++i) {
            QJsonObject e = entries.at(i).toObject();
            if (e.value(QStringLiteral("name")).toString() == QLatin1String("edited")) {
                e.insert(QStringLiteral("scope"),
                    QJsonObject{
                        {QStringLiteral("readOnly"), false}, {QStringLiteral("sandboxes"), QStringLiteral("mine")}});
                entries.replace(i, e);
            }
        }
        doc.insert(QStringLiteral("tokens"), entries);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QJsonDocument(doc).toJson());
        file.close();
        QCOMPARE(tokens.verify(wide->token.toLatin1()).error().message,
            QStringLiteral("unknown token (not issued by this daemon)"));
        QCOMPARE(
            QFile::permissions(path) & (QFileDevice::ReadGroup | QFileDevice::ReadOther), QFileDevice::Permissions());
    }

    void listenAddressesAreAddressesAndPorts()
    {
        QCOMPARE(parseListenAddress(QStringLiteral("127.0.0.1:7443"))->second, quint16(7443));
        QCOMPARE(parseListenAddress(QStringLiteral("[::1]:7443"))->first, QHostAddress(QStringLiteral("::1")));
        for (const char *bad : {"build-box:7443", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", ":7443"})
            QVERIFY2(!parseListenAddress(QString::fromLatin1(bad)), bad);
        QVERIFY(!isTokenShaped("alk_123_abc"));
        QVERIFY(
            constantTimeEquals("abc", "abc") && !constantTimeEquals("abc", "abd") && !constantTimeEquals("abc", "ab"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteGate)
#include "tst_remote_gate.moc"
