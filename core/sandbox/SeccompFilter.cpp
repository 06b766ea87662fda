// SPDX-License-Identifier: Apache-2.0
#include "sandbox/SeccompFilter.h"

#include <seccomp.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace airlock {

namespace {
struct CtxDeleter {
    void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

// What SCMP_A0(...) and SCMP_A1(...) make (a 64-bit comparison of one argument), without their C
// compound literal, which clang refuses in C++ (-Wc99-extensions, -Wmissing-field-initializers).
scmp_arg_cmp argument(unsigned index, scmp_compare op, scmp_datum_t a, scmp_datum_t b = 0)
{
    return scmp_arg_cmp{index, op, a, b};
}

constexpr const char *kDeniedSyscalls[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "userfaultfd",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "name_to_handle_at",
    "open_by_handle_at",
    "vhangup",
    "uselib",
    "nfsservctl",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "fanotify_init",
    // Reaching into another process of the same uid (the guest shares the commands' uid).
    "pidfd_getfd",
    "process_madvise",
    "kcmp",
};

// Calls that set a file mode, with the index of their mode argument (and, for open, of flags).
// A setuid or setgid file in the workspace would be a host binary that runs as the sandbox's
// host uid for whoever executes it there, so such modes are refused outright.
struct ModeCall {
    const char *name;
    unsigned modeArg;
    int flagsArg; // -1: always creates or changes a mode
};
constexpr ModeCall kModeCalls[] = {
    {"chmod", 1, -1},
    {"fchmod", 1, -1},
    {"fchmodat", 2, -1},
    {"fchmodat2", 2, -1},
    {"creat", 1, -1},
    {"mknod", 1, -1},
    {"mknodat", 2, -1},
    {"open", 2, 1},
    {"openat", 3, 2},
};

constexpr uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID
    | CLONE_NEWNET | CLONE_NEWCGROUP | 0x00000080ULL /* CLONE_NEWTIME */;

// Socket families a sandbox may use. The empty network namespace, not this list, keeps a `none`
// sandbox off the network; the list closes kernel attack surface (packet, vsock, bluetooth, ...).
bool allowedFamily(int family)
{
    return family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK;
}

Error fail(const char *what, int rc)
{
    return makeError(ErrorCode::BoundaryUnavailable,
        QStringLiteral("seccomp: %1 failed: %2 (is libseccomp2 installed and up to date?)")
            .arg(QLatin1String(what), QString::fromLocal8Bit(strerror(-rc))));
}
} // namespace

Result<QByteArray> buildSeccompProgram()
{
    Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
    if (!ctx)
        return makeError(ErrorCode::BoundaryUnavailable, QStringLiteral("seccomp: seccomp_init failed"));
    scmp_filter_ctx c = ctx.get();
    int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc < 0)
        return fail("setting the bad-architecture action", rc);
    // bwrap loads the program after setting no_new_privs itself.
    rc = seccomp_attr_set(c, SCMP_FLTATR_CTL_NNP, 0);
    if (rc < 0)
        return fail("clearing the NNP attribute", rc);

    const auto deny = SCMP_ACT_ERRNO(EPERM);
    for (const char *name : kDeniedSyscalls) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
            continue; // not on this architecture
        rc = seccomp_rule_add(c, deny, nr, 0);
        if (rc < 0 && rc != -EEXIST)
            return fail(name, rc);
    }

    for (const ModeCall &call : kModeCalls) {
        const int nr = seccomp_syscall_resolve_name(call.name);
        if (nr == __NR_SCMP_ERROR)
            continue;
        for (scmp_datum_t bit : {scmp_datum_t(S_ISUID), scmp_datum_t(S_ISGID)}) {
            const scmp_arg_cmp mode{call.modeArg, SCMP_CMP_MASKED_EQ, bit, bit};
            if (call.flagsArg < 0) {
                rc = seccomp_rule_add(c, deny, nr, 1, mode);
            } else {
                // open/openat only use the mode when they create (O_CREAT, or O_TMPFILE).
                for (scmp_datum_t create : {scmp_datum_t(O_CREAT), scmp_datum_t(O_TMPFILE)}) {
                    const scmp_arg_cmp flags{unsigned(call.flagsArg), SCMP_CMP_MASKED_EQ, create, create};
                    rc = seccomp_rule_add(c, deny, nr, 2, flags, mode);
                    if (rc < 0)
                        break;
                }
            }
            if (rc < 0)
                return fail(call.name, rc);
        }
    }
    // openat2 passes its flags and mode in a struct a filter cannot read: ENOSYS makes libc and
    // programs fall back to openat, which is checked above.
    rc = seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
    if (rc < 0)
        return fail("openat2", rc);

    rc = seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc < 0)
        return fail("clone3", rc);
    // One rule per namespace flag: clone(2) with any of them set is refused.
    for (uint64_t bit = 1; bit != 0; bit <<= 1) {
        if (!(kNamespaceFlags & bit))
            continue;
        rc = seccomp_rule_add(c, deny, SCMP_SYS(clone), 1, argument(0, SCMP_CMP_MASKED_EQ, bit, bit));
        if (rc < 0)
            return fail("clone namespace flags", rc);
    }
    // Unknown families are refused one by one so that the allowed four stay open.
    constexpr int kFamilyLimit = 64;
    for (int family = 0; family < kFamilyLimit; ++family) {
        if (allowedFamily(family))
            continue;
        for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
            rc = seccomp_rule_add(c, deny, nr, 1, argument(0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(family)));
            if (rc < 0)
                return fail("socket families", rc);
        }
    }
    for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
        rc = seccomp_rule_add(c, deny, nr, 1, argument(0, SCMP_CMP_GE, static_cast<scmp_datum_t>(kFamilyLimit)));
        if (rc < 0)
            return fail("socket families", rc);
    }
    // personality(2): only PER_LINUX (0) and the query (0xffffffff) stay allowed. libseccomp cannot
    // compare one argument twice in a rule, so each bit gets two rules: "set while bit 31 is clear"
    // and "clear while bit 31 is set"; together they match every other 32-bit value.
    for (int bit = 0; bit < 31; ++bit) {
        const scmp_datum_t b = scmp_datum_t(1) << bit, top = scmp_datum_t(1) << 31;
        for (scmp_datum_t datum : {b, top}) {
            rc = seccomp_rule_add(c, deny, SCMP_SYS(personality), 1, argument(0, SCMP_CMP_MASKED_EQ, top | b, datum));
            if (rc < 0 && rc != -EEXIST)
                return fail("personality", rc);
        }
    }
    // Terminal injection and console control, belt and braces beside bwrap's --new-session.
    for (unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
        rc = seccomp_rule_add(c, deny, SCMP_SYS(ioctl), 1, argument(1, SCMP_CMP_MASKED_EQ, 0xffffffffULL, request));
        if (rc < 0)
            return fail("ioctl", rc);
    }

    const int fd = ::memfd_create("airlock-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return makeError(ErrorCode::BoundaryUnavailable, QStringLiteral("seccomp: memfd_create failed"));
    rc = seccomp_export_bpf(c, fd);
    QByteArray program;
    if (rc == 0) {
        const off_t size = ::lseek(fd, 0, SEEK_END);
        program.resize(static_cast<qsizetype>(size));
        if (size <= 0 || ::pread(fd, program.data(), static_cast<size_t>(size), 0) != size)
            rc = -EIO;
    }
    ::close(fd);
    if (rc < 0)
        return fail("exporting the BPF program", rc);
    return program;
}

} // namespace airlock
