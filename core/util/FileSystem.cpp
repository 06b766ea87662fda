// SPDX-License-Identifier: Apache-2.0
#include "util/FileSystem.h"

#include "log/Log.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock::fs {

namespace {
constexpr int kMaxDepth = 512;

// Everything is relative to directory descriptors opened with O_NOFOLLOW: the tree belongs to a
// sandbox, so no path string is ever resolved again after it was checked (no symlink swaps), and
// modes are never copied from it.
bool removeEntry(int parentFd, const char *name, int depth)
{
    if (::unlinkat(parentFd, name, 0) == 0 || errno == ENOENT)
        return true;
    if (errno != EISDIR && errno != EPERM)
        return false;
    if (depth > kMaxDepth)
        return false;
    int fd = ::openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) {
        // A directory the sandbox made unreadable (mode 000): fix the mode through an O_PATH
        // descriptor of exactly that directory, then open it.
        const int pathFd = ::openat(parentFd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pathFd < 0)
            return false;
        char proc[64];
        std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", pathFd);
        const bool fixed = ::chmod(proc, S_IRWXU) == 0;
        ::close(pathFd);
        if (!fixed)
            return false;
        fd = ::openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0)
        return false;
    struct stat st { };
    if (::fstat(fd, &st) == 0 && !(st.st_mode & S_IWUSR))
        ::fchmod(fd, S_IRWXU);
    DIR *dir = ::fdopendir(fd);
    if (!dir) {
        ::close(fd);
        return false;
    }
    bool ok = true;
    while (const dirent *entry = ::readdir(dir)) {
        if (!std::strcmp(entry->d_name, ".") || !std::strcmp(entry->d_name, ".."))
            continue;
        ok = removeEntry(::dirfd(dir), entry->d_name, depth + 1) && ok;
    }
    ::closedir(dir);
    return ::unlinkat(parentFd, name, AT_REMOVEDIR) == 0 && ok;
}
} // namespace

bool removeTree(const QString &path)
{
    const QByteArray native = QFile::encodeName(path);
    const qsizetype slash = native.lastIndexOf('/');
    const QByteArray parent = slash > 0 ? native.left(slash) : QByteArray(slash == 0 ? "/" : ".");
    const QByteArray name = native.mid(slash + 1);
    const int parentFd = ::open(parent.constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parentFd < 0)
        return errno == ENOENT;
    const bool ok = removeEntry(parentFd, name.constData(), 0);
    ::close(parentFd);
    if (!ok)
        log::get("core.fs")->warn("could not remove all of {}", path.toStdString());
    return ok;
}

Status writePrivateFile(const QString &path, const QByteArray &data)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner)
        || file.write(data) != data.size() || !file.commit())
        return makeError(ErrorCode::IoError, QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    return Ok{};
}

int openBeneath(int dir, const QByteArray &relative, int flags, unsigned mode)
{
    open_how how{};
    how.flags = uint64_t(flags | O_CLOEXEC);
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    const int fd = int(::syscall(SYS_openat2, dir, relative.constData(), &how, sizeof how));
    return fd < 0 ? -errno : fd;
}

} // namespace airlock::fs
