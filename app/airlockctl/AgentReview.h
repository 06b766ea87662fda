// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "Command.h"

#include "review/SandboxReview.h"

namespace airlock {
class DaemonApi;
}

namespace airlock::cli {

// What an agent changed in a project it saw copy-on-write, for the person to review: listed,
// shown as a diff, applied (all or some, as the person, refused where the project changed since)
// or discarded with the sandbox.
class AgentReview {
public:
    AgentReview(Context &ctx, const DaemonApi &api)
        : m_ctx(ctx)
        , m_api(api)
    {
    }
    int list(const QString &sandbox);
    int diff(const QString &sandbox, const QStringList &paths);
    int apply(const QString &sandbox, const QStringList &paths, bool overwrite);
    int discard(const QString &sandbox);
    // After an agent's run: what it changed and the commands that review it, on stderr. Removes a
    // sandbox that changed nothing (nothing to review); true if it is kept.
    bool summarize(const QString &sandbox, const QString &title);

private:
    // The sandbox's changes, and the paths named placed in its folders.
    Result<std::pair<review::SandboxReview, review::SandboxReview::Chosen>> open(
        const QString &sandbox, const QStringList &paths) const;

    Context &m_ctx;
    const DaemonApi &m_api;
};

} // namespace airlock::cli
