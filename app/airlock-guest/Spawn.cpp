// SPDX-License-Identifier: Apache-2.0
#include "Spawn.h"

#include "ExecCheck.h"
#include "FdPassing.h"

#include "sandbox/GuestWire.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <string_view>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

namespace airlock::guest {
namespace {

constexpr const char *kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// Output pipes as large as one output frame, so a single read() can fill a whole frame.
constexpr int kPipeSize = static_cast<int>(wire::kMaxOutputChunk);

enum Stage : int { StageSetup = 1, StageChdir = 2, StageExec = 3, StageExecCheck = 4 };
struct ChildError {
    int stage;
    int err;
};

// Closes on scope exit unless released; keeps the many error paths of spawnProcess() leak-free.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd)
        : m_fd(fd)
    {
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() { reset(); }
    int get() const { return m_fd; }
    int release()
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }
    void reset(int fd = -1)
    {
        if (m_fd >= 0)
            close(m_fd);
        m_fd = fd;
    }

private:
    int m_fd = -1;
};

bool makePipe(Fd &readEnd, Fd &writeEnd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return false;
    readEnd.reset(p[0]);
    writeEnd.reset(p[1]);
    return true;
}

bool setNonBlocking(int fd)
{
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

// Same lookup as execvp(), but over the request's PATH, never the guest's own environment.
std::vector<std::string> execCandidates(const SpawnRequest &req)
{
    const std::string &name = req.argv.front();
    if (name.empty())
        return {};
    if (name.find('/') != std::string::npos)
        return {name};
    std::string_view path = kDefaultPath;
    for (const std::string &e : req.env) {
        if (e.starts_with("PATH=")) {
            path = std::string_view(e).substr(5);
            break;
        }
    }
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t colon = path.find(':', pos);
        std::string_view dir = path.substr(pos, colon == std::string_view::npos ? std::string_view::npos : colon - pos);
        if (dir.empty())
            dir = ".";
        out.push_back(std::string(dir) + "/" + name);
        if (colon == std::string_view::npos)
            break;
        pos = colon + 1;
    }
    return out;
}

void applyLimit(int resource, uint64_t value)
{
    if (value == 0)
        return;
    rlimit cur{};
    if (getrlimit(resource, &cur) != 0)
        return;
    // Only ever tighten: an unprivileged process cannot raise its hard limit anyway.
    rlim_t want = static_cast<rlim_t>(value);
    if (cur.rlim_max != RLIM_INFINITY && want > cur.rlim_max)
        want = cur.rlim_max;
    const rlimit lim{want, want};
    setrlimit(resource, &lim);
}

struct ChildPlan {
    const SpawnRequest *req;
    int stdinFd; // -1: open /dev/null
    int stdoutFd;
    int stderrFd;
    int ttyFd; // slave to become the controlling terminal, or -1
    int errorFd;
    int checkFd; // SpawnJudged: where the exec check's listener goes to the parent, else -1
    std::vector<char *> argv;
    std::vector<char *> envp;
    std::vector<std::string> candidates;
    // The main process is vfork()ed: it shares the shepherd's memory until it execs (or fails),
    // which childMain() allows, as it writes nothing there (no exec check, no allocation).
    bool shareMemory = false;
};

[[noreturn]] void childFail(int errorFd, int stage, int err)
{
    const ChildError e{stage, err};
    [[maybe_unused]] ssize_t n = write(errorFd, &e, sizeof e);
    _exit(127);
}

// Runs in the forked child. The parent is single-threaded, so heap use here is safe.
[[noreturn]] void childMain(const ChildPlan &plan)
{
    // A new session makes pid == pgid, which is what Signal frames target.
    if (setsid() < 0)
        childFail(plan.errorFd, StageSetup, errno);

    // The guest ignores SIGPIPE and blocks SIGCHLD; ignored dispositions and the mask would
    // otherwise survive execve().
    struct sigaction dfl { };
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
        sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);

    if (plan.ttyFd >= 0 && ioctl(plan.ttyFd, TIOCSCTTY, 0) != 0)
        childFail(plan.errorFd, StageSetup, errno);

    int in = plan.stdinFd;
    if (in < 0) {
        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0)
            childFail(plan.errorFd, StageSetup, errno);
    }
    // fds 0-2 are always occupied in the guest, so none of these is a no-op dup2 that would
    // leave O_CLOEXEC set on the target.
    if (dup2(in, 0) < 0 || dup2(plan.stdoutFd, 1) < 0 || dup2(plan.stderrFd, 2) < 0)
        childFail(plan.errorFd, StageSetup, errno);

    applyLimit(RLIMIT_CPU, plan.req->cpuSeconds);
    applyLimit(RLIMIT_FSIZE, plan.req->fileSizeBytes);
    applyLimit(RLIMIT_NOFILE, plan.req->openFiles);

    if (!plan.req->cwd.empty() && chdir(plan.req->cwd.c_str()) != 0)
        childFail(plan.errorFd, StageChdir, errno);

    if (plan.checkFd >= 0) {
        const int listener = installExecCheck();
        const char tag = 'L';
        if (listener < 0 || !sendFd(plan.checkFd, &tag, 1, listener, 0))
            childFail(plan.errorFd, StageExecCheck, errno);
        close(listener);
        close(plan.checkFd);
    }

    // execvp() semantics: remember EACCES, keep searching on "not here" errors, stop otherwise.
    int err = ENOENT;
    bool sawEacces = false;
    for (const std::string &candidate : plan.candidates) {
        // Under the exec check every execve is a round trip to the daemon: PATH entries that do
        // not have the program are skipped here rather than asked about.
        if (plan.checkFd >= 0 && access(candidate.c_str(), F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
            err = errno;
            continue;
        }
        execve(candidate.c_str(), plan.argv.data(), plan.envp.data());
        err = errno;
        if (err == EACCES)
            sawEacces = true;
        else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV && err != ETIMEDOUT)
            break;
    }
    if (sawEacces && (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT))
        err = EACCES;
    childFail(plan.errorFd, StageExec, err);
}

