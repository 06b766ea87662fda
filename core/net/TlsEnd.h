// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Certificates.h"
#include "util/Result.h"

#include <QByteArray>
#include <QString>

#include <memory>

namespace airlock::net {

// One end of a TLS session, held in memory: the caller moves ciphertext between it and a socket
// (with its own non-blocking reads and writes: a sandbox's socket is never handed to a library
// that could block on it) and reads and writes plaintext. No I/O here, so one thread may hold many.
class TlsEnd {
public:
    TlsEnd(TlsEnd &&) noexcept;
    TlsEnd &operator=(TlsEnd &&) noexcept;
    ~TlsEnd();

    // Ciphertext from the peer.
    void receive(QByteArrayView ciphertext);
    // Runs the handshake as far as what was received lets it, then reads what plaintext there is
    // into `plain`. An error is fatal: the handshake failed (a server's certificate that does not
    // verify says why), or the peer broke the protocol.
    Status pump(QByteArray *plain);
    // Plaintext for the peer: encrypted once the handshake is done (kept until then).
    void send(QByteArrayView plain);
    // Ciphertext for the peer, taken.
    QByteArray outgoing();
    // A close_notify for the peer (in outgoing()).
    void close();

    bool established() const;
    bool peerClosed() const { return m_peerClosed; } // the peer sent close_notify
    qsizetype pendingPlain() const { return m_unsent.size(); }

private:
    friend class TlsContexts;
    struct State;
    explicit TlsEnd(std::unique_ptr<State> state);
    void flushUnsent();
    std::unique_ptr<State> m;
    QByteArray m_unsent; // plaintext written before the handshake was done
    bool m_peerClosed = false;
};

// The broker's TLS settings, made once (a client's trust store is read from disk): TLS 1.2 and
// later, and `http/1.1` the only application protocol offered or accepted.
class TlsContexts {
public:
    // Clients verify servers against the host's trust store (OpenSSL's default paths) and the
    // certificates in `extraTrustPem` (an operator's addition: airlockd --upstream-ca).
    static Result<std::shared_ptr<TlsContexts>> make(const QByteArray &extraTrustPem);
    ~TlsContexts();

    // A server end serving `identity` (key and certificate chain, PEM). A client offering ALPN
    // without http/1.1 is refused in the handshake.
    Result<TlsEnd> server(const x509::Pem &identity) const;
    // A client end for `host`: sent as SNI, and the name the server's certificate must verify for.
    Result<TlsEnd> client(const QString &host) const;

private:
    struct Contexts;
    explicit TlsContexts(std::unique_ptr<Contexts> contexts);
    std::unique_ptr<Contexts> m;
};

} // namespace airlock::net
