// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QSslCertificate>
#include <QSslKey>

namespace airlock::remote {

// The daemon's own TLS key and self-signed certificate for wss://, made on first use with OpenSSL
// (EC P-256, ten years) and kept in DIR/key.pem (0600) and DIR/cert.pem. Clients pin the SHA-256
// fingerprint of the certificate, so no CA is involved and no name needs to match.
struct TlsIdentity {
    QSslKey key;
    QSslCertificate certificate;

    static Result<TlsIdentity> loadOrCreate(const QString &dir);
    QString fingerprint() const; // 64 lowercase hex digits: SHA-256 of the DER certificate
};

} // namespace airlock::remote
