// SPDX-License-Identifier: Apache-2.0
#include "sandbox/Launcher.h"

#include <QMetaObject>
#include <QObject>

#include <algorithm>
#include <pthread.h>

namespace airlock {

namespace {
Error stopping()
{
    return makeError(ErrorCode::SandboxNotRunning, QStringLiteral("airlockd is stopping; the sandbox was not started"));
}
} // namespace

Launcher::Launcher(QObject *context, int threads)
    : m_context(context)
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

void Launcher::launch(const IsolationRuntime &runtime, LaunchRequest request, Done done)
{
    {
        std::lock_guard lock(m_mutex);
        if (!m_stopping) {
            m_queue.push_back({&runtime, std::move(request), std::move(done)});
            m_wake.notify_one();
            return;
        }
        m_finished.emplace_back(std::move(done), stopping());
    }
    announce();
}

void Launcher::announce()
{
    QMetaObject::invokeMethod(
        m_context, [this] { deliverFinished(); }, Qt::QueuedConnection);
}

void Launcher::stop()
{
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            return;
        m_stopping = true;
        for (Job &job : m_queue)
            m_finished.emplace_back(std::move(job.done), stopping());
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
    }
    for (auto &[done, result] : finished)
        done(std::move(result));
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
        {
            std::lock_guard lock(m_mutex);
            m_finished.emplace_back(std::move(job.done), std::move(launched));
        }
        announce();
    }
}

} // namespace airlock