bool writeAll(int fd, const void *data, size_t size)
{
    ssize_t n;
    do {
        n = write(fd, data, size);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(size);
}

// Runs in the forked shepherd (see SpawnedProcess): forks the main process, says which pid it has
// (or -errno), then reaps until nothing is left below it. Single-threaded parent, as above.
[[noreturn]] void shepherdMain(const ChildPlan &plan, int exitFd)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    prctl(PR_SET_NAME, "exec-shepherd", 0, 0, 0); // what ps shows in the sandbox
    const pid_t main = plan.shareMemory ? vfork() : fork();
    if (main == 0)
        childMain(plan);
    const int32_t started = main > 0 ? main : -errno;
    // Nothing of the guest's stays open here: a pipe end of another execution held by a shepherd
    // would keep that execution's pipe from ever reaching EOF.
    syscall(SYS_close_range, 3u, static_cast<unsigned>(exitFd - 1), 0);
    syscall(SYS_close_range, static_cast<unsigned>(exitFd + 1), ~0u, 0);
    if (!writeAll(exitFd, &started, sizeof started) || main < 0)
        _exit(0);
    for (;;) {
        MainExit ended;
        const pid_t pid = wait4(-1, &ended.status, 0, &ended.usage);
        if (pid == main)
            writeAll(exitFd, &ended, sizeof ended); // below PIPE_BUF: whole or not at all
        else if (pid < 0 && errno == ECHILD)
            _exit(0);
    }
}

SpawnResult failure(int err, std::string message)
{
    SpawnResult r;
    r.err = err;
    r.message = std::move(message);
    return r;
}

// For system-call failures in the parent: captures errno before building the message.
SpawnResult errnoFailure(const std::string &prefix, const char *what = "")
{
    const int err = errno;
    return failure(err, prefix + what + std::strerror(err));
}

} // namespace

bool readMainExit(int exitFd, MainExit &exit, bool &gone)
{
    ssize_t n;
    do {
        n = read(exitFd, &exit, sizeof exit);
    } while (n < 0 && errno == EINTR);
    gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    return n == static_cast<ssize_t>(sizeof exit);
}

