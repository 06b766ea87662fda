// SPDX-License-Identifier: Apache-2.0
// airlock-guest: PID 1 inside an Airlock sandbox. It confines itself with Landlock (so every
// command inherits the confinement), then runs commands for the daemon over the socket it
// inherited, speaking the protocol in core/sandbox/GuestWire.h.
//
//   airlock-guest --fd N [--rw PATH]... [--nproc N] [--proxy-fd N --proxy-port P]
//                 [--resume-fd N --resume-token-fd N] [--verbose]

#include "Guest.h"
#include "Landlock.h"
#include "Log.h"
#include "ToolBridge.h"

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

using namespace airlock::guest;

namespace {

struct Options {
    int fd = -1;
    std::vector<std::string> rwPaths;
    long long nproc = -1;
    int proxyFd = -1;
    long long proxyPort = 0;
    int execCheckFd = -1;
    int resumeFd = -1;
    int resumeTokenFd = -1;
    std::string toolSocket;
    std::string egressSocket; // gVisor's egress, instead of --proxy-fd (see EgressRelay)
    std::string resumeSocket; // gVisor's way back to a later daemon, instead of --resume-fd
    // Under gVisor (decision 6): no descriptor but stdio reaches the container, so the channel is
    // stdin; gVisor has no Landlock (its own mounts are the file boundary there); and the seccomp
    // program, which bwrap applies elsewhere, comes from this file.
    bool gvisor = false;
    std::string seccompFile;
    std::string preload;
    bool verbose = false;
};

bool parseNumber(const char *s, long long &out)
{
    const char *end = s + std::strlen(s);
    const auto [p, ec] = std::from_chars(s, end, out);
    return ec == std::errc() && p == end && out >= 0;
}

// Returns an error message, or an empty string when the command line is valid.
std::string parseArgs(int argc, char **argv, Options &o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool hasValue = i + 1 < argc;
        long long n = 0;
        if (arg == "--verbose") {
            o.verbose = true;
        } else if (arg == "--gvisor") {
            o.gvisor = true;
        } else if (arg == "--preload" && hasValue) {
            o.preload = argv[++i];
            if (o.preload.empty() || o.preload[0] != '/' || o.preload.find_first_of(" :") != std::string::npos)
                return "invalid --preload path: " + o.preload;
        } else if (arg == "--seccomp-file" && hasValue) {
            o.seccompFile = argv[++i];
            if (o.seccompFile.empty() || o.seccompFile[0] != '/')
                return "invalid --seccomp-file path: " + o.seccompFile;
        } else if (arg == "--fd" && hasValue) {
            if (!parseNumber(argv[++i], n) || n > 1000000)
                return std::string("invalid --fd value: ") + argv[i];
            o.fd = static_cast<int>(n);
        } else if (arg == "--proxy-fd" && hasValue) {
            if (!parseNumber(argv[++i], n) || n < 3 || n > 1000000)
                return std::string("invalid --proxy-fd value: ") + argv[i];
            o.proxyFd = static_cast<int>(n);
        } else if (arg == "--exec-fd" && hasValue) {
            if (!parseNumber(argv[++i], n) || n < 3 || n > 1000000)
                return std::string("invalid --exec-fd value: ") + argv[i];
            o.execCheckFd = static_cast<int>(n);
        } else if (arg == "--resume-fd" && hasValue) {
            if (!parseNumber(argv[++i], n) || n < 3 || n > 1000000)
                return std::string("invalid --resume-fd value: ") + argv[i];
            o.resumeFd = static_cast<int>(n);
        } else if (arg == "--resume-token-fd" && hasValue) {
            if (!parseNumber(argv[++i], n) || n < 3 || n > 1000000)
                return std::string("invalid --resume-token-fd value: ") + argv[i];
            o.resumeTokenFd = static_cast<int>(n);
        } else if (arg == "--proxy-port" && hasValue) {
            if (!parseNumber(argv[++i], n) || n == 0 || n > 65535)
                return std::string("invalid --proxy-port value: ") + argv[i];
            o.proxyPort = n;
        } else if (arg == "--tool-socket" && hasValue) {
            o.toolSocket = argv[++i];
            if (o.toolSocket.empty() || o.toolSocket[0] != '/' || o.toolSocket.size() >= sizeof(sockaddr_un::sun_path))
                return "invalid --tool-socket path: " + o.toolSocket;
        } else if (arg == "--egress-socket" && hasValue) {
            o.egressSocket = argv[++i];
            if (o.egressSocket.empty() || o.egressSocket[0] != '/'
                || o.egressSocket.size() >= sizeof(sockaddr_un::sun_path))
                return "invalid --egress-socket path: " + o.egressSocket;
        } else if (arg == "--resume-socket" && hasValue) {
            o.resumeSocket = argv[++i];
            if (o.resumeSocket.empty() || o.resumeSocket[0] != '/'
                || o.resumeSocket.size() >= sizeof(sockaddr_un::sun_path))
                return "invalid --resume-socket path: " + o.resumeSocket;
        } else if (arg == "--rw" && hasValue) {
            o.rwPaths.emplace_back(argv[++i]);
        } else if (arg == "--nproc" && hasValue) {
            if (!parseNumber(argv[++i], n) || n == 0)
                return std::string("invalid --nproc value: ") + argv[i];
            o.nproc = n;
        } else {
            return "unknown or incomplete argument: " + arg;
        }
    }
    if (o.fd < 0 && !o.gvisor)
        return "--fd is required";
    if (o.gvisor && (o.fd >= 0 || o.proxyFd >= 0 || o.execCheckFd >= 0 || o.resumeFd >= 0))
        return "--gvisor takes its channel from stdin and no other descriptor (--fd, --proxy-fd, --exec-fd, "
               "--resume-fd)";
    if (o.gvisor != !o.seccompFile.empty())
        return "--gvisor and --seccomp-file go together";
    if (!o.preload.empty() && !o.gvisor)
        return "--preload is for --gvisor only";
    if (!o.resumeSocket.empty() && !o.gvisor)
        return "--resume-socket is for --gvisor only (--resume-fd and --resume-token-fd otherwise)";
    if (!o.egressSocket.empty() && !o.gvisor)
        return "--egress-socket is for --gvisor only (--proxy-fd hands connections over otherwise)";
    const bool egress = o.proxyFd >= 0 || !o.egressSocket.empty();
    if (egress != (o.proxyPort > 0) || (o.proxyFd >= 0 && o.proxyFd == o.fd))
        return "--proxy-port goes with --proxy-fd (not on --fd) or, under --gvisor, with --egress-socket";
    if ((o.resumeFd >= 0) != (o.resumeTokenFd >= 0))
        return "--resume-fd and --resume-token-fd go together";
    if (o.resumeFd >= 0) {
        for (int other : {o.fd, o.proxyFd, o.execCheckFd, o.resumeTokenFd})
            if (other == o.resumeFd)
                return "--resume-fd " + std::to_string(o.resumeFd) + " is also given for another descriptor";
        for (int other : {o.fd, o.proxyFd, o.execCheckFd})
            if (other == o.resumeTokenFd)
                return "--resume-token-fd " + std::to_string(o.resumeTokenFd) + " is also given for another descriptor";
    }
    return {};
}

