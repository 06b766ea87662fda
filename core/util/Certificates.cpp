// SPDX-License-Identifier: Apache-2.0
#include "util/Certificates.h"

#include "util/OpenSsl.h"

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace airlock::x509 {

namespace {
using openssl::Bio;
using openssl::Cert;
using openssl::Deleter;
using openssl::Key;
using openssl::readable;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

Error certificateError(const QString &what)
{
    return makeError(ErrorCode::IoError, QStringLiteral("cannot make a certificate: %1").arg(what));
}

QByteArray drain(BIO *bio)
{
    char *data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return QByteArray(data, qsizetype(size));
}

// `value` in OpenSSL's configuration syntax, as an extension of `cert` issued by `issuer`.
bool addExtension(X509 *cert, X509 *issuer, int nid, const QByteArray &value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.constData());
    const bool added = ext && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return added;
}

// "DNS:a,DNS:b" (the names are checked host names: no commas or colons in them).
QByteArray dnsList(const QString &prefix, const QStringList &names)
{
    QStringList entries;
    for (const QString &name : names)
        entries.append(prefix + QStringLiteral("DNS:") + name);
    return entries.join(QLatin1Char(',')).toUtf8();
}

bool addExtensions(X509 *cert, X509 *issuer, const CertificateSpec &spec)
{
    if (spec.authority)
        return addExtension(cert, issuer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
            && addExtension(cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign")
            && addExtension(cert, issuer, NID_subject_key_identifier, "hash")
            && (spec.permittedDns.isEmpty()
                || addExtension(cert, issuer, NID_name_constraints,
                    // A name type with no constraint is unconstrained (RFC 5280): no address at all.
                    "critical," + dnsList(QStringLiteral("permitted;"), spec.permittedDns)
                        + ",excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:::/::"));
    return addExtension(cert, issuer, NID_basic_constraints, "critical,CA:FALSE")
        && addExtension(cert, issuer, NID_key_usage, "critical,digitalSignature")
        && addExtension(cert, issuer, NID_ext_key_usage, "serverAuth")
        && (spec.dnsNames.isEmpty()
            || addExtension(cert, issuer, NID_subject_alt_name, dnsList(QString(), spec.dnsNames)));
}

} // namespace

Result<Pem> issue(const CertificateSpec &spec, const Pem *issuer)
{
    Key issuerKey;
    Cert issuerCert;
    if (issuer) {
        const Bio keyIn = readable(issuer->key), certIn = readable(issuer->certificate);
        issuerKey.reset(PEM_read_bio_PrivateKey(keyIn.get(), nullptr, nullptr, nullptr));
        issuerCert.reset(PEM_read_bio_X509(certIn.get(), nullptr, nullptr, nullptr));
        if (!issuerKey || !issuerCert || X509_check_private_key(issuerCert.get(), issuerKey.get()) != 1)
            return certificateError(QStringLiteral("the issuer's key and certificate do not belong together"));
    }
    Key key(EVP_EC_gen("P-256"));
    Cert cert(X509_new());
    Bignum serial(BN_new());
    if (!key || !cert || !serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
        return certificateError(QStringLiteral("key generation failed"));
    const QByteArray commonName = spec.commonName.left(64).toUtf8();
    X509_NAME *name = X509_get_subject_name(cert.get());
    X509 *signer = issuer ? issuerCert.get() : cert.get();
    EVP_PKEY *signingKey = issuer ? issuerKey.get() : key.get();
    const bool built = X509_set_version(cert.get(), 2) == 1
        && BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()))
        && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600)
        && X509_gmtime_adj(X509_getm_notAfter(cert.get()), long(spec.validSeconds))
        && X509_set_pubkey(cert.get(), key.get()) == 1
        && X509_NAME_add_entry_by_txt(
               name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char *>(commonName.constData()), -1, -1, 0)
            == 1
        && X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1
        && addExtensions(cert.get(), signer, spec)
        && (!issuer || addExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"))
        && X509_sign(cert.get(), signingKey, EVP_sha256()) > 0;
    if (!built)
        return certificateError(QStringLiteral("the certificate for %1 could not be built").arg(spec.commonName));
    Bio keyPem(BIO_new(BIO_s_mem())), certPem(BIO_new(BIO_s_mem()));
    if (!keyPem || !certPem
        || PEM_write_bio_PrivateKey(keyPem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1
        || PEM_write_bio_X509(certPem.get(), cert.get()) != 1)
        return certificateError(QStringLiteral("PEM encoding failed"));
    return Pem{drain(keyPem.get()), drain(certPem.get())};
}

} // namespace airlock::x509
