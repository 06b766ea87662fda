// SPDX-License-Identifier: Apache-2.0
// wss:// (and ws:// on loopback): a WebSocket to airlockd --listen, TLS 1.3 with the daemon's
// certificate pinned by its SHA-256 fingerprint and a bearer token in the Authorization header.
// The WebSocket is carried by a WebSocketPipe to one end of a socketpair; the other end is this
// client's socket, so the protocol runs over it exactly as over the local socket.
#include "client/DaemonClient.h"
#include "client/Hosts.h"
#include "remote/WebSocketPipe.h"

#include <QCryptographicHash>
#include <QEventLoop>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QSslConfiguration>
#include <QTimer>
#include <QWebSocket>

#include <sys/socket.h>
#include <unistd.h>

namespace airlock {

namespace {
QString digestOf(const QSslCertificate &certificate)
{
    return QString::fromLatin1(certificate.digest(QCryptographicHash::Sha256).toHex());
}

// Qt says a refused upgrade as "… Unhandled http status code: 401 (REASON)."; the daemon's
// reason is what a person needs.
QString refusalReason(const QString &errorString)
{
    static const QRegularExpression status(QStringLiteral("status code: (\\d+) \\((.*)\\)\\.?$"));
    const auto m = status.match(errorString);
    return m.hasMatch() ? QStringLiteral("refused (HTTP %1): %2").arg(m.captured(1), m.captured(2)) : errorString;
}
} // namespace

Result<std::unique_ptr<QLocalSocket>> DaemonClient::openWebSocket(
    const HostAddress &address, const QString &token, int timeoutMs)
{
    if (token.isEmpty())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1 needs a token: save the host with 'airlockctl hosts add NAME URL --token-file FILE' "
                           "(FILE holds what 'airlockd token create' printed), or set AIRLOCK_TOKEN")
                .arg(address.text));
    const bool tls = address.scheme == HostAddress::Scheme::Wss;
    auto ws = std::make_unique<QWebSocket>(QString(), QWebSocketProtocol::VersionLatest); // no Origin: not a web page
    QUrl url;
    url.setScheme(tls ? QStringLiteral("wss") : QStringLiteral("ws"));
    url.setHost(address.host);
    url.setPort(address.port);
    url.setPath(QStringLiteral("/"));
    QNetworkRequest request(url);
    request.setRawHeader("Authorization", "Bearer " + token.toLatin1());

    QString refusal; // set once: what went wrong first
    QMetaObject::Connection pinCheck;
    if (tls) {
        QSslConfiguration config = QSslConfiguration::defaultConfiguration();
        config.setProtocol(QSsl::TlsV1_3);
        // No CA at all (an empty list also stops loading the system's on demand): every
        // certificate raises an error below, so the pin decides before the upgrade request, and
        // the token in it, is sent. A CA-signed certificate for the same name is not the daemon.
        config.setCaCertificates({});
        config.setPeerVerifyMode(QSslSocket::VerifyPeer);
        ws->setSslConfiguration(config);
        // The pin replaces the CA: a certificate with exactly this fingerprint is the daemon,
        // whoever signed it and whatever name it carries; any other is refused.
        pinCheck = QObject::connect(
            ws.get(), &QWebSocket::sslErrors, ws.get(), [&, socket = ws.get()](const QList<QSslError> &errors) {
                const QString seen = digestOf(socket->sslConfiguration().peerCertificate());
                if (!seen.isEmpty() && seen == address.fingerprint) {
                    socket->ignoreSslErrors(errors);
                    return;
                }
                if (refusal.isEmpty())
                    refusal = QStringLiteral(
                        "the daemon's certificate is not the pinned one (expected sha256=%1, got %2); if the daemon "
                        "made a new identity, check its new fingerprint out of band and add the host again")
                                  .arg(address.fingerprint, seen.isEmpty() ? QStringLiteral("none") : seen);
            });
    }
    QEventLoop loop;
    bool connected = false;
    QObject::connect(ws.get(), &QWebSocket::connected, &loop, [&, socket = ws.get()] {
        connected = true;
        // No Nagle delay on requests (QWebSocket keeps its TCP socket as a child).
        for (auto *tcp : socket->findChildren<QAbstractSocket *>())
            tcp->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        loop.quit();
    });
    QObject::connect(
        ws.get(), qOverload<QAbstractSocket::SocketError>(&QWebSocket::error), &loop, [&, socket = ws.get()] {
            if (refusal.isEmpty())
                refusal = refusalReason(socket->errorString());
            loop.quit();
        });
    QObject::connect(ws.get(), &QWebSocket::disconnected, &loop, &QEventLoop::quit);
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    ws->open(request);
    if (!connected && refusal.isEmpty())
        loop.exec();
    // Checked again once connected: a certificate that raised no error must be the pinned one too.
    if (connected && tls && digestOf(ws->sslConfiguration().peerCertificate()) != address.fingerprint) {
        connected = false;
        refusal = QStringLiteral("the daemon's certificate is not the pinned one (expected sha256=%1)")
                      .arg(address.fingerprint);
    }
    if (!connected) {
        ws->abort();
        return makeError(ErrorCode::DaemonUnavailable,
            QStringLiteral("cannot reach airlockd at %1: %2")
                .arg(address.text,
                    refusal.isEmpty() ? QStringLiteral("no answer within %1 ms").arg(timeoutMs) : refusal));
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("socketpair failed"));
    auto mine = std::make_unique<QLocalSocket>();
    auto *far = new QLocalSocket;
    if (!mine->setSocketDescriptor(pair[0]) || !far->setSocketDescriptor(pair[1])) {
        delete far;
        return makeError(ErrorCode::IoError, QStringLiteral("cannot use the socketpair for %1").arg(address.text));
    }
    ws->disconnect(&loop);
    QObject::disconnect(pinCheck); // it refers to this function's locals
    auto *transport = ws->findChild<QAbstractSocket *>();
    new remote::WebSocketPipe(ws.release(), far, transport, mine.get()); // ends with this client's socket
    return mine;
}

} // namespace airlock
