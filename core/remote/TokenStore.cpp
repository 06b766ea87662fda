// SPDX-License-Identifier: Apache-2.0
#include "remote/TokenStore.h"

#include "util/FileSystem.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QRandomGenerator>
#include <QRegularExpression>

namespace airlock::remote {

namespace {
Error invalid(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, what);
}

bool validName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"));
    return re.match(name).hasMatch();
}

QByteArray randomBytes(int n)
{
    QByteArray bytes(n, Qt::Uninitialized);
    QRandomGenerator::system()->generate(bytes.begin(), bytes.end());
    return bytes;
}

QByteArray hashSecret(const QByteArray &secret)
{
    return QCryptographicHash::hash(secret, QCryptographicHash::Sha256).toHex();
}

bool validId(const QString &id)
{
    static const QRegularExpression re(QStringLiteral("^[0-9a-f]{8,64}$"));
    return re.match(id).hasMatch();
}

QJsonObject scopeToJson(const Grant &g)
{
    QJsonObject bound;
    for (auto it = g.boundIds.cbegin(); it != g.boundIds.cend(); ++it)
        bound.insert(it.key(), it.value());
    return {{QStringLiteral("readOnly"), g.readOnly},
        {QStringLiteral("sandboxes"), QJsonArray::fromStringList(g.sandboxes)}, {QStringLiteral("boundIds"), bound}};
}
} // namespace

QString Grant::describe() const
{
    QStringList parts;
    if (readOnly)
        parts << QStringLiteral("read-only");
    if (!sandboxes.isEmpty()) {
        QStringList names;
        for (const QString &name : sandboxes)
            names << (boundIds.contains(name) ? QStringLiteral("%1 (id %2)").arg(name, boundIds.value(name)) : name);
        parts << QStringLiteral("sandboxes ") + names.join(QStringLiteral(", "));
    }
    return parts.isEmpty() ? QStringLiteral("full") : parts.join(QStringLiteral("; "));
}

QString Grant::outside(const QString &id, const QString &name, const QString &createdThrough) const
{
    if (sandboxes.isEmpty())
        return {};
    if (!sandboxes.contains(name))
        return QStringLiteral("sandbox '%1' is outside it").arg(name.left(100));
    if (!id.isEmpty() && (boundIds.value(name) == id || (!createdThrough.isEmpty() && createdThrough == tokenId)))
        return {};
    // The name is the token's, this sandbox is not: made by someone else under that name.
    const QString bound = boundIds.contains(name)
        ? QStringLiteral("the token was bound to sandbox %1, which had the name when the token was made")
              .arg(boundIds.value(name))
        : QStringLiteral("the token reaches only the sandboxes of that name created through it");
    return QStringLiteral("sandbox '%1' (id %2) is outside it: %3, and this one was %4")
        .arg(name.left(100), id.isEmpty() ? QStringLiteral("unknown") : id, bound,
            createdThrough.isEmpty() ? QStringLiteral("created by a local client")
                                     : QStringLiteral("created through another token"));
}

Result<Grant> Grant::fromScopes(const QStringList &scopes, const QHash<QString, QString> &existing)
{
    Grant g;
    for (const QString &scope : scopes) {
        if (scope == QLatin1String("full"))
            continue;
        if (scope == QLatin1String("read-only")) {
            g.readOnly = true;
        } else if (scope.startsWith(QLatin1String("sandbox:")) && validName(scope.mid(8))) {
            const QString name = scope.mid(8);
            if (!g.sandboxes.contains(name))
                g.sandboxes << name;
            if (existing.contains(name) && validId(existing.value(name)))
                g.boundIds.insert(name, existing.value(name));
        } else {
            return invalid(QStringLiteral("--scope '%1': expected full, read-only or sandbox:NAME (repeatable)")
                               .arg(scope.left(80)));
        }
    }
    return g;
}

Result<std::unique_ptr<QLockFile>> TokenStore::lockFile() const
{
    QDir().mkpath(QFileInfo(m_path).absolutePath());
    auto lock = std::make_unique<QLockFile>(m_path + QStringLiteral(".lock"));
    if (!lock->tryLock(10000))
        return makeError(ErrorCode::Busy,
            QStringLiteral("%1 is locked by another 'airlockd token' (pid %2); try again").arg(m_path).arg([&] {
                qint64 pid = 0;
                QString host, app;
                lock->getLockInfo(&pid, &host, &app);
                return pid;
            }()));
    return lock;
}

