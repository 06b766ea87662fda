// SPDX-License-Identifier: Apache-2.0
#include "sandbox/WorkspaceVolume.h"

#include "log/Log.h"
#include "util/FileSystem.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace airlock::volume {

namespace {
constexpr const char *kRuntimeSuffix = ".runtime";
constexpr int kToolTimeoutMs = 30'000;
constexpr int kMountWaitMs = 5'000;

std::shared_ptr<spdlog::logger> logger()
{
    static auto l = log::get("core.volume");
    return l;
}

// Programs in /usr/sbin are not on a normal user's PATH.
QString findTool(const QString &name)
{
    const QString onPath = QStandardPaths::findExecutable(name);
    return onPath.isEmpty()
        ? QStandardPaths::findExecutable(name, {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin")})
        : onPath;
}

// Runs a tool to its end; its own words on failure. It gets no descriptor of ours beyond its
// standard three: fuse2fs lives on after this daemon, and must not hold its log or sockets.
Status runTool(const QString &program, const QStringList &args, const QString &what, int timeoutMs = kToolTimeoutMs)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.setChildProcessModifier([] { ::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC); });
    p.start(program, args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished(1000);
        return makeError(
            ErrorCode::IoError, QStringLiteral("%1: %2 did not finish (%3)").arg(what, program, p.errorString()));
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("%1: %2 failed: %3")
                .arg(what, QFileInfo(program).fileName(), QString::fromLocal8Bit(p.readAll()).trimmed().left(400)));
    return Ok{};
}

Status errnoError(const QString &what)
{
    return makeError(
        ErrorCode::IoError, QStringLiteral("%1: %2").arg(what, QString::fromLocal8Bit(std::strerror(errno))));
}

std::optional<dev_t> deviceOf(const QByteArray &path)
{
    struct stat st { };
    if (::stat(path.constData(), &st) != 0)
        return std::nullopt;
    return st.st_dev;
}

// A free loop device bound to the image, released by the kernel once the filesystem is unmounted
// everywhere (LO_FLAGS_AUTOCLEAR). In a container /dev may lack the node the kernel just made.
Status mountLoop(const QString &image, const QString &dir)
{
    const int ctl = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return errnoError(QStringLiteral("cannot open /dev/loop-control"));
    const int img = ::open(QFile::encodeName(image).constData(), O_RDWR | O_CLOEXEC);
    if (img < 0) {
        ::close(ctl);
        return errnoError(QStringLiteral("cannot open the workspace image %1").arg(image));
    }
    Status result = makeError(ErrorCode::IoError, QStringLiteral("no free loop device for %1").arg(image));
    for (int attempt = 0; attempt < 8; ++attempt) {
        const int n = ::ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            result = errnoError(QStringLiteral("no free loop device"));
            break;
        }
        const QByteArray node = "/dev/loop" + QByteArray::number(n);
        int dev = ::open(node.constData(), O_RDWR | O_CLOEXEC);
        if (dev < 0 && errno == ENOENT && ::mknod(node.constData(), S_IFBLK | 0600, makedev(7, unsigned(n))) == 0)
            dev = ::open(node.constData(), O_RDWR | O_CLOEXEC);
        if (dev < 0) {
            result = errnoError(QStringLiteral("cannot open %1").arg(QString::fromLatin1(node)));
            break;
        }
        loop_config config{};
        config.fd = unsigned(img);
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        const QByteArray name = QFile::encodeName(image).right(LO_NAME_SIZE - 1);
        std::memcpy(config.info.lo_file_name, name.constData(), size_t(name.size()));
        if (::ioctl(dev, LOOP_CONFIGURE, &config) != 0) {
            const int err = errno;
            ::close(dev);
            if (err == EBUSY)
                continue; // another process took it between the two calls
            errno = err;
            result = errnoError(QStringLiteral("cannot bind %1 to %2").arg(image, QString::fromLatin1(node)));
            break;
        }
        // noinit_itable: the kernel would otherwise zero every inode table in the background,
        // making a sparse image take a sixtieth of its size before anything is written.
        if (::mount(node.constData(), QFile::encodeName(dir).constData(), "ext4", MS_NOSUID | MS_NODEV,
                "errors=remount-ro,noinit_itable")
            != 0) {
            result = errnoError(QStringLiteral("cannot mount %1 on %2").arg(image, dir));
            ::ioctl(dev, LOOP_CLR_FD);
        } else {
            result = Ok{};
        }
        ::close(dev);
        break;
    }
    ::close(img);
    ::close(ctl);
    return result;
}

