// SPDX-License-Identifier: Apache-2.0
// The remote endpoint's decisions without a network: the upgrade request's head as parsed, the
// order of the gate's checks and the status each refusal gets, the per-address limiter's window,
// the token file (scopes, revocation, damaged entries granting nothing) and listen addresses.
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
        return parsed ? checkUpgrade(*parsed, config(), tokens) : GateDecision{std::nullopt, 400, parsed.error().message.toUtf8()};
    }

private Q_SLOTS:
    void theHeadIsParsedStrictly()
    {
        auto ok = parseRequestHead(head(kGood));
        QVERIFY(ok);
        QCOMPARE(ok->method, QByteArray("GET"));
        QCOMPARE(ok->headers.value("upgrade"), QByteArray("websocket"));
        const QByteArray bad[] = {
            kGood,                                                          // no blank line
            head(kGood + "Host: evil.example\r\n"),                         // a second Host (which one would count?)
            head("GET / HTTP/1.1\r\nBad Header: x\r\n"),                    // a space in a name
            head("GET /\r\nHost: x\r\n"),                                   // no version
            head("GET / HTTP/1.1\r\nno colon here\r\n"),
            head(kGood + "X: " + QByteArray(kMaxRequestHead, 'a') + "\r\n"), // too long
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
        QCOMPARE(decide(head(QByteArray(kGood).replace("10.0.0.2:7443", "evil.example:7443") + bearer), tokens).status, 421);
        QCOMPARE(decide(head(kGood + "Origin: http://10.0.0.2:7443\r\n" + bearer), tokens).status, 403); // even its own address: no page
        QCOMPARE(decide(head(QByteArray(kGood).replace("websocket", "h2c") + bearer), tokens).status, 426);
        QCOMPARE(decide(head(kGood), tokens).status, 401);
        QCOMPARE(decide(head(kGood + "Authorization: Basic YTpi\r\n"), tokens).status, 401);
        // The host check comes before the token: a rebinding page learns nothing about tokens.
        const GateDecision rebound = decide(head(QByteArray(kGood).replace("10.0.0.2:7443", "evil.example")), tokens);
        QCOMPARE(rebound.status, 421);
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

    void tokensAreScopedRevokedAndDamagedEntriesGrantNothing()
    {
        const QString path = m_dir.filePath(QStringLiteral("tokens.json"));
        TokenStore tokens(path);
        QVERIFY(!tokens.create(QStringLiteral("-x"), {}));
        QVERIFY(!tokens.create(QStringLiteral("ci"), {QStringLiteral("sandbox:")}));
        QVERIFY(!tokens.create(QStringLiteral("ci"), {QStringLiteral("admin")}));
        auto ci = tokens.create(QStringLiteral("ci"), {QStringLiteral("read-only"), QStringLiteral("sandbox:a"), QStringLiteral("sandbox:b")});
        QVERIFY(ci);
        QCOMPARE(ci->grant.describe(), QStringLiteral("read-only; sandboxes a, b"));
        QVERIFY(isTokenShaped(ci->token.toLatin1()));
        QCOMPARE(tokens.create(QStringLiteral("ci"), {}).error().code, ErrorCode::AlreadyExists);
        auto verified = tokens.verify(ci->token.toLatin1());
        QVERIFY(verified && verified->readOnly && verified->coversSandbox(QStringLiteral("b")) && !verified->coversSandbox(QStringLiteral("c")));

        QVERIFY(tokens.revoke(QStringLiteral("ci")));
        QVERIFY(tokens.verify(ci->token.toLatin1()).error().message.startsWith(QLatin1String("token 'ci' was revoked at ")));
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
                e.insert(QStringLiteral("scope"), QJsonObject{{QStringLiteral("readOnly"), false}, {QStringLiteral("sandboxes"), QStringLiteral("mine")}});
                entries.replace(i, e);
            }
        }
        doc.insert(QStringLiteral("tokens"), entries);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QJsonDocument(doc).toJson());
        file.close();
        QCOMPARE(tokens.verify(wide->token.toLatin1()).error().message, QStringLiteral("unknown token (not issued by this daemon)"));
        QCOMPARE(QFile::permissions(path) & (QFileDevice::ReadGroup | QFileDevice::ReadOther), QFileDevice::Permissions());
    }

    void listenAddressesAreAddressesAndPorts()
    {
        QCOMPARE(parseListenAddress(QStringLiteral("127.0.0.1:7443"))->second, quint16(7443));
        QCOMPARE(parseListenAddress(QStringLiteral("[::1]:7443"))->first, QHostAddress(QStringLiteral("::1")));
        for (const char *bad : {"build-box:7443", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", ":7443"})
            QVERIFY2(!parseListenAddress(QString::fromLatin1(bad)), bad);
        QVERIFY(!isTokenShaped("alk_123_abc"));
        QVERIFY(constantTimeEquals("abc", "abc") && !constantTimeEquals("abc", "abd") && !constantTimeEquals("abc", "ab"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteGate)
#include "tst_remote_gate.moc"
