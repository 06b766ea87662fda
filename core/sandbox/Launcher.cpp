// SPDX-License-Identifier: Apache-2.0
#include "sandbox/Launcher.h"

#include <QMetaObject>
#include <QObject>

#include <algorithm>
#include <pthread.h>

namespace airlock {

Launcher::Launcher(int threads)
{
    for (int i = 0; i < std::max(1, threads); ++i) {
        m_threads.emplace_back([this] { run(); });
        ::pthread_setname_np(m_threads.back().native_handle(), "airlockd-launch");
    }
}

Launcher::~Launcher()
{
    stop();
}

int Launcher::defaultThreads()
{
    return std::clamp(int(std::thread::hardware_concurrency()), 2, 4);
}

void Launcher::launch(const IsolationRuntime &runtime, LaunchRequest request, QObject *context, Done done)
{
    std::lock_guard lock(m_mutex);
    m_context = context;
    ++m_pending;
    if (m_stopping) {
        m_finished.emplace_back(std::move(done),
            makeError(
                ErrorCode::SandboxNotRunning, QStringLiteral("airlockd is stopping; the sandbox was not started")));
        QMetaObject::invokeMethod(
            context, [this] { deliverFinished(); }, Qt::QueuedConnection);
        return;
    }
    m_queue.push_back({&runtime, std::move(request), std::move(done)});
    m_wake.notify_one();
}

void Launcher::stop()
{
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            return;
        m_stopping = true;
        for (Job &job : m_queue)
            m_finished.emplace_back(std::move(job.done),
                makeError(
                    ErrorCode::SandboxNotRunning, QStringLiteral("airlockd is stopping; the sandbox was not started")));
        m_queue.clear();
    }
    m_wake.notify_all();
    for (std::thread &t : m_threads)
        t.join();
    m_threads.clear();
}

void Launcher::deliverFinished()
{
    std::vector<std::pair<Done, Result<LaunchedSandbox>>> finished;
    {
        std::lock_guard lock(m_mutex);
        finished.swap(m_finished);
        m_pending -= int(finished.size());
    }
    for (auto &[done, result] : finished)
        done(std::move(result));
}

int Launcher::pending() const
{
    std::lock_guard lock(m_mutex);
    return m_pending;
}

void Launcher::run()
{
    for (;;) {
        Job job;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            if (m_queue.empty())
                return; // stopping
            job = std::move(m_queue.front());
            m_queue.pop_front();
        }
        Result<LaunchedSandbox> launched = job.runtime->launch(job.request);
        QObject *context = nullptr;
        {
            std::lock_guard lock(m_mutex);
            m_finished.emplace_back(std::move(job.done), std::move(launched));
            context = m_context;
        }
        // Announced, not handed over: whoever drains first (the loop, or a stopping daemon) delivers.
        if (context)
            QMetaObject::invokeMethod(
                context, [this] { deliverFinished(); }, Qt::QueuedConnection);
    }
}

} // namespace airlock
