// SPDX-License-Identifier: Apache-2.0
#pragma once
// What tst_remote_wss's tests share: a "remote" host in a network namespace joined by a veth pair,
// its airlockd listening on wss://, a path to it a test can cut, and airlockctl and raw TLS and
// WebSocket clients pointed at it.
#include "CuttableProxy.h"
#include "NetnsPair.h"
#include "TestHelpers.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonDocument>
#include <QNetworkRequest>
#include <QSslKey>
#include <QSslSocket>
#include <QTest>
#include <QWebSocket>

#include <memory>

namespace airlock::test {

constexpr quint16 kWssPort = 7443;

struct HttpReply {
    QByteArray status; // "HTTP/1.1 401 …" or empty
    QString tlsError;
};

class WssFixture {
protected:
    std::unique_ptr<NetnsPair> m_link;
    std::unique_ptr<CuttableProxy> m_proxy; // a path to the daemon that a test can cut
    QString m_local, m_remote, m_other; // here, there, and a second address here
    std::unique_ptr<TestDaemon> m_daemon;
    QString m_fingerprint, m_url, m_token;

    // airlockctl on this side: never a local daemon, always the remote one (by m_url unless
    // another URL is given; with m_token unless another token, even an empty one, is given).
    std::unique_ptr<QProcess> startRemote(
        const QStringList &arguments, const QString &token = {}, const QString &url = {}) const
    {
        auto p = std::make_unique<QProcess>();
        QProcessEnvironment env = m_daemon->environment();
        env.insert(QStringLiteral("AIRLOCK_SOCKET"), QStringLiteral("/nonexistent/airlockd.sock"));
        env.insert(QStringLiteral("AIRLOCK_TOKEN"), token.isNull() ? m_token : token);
        p->setProcessEnvironment(env);
        p->start(binDir() + QStringLiteral("/airlockctl"),
            args("--no-autostart", "--host") + QStringList{url.isEmpty() ? m_url : url} + arguments);
        return p;
    }
    CliResult remote(const QStringList &arguments, const QString &token = {}, const QString &url = {},
        const QByteArray &input = {}) const
    {
        auto p = startRemote(arguments, token, url);
        p->write(input);
        p->closeWriteChannel();
        CliResult r;
        if (!p->waitForFinished(60000))
            p->kill();
        r.exitCode = p->exitCode();
        r.out = p->readAllStandardOutput();
        r.err = p->readAllStandardError();
        return r;
    }
    // Collects a running client's stdout until it holds marker (the event loop runs meanwhile).
    // The remote host: the namespace pair, the cuttable path, its daemon listening on wss://, the
    // pinned URL and a full token (for a suite's initTestCase, after its root check).
    void startRemoteHost()
    {
        m_link = std::make_unique<NetnsPair>();
        QByteArray out;
        QVERIFY2(m_link->up(&out), out.constData());
        m_local = m_link->local();
        m_remote = m_link->remote();
        m_other = m_link->other();
        m_proxy = std::make_unique<CuttableProxy>(QHostAddress(m_remote), kWssPort);
        m_daemon = std::make_unique<TestDaemon>(
            QStringList{QStringLiteral("--listen"), QStringLiteral("%1:%2").arg(m_remote).arg(kWssPort),
                QStringLiteral("--secret-store"), QStringLiteral("file"), QStringLiteral("--allow-host"),
                QStringLiteral("127.0.0.1:%1").arg(m_proxy->port())});
        m_daemon->setLauncher(m_link->launcher());
        QVERIFY(m_daemon->start());
        QFile cert(m_daemon->dataDir() + QStringLiteral("/tls/cert.pem"));
        QVERIFY(cert.open(QIODevice::ReadOnly));
        m_fingerprint = QString::fromLatin1(QSslCertificate(cert.readAll()).digest(QCryptographicHash::Sha256).toHex());
        m_url = QStringLiteral("wss://%1:%2#sha256=%3").arg(m_remote).arg(kWssPort).arg(m_fingerprint);
        m_token = newToken(QStringLiteral("laptop"));
        QVERIFY(m_token.startsWith(QLatin1String("alk_")));
    }

