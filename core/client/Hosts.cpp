// SPDX-License-Identifier: Apache-2.0
#include "client/Hosts.h"

#include "util/FileSystem.h"
#include "util/Paths.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QUrl>

namespace airlock {

namespace {
Error invalid(const QString &what)
{
    return makeError(ErrorCode::InvalidArgument, what);
}

bool validName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[a-z0-9][a-z0-9._-]{0,62}$"));
    return re.match(name).hasMatch();
}

// "AB:CD:…" or "abcd…" as 64 lowercase hex digits; empty when it is not a SHA-256 fingerprint.
QString normalizeFingerprint(const QString &text)
{
    QString hex = text.toLower();
    hex.remove(QLatin1Char(':'));
    static const QRegularExpression sha256(QStringLiteral("^[0-9a-f]{64}$"));
    return sha256.match(hex).hasMatch() ? hex : QString();
}
} // namespace

Result<HostAddress> parseHostAddress(const QString &url)
{
    const QString hint = QStringLiteral(" (expected unix:///path/to/airlockd.sock, ssh://[user@]host[:port] or "
                                        "wss://host:port#sha256=FINGERPRINT)");
    if (url.size() > 1000 || url.contains(QLatin1Char('\n')) || url.contains(QChar(0)))
        return invalid(QStringLiteral("not a host address") + hint);
    HostAddress a;
    if (url.startsWith(QLatin1String("unix://"))) {
        a.path = url.mid(7);
        if (!a.path.startsWith(QLatin1Char('/')))
            return invalid(QStringLiteral("'%1': a unix socket path must be absolute").arg(url) + hint);
        a.path = QDir::cleanPath(a.path);
        a.text = QStringLiteral("unix://") + a.path;
        return a;
    }
    const QUrl parsed(url, QUrl::StrictMode);
    const QString scheme = parsed.scheme();
    if (scheme != QLatin1String("ssh") && scheme != QLatin1String("wss") && scheme != QLatin1String("ws"))
        return invalid(QStringLiteral("'%1': unsupported scheme '%2'").arg(url, scheme) + hint);
    const bool pinned = scheme == QLatin1String("wss");
    if (!parsed.isValid() || parsed.host().isEmpty() || !parsed.password().isEmpty() || parsed.hasQuery()
        || (parsed.hasFragment() && !pinned) || (!parsed.path().isEmpty() && parsed.path() != QLatin1String("/")))
        return invalid(QStringLiteral("'%1': expected only [user@]host[:port] after %2:// (no password, path or query: "
                                      "credentials never go in a URL)")
                           .arg(url, scheme)
            + hint);
    if (scheme != QLatin1String("ssh") && !parsed.userName().isEmpty())
        return invalid(QStringLiteral("'%1': %2:// takes no user; a token authenticates").arg(url, scheme));
    a.scheme = scheme == QLatin1String("ssh") ? HostAddress::Scheme::Ssh
        : pinned                              ? HostAddress::Scheme::Wss
                                              : HostAddress::Scheme::Ws;
    a.user = parsed.userName();
    a.host = parsed.host();
    a.port = std::max(0, parsed.port(0));
    if (pinned) {
        const QString fragment = parsed.fragment();
        a.fingerprint
            = fragment.startsWith(QLatin1String("sha256=")) ? normalizeFingerprint(fragment.mid(7)) : QString();
        if (a.fingerprint.isEmpty())
            return invalid(QStringLiteral(
                "'%1': a wss:// address ends in #sha256=FINGERPRINT, the daemon's certificate as airlockd "
                "prints it (there is no unpinned wss://)")
                               .arg(url));
        if (!a.port)
            return invalid(QStringLiteral("'%1': wss:// needs the port airlockd --listen was given").arg(url));
    }
    if (a.scheme == HostAddress::Scheme::Ws && !QHostAddress(a.host).isLoopback())
        return invalid(
            QStringLiteral("'%1': plain ws:// only to a loopback address; use wss:// with the daemon's fingerprint")
                .arg(url));
    const QString hostPart = a.host.contains(QLatin1Char(':')) ? QLatin1Char('[') + a.host + QLatin1Char(']') : a.host;
    a.text = scheme + QStringLiteral("://") + (a.user.isEmpty() ? QString() : a.user + QLatin1Char('@')) + hostPart
        + (a.port ? QStringLiteral(":%1").arg(a.port) : QString())
        + (pinned ? QStringLiteral("#sha256=") + a.fingerprint : QString());
    return a;
}

QString HostRegistry::defaultPath()
{
    return paths::configDir() + QStringLiteral("/hosts.json");
}

