// SPDX-License-Identifier: Apache-2.0
#include "sandbox/ResourceUsage.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock {

namespace {

// The fields of /proc/PID/stat that are wanted, counted from 1 as proc(5) does: utime (14),
// stime (15), cutime (16), cstime (17), rss (24, in pages). The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
bool readStat(int procFd, const char *pid, qint64 &ticks, qint64 &rssPages)
{
    char path[64];
    std::snprintf(path, sizeof path, "%.24s/stat", pid);
    const int fd = ::openat(procFd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0)
        return false;
    const std::string_view stat(buf, size_t(n));
    const size_t paren = stat.rfind(')');
    if (paren == std::string_view::npos)
        return false;
    ticks = rssPages = 0;
    int field = 2;
    for (size_t i = paren + 1; i < stat.size() && field < 24;) {
        while (i < stat.size() && stat[i] == ' ')
            ++i;
        const size_t end = std::min(stat.find(' ', i), stat.size());
        ++field;
        if ((field >= 14 && field <= 17) || field == 24) {
            long long value = 0;
            if (std::from_chars(stat.data() + i, stat.data() + end, value).ec != std::errc())
                return false;
            (field == 24 ? rssPages : ticks) += value;
        }
        i = end;
    }
    return field == 24;
}

quint64 namespaceAt(int procFd, const char *pid)
{
    char path[64];
    std::snprintf(path, sizeof path, "%.24s/ns/pid", pid);
    struct stat st { };
    return ::fstatat(procFd, path, &st, 0) == 0 ? quint64(st.st_ino) : 0;
}

} // namespace

quint64 pidNamespaceOf(pid_t pid)
{
    char name[16];
    std::snprintf(name, sizeof name, "%d", int(pid));
    const int procFd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procFd < 0)
        return 0;
    const quint64 ns = namespaceAt(procFd, name);
    ::close(procFd);
    return ns;
}

QHash<quint64, ResourceUsage> usageByPidNamespace(const QSet<quint64> &namespaces)
{
    QHash<quint64, ResourceUsage> usage;
    if (namespaces.isEmpty())
        return usage;
    DIR *proc = ::opendir("/proc");
    if (!proc)
        return usage;
    static const qint64 nsPerTick = 1'000'000'000 / std::max(1L, ::sysconf(_SC_CLK_TCK));
    static const qint64 pageBytes = ::sysconf(_SC_PAGESIZE);
    const int procFd = ::dirfd(proc);
    while (const dirent *entry = ::readdir(proc)) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9')
            continue;
        const quint64 ns = namespaceAt(procFd, entry->d_name);
        if (!ns || !namespaces.contains(ns))
            continue;
        qint64 ticks = 0, pages = 0;
        if (!readStat(procFd, entry->d_name, ticks, pages))
            continue;
        ResourceUsage &u = usage[ns];
        u.cpuNs += ticks * nsPerTick;
        u.memoryBytes += pages * pageBytes;
        ++u.processes;
    }
    ::closedir(proc);
    return usage;
}

} // namespace airlock
