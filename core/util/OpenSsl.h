// SPDX-License-Identifier: Apache-2.0
// OpenSSL's objects owned as std::unique_ptr, and PEM in memory: what the code that makes
// certificates (Certificates.cpp) and the code that speaks TLS (net/TlsEnd.cpp) share. Included
// by .cpp files only: nothing of OpenSSL shows in a header.
#pragma once

#include <QByteArray>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>

namespace airlock::openssl {

template<typename T, void (*Free)(T *)> struct Deleter {
    void operator()(T *p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

// A read-only BIO over `pem` (which must outlive it).
inline Bio readable(const QByteArray &pem)
{
    return Bio(BIO_new_mem_buf(pem.constData(), int(pem.size())));
}

} // namespace airlock::openssl