Result<HostRegistry> HostRegistry::load(const QString &path)
{
    HostRegistry r;
    r.m_path = path;
    QFile file(path);
    if (!file.exists())
        return r;
    QJsonParseError err{};
    const QJsonDocument doc
        = file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.read(1024 * 1024), &err) : QJsonDocument();
    if (!file.isOpen() || err.error != QJsonParseError::NoError || !doc.isObject())
        return invalid(QStringLiteral("%1 is not a hosts file Airlock can read (%2); fix or move it")
                           .arg(path, file.isOpen() ? err.errorString() : file.errorString()));
    const QJsonObject hosts = doc.object().value(QStringLiteral("hosts")).toObject();
    for (auto it = hosts.begin(); it != hosts.end(); ++it) {
        // "name": "url", or "name": {"url": …, "token": where its token is kept}
        const QString url = it.value().isObject() ? it.value().toObject().value(QStringLiteral("url")).toString()
                                                  : it.value().toString();
        if (!validName(it.key()) || !parseHostAddress(url))
            return invalid(QStringLiteral("%1: host '%2' is not valid; remove it with 'airlockctl hosts rm'")
                               .arg(path, it.key().left(64)));
        r.m_entries.append({it.key(), url, it.value().toObject().value(QStringLiteral("token")).toString()});
    }
    r.m_current = doc.object().value(QStringLiteral("current")).toString();
    if (!r.m_current.isEmpty() && std::none_of(r.m_entries.cbegin(), r.m_entries.cend(), [&](const Entry &e) {
            return e.name == r.m_current;
        }))
        r.m_current.clear();
    return r;
}

Status HostRegistry::add(const QString &name, const QString &url, const QString &tokenBackend)
{
    if (!validName(name) || name == QLatin1String("local"))
        return invalid(
            QStringLiteral("'%1' is not a host name: 1 to 63 of a-z 0-9 . _ - (and not 'local', which is this machine)")
                .arg(name.left(64)));
    auto address = parseHostAddress(url);
    if (!address)
        return address.error();
    for (const Entry &e : std::as_const(m_entries))
        if (e.name == name)
            return makeError(
                ErrorCode::AlreadyExists, QStringLiteral("a host named '%1' exists (remove it first)").arg(name));
    m_entries.append({name, address->text, tokenBackend});
    return Ok{};
}

Status HostRegistry::remove(const QString &name)
{
    const auto it = std::find_if(m_entries.begin(), m_entries.end(), [&](const Entry &e) { return e.name == name; });
    if (it == m_entries.end())
        return makeError(
            ErrorCode::NotFound, QStringLiteral("no host named '%1' (see 'airlockctl hosts ls')").arg(name.left(64)));
    m_entries.erase(it);
    if (m_current == name)
        m_current.clear();
    return Ok{};
}

Status HostRegistry::use(const QString &name)
{
    if (name == QLatin1String("local")) {
        m_current.clear();
        return Ok{};
    }
    if (std::none_of(m_entries.cbegin(), m_entries.cend(), [&](const Entry &e) { return e.name == name; }))
        return makeError(
            ErrorCode::NotFound, QStringLiteral("no host named '%1' (see 'airlockctl hosts ls')").arg(name.left(64)));
    m_current = name;
    return Ok{};
}

Status HostRegistry::save() const
{
    QJsonObject hosts;
    for (const Entry &e : m_entries)
        hosts.insert(e.name,
            e.token.isEmpty() ? QJsonValue(e.url)
                              : QJsonObject{{QStringLiteral("url"), e.url}, {QStringLiteral("token"), e.token}});
    return fs::writePrivateFile(m_path,
        QJsonDocument(QJsonObject{{QStringLiteral("hosts"), hosts}, {QStringLiteral("current"), m_current}}).toJson());
}

std::optional<HostRegistry::Entry> HostRegistry::find(const QString &name) const
{
    for (const Entry &e : m_entries)
        if (e.name == name)
            return e;
    return std::nullopt;
}

Result<HostRegistry::Entry> HostRegistry::resolve(const QString &nameOrUrl) const
{
    if (nameOrUrl.isEmpty() || nameOrUrl == QLatin1String("local"))
        return Entry{};
    if (nameOrUrl.contains(QLatin1String("://"))) {
        auto address = parseHostAddress(nameOrUrl);
        if (!address)
            return address.error();
        return Entry{{}, address->text, {}};
    }
    if (auto e = find(nameOrUrl))
        return *e;
    return makeError(ErrorCode::NotFound,
        QStringLiteral("no host named '%1' (see 'airlockctl hosts ls', or give a URL)").arg(nameOrUrl.left(64)));
}

} // namespace airlock
