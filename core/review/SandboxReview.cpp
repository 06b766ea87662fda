// SPDX-License-Identifier: Apache-2.0
#include "review/SandboxReview.h"

#include "client/DaemonApi.h"
#include "review/ProjectReview.h"

namespace airlock::review {

using cow::Change;

SandboxReview::SandboxReview(const DaemonApi &api, QString sandbox, cow::SandboxChanges changes)
    : m_api(&api)
    , m_sandbox(std::move(sandbox))
    , m_changes(std::move(changes))
{
}

Result<SandboxReview> SandboxReview::fetch(const DaemonApi &api, const QString &sandbox)
{
    auto changes = fetchChanges(api, sandbox);
    if (!changes)
        return changes.error();
    return SandboxReview(api, sandbox, std::move(*changes));
}

int SandboxReview::count() const
{
    int n = 0;
    for (const cow::MountChanges &m : m_changes.mounts)
        n += int(m.changes.size());
    return n;
}

ReviewState &SandboxReview::state(int mount)
{
    auto it = m_states.find(mount);
    if (it == m_states.end())
        it = m_states.insert(mount, ReviewState::load(m_changes.sandbox, mount));
    return *it;
}

Result<SandboxReview::Chosen> SandboxReview::place(const QStringList &paths) const
{
    Chosen chosen;
    for (const QString &p : paths) {
        bool placed = false;
        for (const cow::MountChanges &m : m_changes.mounts) {
            for (const QString &top : {m.hostPath, m.sandboxPath})
                if (p == top || p.startsWith(top + QLatin1Char('/'))) {
                    const QString rel = p.mid(top.size() + 1);
                    chosen[m.index].append(rel.isEmpty() ? QStringLiteral(".") : rel);
                    placed = true;
                    break;
                }
            if (placed)
                break;
        }
        if (placed)
            continue;
        if (p.startsWith(QLatin1Char('/')) || m_changes.mounts.isEmpty())
            return makeError(
                ErrorCode::NotFound, QStringLiteral("%1: not in a folder the sandbox sees copy-on-write").arg(p));
        chosen[m_changes.mounts.first().index].append(p);
    }
    return chosen;
}

Result<QList<Change>> SandboxReview::chosenIn(const cow::MountChanges &mount, const Chosen &chosen) const
{
    if (chosen.isEmpty() || chosen.value(mount.index).contains(QStringLiteral(".")))
        return mount.changes;
    if (!chosen.contains(mount.index))
        return QList<Change>{};
    return selectChanges(mount.changes, chosen.value(mount.index));
}

void SandboxReview::look()
{
    for (const cow::MountChanges &m : std::as_const(m_changes.mounts)) {
        ReviewState &s = state(m.index);
        QHash<QString, QString> listed;
        Digests reviewed;
        for (const Change &c : m.changes) {
            listed.insert(c.path, shapeOf(c));
            if (s.listed.value(c.path) == shapeOf(c) && s.reviewed.contains(c.path))
                reviewed.insert(c.path, s.reviewed.value(c.path));
        }
        s.listed = listed;
        s.reviewed = reviewed;
    }
}

Result<QByteArray> SandboxReview::diff(int mount, const Change &change)
{
    const auto m = std::find_if(m_changes.mounts.cbegin(), m_changes.mounts.cend(),
        [&](const cow::MountChanges &mc) { return mc.index == mount; });
    if (m == m_changes.mounts.cend())
        return makeError(ErrorCode::NotFound, QStringLiteral("no copy-on-write mount %1").arg(mount));
    QByteArray shown;
    auto text = diffOf(m->hostPath, change, viewReader(*m_api, m_sandbox, mount), &shown);
    if (text) {
        ReviewState &s = state(mount);
        s.listed.insert(change.path, shapeOf(change));
        if (shown.isEmpty())
            s.reviewed.remove(change.path);
        else
            s.reviewed.insert(change.path, shown);
    }
    return text;
}

Status SandboxReview::saveReviewed()
{
    for (auto it = m_states.begin(); it != m_states.end(); ++it)
        if (Status s = it->save(m_changes.sandbox, it.key()); !s)
            return s;
    return Ok{};
}

Result<SandboxReview::Outcome> SandboxReview::apply(const Chosen &chosen, bool overwrite)
{
    // Every mount's choice and conflicts first: nothing is applied if anything is refused.
    Outcome outcome;
    QList<QList<Change>> lists;
    for (const cow::MountChanges &m : std::as_const(m_changes.mounts)) {
        auto list = chosenIn(m, chosen);
        if (!list)
            return list.error();
        lists.append(*list);
        // Once the person has looked, nothing they were not shown: a change made since (a file
        // added, deleted, made executable) is refused until they look again.
        if (const QHash<QString, QString> &listed = state(m.index).listed; !listed.isEmpty())
            for (const Change &c : std::as_const(*list))
                if (listed.value(c.path) != shapeOf(c))
                    outcome.unseen.append(QStringLiteral("%1/%2 (%3)").arg(m.hostPath, c.path, shapeOf(c)));
        auto found = findConflicts(m.hostPath, *list, m_changes.createdMs, state(m.index).applied);
        if (!found)
            return found.error();
        for (const Conflict &c : std::as_const(*found))
            outcome.conflicts.append(QStringLiteral("%1/%2: %3").arg(m.hostPath, c.path, c.why));
    }
    if (!outcome.unseen.isEmpty() || (!outcome.conflicts.isEmpty() && !overwrite)) {
        outcome.left = count();
        return outcome;
    }
    int done = 0;
    for (qsizetype i = 0; i < m_changes.mounts.size(); ++i) {
        const cow::MountChanges &m = m_changes.mounts[i];
        ReviewState &s = state(m.index);
        const QStringList named = chosen.value(m.index);
        Applied applied;
        auto ran = applyChanges(m.hostPath, lists[i], viewReader(*m_api, m_sandbox, m.index),
            QSet<QString>(named.begin(), named.end()), s.reviewed, &applied);
        // What was applied is remembered even when something after it failed: the files it
        // wrote are not the person's changes.
        for (const QString &p : std::as_const(applied.done))
            s.applied.remove(p);
        s.applied.insert(applied.stamps);
        const Status saved = s.save(m_changes.sandbox, m.index);
        done += int(applied.done.size());
        for (const QString &p : std::as_const(applied.done))
            outcome.applied.append(QString(m.hostPath + QLatin1Char('/') + p));
        if (!ran)
            return Error{ran.error().code,
                QStringLiteral("%1 (%2 applied before it)").arg(ran.error().message).arg(outcome.applied.size())};
        if (!saved)
            outcome.warning = QStringLiteral("applied, but not remembered: %1 (a later apply of the same paths may "
                                             "see them as changed here)")
                                  .arg(saved.error().message);
        outcome.skipped += applied.skipped;
    }
    outcome.left = count() - done;
    return outcome;
}

Status SandboxReview::discard()
{
    auto removed = m_api->deleteSandbox(m_sandbox).wait();
    if (!removed)
        return removed.error();
    ReviewState::drop(m_changes.sandbox);
    return Ok{};
}

} // namespace airlock::review
