// SPDX-License-Identifier: Apache-2.0
#include "remote/TlsIdentity.h"

#include "util/Certificates.h"
#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QCryptographicHash>
#include <QFile>
#include <QHostInfo>

namespace airlock::remote {

Result<TlsIdentity> TlsIdentity::loadOrCreate(const QString &dir)
{
    if (Status s = paths::ensurePrivateDir(dir); !s)
        return s.error();
    const QString keyPath = dir + QStringLiteral("/key.pem"), certPath = dir + QStringLiteral("/cert.pem");
    if (!QFile::exists(keyPath) || !QFile::exists(certPath)) {
        x509::CertificateSpec spec;
        spec.commonName = QStringLiteral("airlockd %1").arg(QHostInfo::localHostName());
        spec.validSeconds = 10LL * 365 * 86400;
        auto made = x509::issue(spec);
        if (!made)
            return makeError(ErrorCode::IoError,
                QStringLiteral("cannot make the daemon's TLS identity: %1").arg(made.error().message));
        // The certificate last: a key without one is made again, never paired with another's.
        if (Status s = fs::writePrivateFile(keyPath, made->key); !s)
            return s.error();
        if (Status s = fs::writePrivateFile(certPath, made->certificate); !s)
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