SpawnResult spawnProcess(const SpawnRequest &req, int execCheckFd, bool vforkMain)
{
    const bool tty = req.flags & wire::SpawnTty;
    const bool wantStdin = req.flags & wire::SpawnStdin;
    const std::string setupError = "cannot set up process for '" + req.argv.front() + "': ";

    Fd inRead, inWrite, outRead, outWrite, errRead, errWrite, master, slave;
    if (tty) {
        master.reset(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
        char name[128];
        if (master.get() < 0 || grantpt(master.get()) != 0 || unlockpt(master.get()) != 0
            || ptsname_r(master.get(), name, sizeof name) != 0)
            return errnoFailure(setupError, "cannot allocate a pseudo-terminal: ");
        // Opened here rather than in the child so the slave is open from before fork() until
        // the child exits: the master then never sees a spurious hangup (EIO) in between.
        slave.reset(open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
        if (slave.get() < 0 || !setNonBlocking(master.get()))
            return errnoFailure(setupError, "cannot open pseudo-terminal: ");
        if (req.rows != 0 && req.cols != 0) {
            winsize ws{};
            ws.ws_row = req.rows;
            ws.ws_col = req.cols;
            ioctl(master.get(), TIOCSWINSZ, &ws);
        }
    } else {
        if (!makePipe(outRead, outWrite) || !makePipe(errRead, errWrite))
            return errnoFailure(setupError);
        // Best effort: a bigger pipe means fewer, fuller Output frames for bulk output.
        fcntl(outRead.get(), F_SETPIPE_SZ, kPipeSize);
        fcntl(errRead.get(), F_SETPIPE_SZ, kPipeSize);
        if (!setNonBlocking(outRead.get()) || !setNonBlocking(errRead.get()))
            return errnoFailure(setupError);
    }
    if (wantStdin && !tty) {
        if (!makePipe(inRead, inWrite) || !setNonBlocking(inWrite.get()))
            return errnoFailure(setupError);
    }
    Fd errorRead, errorWrite;
    if (!makePipe(errorRead, errorWrite))
        return errnoFailure(setupError);
    const bool judged = req.flags & wire::SpawnJudged;
    if (judged && execCheckFd < 0)
        return failure(EPERM, setupError + "the sandbox has no exec check channel");
    Fd checkRead, checkWrite;
    if (judged) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
            return errnoFailure(setupError);
        checkRead.reset(sv[0]);
        checkWrite.reset(sv[1]);
    }

    ChildPlan plan;
    plan.req = &req;
    plan.ttyFd = tty ? slave.get() : -1;
    plan.stdinFd = tty ? (wantStdin ? slave.get() : -1) : inRead.get();
    plan.stdoutFd = tty ? slave.get() : outWrite.get();
    plan.stderrFd = tty ? slave.get() : errWrite.get();
    plan.errorFd = errorWrite.get();
    plan.checkFd = checkWrite.get();
    plan.shareMemory = vforkMain && plan.checkFd < 0;
    for (const std::string &a : req.argv)
        plan.argv.push_back(const_cast<char *>(a.c_str()));
    plan.argv.push_back(nullptr);
    for (const std::string &e : req.env)
        plan.envp.push_back(const_cast<char *>(e.c_str()));
    plan.envp.push_back(nullptr);
    plan.candidates = execCandidates(req);
    Fd exitRead, exitWrite;
    if (!makePipe(exitRead, exitWrite) || !setNonBlocking(exitRead.get()))
        return errnoFailure(setupError);

    SpawnResult result;
    clock_gettime(CLOCK_MONOTONIC, &result.process.start);
    const pid_t shepherd = fork();
    if (shepherd < 0)
        return errnoFailure(setupError, "fork failed: ");
    if (shepherd == 0)
        shepherdMain(plan, exitWrite.get());
    exitWrite.reset();
    int32_t started = 0;
    ssize_t got;
    for (;;) {
        got = read(exitRead.get(), &started, sizeof started);
        if (got >= 0 || (errno != EINTR && errno != EAGAIN))
            break;
        pollfd p{exitRead.get(), POLLIN, 0};
        poll(&p, 1, -1);
    }
    if (got != static_cast<ssize_t>(sizeof started) || started <= 0) {
        kill(shepherd, SIGKILL); // reaped by the normal SIGCHLD path, like a child that failed
        errno = got == static_cast<ssize_t>(sizeof started) ? -started : EIO;
        return errnoFailure(setupError, "fork failed: ");
    }
    const pid_t pid = started;

    // Close the child's ends first so the error pipe reports EOF as soon as exec succeeds.
    errorWrite.reset();
    checkWrite.reset();
    slave.reset();
    inRead.reset();
    outWrite.reset();
    errWrite.reset();

    // The child waits in its first execve until the daemon has the listener and judges it.
    Fd listener;
    if (judged) {
        listener.reset(receiveFd(checkRead.get()));
        if (listener.get() >= 0) {
            unsigned char message[4];
            const uint32_t id = req.execId;
            std::memcpy(message, &id, sizeof id);
            if (!sendFd(execCheckFd, message, sizeof message, listener.get(), 0)) {
                kill(pid, SIGKILL); // nothing runs unjudged: the child never gets past its execve
                return errnoFailure(setupError, "cannot hand the exec check to the daemon: ");
            }
        }
    }

    // Until the child's first execve is judged, the guest waits here with its own copy of the
    // listener. Should the daemon go meanwhile (its exec-check socket hangs up: the exec was read
    // and never answered, or never read), that copy is let go: with no listener left the exec fails
    // (ENOSYS) rather than waiting for an answer that no later daemon could give while the guest,
    // stuck here, cannot be resumed.
    if (judged && listener.get() >= 0) {
        pollfd p[2] = {{errorRead.get(), POLLIN, 0}, {execCheckFd, POLLRDHUP, 0}};
        for (;;) {
            p[0].revents = p[1].revents = 0;
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            if (p[0].revents)
                break;
            if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
                listener.reset();
                break;
            }
        }
    }
    ChildError ce{};
    ssize_t n;
    do {
        n = read(errorRead.get(), &ce, sizeof ce);
    } while (n < 0 && errno == EINTR);
    if (n != 0) {
        if (n != static_cast<ssize_t>(sizeof ce))
            ce = ChildError{StageSetup, n < 0 ? errno : EIO};
        switch (ce.stage) {
        case StageChdir:
            return failure(ce.err, "cannot change directory to '" + req.cwd + "': " + std::strerror(ce.err));
        case StageExec:
            return failure(ce.err, "cannot execute '" + req.argv.front() + "': " + std::strerror(ce.err));
        case StageExecCheck:
            return failure(ce.err, setupError + "cannot install the exec check: " + std::strerror(ce.err));
        default:
            return failure(ce.err, setupError + std::strerror(ce.err));
        }
    }

    result.process.pid = pid;
    result.process.shepherd = shepherd;
    result.process.exitFd = exitRead.release();
    result.process.stdinFd = inWrite.release();
    result.process.stdoutFd = outRead.release();
    result.process.stderrFd = errRead.release();
    result.process.ptyFd = master.release();
    result.process.execCheck = listener.release();
    return result;
}

} // namespace airlock::guest
