// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/FileChange.h"
#include "review/ApplyChanges.h"
#include "util/Result.h"

#include <QHash>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>

namespace airlock {
class DaemonApi;
}

namespace airlock::review {

// A person's review of what one sandbox changed in the folders it sees copy-on-write (the CLI's
// agent changes|diff|apply|discard and the console's review window): the changes as the daemon
// listed them, the diffs (what each showed is remembered, so that an apply writes only that), the
// choice of paths, and an apply that refuses everything when a path changed here since (unless
// told to overwrite). Calls the daemon and waits for each answer.
class SandboxReview {
public:
    static Result<SandboxReview> fetch(const DaemonApi &api, const QString &sandbox);

    const cow::SandboxChanges &changes() const { return m_changes; }
    const QString &sandbox() const { return m_sandbox; } // as the person named it
    int count() const;

    // The paths a person names, by mount index, relative to each mount's top ("." for all of it):
    // absolute on this machine or in the sandbox, or relative to the first mount (the project).
    using Chosen = QHash<int, QStringList>;
    Result<Chosen> place(const QStringList &paths) const;
    // The changes of one mount that `chosen` names (empty: all of every mount).
    Result<QList<cow::Change>> chosenIn(const cow::MountChanges &mount, const Chosen &chosen) const;

    // The person sees the whole list (agent diff of everything, the console's list): what it holds
    // is what an apply may write, remembered once saved. What a diff showed stays remembered for
    // the changes of the same shape.
    void look();
    // One change as git shows it (ProjectReview's diffOf), remembered as reviewed once saved.
    Result<QByteArray> diff(int mount, const cow::Change &change);
    Status saveReviewed();

    struct Outcome {
        QStringList applied; // host paths, in the order they were
        QStringList skipped; // "PATH: why"
        QStringList conflicts; // "HOST PATH: why": nothing was applied (unless overwriting)
        QStringList unseen; // host paths not as the last look listed them: nothing was applied
        int left = 0; // changes not applied
        QString warning; // applied, but something to say
    };
    // Applies what `chosen` names (empty: everything), a path named exactly also when a diff
    // could not show it. Conflicts refuse all of it unless `overwrite`.
    Result<Outcome> apply(const Chosen &chosen, bool overwrite);

    // Deletes the sandbox, and with it the changes not applied.
    Status discard();

private:
    SandboxReview(const DaemonApi &api, QString sandbox, cow::SandboxChanges changes);
    ReviewState &state(int mount);

    const DaemonApi *m_api;
    QString m_sandbox;
    cow::SandboxChanges m_changes;
    QHash<int, ReviewState> m_states; // loaded when first needed
};

} // namespace airlock::review
