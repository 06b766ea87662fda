// SPDX-License-Identifier: Apache-2.0
#include "remote/TlsIdentity.h"

#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QCryptographicHash>
#include <QFile>
#include <QHostInfo>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace airlock::remote {

namespace {
template<typename T, void (*Free)(T *)> struct Deleter {
    void operator()(T *p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

Error tlsError(const QString &what)
{
    return makeError(ErrorCode::IoError, QStringLiteral("cannot make the daemon's TLS identity: %1").arg(what));
}

QByteArray drain(BIO *bio)
{
    char *data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return QByteArray(data, int(size));
}

bool addExtension(X509 *cert, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    const bool added = ext && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return added;
}

// A fresh P-256 key and a self-signed certificate for it, both as PEM.
Result<std::pair<QByteArray, QByteArray>> generate()
{
    Key key(EVP_EC_gen("P-256"));
    Cert cert(X509_new());
    Bignum serial(BN_new());
    if (!key || !cert || !serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
        return tlsError(QStringLiteral("key generation failed"));
    const QByteArray commonName = QStringLiteral("airlockd %1").arg(QHostInfo::localHostName()).left(64).toUtf8();
    X509_NAME *name = X509_get_subject_name(cert.get());
    const bool built = X509_set_version(cert.get(), 2) == 1
        && BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()))
        && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600)
        && X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 86400)
        && X509_set_pubkey(cert.get(), key.get()) == 1
        && X509_NAME_add_entry_by_txt(
               name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char *>(commonName.constData()), -1, -1, 0)
            == 1
        && X509_set_issuer_name(cert.get(), name) == 1
        && addExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE")
        && addExtension(cert.get(), NID_key_usage, "critical,digitalSignature")
        && addExtension(cert.get(), NID_ext_key_usage, "serverAuth")
        && X509_sign(cert.get(), key.get(), EVP_sha256()) > 0;
    if (!built)
        return tlsError(QStringLiteral("the certificate could not be built"));
    Bio keyPem(BIO_new(BIO_s_mem())), certPem(BIO_new(BIO_s_mem()));
    if (!keyPem || !certPem
        || PEM_write_bio_PrivateKey(keyPem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1
        || PEM_write_bio_X509(certPem.get(), cert.get()) != 1)
        return tlsError(QStringLiteral("PEM encoding failed"));
    return std::pair{drain(keyPem.get()), drain(certPem.get())};
}

} // namespace

Result<TlsIdentity> TlsIdentity::loadOrCreate(const QString &dir)
{
    if (Status s = paths::ensurePrivateDir(dir); !s)
        return s.error();
    const QString keyPath = dir + QStringLiteral("/key.pem"), certPath = dir + QStringLiteral("/cert.pem");
    if (!QFile::exists(keyPath) || !QFile::exists(certPath)) {
        auto made = generate();
        if (!made)
            return made.error();
        // The certificate last: a key without one is made again, never paired with another's.
        if (Status s = fs::writePrivateFile(keyPath, made->first); !s)
            return s.error();
        if (Status s = fs::writePrivateFile(certPath, made->second); !s)
            return s.error();
    }
    QFile keyFile(keyPath), certFile(certPath);
    if (!keyFile.open(QIODevice::ReadOnly) || !certFile.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot read the TLS identity in %1").arg(dir));
    TlsIdentity identity{QSslKey(keyFile.readAll(), QSsl::Ec), QSslCertificate(certFile.readAll())};
    if (identity.key.isNull() || identity.certificate.isNull())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("%1 holds no usable EC key and certificate; move key.pem and cert.pem away to make new ones "
                           "(clients must then pin the new fingerprint)")
                .arg(dir));
    return identity;
}

QString TlsIdentity::fingerprint() const
{
    return QString::fromLatin1(certificate.digest(QCryptographicHash::Sha256).toHex());
}

} // namespace airlock::remote
