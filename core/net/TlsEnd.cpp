// SPDX-License-Identifier: Apache-2.0
#include "net/TlsEnd.h"

#include "util/OpenSsl.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace airlock::net {

namespace {
using openssl::Cert;
using openssl::Deleter;
using openssl::Key;
using Ctx = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX, SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Deleter<SSL, SSL_free>>;

constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// The last of OpenSSL's queued errors as text (and the queue emptied), or `fallback`.
QString sslError(const char *fallback)
{
    unsigned long last = 0;
    while (const unsigned long e = ERR_get_error())
        last = e;
    if (last == 0)
        return QString::fromLatin1(fallback);
    char text[256];
    ERR_error_string_n(last, text, sizeof text);
    return QString::fromLatin1(text);
}

int selectHttp11(
    SSL *, const unsigned char **out, unsigned char *outlen, const unsigned char *in, unsigned int inlen, void *)
{
    unsigned char *chosen = nullptr;
    if (SSL_select_next_proto(&chosen, outlen, kAlpn, sizeof kAlpn, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL; // it offered protocols, none of them http/1.1
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}
} // namespace

struct TlsEnd::State {
    Ssl ssl;
    BIO *in = nullptr; // owned by ssl
    BIO *out = nullptr;
    bool client = false;
    QString host;

    // Memory BIOs both ways: ciphertext goes through the caller's hands only.
    void attachMemory()
    {
        in = BIO_new(BIO_s_mem());
        out = BIO_new(BIO_s_mem());
        BIO_set_mem_eof_return(in, -1); // no data yet is no end
        SSL_set_bio(ssl.get(), in, out);
    }
};

struct TlsContexts::Contexts {
    Ctx server, client;
};

TlsEnd::TlsEnd(std::unique_ptr<State> state)
    : m(std::move(state))
{
}
TlsEnd::TlsEnd(TlsEnd &&) noexcept = default;
TlsEnd &TlsEnd::operator=(TlsEnd &&) noexcept = default;
TlsEnd::~TlsEnd() = default;

void TlsEnd::receive(QByteArrayView ciphertext)
{
    if (!ciphertext.isEmpty())
        BIO_write(m->in, ciphertext.data(), int(ciphertext.size()));
}

bool TlsEnd::established() const
{
    return SSL_is_init_finished(m->ssl.get()) == 1;
}

Status TlsEnd::pump(QByteArray *plain)
{
    SSL *ssl = m->ssl.get();
    if (!established()) {
        ERR_clear_error();
        const int r = SSL_do_handshake(ssl);
        if (r != 1) {
            const int e = SSL_get_error(ssl, r);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return Ok{};
            if (m->client && SSL_get_verify_result(ssl) != X509_V_OK)
                return makeError(ErrorCode::Denied,
                    QStringLiteral("the certificate of %1 failed verification: %2")
                        .arg(m->host, QString::fromLatin1(X509_verify_cert_error_string(SSL_get_verify_result(ssl)))));
            return makeError(ErrorCode::ProtocolError,
                QStringLiteral("TLS handshake%1 failed: %2")
                    .arg(m->client ? QStringLiteral(" with ") + m->host : QString(), sslError("no reason given")));
        }
        flushUnsent();
    }
    flushUnsent(); // what a write could not take last time (the peer was updating keys)
    char buffer[16 * 1024];
    for (;;) {
        ERR_clear_error();
        const int n = SSL_read(ssl, buffer, sizeof buffer);
        if (n > 0) {
            plain->append(buffer, n);
            continue;
        }
        const int e = SSL_get_error(ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return Ok{};
        if (e == SSL_ERROR_ZERO_RETURN) {
            m_peerClosed = true;
            return Ok{};
        }
        return makeError(ErrorCode::ProtocolError, QStringLiteral("TLS: %1").arg(sslError("the peer broke TLS")));
    }
}

void TlsEnd::send(QByteArrayView plain)
{
    m_unsent.append(plain.data(), plain.size());
    if (established())
        flushUnsent();
}

void TlsEnd::flushUnsent()
{
    // Memory BIOs grow as needed, but a write may still take only a record's worth (partial
    // writes are on): the rest is written in turn.
    qsizetype written = 0;
    while (written < m_unsent.size()) {
        const int n = SSL_write(
            m->ssl.get(), m_unsent.constData() + written, int(std::min<qsizetype>(m_unsent.size() - written, 1 << 30)));
        if (n <= 0)
            break;
        written += n;
    }
    m_unsent.remove(0, written);
}

QByteArray TlsEnd::outgoing()
{
    QByteArray bytes;
    char *data = nullptr;
    const long size = BIO_get_mem_data(m->out, &data);
    if (size > 0) {
        bytes = QByteArray(data, qsizetype(size));
        (void)BIO_reset(m->out);
    }
    return bytes;
}

void TlsEnd::close()
{
    if (established())
        SSL_shutdown(m->ssl.get());
}

TlsContexts::TlsContexts(std::unique_ptr<Contexts> contexts)
    : m(std::move(contexts))
{
}
TlsContexts::~TlsContexts() = default;

Result<std::shared_ptr<TlsContexts>> TlsContexts::make(const QByteArray &extraTrustPem)
{
    auto c = std::make_unique<Contexts>();
    c->server.reset(SSL_CTX_new(TLS_server_method()));
    c->client.reset(SSL_CTX_new(TLS_client_method()));
    if (!c->server || !c->client)
        return makeError(ErrorCode::Internal, QStringLiteral("TLS: %1").arg(sslError("no context")));
    for (SSL_CTX *ctx : {c->server.get(), c->client.get()}) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    SSL_CTX_set_alpn_select_cb(c->server.get(), selectHttp11, nullptr);
    SSL_CTX_set_session_cache_mode(c->server.get(), SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(c->server.get(), 0);

    SSL_CTX_set_verify(c->client.get(), SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_set_default_verify_paths(c->client.get()) != 1)
        return makeError(ErrorCode::BoundaryUnavailable,
            QStringLiteral("TLS: the host's trust store cannot be read: %1").arg(sslError("no reason given")));
    if (SSL_CTX_set_alpn_protos(c->client.get(), kAlpn, sizeof kAlpn) != 0)
        return makeError(ErrorCode::Internal, QStringLiteral("TLS: ALPN: %1").arg(sslError("no reason given")));
    if (!extraTrustPem.isEmpty()) {
        X509_STORE *store = SSL_CTX_get_cert_store(c->client.get());
        const openssl::Bio in = openssl::readable(extraTrustPem);
        int added = 0;
        while (Cert cert{PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)}) {
            if (X509_STORE_add_cert(store, cert.get()) != 1)
                return makeError(ErrorCode::InvalidArgument,
                    QStringLiteral("an upstream certificate cannot be trusted: %1").arg(sslError("no reason given")));
            ++added;
        }
        ERR_clear_error(); // the end of the PEM
        if (added == 0)
            return makeError(ErrorCode::InvalidArgument,
                QStringLiteral(
                    "the upstream trust file holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)"));
    }
    return std::shared_ptr<TlsContexts>(new TlsContexts(std::move(c)));
}

Result<TlsEnd> TlsContexts::server(const x509::Pem &identity) const
{
    auto state = std::make_unique<TlsEnd::State>();
    state->ssl.reset(SSL_new(m->server.get()));
    const openssl::Bio keyIn = openssl::readable(identity.key), certIn = openssl::readable(identity.certificate);
    const Key key{PEM_read_bio_PrivateKey(keyIn.get(), nullptr, nullptr, nullptr)};
    const Cert cert{PEM_read_bio_X509(certIn.get(), nullptr, nullptr, nullptr)};
    if (!state->ssl || !key || !cert || SSL_use_certificate(state->ssl.get(), cert.get()) != 1
        || SSL_use_PrivateKey(state->ssl.get(), key.get()) != 1)
        return makeError(ErrorCode::Internal, QStringLiteral("TLS identity: %1").arg(sslError("unreadable")));
    // The rest of the chain, when there is one.
    while (const Cert more{PEM_read_bio_X509(certIn.get(), nullptr, nullptr, nullptr)})
        if (SSL_add1_chain_cert(state->ssl.get(), more.get()) != 1)
            return makeError(ErrorCode::Internal, QStringLiteral("TLS chain: %1").arg(sslError("unreadable")));
    ERR_clear_error(); // the end of the PEM
    state->attachMemory();
    SSL_set_accept_state(state->ssl.get());
    return TlsEnd(std::move(state));
}

Result<TlsEnd> TlsContexts::client(const QString &host) const
{
    auto state = std::make_unique<TlsEnd::State>();
    state->ssl.reset(SSL_new(m->client.get()));
    state->client = true;
    state->host = host;
    const QByteArray name = host.toLatin1();
    if (!state->ssl || SSL_set_tlsext_host_name(state->ssl.get(), name.constData()) != 1
        || SSL_set1_host(state->ssl.get(), name.constData()) != 1)
        return makeError(ErrorCode::Internal, QStringLiteral("TLS client for %1: %2").arg(host, sslError("no SSL")));
    state->attachMemory();
    SSL_set_connect_state(state->ssl.get());
    return TlsEnd(std::move(state));
}

} // namespace airlock::net
