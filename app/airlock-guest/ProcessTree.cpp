// SPDX-License-Identifier: Apache-2.0
#include "ProcessTree.h"

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace airlock::guest {
namespace {

// A chain of reused pids could make the walk go round; no sandbox has this many processes.
constexpr size_t kMaxWalk = 1 << 20;

// The whole file (small /proc files only); empty when it cannot be read.
std::string readSmallFile(const std::string &path)
{
    std::string out;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return out;
    char buf[4096];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
}

void appendPids(std::string_view text, std::vector<pid_t> &out)
{
    const char *p = text.data();
    const char *end = p + text.size();
    while (p < end) {
        pid_t pid = 0;
        const auto [next, ec] = std::from_chars(p, end, pid);
        if (ec == std::errc() && pid > 0)
            out.push_back(pid);
        p = next == p ? p + 1 : next;
    }
}

// Calls f(name) for every numeric entry of a /proc directory.
template<typename F> void forEachNumericEntry(const std::string &dir, F f)
{
    DIR *d = opendir(dir.c_str());
    if (!d)
        return;
    while (const dirent *e = readdir(d)) {
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
            f(e->d_name);
    }
    closedir(d);
}

bool haveChildrenFiles()
{
    static const bool have = access(("/proc/self/task/" + std::to_string(gettid()) + "/children").c_str(), R_OK) == 0;
    return have;
}

// The parent field of /proc/PID/stat: after the command name, which may hold ") " itself.
pid_t parentOf(const char *pid)
{
    const std::string stat = readSmallFile(std::string("/proc/") + pid + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size())
        return 0;
    pid_t ppid = 0;
    const char *p = stat.data() + close + 4; // ") S " then the parent
    std::from_chars(p, stat.data() + stat.size(), ppid);
    return ppid;
}

} // namespace

std::vector<pid_t> childrenOf(pid_t pid)
{
    std::vector<pid_t> out;
    const std::string base = "/proc/" + std::to_string(pid);
    if (haveChildrenFiles()) {
        forEachNumericEntry(base + "/task",
            [&](const char *tid) { appendPids(readSmallFile(base + "/task/" + tid + "/children"), out); });
        return out;
    }
    forEachNumericEntry("/proc", [&](const char *other) {
        if (parentOf(other) == pid)
            appendPids(other, out);
    });
    return out;
}

size_t killTree(pid_t root, bool includeRoot)
{
    std::vector<pid_t> pending;
    if (includeRoot)
        pending.push_back(root);
    else
        pending = childrenOf(root);
    size_t signalled = 0;
    while (!pending.empty() && signalled < kMaxWalk) {
        const pid_t pid = pending.back();
        pending.pop_back();
        if (kill(pid, SIGKILL) != 0)
            continue; // gone: its children moved to a subreaper already
        ++signalled;
        const std::vector<pid_t> children = childrenOf(pid);
        pending.insert(pending.end(), children.begin(), children.end());
    }
    return signalled;
}

} // namespace airlock::guest
