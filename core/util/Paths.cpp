// SPDX-License-Identifier: Apache-2.0
#include "util/Paths.h"

#include <QDir>

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
    return QStringLiteral("/tmp/airlock-%1").arg(::getuid());
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

bool ensurePrivateDir(const QString &path)
{
    if (!QDir().mkpath(path))
        return false;
    const QByteArray native = QFile::encodeName(path);
    struct stat st {};
    if (::lstat(native.constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return false;
    return ::chmod(native.constData(), 0700) == 0;
}

} // namespace airlock::paths
