// SPDX-License-Identifier: Apache-2.0
// How executions end: their shepherds reaped, their main process's status reported, and a kill
// that takes every process of an execution (the shepherd, what is below it, then every stray until
// none is left). The rest of the guest is Guest.cpp.
#include "Guest.h"

#include "Clock.h"
#include "FdPassing.h"
#include "Log.h"
#include "ProcessTree.h"
#include "Spawn.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace airlock::guest {
namespace {
// How long a killed execution's Exited waits for the sweep to find nothing (a process stuck in
// the kernel is not worth a hung execution).
constexpr int64_t kSweepGraceMs = 2000;
} // namespace

void Guest::reapChildren()
{
    signalfd_siginfo si;
    while (read(m_sigchldFd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) { }
    // As PID 1 we are every orphan's parent, so reap everything, not just shepherds.
    for (;;) {
        int status = 0;
        rusage ru{};
        const pid_t pid = wait4(-1, &status, WNOHANG, &ru);
        if (pid <= 0)
            break;
        if (m_shepherds.erase(pid)) {
            shepherdGone(pid, status);
            continue;
        }
        // The main process of an execution whose shepherd is gone came to us.
        for (auto it = m_execs.begin(); it != m_execs.end(); ++it) {
            if (it->second.shepherd < 0 && it->second.pid == pid && !it->second.ended) {
                mainEnded(it, status, ru);
                break;
            }
        }
    }
    if (m_sweeping)
        sweepStrays();
    finishEnded();
    flushSocket();
}

void Guest::shepherdGone(pid_t shepherd, int status)
{
    // It exits 0 once nothing is left below it; killed, what was below it is ours now.
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        logv("shepherd %d was killed; sweeping", shepherd);
        startSweep();
    }
    const auto it
        = std::find_if(m_execs.begin(), m_execs.end(), [&](const auto &e) { return e.second.shepherd == shepherd; });
    if (it == m_execs.end())
        return; // its execution ended before; this was its background
    const uint32_t id = it->first;
    it->second.shepherd = -1;
    // It may have reported before it went (the report read, the pipe is closed either way).
    readMainExit(id);
    const auto again = m_execs.find(id);
    if (again == m_execs.end() || again->second.ended)
        return;
    // The main process is our child now, or it went with the shepherd, which reaped it unreported.
    int mainStatus = 0;
    rusage ru{};
    const pid_t r = wait4(again->second.pid, &mainStatus, WNOHANG, &ru);
    if (r > 0)
        mainEnded(again, mainStatus, ru);
    else if (r < 0)
        mainEnded(again, SIGKILL, rusage{}); // as wait4 reports a death by SIGKILL
    // else it still runs, a stray that the sweep kills; reapChildren() sees it end
}

void Guest::readMainExit(uint32_t execId)
{
    const auto it = m_execs.find(execId);
    if (it == m_execs.end() || it->second.exitFd < 0)
        return;
    Execution &e = it->second;
    MainExit x;
    bool gone = false;
    if (airlock::guest::readMainExit(e.exitFd, x, gone)) {
        close(e.exitFd);
        e.exitFd = -1;
        mainEnded(it, x.status, x.usage);
    } else if (gone) {
        // The shepherd died without a report: shepherdGone() takes over when it is reaped.
        close(e.exitFd);
        e.exitFd = -1;
    }
}

void Guest::mainEnded(std::map<uint32_t, Execution>::iterator it, int status, const rusage &ru)
{
    Execution &e = it->second;
    if (e.killed && m_sweeping) {
        e.ended = true;
        e.endStatus = status;
        e.endUsage = ru;
        return;
    }
    finish(e, status, ru);
    m_execs.erase(it);
}

void Guest::finishEnded()
{
    if (m_sweeping) {
        if (monotonicMs() - m_sweepStartMs < kSweepGraceMs)
            return;
        logv("processes of a killed execution outlived the sweep's grace of %lld ms",
            static_cast<long long>(kSweepGraceMs));
    }
    for (auto it = m_execs.begin(); it != m_execs.end();) {
        if (!it->second.ended) {
            ++it;
            continue;
        }
        finish(it->second, it->second.endStatus, it->second.endUsage);
        it = m_execs.erase(it);
    }
}

void Guest::finish(Execution &e, int status, const rusage &ru)
{
    // Everything the process wrote is in the pipe by now. Take what is there, but do not wait
    // for EOF: background children may hold the pipe open indefinitely.
    drainOutput(e, e.outFd, wire::StreamStdout);
    drainOutput(e, e.errFd, wire::StreamStderr);

    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t durationUs
        = (static_cast<int64_t>(now.tv_sec) - e.start.tv_sec) * 1000000 + (now.tv_nsec - e.start.tv_nsec) / 1000;
    const bool signaled = WIFSIGNALED(status);
    const int32_t code = signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    logv("execution %u (pid %d) %s %d", e.id, e.pid, signaled ? "killed by signal" : "exited with", code);
    std::string exited = wire::Writer(wire::Type::Exited)
                             .u32(e.id)
                             .u8(signaled ? wire::ExitedBySignal : wire::ExitedNormally)
                             .i32(code)
                             .u64(static_cast<uint64_t>(durationUs > 0 ? durationUs : 0))
                             .u64(toUs(ru.ru_utime))
                             .u64(toUs(ru.ru_stime))
                             .u64(static_cast<uint64_t>(ru.ru_maxrss))
                             .u8(e.timedOut ? wire::ExitTimedOut : 0)
                             .take();
    if (connected())
        m_out.pushCopy(exited);
    if (m_retention)
        m_retention->finished(e.id, std::move(exited));

    closeExecFd(e, e.outFd);
    closeExecFd(e, e.errFd);
    closeExecFd(e, e.inFd);
    if (e.ptyFd >= 0)
        close(e.ptyFd);
    e.ptyFd = -1;
    if (e.exitFd >= 0)
        close(e.exitFd);
    e.exitFd = -1;
    // What of it is left runs on under its filter, judged by the daemon connected now; a later one
    // takes over only running executions, so their processes then fail every exec (ENOSYS).
    if (e.execCheck >= 0)
        close(e.execCheck);
    e.execCheck = -1;
}