// fuse2fs goes to the background once the filesystem is mounted; it ends when it is unmounted.
Status mountFuse(const QString &image, const QString &dir)
{
    const QString fuse2fs = findTool(QStringLiteral("fuse2fs"));
    if (fuse2fs.isEmpty())
        return makeError(ErrorCode::LimitUnsupported, QStringLiteral("fuse2fs is missing (apt install fuse2fs)"));
    const auto before = deviceOf(QFile::encodeName(dir));
    if (Status s = runTool(fuse2fs, {image, dir, QStringLiteral("-o"), QStringLiteral("nosuid,nodev")},
            QStringLiteral("cannot mount the workspace image"));
        !s)
        return s;
    for (int waited = 0; waited < kMountWaitMs; waited += 5) {
        if (deviceOf(QFile::encodeName(dir)) != before)
            return Ok{};
        QThread::msleep(5);
    }
    return makeError(ErrorCode::IoError, QStringLiteral("fuse2fs did not mount %1 on %2").arg(image, dir));
}

bool unmount(const QString &dir)
{
    const QByteArray path = QFile::encodeName(dir);
    if (::umount2(path.constData(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == EINVAL)
        return true; // EINVAL: nothing mounted there
    if (errno != EPERM)
        return false;
    // A user's fuse2fs mount is undone by fusermount3, which checks it is the user's own.
    const QString fusermount = findTool(QStringLiteral("fusermount3"));
    return !fusermount.isEmpty()
        && runTool(fusermount, {QStringLiteral("-u"), QStringLiteral("-z"), dir}, QStringLiteral("unmount")).ok();
}

// Copies what `from` holds into `to` (made here, 0600), holes left as holes.
bool copySparse(const QByteArray &from, const QByteArray &to, off_t size)
{
    const int in = ::open(from.constData(), O_RDONLY | O_CLOEXEC);
    const int out = ::open(to.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = in >= 0 && out >= 0 && ::ftruncate(out, size) == 0;
    for (off_t data = 0; ok;) {
        data = ::lseek(in, data, SEEK_DATA);
        if (data < 0) {
            ok = errno == ENXIO; // no data after the last hole
            break;
        }
        off_t hole = ::lseek(in, data, SEEK_HOLE);
        if (hole < 0)
            hole = size;
        for (off_t inAt = data, outAt = data; ok && inAt < hole;) {
            const ssize_t n = ::copy_file_range(in, &inAt, out, &outAt, size_t(hole - inAt), 0);
            ok = n > 0;
        }
        data = hole;
    }
    for (int fd : {in, out})
        if (fd >= 0)
            ::close(fd);
    return ok;
}

// A workspace image of `bytes`: a copy of the empty filesystem of that size made once by mkfs and
// kept in `dir` (".template-BYTES.ext4"), which takes a few milliseconds where mkfs takes tens.
// mkfs writes it sparse and quick: inode tables and journal are not written (nor later, see
// mountLoop). Every workspace has the template's filesystem UUID, which ext4 does not mind.
Result<QString> copyOfTemplate(const QString &dir, uint64_t bytes, const QString &image)
{
    const QString templ = dir + QStringLiteral("/.template-%1.ext4").arg(bytes);
    if (!QFileInfo::exists(templ)) {
        // Made under a name of its own and renamed: two makers at once both succeed.
        const QString making = templ + QStringLiteral(".%1").arg(quintptr(QThread::currentThreadId()));
        const int fd = ::open(
            QFile::encodeName(making).constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        const bool sized = fd >= 0 && ::ftruncate(fd, off_t(bytes)) == 0;
        if (fd >= 0)
            ::close(fd);
        const QStringList mkfs{QStringLiteral("-q"), QStringLiteral("-F"), QStringLiteral("-m"), QStringLiteral("0"),
            QStringLiteral("-L"), QStringLiteral("workspace"), QStringLiteral("-E"),
            QStringLiteral("lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner"), making};
        const Status made = sized ? runTool(findTool(QStringLiteral("mkfs.ext4")), mkfs,
                                QStringLiteral("cannot make the workspace filesystem"))
                                  : errnoError(QStringLiteral("cannot size the workspace image %1").arg(making));
        if (!made || ::rename(QFile::encodeName(making).constData(), QFile::encodeName(templ).constData()) != 0) {
            ::unlink(QFile::encodeName(making).constData());
            return made ? errnoError(QStringLiteral("cannot keep %1").arg(templ)).error() : made.error();
        }
    }
    if (!copySparse(QFile::encodeName(templ), QFile::encodeName(image), off_t(bytes))) {
        const Status s = errnoError(QStringLiteral("cannot create the workspace image %1").arg(image));
        ::unlink(QFile::encodeName(image).constData());
        return s.error();
    }
    return image;
}
} // namespace

Driver probe(bool root, QString *why)
{
    if (root) {
        if (::access("/dev/loop-control", R_OK | W_OK) == 0 && !findTool(QStringLiteral("mkfs.ext4")).isEmpty())
            return Driver::Loop;
        *why = QStringLiteral("no loop device (/dev/loop-control) or no mkfs.ext4 (apt install e2fsprogs)");
        return Driver::None;
    }
    if (findTool(QStringLiteral("mkfs.ext4")).isEmpty()) {
        *why = QStringLiteral("mkfs.ext4 is missing (apt install e2fsprogs)");
        return Driver::None;
    }
    if (findTool(QStringLiteral("fuse2fs")).isEmpty() || findTool(QStringLiteral("fusermount3")).isEmpty()) {
        *why = QStringLiteral("fuse2fs or fusermount3 is missing (apt install fuse2fs fuse3)");
        return Driver::None;
    }
    if (::access("/dev/fuse", R_OK | W_OK) != 0) {
        *why = QStringLiteral("/dev/fuse is not open to this user (%1)")
                   .arg(QString::fromLocal8Bit(std::strerror(errno)));
        return Driver::None;
    }
    return Driver::Fuse2fs;
}

QString driverName(Driver driver)
{
    switch (driver) {
    case Driver::Loop:
        return QStringLiteral("ext4 image on a loop device");
    case Driver::Fuse2fs:
        return QStringLiteral("ext4 image served by fuse2fs");
    case Driver::None:
        break;
    }
    return QStringLiteral("none");
}

QString imagePath(const QString &dir)
{
    return dir + QStringLiteral(".ext4");
}

bool hasImage(const QString &dir)
{
    struct stat st { };
    return ::lstat(QFile::encodeName(imagePath(dir)).constData(), &st) == 0 && S_ISREG(st.st_mode);
}

Status create(Driver driver, const QString &dir, uint64_t bytes, uid_t uid, gid_t gid)
{
    auto image = copyOfTemplate(QFileInfo(dir).path(), bytes, imagePath(dir));
    if (!image)
        return image.error();
    if (Status s = mount(driver, dir); !s) {
        ::unlink(QFile::encodeName(*image).constData());
        return s;
    }
    // An empty workspace, as without a limit (fsck makes lost+found again should it need one),
    // whose root stands for the folder it covers: the sandbox's alone (mkfs makes it 0755).
    const QString lostFound = dir + QStringLiteral("/lost+found");
    if (::rmdir(QFile::encodeName(lostFound).constData()) != 0)
        logger()->warn("could not remove {}: {}", lostFound.toStdString(), std::strerror(errno));
    const QByteArray root = QFile::encodeName(dir);
    if ((uid != ::geteuid() && ::chown(root.constData(), uid, gid) != 0) || ::chmod(root.constData(), 0700) != 0) {
        const Status s = errnoError(QStringLiteral("cannot make %1 private to uid %2").arg(dir).arg(uid));
        removeWorkspace(dir);
        ::mkdir(root.constData(), 0700); // the caller removes the folder it made
        return s;
    }
    return Ok{};
}

Status mount(Driver driver, const QString &dir)
{
    if (mounted(dir))
        return Ok{};
    if (!hasImage(dir))
        return makeError(ErrorCode::NotFound, QStringLiteral("%1 has no image").arg(dir));
    switch (driver) {
    case Driver::Loop:
        return mountLoop(imagePath(dir), dir);
    case Driver::Fuse2fs:
        return mountFuse(imagePath(dir), dir);
    case Driver::None:
        break;
    }
    return makeError(ErrorCode::LimitUnsupported, QStringLiteral("this daemon cannot mount workspace images"));
}

bool isMountRoot(const QString &path)
{
    struct statx st { };
    return ::statx(AT_FDCWD, QFile::encodeName(path).constData(), AT_SYMLINK_NOFOLLOW, STATX_TYPE, &st) == 0
        && (st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (st.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

Status bindOnItself(const QString &dir)
{
    struct statx st { };
    if (::statx(AT_FDCWD, "/", 0, STATX_TYPE, &st) != 0 || !(st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
        return makeError(ErrorCode::IoError, QStringLiteral("this kernel does not say which folders are mounts"));
    if (isMountRoot(dir))
        return Ok{};
    if (const QStringList below = mountsUnder(dir); !below.isEmpty())
        return makeError(ErrorCode::IoError,
            QStringLiteral("%1 mounts are below %2 already (%3 …)").arg(below.size()).arg(dir, below.first()));
    const QByteArray path = QFile::encodeName(dir);
    if (::mount(path.constData(), path.constData(), nullptr, MS_BIND, nullptr) != 0)
        return makeError(ErrorCode::IoError,
            QStringLiteral("bind %1 onto itself: %2").arg(dir, QString::fromLocal8Bit(strerror(errno))));
    if (::mount(nullptr, path.constData(), nullptr, MS_PRIVATE, nullptr) != 0) {
        const Error error = makeError(ErrorCode::IoError,
            QStringLiteral("make %1 a private mount: %2").arg(dir, QString::fromLocal8Bit(strerror(errno))));
        ::umount2(path.constData(), MNT_DETACH | UMOUNT_NOFOLLOW);
        return error;
    }
    return Ok{};
}

bool mounted(const QString &dir)
{
    const QByteArray path = QFile::encodeName(dir);
    struct stat self {
    }, parent{};
    if (::lstat(path.constData(), &self) != 0)
        return errno == ENOTCONN; // fuse2fs is gone and its mount is left
    if (::stat(QFile::encodeName(QFileInfo(dir).path()).constData(), &parent) != 0)
        return false;
    return self.st_dev != parent.st_dev;
}

QStringList mountsUnder(const QString &root)
{
    QFile info(QStringLiteral("/proc/self/mountinfo"));
    if (!info.open(QIODevice::ReadOnly))
        return {};
    const QByteArray prefix = QFile::encodeName(QDir::cleanPath(root)) + '/';
    QStringList found;
    for (const QByteArray &line : info.readAll().split('\n')) {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...", with space, tab, newline and backslash as \ooo.
        QByteArray point = line.split(' ').value(4);
        for (qsizetype at = point.indexOf('\\'); at >= 0 && at + 3 < point.size(); at = point.indexOf('\\', at + 1))
            point.replace(at, 4, QByteArray(1, char(point.mid(at + 1, 3).toInt(nullptr, 8))));
        if (point.startsWith(prefix))
            found.append(QFile::decodeName(point));
    }
    return found;
}

bool removeWorkspace(const QString &dir)
{
    bool ok = true;
    if (hasImage(dir)) {
        if (!unmount(dir)) {
            // Never delete through a mount: the image and its folder stay for the next rm.
            logger()->warn("could not unmount {}: {}", dir.toStdString(), std::strerror(errno));
            return false;
        }
        ok = ::unlink(QFile::encodeName(imagePath(dir)).constData()) == 0;
    }
    return fs::removeTree(dir) && ok;
}

Result<QString> keepWorkspace(Driver driver, const QString &dir, const QString &target)
{
    if (!hasImage(dir)) {
        if (!QDir().rename(dir, target))
            return makeError(ErrorCode::IoError, QStringLiteral("could not move %1 to %2").arg(dir, target));
        return target;
    }
    if (Status s = mount(driver, dir); !s)
        return s.error();
    // cp -a keeps owners, modes, times, links and holes: the files as the sandbox left them.
    if (::mkdir(QFile::encodeName(target).constData(), 0700) != 0)
        return errnoError(QStringLiteral("cannot create %1").arg(target)).error();
    const Status copied = runTool(QStringLiteral("cp"),
        {QStringLiteral("-a"), QStringLiteral("--"), dir + QStringLiteral("/."), target},
        QStringLiteral("could not copy the workspace out of its image"), kKeepCopyMs);
    if (!copied) {
        fs::removeTree(target);
        // The image is the workspace too: kept as it is, beside where the folder would have been.
        const QString image = target + QStringLiteral(".ext4");
        logger()->warn("{}; keeping the image itself as {}", copied.error().message.toStdString(), image.toStdString());
        if (!unmount(dir) || !QDir().rename(imagePath(dir), image))
            return copied.error();
        fs::removeTree(dir);
        return image;
    }
    struct stat st { };
    if (::stat(QFile::encodeName(dir).constData(), &st) == 0)
        ::chmod(QFile::encodeName(target).constData(), st.st_mode & 07777);
    if (!removeWorkspace(dir))
        logger()->warn("kept {} at {}; its image is left to the next rm", dir.toStdString(), target.toStdString());
    return target;
}

std::optional<Usage> usage(const QString &dir)
{
    struct statvfs sv { };
    if (::statvfs(QFile::encodeName(dir).constData(), &sv) != 0)
        return std::nullopt;
    Usage u;
    u.sizeBytes = uint64_t(sv.f_blocks) * sv.f_frsize;
    u.usedBytes = uint64_t(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    return u;
}

std::optional<uint64_t> freeBytes(const QString &path)
{
    struct statvfs sv { };
    if (::statvfs(QFile::encodeName(path).constData(), &sv) != 0)
        return std::nullopt;
    return uint64_t(sv.f_bavail) * sv.f_frsize;
}

QString runtimeDirOf(const QString &dir)
{
    return dir + QLatin1String(kRuntimeSuffix);
}

QString cowMountPointsOf(const QString &dir, bool root)
{
    if (!root)
        return runtimeDirOf(dir) + QStringLiteral("/cow");
    const QFileInfo workspace(dir);
    const QFileInfo workspaces(workspace.path());
    return QStringLiteral("%1/cow-%2/%3").arg(workspaces.path(), workspaces.fileName(), workspace.fileName());
}

void removeRuntimeDirs(const QString &dir, bool root)
{
    fs::removeTree(runtimeDirOf(dir)); // a copy-on-write mount's work folder is 000 (a user's mount points too)
    if (root)
        fs::removeTree(cowMountPointsOf(dir, true));
}

QString workspaceOfRuntimeDir(const QString &name)
{
    return name.endsWith(QLatin1String(kRuntimeSuffix)) ? name.chopped(qsizetype(strlen(kRuntimeSuffix))) : QString();
}

} // namespace airlock::volume
