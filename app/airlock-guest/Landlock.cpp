// SPDX-License-Identifier: Apache-2.0
#include "Landlock.h"

#include "Log.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The distribution header may predate newer ABIs; the bit values are stable kernel ABI.
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

namespace airlock::guest {
namespace {

// struct landlock_ruleset_attr as of ABI 6. Older kernels get only the first field (they accept a
// shorter struct). Network access stays unhandled: the network namespace governs it. From ABI 6 on,
// the domain is also scoped: no connecting to abstract unix sockets created outside it (they are
// shared with the host in `full` network mode) and no signals to processes outside it.
struct RulesetAttr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;

struct PathBeneathAttr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

constexpr uint64_t kAbi1Fs = (1ULL << 13) - 1; // EXECUTE .. MAKE_SYM

// Rights the kernel accepts on a rule whose anchor is not a directory (anything else is EINVAL).
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE
    | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;

uint64_t handledForAbi(int abi)
{
    uint64_t fs = kAbi1Fs;
    if (abi >= 2)
        fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return fs;
}

std::string errnoText(const std::string &what, int err)
{
    return what + ": " + std::strerror(err);
}

// Adds one path-beneath rule. A missing path is not an error (the daemon passes optional
// mounts, and /dev nodes differ between host and sandbox); anything else is.
bool addRule(int rulesetFd, const std::string &path, uint64_t access, uint64_t handled, std::string &error)
{
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            logv("landlock: skipping missing path %s", path.c_str());
            return true;
        }
        error = errnoText("landlock: cannot open '" + path + "'", errno);
        return false;
    }
    struct stat st { };
    if (fstat(fd, &st) != 0) {
        error = errnoText("landlock: cannot stat '" + path + "'", errno);
        close(fd);
        return false;
    }
    access &= handled;
    if (!S_ISDIR(st.st_mode))
        access &= kFileRights;
    PathBeneathAttr attr{access, fd};
    const long rc = syscall(SYS_landlock_add_rule, rulesetFd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
    const int err = errno;
    close(fd);
    if (rc != 0) {
        error = errnoText("landlock_add_rule failed for '" + path + "'", err);
        return false;
    }
    return true;
}

} // namespace

LandlockResult applyLandlock(const std::vector<std::string> &rwPaths)
{
    LandlockResult result;
    const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) {
        result.error = errnoText("landlock unavailable (landlock_create_ruleset version query failed)", errno);
        return result;
    }
    result.abi = static_cast<int>(abi);
    const uint64_t handled = handledForAbi(result.abi);

    const RulesetAttr rulesetAttr{handled, 0, abi >= 6 ? kScopeAbstractUnixSocket | kScopeSignal : 0};
    const size_t attrSize = abi >= 6 ? sizeof rulesetAttr : sizeof rulesetAttr.handled_access_fs;
    const long rs = syscall(SYS_landlock_create_ruleset, &rulesetAttr, attrSize, 0);
    if (rs < 0) {
        result.error = errnoText("landlock_create_ruleset failed", errno);
        return result;
    }
    const int rulesetFd = static_cast<int>(rs);

    constexpr uint64_t readOnly
        = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
    constexpr uint64_t deviceFile = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE
        | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;

    bool ok = addRule(rulesetFd, "/", readOnly, handled, result.error);
    for (const std::string &p : rwPaths) {
        if (ok)
            ok = addRule(rulesetFd, p, handled, handled, result.error);
    }
    // Programs routinely write to these, and terminals need ioctls on them.
    for (const char *dev :
        {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/urandom", "/dev/random"}) {
        if (ok)
            ok = addRule(rulesetFd, dev, deviceFile, handled, result.error);
    }
    if (ok)
        ok = addRule(rulesetFd, "/dev/pts", handled, handled, result.error);

    if (ok && syscall(SYS_landlock_restrict_self, rulesetFd, 0) != 0) {
        result.error = errnoText("landlock_restrict_self failed", errno);
        ok = false;
    }
    close(rulesetFd);
    if (ok)
        logv("landlock ABI %d enforced (handled fs rights 0x%llx)", result.abi,
            static_cast<unsigned long long>(handled));
    return result;
}

} // namespace airlock::guest