Status TokenStore::reload()
{
    const QFileInfo info(m_path);
    if (m_loaded && info.exists() == (m_loadedSize >= 0)
        && (!info.exists() || (info.lastModified() == m_loadedModified && info.size() == m_loadedSize)))
        return Ok{};
    m_entries.clear();
    m_loaded = true;
    m_loadedSize = -1;
    if (!info.exists())
        return Ok{};
    QFile file(m_path);
    QJsonParseError err{};
    const QJsonDocument doc
        = file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.read(4 * 1024 * 1024), &err) : QJsonDocument();
    if (!file.isOpen() || err.error != QJsonParseError::NoError || !doc.isObject()) {
        m_loaded = false; // read again next time; meanwhile nothing is accepted (fail closed)
        return invalid(QStringLiteral("%1 is not a token file Airlock can read; fix or move it").arg(m_path));
    }
    for (const QJsonValue &v : doc.object().value(QStringLiteral("tokens")).toArray()) {
        const QJsonObject o = v.toObject();
        Entry e;
        e.grant.tokenId = o.value(QStringLiteral("id")).toString();
        e.grant.tokenName = o.value(QStringLiteral("name")).toString();
        // A damaged entry grants nothing (is skipped), never more than it said.
        const QJsonObject scope = o.value(QStringLiteral("scope")).toObject();
        if (!scope.value(QStringLiteral("readOnly")).isBool() || !scope.value(QStringLiteral("sandboxes")).isArray())
            continue;
        e.grant.readOnly = scope.value(QStringLiteral("readOnly")).toBool();
        bool names = true;
        for (const QJsonValue &s : scope.value(QStringLiteral("sandboxes")).toArray()) {
            names = names && s.isString() && validName(s.toString());
            e.grant.sandboxes << s.toString();
        }
        // Bound ids: optional (tokens made before there were any bind none, and so reach only the
        // sandboxes created through them); one that does not read is a damaged entry.
        const QJsonValue bound = scope.value(QStringLiteral("boundIds"));
        if (!bound.isUndefined() && !bound.isObject())
            continue;
        const QJsonObject boundObject = bound.toObject();
        for (auto it = boundObject.begin(); it != boundObject.end(); ++it) {
            names = names && e.grant.sandboxes.contains(it.key()) && it.value().isString()
                && validId(it.value().toString());
            e.grant.boundIds.insert(it.key(), it.value().toString());
        }
        if (!names)
            continue;
        e.hash = o.value(QStringLiteral("sha256")).toString().toLatin1();
        e.created = QDateTime::fromString(o.value(QStringLiteral("created")).toString(), Qt::ISODate);
        e.revoked = QDateTime::fromString(o.value(QStringLiteral("revoked")).toString(), Qt::ISODate);
        if (e.grant.tokenId.isEmpty() || e.hash.size() != 64)
            continue;
        m_entries << e;
    }
    m_loadedModified = info.lastModified();
    m_loadedSize = info.size();
    return Ok{};
}

Status TokenStore::save() const
{
    QJsonArray tokens;
    for (const Entry &e : m_entries) {
        QJsonObject o{{QStringLiteral("id"), e.grant.tokenId}, {QStringLiteral("name"), e.grant.tokenName},
            {QStringLiteral("scope"), scopeToJson(e.grant)}, {QStringLiteral("sha256"), QString::fromLatin1(e.hash)},
            {QStringLiteral("created"), e.created.toString(Qt::ISODate)}};
        if (e.revoked.isValid())
            o.insert(QStringLiteral("revoked"), e.revoked.toString(Qt::ISODate));
        tokens.append(o);
    }
    return fs::writePrivateFile(m_path, QJsonDocument(QJsonObject{{QStringLiteral("tokens"), tokens}}).toJson());
}