    static bool readUntil(QProcess &p, QByteArray &seen, const QByteArray &marker)
    {
        return waitFor(
            [&] {
                p.waitForReadyRead(20);
                seen += p.readAllStandardOutput();
                return seen.contains(marker);
            },
            10000);
    }
    QString newToken(const QString &name, const QStringList &scopes = {}) const
    {
        QStringList arguments = args("token", "create", "--name") + QStringList{name};
        for (const QString &s : scopes)
            arguments += {QStringLiteral("--scope"), s};
        QProcess p;
        p.setProcessEnvironment(m_daemon->environment());
        p.start(binDir() + QStringLiteral("/airlockd"), arguments);
        p.waitForFinished(10000);
        return p.exitCode() == 0 ? QString::fromLatin1(p.readAllStandardOutput().trimmed()) : QString();
    }
    QByteArray upgradeRequest(const QByteArray &authorization, const QByteArray &extra = {},
        const QByteArray &target = "/", const QByteArray &host = {}) const
    {
        QByteArray r = "GET " + target + " HTTP/1.1\r\nHost: "
            + (host.isEmpty() ? (m_remote + QStringLiteral(":%1").arg(kWssPort)).toLatin1() : host)
            + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
              "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
        if (!authorization.isEmpty())
            r += "Authorization: " + authorization + "\r\n";
        return r + extra + "\r\n";
    }
    // One upgrade attempt over TLS, as raw bytes: the daemon's status line, or how TLS failed.
    // To another daemon (to, port): without the pin check.
    HttpReply raw(const QByteArray &request, QSsl::SslProtocol protocol = QSsl::TlsV1_3, const QString &from = {},
        const QString &to = {}, quint16 port = kWssPort) const
    {
        QSslSocket s;
        QSslConfiguration c = s.sslConfiguration();
        c.setProtocol(protocol);
        c.setPeerVerifyMode(QSslSocket::VerifyNone); // the pin is checked below, by hand
        s.setSslConfiguration(c);
        if (!from.isEmpty())
            s.bind(QHostAddress(from));
        s.connectToHostEncrypted(to.isEmpty() ? m_remote : to, port);
        if (!s.waitForEncrypted(5000))
            return {{}, s.errorString()};
        if (to.isEmpty()
            && QString::fromLatin1(s.peerCertificate().digest(QCryptographicHash::Sha256).toHex()) != m_fingerprint)
            return {{}, QStringLiteral("not the pinned certificate")};
        s.write(request);
        QByteArray all;
        QElapsedTimer t;
        t.start();
        while (!all.contains("\r\n") && t.elapsed() < 5000
            && (s.waitForReadyRead(200) || s.state() == QAbstractSocket::ConnectedState))
            all += s.readAll();
        return {all.left(all.indexOf("\r\n")), {}};
    }
    // An authenticated WebSocket of our own, for what no well-behaved client sends.
    std::unique_ptr<QWebSocket> openSocket(const QString &token) const
    {
        auto ws = std::make_unique<QWebSocket>();
        QSslConfiguration c = QSslConfiguration::defaultConfiguration();
        c.setPeerVerifyMode(QSslSocket::VerifyNone);
        ws->setSslConfiguration(c);
        QNetworkRequest request(QUrl(QStringLiteral("wss://%1:%2/").arg(m_remote).arg(kWssPort)));
        request.setRawHeader("Authorization", "Bearer " + token.toLatin1());
        ws->open(request);
        return waitFor([&] { return ws->state() == QAbstractSocket::ConnectedState; }, 5000) ? std::move(ws) : nullptr;
    }
    bool daemonAnswers() const { return m_daemon->ctl(args("ls")).exitCode == 0; }
    // TestHelpers.h's procStatusField, in MiB.
    static qint64 rssMb(qint64 pid) { return procStatusField(pid, "VmRSS:") / 1024; }
};

} // namespace airlock::test
