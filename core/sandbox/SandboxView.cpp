// SPDX-License-Identifier: Apache-2.0
#include "sandbox/SandboxView.h"

#include "model/SandboxHome.h"

#include <QFileInfo>

#include <algorithm>

namespace airlock {

namespace {
// Host files that stay hidden even though /etc is visible (the subordinate id files and the
// account databases' backups name the host's accounts).
constexpr const char *kMaskedEtcFiles[]
    = {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/security/opasswd",
        "/etc/machine-id", "/etc/passwd-", "/etc/group-", "/etc/subuid", "/etc/subuid-", "/etc/subgid", "/etc/subgid-"};
constexpr const char *kMaskedEtcDirs[] = {"/etc/ssl/private", "/etc/sudoers.d", "/etc/ssh"};
constexpr const char *kIdentityFiles[] = {"/etc/passwd", "/etc/group"};

ViewEntry entry(ViewEntry::Kind kind, const QString &target, const QString &source = {})
{
    ViewEntry e;
    e.kind = kind;
    e.target = target;
    e.source = source;
    return e;
}

ViewEntry bind(const QString &source, const QString &target, bool writable, bool opened)
{
    ViewEntry e = entry(ViewEntry::Kind::Bind, target, source);
    e.writable = writable;
    e.opened = opened;
    return e;
}

ViewEntry file(const QString &target, const QByteArray &data, int perms)
{
    ViewEntry e = entry(ViewEntry::Kind::File, target);
    e.data = data;
    e.perms = perms;
    return e;
}
} // namespace

QByteArray identityFile(const QString &path)
{
    const QByteArray home(kSandboxHome);
    const QByteArray uid = QByteArray::number(kSandboxUid);
    if (path == QLatin1String("/etc/passwd"))
        return "root:x:0:0:root:/root:/usr/sbin/nologin\n"
               "sandbox:x:"
            + uid + ':' + uid + ":Airlock sandbox:" + home
            + ":/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
    return "root:x:0:\nsandbox:x:" + uid + ":\nnogroup:x:65534:\n";
}

QList<ViewEntry> sandboxView(const LaunchRequest &r)
{
    using K = ViewEntry::Kind;
    QList<ViewEntry> v{bind(QStringLiteral("/usr"), QStringLiteral("/usr"), false, false)};
    // Merged-/usr systems have symlinks here; older layouts have directories.
    for (const char *top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
        const QFileInfo fi(QString::fromLatin1(top));
        if (fi.isSymLink())
            v.append(entry(K::Symlink, fi.filePath(),
                fi.symLinkTarget().replace(QStringLiteral("/usr/"), QStringLiteral("usr/"))));
        else if (fi.isDir())
            v.append(bind(fi.filePath(), fi.filePath(), false, false));
    }
    v.append(bind(QStringLiteral("/etc"), QStringLiteral("/etc"), false, false));
    for (const char *masked : kMaskedEtcFiles)
        if (QFileInfo::exists(QString::fromLatin1(masked))) {
            ViewEntry e = bind(QStringLiteral("/dev/null"), QString::fromLatin1(masked), false, false);
            e.mask = true;
            v.append(e);
        }
    for (const char *dir : kMaskedEtcDirs)
        if (QFileInfo(QString::fromLatin1(dir)).isDir())
            v.append(entry(K::Empty, QString::fromLatin1(dir)));
    for (const char *identity : kIdentityFiles)
        v.append(file(QString::fromLatin1(identity), identityFile(QString::fromLatin1(identity)), 0444));
    // Every writable tmpfs is sized (unsized, each could take half of the host's memory).
    v += {entry(K::Proc, QStringLiteral("/proc")), entry(K::Dev, QStringLiteral("/dev")),
        entry(K::Tmpfs, QStringLiteral("/tmp")), entry(K::Dir, QStringLiteral("/var")),
        entry(K::Tmpfs, QStringLiteral("/var/tmp")), entry(K::Tmpfs, QStringLiteral("/run")), // the tool socket
        bind(r.workspaceDir, QStringLiteral("/workspace"), true, true),
        bind(r.guestPath, QStringLiteral("/.airlock/guest"), false, true),
        entry(K::Dir, QStringLiteral("/.airlock/bin")),
        entry(K::Symlink, QStringLiteral("/.airlock/bin/airlock-tool"), QStringLiteral("../guest")),
        entry(K::Tmpfs, QString::fromLatin1(kSandboxHome))};
    const QString home = QString::fromLatin1(kSandboxHome) + QLatin1Char('/');
    // A directory holding a mount can still be renamed away and made anew, so each one between the
    // home and a read-only file or directory is a mount point too (which cannot be renamed: EBUSY).
    QStringList parents;
    const auto addParents = [&](const QString &path) {
        for (qsizetype slash = path.indexOf(QLatin1Char('/')); slash >= 0;
             slash = path.indexOf(QLatin1Char('/'), slash + 1))
            if (!parents.contains(path.left(slash)))
                parents.append(path.left(slash));
    };
    for (const char *startup : kHomeStartupFiles)
        addParents(QString::fromLatin1(startup));
    for (const char *dir : kHomeStartupDirs)
        addParents(QString::fromLatin1(dir));
    for (const QString &parent : std::as_const(parents))
        v.append(entry(K::Tmpfs, home + parent));
    for (const char *startup : kHomeStartupFiles)
        v.append(file(home + QString::fromLatin1(startup), {}, 0444));
    for (const char *dir : kHomeStartupDirs)
        v.append(entry(K::Empty, home + QString::fromLatin1(dir)));
    for (const Mount &m : r.mounts) {
        v.append(bind(m.hostPath, m.sandboxPath, m.writable, true));
        v.last().noSymlinks = true;
        v.last().copyOnWrite = m.copyOnWrite;
    }
    for (const QString &hidden : r.hiddenPaths)
        v.append(entry(K::Empty, hidden));
    for (const auto &[target, data] : r.trustFiles)
        v.append(file(target, data, 0444));
    // Secrets granted as files: read-only, in the sandbox's own memory.
    for (const auto &[target, data] : r.dataFiles) {
        v.append(file(target, data, 0400));
        v.last().secret = true;
    }
    return v;
}

QStringList writablePaths(const LaunchRequest &r)
{
    QStringList paths{QStringLiteral("/workspace"), QStringLiteral("/tmp"), QStringLiteral("/var/tmp"),
        QString::fromLatin1(kSandboxHome)};
    for (const Mount &m : r.mounts)
        if (m.writable)
            paths.append(m.sandboxPath);
    return paths;
}

} // namespace airlock
