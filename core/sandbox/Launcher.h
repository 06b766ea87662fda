// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandbox/IsolationRuntime.h"
#include "sandbox/LaunchRequest.h"
#include "util/Result.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

class QObject;

namespace airlock {

// Starts runtimes on threads of its own, so that the daemon's main thread never waits for one. A
// launch mostly waits on the kernel: the child's cgroup writes (on cgroup v1 a write to
// cgroup.procs can wait for an RCU grace period, 10-20 ms), its mount namespace, bwrap's exec.
// Launches on several threads wait together (writers within one grace period share it).
//
// The threads live as long as the Launcher: a runtime that dies with the daemon is told so by
// PR_SET_PDEATHSIG, which fires when the *thread* that started it ends.
class Launcher {
public:
    using Done = std::function<void(Result<LaunchedSandbox>)>;
    // Results reach `context`'s thread (its event loop).
    Launcher(QObject *context, int threads);
    ~Launcher();
    Launcher(const Launcher &) = delete;
    Launcher &operator=(const Launcher &) = delete;

    // runtime.launch(request) on one of the threads; `done` later on the context's thread, or in
    // deliverFinished(). A launch is never lost: its result reaches `done` unless the Launcher
    // itself is destroyed first.
    void launch(const IsolationRuntime &runtime, LaunchRequest request, Done done);
    // Lets the launches under way finish and ends the threads; launches not begun fail ("airlockd
    // is stopping"). Their results wait for deliverFinished(). Idempotent.
    void stop();
    // Runs `done` for every launch that has finished and has not been delivered.
    void deliverFinished();

    // Threads for this host: one per core, at least two (a launch mostly waits), at most four.
    static int defaultThreads();

private:
    struct Job {
        const IsolationRuntime *runtime = nullptr;
        LaunchRequest request;
        Done done;
    };
    void run();
    // Announces finished launches to the context (whoever drains first delivers them).
    void announce();

    QObject *const m_context;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Job> m_queue;
    std::vector<std::pair<Done, Result<LaunchedSandbox>>> m_finished;
    bool m_stopping = false;
    std::vector<std::thread> m_threads;
};

} // namespace airlock
