// SPDX-License-Identifier: Apache-2.0
#include "util/FileSystem.h"

#include <QFile>
#include <QFileInfo>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::fs {

namespace {
thread_local int s_unreadable = 0;

int makeTraversable(const char *path, const struct stat *st, int type, FTW *)
{
    if (type == FTW_DNR)
        ++s_unreadable;
    if (type == FTW_D || type == FTW_DNR)
        ::chmod(path, (st->st_mode & 07777) | S_IRWXU);
    return 0;
}

int removeEntry(const char *path, const struct stat *, int type, FTW *)
{
    if (type == FTW_DP)
        ::rmdir(path);
    else
        ::unlink(path);
    return 0;
}
} // namespace

bool removeTree(const QString &path)
{
    const QByteArray native = QFile::encodeName(path);
    struct stat st {};
    if (::lstat(native.constData(), &st) != 0)
        return true;
    if (!S_ISDIR(st.st_mode))
        return ::unlink(native.constData()) == 0;
    // Each pass opens directories the previous one made readable (nested 000 directories).
    for (int pass = 0; pass < 8; ++pass) {
        s_unreadable = 0;
        ::nftw(native.constData(), makeTraversable, 64, FTW_PHYS | FTW_MOUNT);
        if (s_unreadable == 0)
            break;
    }
    ::nftw(native.constData(), removeEntry, 64, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
    return !QFileInfo::exists(path);
}

} // namespace airlock::fs
