// SPDX-License-Identifier: Apache-2.0
#include "util/Paths.h"

#include <QDir>
#include <QFile>

#include <cerrno>
#include <cstring>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::paths {

namespace {
QString env(const char *name)
{
    return qEnvironmentVariable(name);
}

QString xdg(const char *var, const char *fallbackUnderHome)
{
    QString base = env(var);
    if (base.isEmpty() || !QDir::isAbsolutePath(base))
        base = QDir::homePath() + QLatin1Char('/') + QLatin1String(fallbackUnderHome);
    return base + QStringLiteral("/airlock");
}
} // namespace

QString runtimeDir()
{
    const QString base = env("XDG_RUNTIME_DIR");
    if (!base.isEmpty() && QDir::isAbsolutePath(base))
        return base + QStringLiteral("/airlock");
    // Never a name in a shared folder such as /tmp: another user could make it first and keep
    // the daemon from starting (or hand it a folder of theirs). The login's runtime folder when
    // there is one (XDG_RUNTIME_DIR is unset under su, sudo or cron), else the state folder in
    // the home, both of which only this user can write.
    const QString login = QStringLiteral("/run/user/%1").arg(::getuid());
    struct stat st { };
    if (::lstat(QFile::encodeName(login).constData(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid()
        && !(st.st_mode & 022))
        return login + QStringLiteral("/airlock");
    return stateDir() + QStringLiteral("/run");
}

QString stateDir()
{
    return xdg("XDG_STATE_HOME", ".local/state");
}

QString dataDir()
{
    return xdg("XDG_DATA_HOME", ".local/share");
}

QString configDir()
{
    const QString base = env("XDG_CONFIG_HOME");
    return (base.isEmpty() ? QDir::homePath() + QStringLiteral("/.config") : base) + QStringLiteral("/airlock");
}

QString defaultSocketPath()
{
    const QString explicitPath = env("AIRLOCK_SOCKET");
    if (!explicitPath.isEmpty())
        return explicitPath;
    return runtimeDir() + QStringLiteral("/airlockd.sock");
}

Status ensurePrivateDir(const QString &path)
{
    const auto fail = [&](const QString &why) {
        return makeError(ErrorCode::IoError,
            QStringLiteral("%1 %2; Airlock keeps its socket and data only in a folder of yours (mode 0700)")
                .arg(path, why));
    };
    const QByteArray native = QFile::encodeName(path);
    struct stat st { };
    if (::lstat(native.constData(), &st) != 0 && !QDir().mkpath(path))
        return fail(QStringLiteral("cannot be created: %1").arg(QString::fromLocal8Bit(::strerror(errno))));
    if (::lstat(native.constData(), &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(QStringLiteral("is not a folder (a link or a file is in its place); remove it"));
    if (st.st_uid != ::geteuid()) {
        const passwd *owner = ::getpwuid(st.st_uid);
        return fail(QStringLiteral(
            "belongs to %1 (uid %2), not to you (uid %3): someone else made it. Remove it (as its owner or root: "
            "rm -r %4), or set XDG_RUNTIME_DIR (or AIRLOCK_SOCKET) to a folder of your own")
                        .arg(owner ? QString::fromLocal8Bit(owner->pw_name) : QStringLiteral("another user"))
                        .arg(st.st_uid)
                        .arg(::geteuid())
                        .arg(path));
    }
    if (::chmod(native.constData(), 0700) != 0)
        return fail(QStringLiteral("cannot be made 0700: %1").arg(QString::fromLocal8Bit(::strerror(errno))));
    return Ok{};
}

} // namespace airlock::paths
