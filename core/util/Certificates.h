// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArray>
#include <QStringList>

namespace airlock::x509 {

// A private key and its certificate, both PEM.
struct Pem {
    QByteArray key;
    QByteArray certificate;
};

// What a certificate says. Either an authority (CA:TRUE, path length 0: it signs leaves only;
// keyCertSign) whose names may be constrained to `permittedDns` (a critical name constraint: a
// certificate it signs for any other name, or for any address, fails verification), or a TLS
// server's leaf (CA:FALSE,
// digitalSignature, serverAuth) for `dnsNames` (its subjectAltName).
struct CertificateSpec {
    QString commonName;
    qint64 validSeconds = 0; // from an hour ago (clocks that are behind) to this long from now
    bool authority = false;
    QStringList dnsNames;
    QStringList permittedDns;
};

// A fresh EC P-256 key and a certificate for it as `spec` says, signed by `issuer` (an authority's
// key and certificate) or, with none, by itself.
Result<Pem> issue(const CertificateSpec &spec, const Pem *issuer = nullptr);

} // namespace airlock::x509
