// SPDX-License-Identifier: Apache-2.0
#include "secrets/SecretStore.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <sys/stat.h>

namespace airlock {

Status SecretStore::validateName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z0-9_.-]{1,100}$"));
    if (!re.match(name).hasMatch())
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("invalid secret name '%1': use 1-100 letters, digits, _ . -").arg(name.left(100)));
    return Ok{};
}

Status SecretStore::validateValue(const QByteArray &value)
{
    if (value.size() < kMinValue)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("a secret must be at least %1 bytes: shorter values cannot be told apart from ordinary "
                           "output, so they could not be redacted")
                .arg(kMinValue));
    if (value.size() > kMaxValue)
        return makeError(ErrorCode::InvalidArgument, QStringLiteral("a secret can be at most %1 bytes").arg(kMaxValue));
    // It may become an environment variable: text, exactly as given.
    if (value.contains('\0') || QString::fromUtf8(value).toUtf8() != value)
        return makeError(ErrorCode::InvalidArgument,
            QStringLiteral("a secret must be UTF-8 text without NUL bytes (encode binary keys, e.g. in base64)"));
    return Ok{};
}

FileSecretStore::FileSecretStore(QString path)
    : m_path(std::move(path))
{
}

QString FileSecretStore::backend() const
{
    return QStringLiteral("file %1 (weaker: readable by anything that runs as you; no Secret Service was found)")
        .arg(m_path);
}

Status FileSecretStore::load() const
{
    struct stat st { };
    if (::stat(QFile::encodeName(m_path).constData(), &st) != 0) {
        m_entries.clear();
        m_loadedSize = -1;
        return Ok{};
    }
    if (st.st_mode & 077)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the secrets file %1 is readable by other users; fix it with 'chmod 600 %1' "
                           "(its secrets should be considered exposed)")
                .arg(m_path));
    const QDateTime mtime = QFileInfo(m_path).lastModified();
    if (mtime == m_loadedMtime && qint64(st.st_size) == m_loadedSize)
        return Ok{};
    QFile f(m_path);
    if (!f.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::IoError, QStringLiteral("cannot read %1: %2").arg(m_path, f.errorString()));
    QJsonParseError err{};
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll(), &err).object();
    if (err.error != QJsonParseError::NoError)
        return makeError(ErrorCode::IoError,
            QStringLiteral("the secrets file %1 is damaged (%2); move it away and set the secrets again")
                .arg(m_path, err.errorString()));
    QHash<QString, Entry> entries;
    const QJsonObject secrets = doc.value(QStringLiteral("secrets")).toObject();
    for (auto it = secrets.begin(); it != secrets.end(); ++it) {
        const QJsonObject e = it.value().toObject();
        entries.insert(it.key(),
            {QByteArray::fromBase64(e.value(QStringLiteral("value")).toString().toLatin1()),
                QDateTime::fromString(e.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs)});
    }
    m_entries = std::move(entries);
    m_loadedMtime = mtime;
    m_loadedSize = qint64(st.st_size);
    return Ok{};
}

Status FileSecretStore::save(const QHash<QString, Entry> &entries)
{
    const QString dir = QFileInfo(m_path).absolutePath();
    if (!QDir().mkpath(dir) || ::chmod(QFile::encodeName(dir).constData(), 0700) != 0)
        return makeError(ErrorCode::IoError, QStringLiteral("cannot create %1").arg(dir));
    QJsonObject secrets;
    for (auto it = entries.cbegin(); it != entries.cend(); ++it)
        secrets.insert(it.key(),
            QJsonObject{{QStringLiteral("value"), QString::fromLatin1(it->value.toBase64())},
                {QStringLiteral("updated"), it->updated.toString(Qt::ISODateWithMs)}});
    if (Status written = fs::writePrivateFile(m_path,
            QJsonDocument(QJsonObject{{QStringLiteral("version"), 1}, {QStringLiteral("secrets"), secrets}})
                .toJson(QJsonDocument::Indented));
        !written)
        return written;
    m_loadedMtime = {};
    return load();
}

Status FileSecretStore::set(const QString &name, const QByteArray &value)
{
    if (Status s = validateName(name); !s)
        return s;
    if (Status s = validateValue(value); !s)
        return s;
    if (Status s = load(); !s)
        return s;
    QHash<QString, Entry> entries = m_entries;
    entries.insert(name, {value, QDateTime::currentDateTimeUtc()});
    return save(entries);
}

Result<QByteArray> FileSecretStore::get(const QString &name) const
{
    if (Status s = load(); !s)
        return s.error();
    const auto it = m_entries.constFind(name);
    if (it == m_entries.cend())
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no secret named '%1' (set it with 'airlockctl secret set %1')").arg(name.left(100)));
    return it->value;
}

Status FileSecretStore::remove(const QString &name)
{
    if (Status s = load(); !s)
        return s;
    if (!m_entries.contains(name))
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no secret named '%1' (see 'airlockctl secret ls')").arg(name.left(100)));
    QHash<QString, Entry> entries = m_entries;
    entries.remove(name);
    return save(entries);
}

Result<QList<SecretInfo>> FileSecretStore::list() const
{
    if (Status s = load(); !s)
        return s.error();
    QList<SecretInfo> out;
    for (auto it = m_entries.cbegin(); it != m_entries.cend(); ++it)
        out.append({it.key(), it->updated, it->value.size()});
    std::sort(out.begin(), out.end(), [](const SecretInfo &a, const SecretInfo &b) { return a.name < b.name; });
    return out;
}

} // namespace airlock
