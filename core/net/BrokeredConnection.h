// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "net/BrokeredHttp.h"
#include "net/ProxyHandshake.h"
#include "net/TlsEnd.h"
#include "secrets/RedactionStream.h"

#include <QObject>

#include <functional>
#include <memory>
#include <optional>

class QSocketNotifier;
class QTimer;

namespace airlock::net {

// What the proxy needs to broker one host for one sandbox.
struct BrokeredRoute {
    QString host;
    x509::Pem leaf; // from the sandbox's authority, for host
    http::Credential credential;
    QString secretName;
    std::shared_ptr<const Redactor> redactor; // finds the secret in the host's answers
};

// One brokered connection, after the proxy has decided on it and connected to the host: TLS with
// the host first, verified against the host's trust store (the sandbox's CONNECT is refused with
// the reason when it fails), then the sandbox's CONNECT answered and TLS served to it as the host,
// with a certificate from its own authority. Each request is read strictly (http::parseRequestHead),
// gets the real secret in place of the placeholder (http::rewriteHead) and goes on; each answer is
// framed as the host framed it and passed back through the redaction, one request at a time.
// Sockets are read and written here with MSG_DONTWAIT (the sandbox's socket may be shared with
// the guest, which could make it blocking); TLS runs in memory (TlsEnd).
class BrokeredConnection final : public QObject {
    Q_OBJECT
public:
    // One request as it went: what was asked, what came back.
    struct Request {
        QByteArray method, target;
        int status = 0; // the host's, or the broker's own refusal's
        bool credential = false; // the secret was put in
        QString refused; // why the broker answered itself
        qint64 bytesUp = 0, bytesDown = 0, durationMs = 0;
        int redacted = 0; // times the secret was masked in the answer
    };
    struct Stats {
        quint64 bytesUp = 0, bytesDown = 0; // plaintext, each way
        int requests = 0;
        QString error;
    };
    struct Callbacks {
        std::function<void()> opened; // the host verified; the sandbox's CONNECT answered
        std::function<void(const QString &reason)> refused; // the host did not verify: CONNECT refused
        std::function<void(const Request &)> request;
        std::function<void(const Stats &)> closed; // after opened, once
    };
    struct Options {
        int handshakeTimeoutMs = 30000;
        int idleTimeoutMs = 10 * 60 * 1000; // between requests, and while an answer is silent
    };

    // Owns both descriptors. `early`: what the sandbox sent after its CONNECT head (the start of
    // its TLS). `handshake`: the proxy handshake that read the CONNECT (it words the answer).
    BrokeredConnection(int client, int upstream, BrokeredRoute route, std::shared_ptr<const TlsContexts> tls,
        QByteArray early, ProxyHandshake handshake, Callbacks callbacks, Options options, QObject *parent);
    ~BrokeredConnection() override;

    // Ends it now (its network.closed gives `why` as the error).
    void end(const QString &why) { fail(why); }
    quint64 tag() const { return m_tag; }
    void setTag(quint64 tag) { m_tag = tag; }

private:
    enum class Phase { Verifying, Serving, Closing };
    enum class Stage { Head, Body, Answer };

    void onEvent();
    bool readSocket(int fd, TlsEnd &tls, bool &eof);
    bool flushSocket(int fd, QByteArray &pending);
    void serve();
    void readRequest();
    void forwardBody();
    void readAnswer();
    void passDown(QByteArrayView bytes); // the host's answer, redacted, to the sandbox
    void answerCompleted();
    void answerItself(int status, const QString &reason); // the broker's own answer, then close
    void fail(const QString &error);
    void finish();
    void rearm();

    int m_client, m_upstream;
    BrokeredRoute m_route;
    std::shared_ptr<const TlsContexts> m_tls;
    std::optional<TlsEnd> m_sandboxTls, m_hostTls;
    QByteArray m_early;
    ProxyHandshake m_handshake;
    Callbacks m_callbacks;
    Options m_options;
    quint64 m_tag = 0;

    QSocketNotifier *m_clientReader, *m_clientWriter, *m_hostReader, *m_hostWriter;
    QTimer *m_deadline;
    QByteArray m_toClient, m_toHost; // ciphertext not yet sent
    QByteArray m_fromClient, m_fromHost; // plaintext not yet handled
    bool m_clientEof = false, m_hostEof = false;
    Phase m_phase = Phase::Verifying;
    Stage m_stage = Stage::Head;
    qsizetype m_searched = 0;
    // The request in flight.
    Request m_request;
    bool m_keepAlive = true;
    http::BodyReader m_requestBody, m_answerBody;
    qsizetype m_hostSearched = 0;
    bool m_answerHeadRead = false; // the final one
    bool m_answerStarted = false; // something of the answer went to the sandbox
    RedactionStream m_redaction;
    qint64 m_requestStartedMs = 0;
    Stats m_stats;
    bool m_finished = false;
};

} // namespace airlock::net