Result<TokenStore::Created> TokenStore::create(
    const QString &name, const QStringList &scopes, const QHash<QString, QString> &existing)
{
    if (!validName(name))
        return invalid(
            QStringLiteral("--name '%1': 1 to 63 letters, digits and . _ - (starting with a letter or digit)")
                .arg(name.left(64)));
    auto grant = Grant::fromScopes(scopes, existing);
    if (!grant)
        return grant.error();
    auto lock = lockFile();
    if (!lock)
        return lock.error();
    m_loaded = false; // read under the lock: another process may have just written
    if (Status loaded = reload(); !loaded)
        return loaded.error();
    for (const Entry &e : std::as_const(m_entries))
        if (e.grant.tokenName == name && !e.revoked.isValid())
            return makeError(
                ErrorCode::AlreadyExists, QStringLiteral("a token named '%1' exists; revoke it first").arg(name));
    Entry e;
    e.grant = *grant;
    e.grant.tokenName = name;
    e.grant.tokenId = QString::fromLatin1(randomBytes(6).toHex());
    const QByteArray secret = randomBytes(32).toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
    e.hash = hashSecret(secret);
    e.created = QDateTime::currentDateTimeUtc();
    m_entries << e;
    if (Status saved = save(); !saved) {
        m_entries.removeLast();
        return saved.error();
    }
    m_loaded = false; // our own write: read back on next use
    return Created{QStringLiteral("alk_%1_%2").arg(e.grant.tokenId, QString::fromLatin1(secret)), e.grant};
}

Status TokenStore::revoke(const QString &name)
{
    auto lock = lockFile();
    if (!lock)
        return lock.error();
    m_loaded = false;
    if (Status loaded = reload(); !loaded)
        return loaded.error();
    const auto it = std::find_if(m_entries.begin(), m_entries.end(),
        [&](const Entry &e) { return e.grant.tokenName == name && !e.revoked.isValid(); });
    if (it == m_entries.end())
        return makeError(ErrorCode::NotFound,
            QStringLiteral("no live token named '%1' (see 'airlockd token ls')").arg(name.left(64)));
    it->revoked = QDateTime::currentDateTimeUtc();
    if (Status saved = save(); !saved) {
        it->revoked = {};
        return saved.error();
    }
    m_loaded = false;
    return Ok{};
}

Result<QList<TokenStore::Entry>> TokenStore::entries()
{
    if (Status loaded = reload(); !loaded)
        return loaded.error();
    return m_entries;
}

namespace {
QRegularExpressionMatch matchToken(const QByteArray &token)
{
    static const QRegularExpression shape(QStringLiteral("^alk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$"));
    return shape.match(QString::fromLatin1(token.left(200)));
}
} // namespace

bool isTokenShaped(const QByteArray &token)
{
    return token.size() <= 200 && matchToken(token).hasMatch();
}

Result<Grant> TokenStore::verify(const QByteArray &token)
{
    const auto m = matchToken(token);
    if (token.size() > 200 || !m.hasMatch())
        return makeError(ErrorCode::Denied,
            QStringLiteral("malformed token (expected alk_…, as printed by 'airlockd token create')"));
    if (Status loaded = reload(); !loaded)
        return makeError(ErrorCode::Denied, QStringLiteral("the daemon cannot read its token file"));
    const QByteArray presented = hashSecret(m.captured(2).toLatin1());
    for (const Entry &e : std::as_const(m_entries)) {
        if (e.grant.tokenId != m.captured(1))
            continue;
        if (!constantTimeEquals(presented, e.hash))
            return makeError(ErrorCode::Denied,
                QStringLiteral("wrong token: the secret does not match token %1").arg(e.grant.tokenId));
        if (e.revoked.isValid())
            return makeError(ErrorCode::Denied,
                QStringLiteral("token '%1' was revoked at %2").arg(e.grant.tokenName, e.revoked.toString(Qt::ISODate)));
        return e.grant;
    }
    return makeError(ErrorCode::Denied, QStringLiteral("unknown token (not issued by this daemon)"));
}

bool TokenStore::isLive(const QString &tokenId)
{
    if (!reload())
        return false;
    return std::any_of(m_entries.cbegin(), m_entries.cend(),
        [&](const Entry &e) { return e.grant.tokenId == tokenId && !e.revoked.isValid(); });
}

} // namespace airlock::remote