void Guest::handExecChecks()
{
    // Why the guest may keep a listener at all: it widens nothing. The guest is the one that had the
    // filter installed (it could as well have spawned the command without one) and already holds
    // the daemon's channel, which can run anything; only the daemon answers, the guest never reads
    // the listener. Sandboxed processes cannot take it from the guest: it is O_CLOEXEC, so no command
    // keeps it past its execve (and a shepherd closes every descriptor of the guest's); the guest is
    // not dumpable (main.cpp), so /proc/1/fd and pidfd_getfd would need CAP_SYS_PTRACE in the
    // sandbox's user namespace, which bwrap's --cap-drop ALL and no_new_privs leave nobody; and the
    // sandbox's seccomp filter refuses ptrace, process_vm_readv and pidfd_getfd outright. (Landlock's
    // scoping is no part of this: the commands share the guest's Landlock domain.) And it goes only
    // to m_execCheckFd, which adopt() takes from a Resume that proved the instance's token and came
    // from outside the sandbox (peerOutsideSandbox): the daemon that holds the instance.
    if (m_execCheckFd < 0)
        return;
    for (const auto &[id, e] : m_execs) {
        if (e.execCheck < 0)
            continue;
        unsigned char message[4];
        std::memcpy(message, &id, sizeof id);
        // Blocking, as in spawnProcess(): a datagram queue holds only a few, the daemon drains it.
        if (!sendFd(m_execCheckFd, message, sizeof message, e.execCheck, 0))
            logv("exec check of execution %u not handed over: %s; its execs wait for a later daemon", id,
                std::strerror(errno));
    }
}

void Guest::killExecution(Execution &e)
{
    if (!e.killed)
        logv("killing execution %u (pid %d) and everything it started", e.id, e.pid);
    e.killed = true;
    // The shepherd first: what its processes start after this goes to us, not to it. Its
    // children are still listed below it while it dies; those that moved already are strays.
    if (e.shepherd > 0) {
        kill(e.shepherd, SIGKILL);
        killTree(e.shepherd, false);
    } else {
        killTree(e.pid);
    }
    startSweep();
    sweepStrays();
}

int Guest::killOverdue()
{
    const int64_t now = monotonicMs();
    int64_t next = -1;
    for (auto &[id, e] : m_execs) {
        // Killed already (by the daemon: its reason stands), or its command ended on its own.
        if (e.deadlineMs == 0 || e.killed || e.ended)
            continue;
        if (now < e.deadlineMs) {
            next = next < 0 ? e.deadlineMs - now : std::min(next, e.deadlineMs - now);
            continue;
        }
        logv("execution %u is past its deadline%s", id, connected() ? " and the daemon did not kill it" : "");
        e.timedOut = true;
        killExecution(e);
    }
    return next < 0 ? -1 : static_cast<int>(std::min<int64_t>(next, 24 * 3600 * 1000));
}

void Guest::startSweep()
{
    if (!m_sweeping)
        m_sweepStartMs = monotonicMs();
    m_sweeping = true;
}

void Guest::sweepStrays()
{
    size_t found = 0;
    for (const pid_t child : childrenOf(getpid()))
        if (!m_shepherds.count(child))
            found += killTree(child);
    // Zombies count as found (killing one succeeds): they are reaped before the next round looks.
    if (found == 0)
        m_sweeping = false;
}

void Guest::killAll()
{
    for (const auto &[id, e] : m_execs)
        killTree(e.shepherd > 0 ? e.shepherd : e.pid);
    for (const pid_t shepherd : m_shepherds)
        killTree(shepherd);
    // Inside the sandbox's PID namespace this reaches orphans too. Never on a host (tests).
    if (getpid() == 1) {
        kill(-1, SIGKILL);
        return;
    }
    // Not PID 1 (tests): a process whose parent died before the walk above reached it came to us
    // (we are its subreaper), so kill what we hold until nothing is left.
    const int64_t deadline = monotonicMs() + kSweepGraceMs;
    for (std::vector<pid_t> held = childrenOf(getpid()); !held.empty() && monotonicMs() < deadline;
         held = childrenOf(getpid())) {
        for (const pid_t child : held)
            killTree(child);
        while (waitpid(-1, nullptr, WNOHANG) > 0) { }
        usleep(1000);
    }
}

} // namespace airlock::guest
