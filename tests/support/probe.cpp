// SPDX-License-Identifier: Apache-2.0
// airlock-probe: runs inside a sandbox during tests and reports exactly what the kernel answered
// (an errno name, "ok", or death by a signal that the test reads from the exit status).
// Output: one line, "<result> [detail]". Plain C++, no Qt, so it runs wherever /usr is mounted.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {
int report(long rc)
{
    if (rc < 0) {
        std::printf("%s\n", strerrorname_np(errno));
        return 1;
    }
    std::printf("ok\n");
    return 0;
}

int doConnect(const char *ip, int port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(uint16_t(port));
    ::inet_pton(AF_INET, ip, &sa.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
        return report(-1);
    char buf[128] = {};
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    std::printf("ok %s\n", n > 0 ? buf : "");
    return 0;
}

// A server and a client on the sandbox's own loopback: works even without a network.
int loopback()
{
    const int srv = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(srv, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || ::listen(srv, 1) != 0
        || ::getsockname(srv, reinterpret_cast<sockaddr *>(&sa), &len) != 0)
        return report(-1);
    const int cli = ::socket(AF_INET, SOCK_STREAM, 0);
    return report(::connect(cli, reinterpret_cast<sockaddr *>(&sa), sizeof sa));
}

int forkbomb()
{
    long made = 0;
    for (;;) {
        const pid_t p = ::fork();
        if (p == 0) {
            ::pause();
            ::_exit(0);
        }
        if (p < 0) {
            std::printf("%s after %ld\n", strerrorname_np(errno), made);
            std::fflush(stdout);
            ::kill(0, SIGKILL);
            return 1;
        }
        ++made;
    }
}

// Never the same process for long: forks, the parent exits, the child takes a session of its own,
// over and over, writing how many hops it made to `path` each time. What a kill by pid, process
// group or session never catches, and a walk of the process tree only when it goes on until none
// is left.
int hop(const char *path)
{
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return report(-1);
    for (unsigned long hops = 0;; ++hops) {
        const pid_t p = ::fork();
        if (p > 0)
            ::_exit(0);
        if (p == 0) {
            ::setsid();
            char text[32];
            const int n = std::snprintf(text, sizeof text, "%lu\n", hops);
            [[maybe_unused]] ssize_t w = ::pwrite(fd, text, size_t(n), 0);
        }
    }
}

int alloc(long mb)
{
    for (long i = 0; i < mb; ++i) {
        char *p = static_cast<char *>(std::malloc(1 << 20));
        if (!p)
            return report(-1);
        std::memset(p, 1, 1 << 20);
    }
    std::printf("ok\n");
    return 0;
}

int status()
{
    FILE *f = std::fopen("/proc/self/status", "r");
    char line[256];
    while (f && std::fgets(line, sizeof line, f))
        if (!std::strncmp(line, "CapEff", 6) || !std::strncmp(line, "CapPrm", 6)
            || !std::strncmp(line, "NoNewPrivs", 10) || !std::strncmp(line, "Seccomp:", 8)
            || !std::strncmp(line, "Uid", 3))
            std::fputs(line, stdout);
    // Asked of the kernel itself (gVisor's /proc/self/status has no NoNewPrivs line).
    std::printf("PR_GET_NO_NEW_PRIVS:\t%d\n", ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    return 0;
}

int x32()
{
    // getpid through the x32 ABI: the filter only accepts native x86_64 calls (kills the process).
    std::printf("alive %ld\n", syscall(0x40000000L | 39));
    return 0;
}

int i386()
{
    long ret = 20; // getpid on i386
    asm volatile("int $0x80" : "+a"(ret) : : "memory");
    std::printf("alive %ld\n", ret);
    return 0;
}
double nowUs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// HTTP GETs of PATH from HOST:PORT, COUNT times, each on a new connection: "direct" to
// 127.0.0.1:PORT, or "connect" through the egress proxy's CONNECT at 127.0.0.1:3128. Prints
// "ok <median microseconds per fetch> <MB/s over all fetches>" (for the proxy benchmark).
int httpFetch(const std::string &mode, const std::string &host, int port, const std::string &path, int count)
{
    std::vector<double> times;
    double totalBytes = 0, totalUs = 0;
    std::vector<char> buf(256 * 1024);
    for (int i = 0; i < count; ++i) {
        const double start = nowUs();
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(uint16_t(mode == "connect" ? 3128 : port));
        ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
            return report(-1);
        if (mode == "connect") {
            const std::string req = "CONNECT " + host + ":" + std::to_string(port) + " HTTP/1.1\r\n\r\n";
            (void)!::write(fd, req.data(), req.size());
            std::string head;
            char c;
            while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1)
                head += c;
            if (head.rfind("HTTP/1.1 200", 0) != 0) {
                std::printf("refused %s\n", head.substr(0, head.find('\r')).c_str());
                return 1;
            }
        }
        const std::string get = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
        (void)!::write(fd, get.data(), get.size());
        for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;)
            totalBytes += double(n);
        ::close(fd);
        const double us = nowUs() - start;
        times.push_back(us);
        totalUs += us;
    }
    std::sort(times.begin(), times.end());
    std::printf("ok %.1f %.1f\n", times[times.size() / 2], totalBytes / totalUs);
    return 0;
}
} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: airlock-probe TEST [ARGS]\n");
        return 2;
    }
    const std::string t = argv[1];
    const char *a2 = argc > 2 ? argv[2] : "";
    const char *a3 = argc > 3 ? argv[3] : "0";
    if (t == "http-fetch" && argc == 7)
        return httpFetch(argv[2], argv[3], std::atoi(argv[4]), argv[5], std::atoi(argv[6]));
    if (t == "write")
        return report(::open(a2, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    if (t == "statx-no-automount") { // the system call itself, as Debian 12's ls makes it
        struct statx stx { };
        return report(
            ::syscall(SYS_statx, AT_FDCWD, a2, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &stx));
    }
    if (t == "mkdir")
        return report(::mkdir(a2, 0755));
    if (t == "rename")
        return report(::rename(a2, a3));
    if (t == "unlink")
        return report(::unlink(a2));
    if (t == "socket-stdin" && argc > 2) { // run a program with a socket as stdin, as sshd does
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || ::dup2(sv[0], 0) < 0)
            return report(-1);
        ::execvp(argv[2], argv + 2);
        return report(-1);
    }
    if (t == "read") {
        const int fd = ::open(a2, O_RDONLY);
        if (fd < 0)
            return report(-1);
        char buf[64];
        return report(::read(fd, buf, sizeof buf));
    }
    if (t == "connect")
        return doConnect(a2, std::atoi(a3));
    if (t == "loopback")
        return loopback();
    if (t == "kill")
        return report(::kill(std::atoi(a2), 0));
    if (t == "status")
        return status();
    if (t == "forkbomb")
        return forkbomb();
    if (t == "hop")
        return hop(a2);
    if (t == "alloc")
        return alloc(std::atol(a2));
    if (t == "x32")
        return x32();
    if (t == "i386")
        return i386();
    if (t == "ptrace")
        return report(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
    if (t == "io_uring_setup") {
        io_uring_params p{};
        return report(::syscall(__NR_io_uring_setup, 4, &p));
    }
    if (t == "unshare")
        return report(::unshare(CLONE_NEWUSER));
    if (t == "setns")
        return report(::setns(::open("/proc/self/ns/net", O_RDONLY), 0));
    if (t == "clone3") {
        clone_args ca{};
        ca.exit_signal = SIGCHLD;
        const long rc = ::syscall(__NR_clone3, &ca, sizeof ca);
        if (rc == 0)
            ::_exit(0);
        return report(rc);
    }
    if (t == "clone-newns") {
        const long rc = ::syscall(__NR_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
        if (rc == 0)
            ::_exit(0);
        return report(rc);
    }
    if (t == "fork") {
        const long rc = ::syscall(__NR_clone, SIGCHLD, 0, 0, 0, 0);
        if (rc == 0)
            ::_exit(0);
        return report(rc);
    }
    if (t == "bpf")
        return report(::syscall(__NR_bpf, 0, nullptr, 0));
    if (t == "perf_event_open")
        return report(::syscall(__NR_perf_event_open, nullptr, 0, -1, -1, 0));
    if (t == "keyctl")
        return report(::syscall(__NR_keyctl, 0, 0, 0, 0, 0));
    if (t == "add_key")
        return report(::syscall(__NR_add_key, "user", "x", "y", 1, 0));
    if (t == "mount")
        return report(::mount("none", "/tmp", "tmpfs", 0, nullptr));
    if (t == "process_vm_readv") {
        char buf[4];
        iovec l{buf, 4}, r{buf, 4};
        return report(::process_vm_readv(::getpid(), &l, 1, &r, 1, 0));
    }
    if (t == "kexec_load")
        return report(::syscall(__NR_kexec_load, 0, 0, nullptr, 0));
    if (t == "init_module")
        return report(::syscall(__NR_init_module, nullptr, 0, ""));
    if (t == "personality")
        return report(::personality(static_cast<unsigned long>(ADDR_NO_RANDOMIZE)));
    if (t == "personality-query")
        return report(::personality(0xffffffff));
    if (t == "tiocsti") {
        char c = 'x';
        return report(::ioctl(0, TIOCSTI, &c));
    }
    if (t == "socket") // family and type as numbers: the errno exactly
        return report(::socket(std::atoi(a2), std::atoi(a3), 0));
    if (t == "openat2") {
        open_how how{};
        how.flags = O_RDONLY;
        return report(::syscall(__NR_openat2, AT_FDCWD, "/", &how, sizeof how));
    }
    if (t == "kcmp") // compare our fd 0 with itself: reveals whether two processes share files
        return report(::syscall(__NR_kcmp, ::getpid(), ::getpid(), 0 /* KCMP_FILE */, 0, 0));
    if (t == "chmod-suid") // make a file setuid: a host binary running as the sandbox's uid
        return report(::close(::open(a2, O_WRONLY | O_CREAT, 0755)) == 0 ? ::chmod(a2, 04755) : -1);
    if (t == "chmod-sgid")
        return report(::close(::open(a2, O_WRONLY | O_CREAT, 0755)) == 0 ? ::chmod(a2, 02755) : -1);
    if (t == "create-suid")
        return report(::open(a2, O_WRONLY | O_CREAT | O_EXCL, 04755));
    if (t == "chmod-plain")
        return report(::close(::open(a2, O_WRONLY | O_CREAT, 0644)) == 0 ? ::chmod(a2, 0755) : -1);
    if (t == "pidfd_getfd") { // take fd 0 of pid 1 (the guest) through a pidfd
        const long pidfd = ::syscall(__NR_pidfd_open, std::atoi(a2), 0);
        if (pidfd < 0)
            return report(-1);
        return report(::syscall(__NR_pidfd_getfd, pidfd, std::atoi(a3), 0));
    }
    if (t == "abstract") { // connect to an abstract unix socket by name
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        const size_t n = std::min(std::strlen(a2), sizeof sa.sun_path - 1);
        std::memcpy(sa.sun_path + 1, a2, n);
        return report(
            ::connect(fd, reinterpret_cast<sockaddr *>(&sa), socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n)));
    }
    std::fprintf(stderr, "unknown probe %s\n", t.c_str());
    return 2;
}