// Children get fds 0-2 via dup2(); if any of them were closed here, a pipe could land on 0-2
// and be clobbered. Also keeps stray writes to stdout/stderr harmless.
void ensureStdFds()
{
    for (int fd = 0; fd <= 2; ++fd) {
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            const int n = open("/dev/null", O_RDWR);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
    }
}

// Whatever else we inherited (e.g. bwrap's internal fds) must not leak into commands.
void cloexecInheritedFds(int keep)
{
    if (keep > 3)
        syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), CLOSE_RANGE_CLOEXEC);
    syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, CLOSE_RANGE_CLOEXEC);
}

std::string errnoText(const char *what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

// The resume socket: listening, AF_UNIX, SOCK_STREAM. Returns an error message, or an empty string.
std::string checkResumeSocket(int fd)
{
    int domain = 0, type = 0, listening = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return errnoText("--resume-fd is not a socket");
    len = sizeof(int);
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
    len = sizeof(int);
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
    if (domain != AF_UNIX || type != SOCK_STREAM || !listening)
        return "--resume-fd is not a listening AF_UNIX SOCK_STREAM socket";
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        return errnoText("cannot configure --resume-fd");
    return {};
}

// The token a resuming daemon must present: exactly kResumeTokenSize bytes. The descriptor is
// closed either way. Returns an error message, or an empty string.
std::string readResumeToken(int fd, std::string &token)
{
    char buf[airlock::wire::kResumeTokenSize + 1];
    ssize_t n;
    do {
        n = pread(fd, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    const int err = errno;
    close(fd);
    if (n < 0)
        return "cannot read --resume-token-fd: " + std::string(std::strerror(err));
    if (n != static_cast<ssize_t>(airlock::wire::kResumeTokenSize))
        return "--resume-token-fd does not hold exactly " + std::to_string(airlock::wire::kResumeTokenSize) + " bytes";
    token.assign(buf, static_cast<size_t>(n));
    return {};
}

// gVisor (--resume-socket): the token comes first on the channel, raw, exactly kResumeTokenSize
// bytes and nothing of a frame before the daemon has sent them all. Returns an error message, or an
// empty string.
std::string readTokenFromChannel(int sock, std::string &token)
{
    constexpr int kWaitMs = 10000;
    token.resize(airlock::wire::kResumeTokenSize);
    size_t got = 0;
    while (got < token.size()) {
        pollfd p{sock, POLLIN, 0};
        const int ready = poll(&p, 1, kWaitMs);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return "no resume token on the channel within " + std::to_string(kWaitMs / 1000) + " s";
        const ssize_t n = read(sock, token.data() + got, token.size() - got);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return "the channel closed before the resume token";
        got += static_cast<size_t>(n);
    }
    return {};
}

// Where airlock-tool reaches the guest: a socket every process of the sandbox may connect to.
// Created before Landlock (which would forbid making it).
int listenToolSocket(const std::string &path)
{
    const std::string dir = path.substr(0, path.rfind('/'));
    if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        return -1;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.c_str(), path.size());
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || chmod(path.c_str(), 0666) != 0
        || listen(fd, 64) != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

// The proxy port inside the sandbox's own network namespace: on loopback only.
int listenLoopback(uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0 || listen(fd, 128) != 0) {
        const int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

// The sandbox's seccomp program (what bwrap's --seccomp takes: struct sock_filter, native byte
// order), applied to the guest and so to everything it starts. Returns an error message, or an
// empty string. Needs PR_SET_NO_NEW_PRIVS.
std::string applySeccompFile(const std::string &path)
{
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errnoText(("cannot open --seccomp-file " + path).c_str());
    std::vector<sock_filter> program(4096);
    const ssize_t n = read(fd, program.data(), program.size() * sizeof(sock_filter));
    close(fd);
    if (n <= 0 || n % static_cast<ssize_t>(sizeof(sock_filter)) != 0
        || n == static_cast<ssize_t>(program.size() * sizeof(sock_filter)))
        return "--seccomp-file " + path + " does not hold a seccomp program";
    sock_fprog prog{static_cast<unsigned short>(n / static_cast<ssize_t>(sizeof(sock_filter))), program.data()};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return errnoText("cannot apply the seccomp program");
    return {};
}

} // namespace

int main(int argc, char **argv)
{
    // One binary, two programs: inside a sandbox it is also airlock-tool (a symlink).
    const char *base = std::strrchr(argv[0], '/');
    if (std::strcmp(base ? base + 1 : argv[0], "airlock-tool") == 0)
        return toolClientMain(argc, argv);
    ensureStdFds();

    Options opt;
    const std::string argError = parseArgs(argc, argv, opt);
    g_verbose = opt.verbose;
    if (opt.fd >= 0 && opt.fd <= 2) {
        std::fprintf(stderr, "airlock-guest: --fd must not be 0, 1 or 2\n");
        return 2;
    }
    if (opt.fd >= 0 && fcntl(opt.fd, F_GETFD) < 0) {
        std::fprintf(stderr, "airlock-guest: --fd %d is not an open file descriptor\n", opt.fd);
        return 2;
    }
    if (!argError.empty()) {
        std::fprintf(stderr,
            "airlock-guest: %s\nusage: airlock-guest --fd N [--rw PATH]... [--nproc N] [--proxy-fd N --proxy-port P] "
            "[--resume-fd N --resume-token-fd N] [--verbose]\n"
            "       airlock-guest --gvisor --seccomp-file PATH [--preload PATH] [--rw PATH]... [--nproc N]\n"
            "                     [--egress-socket PATH --proxy-port P] [--resume-socket PATH] [--verbose]\n"
            "                     (channel: stdin; with --resume-socket the token comes first on it)\n",
            argError.c_str());
        if (opt.fd >= 0)
            fatalExit(opt.fd, "invalid command line: " + argError, 2);
        return 2;
    }
    // Under gVisor the channel is stdin: moved above the standard descriptors, /dev/null in its place.
    if (opt.gvisor) {
        opt.fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (opt.fd < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0) {
            std::fprintf(stderr, "airlock-guest: cannot take the channel from stdin: %s\n", std::strerror(errno));
            return 1;
        }
        close(null);
    }
    const int sock = opt.fd;

    const int fl = fcntl(sock, F_GETFL);
    if (fl < 0 || fcntl(sock, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(sock, F_SETFD, FD_CLOEXEC) != 0)
        fatalExit(sock, errnoText("cannot configure the daemon socket"), 1);
    cloexecInheritedFds(sock);
    if (opt.execCheckFd >= 0 && (opt.execCheckFd == sock || fcntl(opt.execCheckFd, F_SETFD, FD_CLOEXEC) != 0))
        fatalExit(sock, errnoText("--exec-fd is not an open file descriptor of its own"), 1);
    int proxyListen = -1;
    if (opt.proxyFd >= 0 && fcntl(opt.proxyFd, F_SETFD, FD_CLOEXEC) != 0)
        fatalExit(sock, errnoText("--proxy-fd is not an open file descriptor"), 1);
    if (opt.proxyPort > 0) {
        proxyListen = listenLoopback(static_cast<uint16_t>(opt.proxyPort));
        if (proxyListen < 0)
            fatalExit(sock,
                errnoText(
                    ("cannot listen on 127.0.0.1:" + std::to_string(opt.proxyPort) + " for the egress proxy").c_str()),
                1);
    }
    std::string resumeToken;
    if (opt.resumeFd >= 0) {
        std::string error = readResumeToken(opt.resumeTokenFd, resumeToken);
        if (error.empty())
            error = checkResumeSocket(opt.resumeFd);
        if (!error.empty())
            fatalExit(sock, error, 1);
    }
    if (!opt.resumeSocket.empty())
        if (const std::string error = readTokenFromChannel(sock, resumeToken); !error.empty())
            fatalExit(sock, error, 1);

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fatalExit(sock, errnoText("prctl(PR_SET_NO_NEW_PRIVS) failed"), 1);
    // The guest shares its uid with every command it runs; not dumpable, its descriptors (the
    // daemon socket above all) cannot be taken through /proc/1/fd or pidfd_getfd, nor its memory
    // read. Children are dumpable again after exec, as usual. (gVisor holds back the memory but
    // not every descriptor: see below.)
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        fatalExit(sock, errnoText("prctl(PR_SET_DUMPABLE) failed"), 1);
    const rlimit noCore{0, 0};
    if (setrlimit(RLIMIT_CORE, &noCore) != 0)
        fatalExit(sock, errnoText("setrlimit(RLIMIT_CORE) failed"), 1);
    if (opt.nproc > 0) {
        const rlimit nproc{static_cast<rlim_t>(opt.nproc), static_cast<rlim_t>(opt.nproc)};
        if (setrlimit(RLIMIT_NPROC, &nproc) != 0)
            fatalExit(sock, errnoText("setrlimit(RLIMIT_NPROC) failed"), 1);
    }
    // PID 1 already adopts orphans; this makes a guest run outside a PID namespace (tests)
    // behave the same.
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    // Writes to a vanished reader must be EPIPE errors, not our death.
    signal(SIGPIPE, SIG_IGN);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &chld, nullptr) != 0)
        fatalExit(sock, errnoText("sigprocmask failed"), 1);
    const int sigchldFd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigchldFd < 0)
        fatalExit(sock, errnoText("signalfd failed"), 1);

    int toolListen = -1;
    if (!opt.toolSocket.empty()) {
        toolListen = listenToolSocket(opt.toolSocket);
        if (toolListen < 0)
            fatalExit(sock, errnoText(("cannot listen on " + opt.toolSocket + " for airlock-tool").c_str()), 1);
    }
    if (!opt.seccompFile.empty())
        if (const std::string error = applySeccompFile(opt.seccompFile); !error.empty())
            fatalExit(sock, error, 1);
    // gVisor has no Landlock (ENOSYS): its mounts are the file boundary there, and the daemon says so.
    const LandlockResult ll = opt.gvisor ? LandlockResult{} : applyLandlock(opt.rwPaths);
    if (!ll.error.empty())
        fatalExit(sock, ll.error, 1);

    // Under gVisor a command can open the guest's descriptors through /proc/1/fd (gVisor does not
    // hold them back from a process that is not dumpable): its stdout and stderr, the daemon's
    // pipe, would let it write into the daemon's log. Quiet, the guest has nothing to say there;
    // --verbose (airlockd --verbose) keeps them, for debugging, and that opening with them.
    if (opt.gvisor && !opt.verbose) {
        const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
            fatalExit(sock, errnoText("cannot put /dev/null in place of stdout and stderr"), 1);
        close(null);
    }

    GuestSetup setup;
    setup.sock = sock;
    setup.sigchldFd = sigchldFd;
    setup.landlockAbi = ll.abi;
    setup.proxyListenFd = proxyListen;
    setup.proxyFd = opt.proxyFd;
    setup.egressSocket = opt.egressSocket;
    setup.toolListenFd = toolListen;
    setup.execCheckFd = opt.execCheckFd;
    setup.resumeFd = opt.resumeFd;
    setup.resumeToken = std::move(resumeToken);
    setup.resumeSocket = opt.resumeSocket;
    setup.preload = opt.preload;
    setup.vforkMain = opt.gvisor;
    Guest guest(setup);
    guest.run();
}
