// SPDX-License-Identifier: Apache-2.0
#include "AgentReview.h"

#include "Table.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "review/ProjectReview.h"

#include <QJsonArray>

#include <unistd.h>

namespace airlock::cli {

namespace {
using cow::Change;

// The paths a person names, each to its mount and a path relative to its top: absolute on this
// machine or in the sandbox, or relative to the first (the project).
Result<QHash<int, QStringList>> pathsByMount(const cow::SandboxChanges &changes, const QStringList &paths)
{
    QHash<int, QStringList> byMount;
    for (const QString &p : paths) {
        bool placed = false;
        for (const cow::MountChanges &m : changes.mounts) {
            for (const QString &top : {m.hostPath, m.sandboxPath})
                if (p == top || p.startsWith(top + QLatin1Char('/'))) {
                    const QString rel = p.mid(top.size() + 1);
                    byMount[m.index].append(rel.isEmpty() ? QStringLiteral(".") : rel);
                    placed = true;
                    break;
                }
            if (placed)
                break;
        }
        if (placed)
            continue;
        if (p.startsWith(QLatin1Char('/')) || changes.mounts.isEmpty())
            return makeError(
                ErrorCode::NotFound, QStringLiteral("%1: not in a folder the sandbox sees copy-on-write").arg(p));
        byMount[changes.mounts.first().index].append(p);
    }
    return byMount;
}

// The changes of `m` that `paths` name ("." or none: all).
Result<QList<Change>> chosen(const cow::MountChanges &m, const QHash<int, QStringList> &byMount, bool named)
{
    if (!named)
        return m.changes;
    if (!byMount.contains(m.index))
        return QList<Change>{};
    const QStringList paths = byMount.value(m.index);
    if (paths.contains(QStringLiteral(".")))
        return m.changes;
    return review::selectChanges(m.changes, paths);
}

QString letter(Change::Status s)
{
    return s == Change::Status::Added  ? QStringLiteral("A")
        : s == Change::Status::Deleted ? QStringLiteral("D")
                                       : QStringLiteral("M");
}

int count(const cow::SandboxChanges &changes)
{
    int n = 0;
    for (const cow::MountChanges &m : changes.mounts)
        n += int(m.changes.size());
    return n;
}
} // namespace

int AgentReview::list(const QString &sandbox)
{
    auto changes = review::fetchChanges(m_api, sandbox);
    if (!changes)
        return Command::fail(m_ctx, changes.error());
    if (m_ctx.json) {
        Command::printJson(m_ctx, changes->toJson());
        return ExitOk;
    }
    Table table({QStringLiteral("CHANGE"), QStringLiteral("PATH"), QStringLiteral("KIND"), QStringLiteral("SIZE")});
    for (const cow::MountChanges &m : std::as_const(changes->mounts))
        for (const Change &c : m.changes)
            table.add({cow::statusName(c.status) + (c.modeOnly ? QStringLiteral(" (mode)") : QString()),
                display::escaped(m.hostPath + QLatin1Char('/') + c.path), cow::kindName(c.kind),
                c.kind == Change::Kind::File ? QString::number(c.size) : QString()});
    table.print(m_ctx.out);
    return ExitOk;
}

int AgentReview::diff(const QString &sandbox, const QStringList &paths)
{
    auto changes = review::fetchChanges(m_api, sandbox);
    if (!changes)
        return Command::fail(m_ctx, changes.error());
    auto byMount = pathsByMount(*changes, paths);
    if (!byMount)
        return Command::fail(m_ctx, byMount.error());
    const bool terminal = ::isatty(STDOUT_FILENO);
    const auto writeRaw = [&](const QByteArray &bytes) {
        m_ctx.out.flush();
        if (QIODevice *device = m_ctx.out.device())
            device->write(bytes);
        else
            m_ctx.out << QString::fromUtf8(bytes);
    };
    for (const cow::MountChanges &m : std::as_const(changes->mounts)) {
        auto list = chosen(m, *byMount, !paths.isEmpty());
        if (!list)
            return Command::fail(m_ctx, list.error());
        const review::ReadView read = review::viewReader(m_api, sandbox, m.index);
        // What each diff shows is remembered: an apply writes it only as it was shown.
        review::ReviewState state = review::ReviewState::load(changes->sandbox, m.index);
        for (const Change &c : std::as_const(*list)) {
            QByteArray shown;
            auto text = review::diffOf(m.hostPath, c, read, &shown);
            if (!text)
                return Command::fail(m_ctx, text.error());
            if (!shown.isEmpty())
                state.reviewed.insert(c.path, shown);
            // A terminal gets no control character of the sandbox's; a pipe (git apply) the bytes.
            writeRaw(terminal ? review::forTerminal(*text) : *text);
        }
        if (Status s = state.save(changes->sandbox, m.index); !s)
            m_ctx.err << "airlockctl: warning: " << s.error().message
                      << " (an apply will not check that what it writes is what this diff showed)" << Qt::endl;
    }
    m_ctx.out.flush();
    return ExitOk;
}

int AgentReview::apply(const QString &sandbox, const QStringList &paths, bool overwrite)
{
    auto changes = review::fetchChanges(m_api, sandbox);
    if (!changes)
        return Command::fail(m_ctx, changes.error());
    auto byMount = pathsByMount(*changes, paths);
    if (!byMount)
        return Command::fail(m_ctx, byMount.error());
    // Every mount's choice and conflicts first: nothing is applied if anything is refused.
    QList<QList<Change>> lists;
    QStringList conflicts;
    for (const cow::MountChanges &m : std::as_const(changes->mounts)) {
        auto list = chosen(m, *byMount, !paths.isEmpty());
        if (!list)
            return Command::fail(m_ctx, list.error());
        lists.append(*list);
        auto found = review::findConflicts(
            m.hostPath, *list, changes->createdMs, review::ReviewState::load(changes->sandbox, m.index).applied);
        if (!found)
            return Command::fail(m_ctx, found.error());
        for (const review::Conflict &c : std::as_const(*found))
            conflicts.append(QStringLiteral("%1/%2: %3").arg(m.hostPath, c.path, c.why));
    }
    if (!conflicts.isEmpty() && !overwrite)
        return Command::fail(m_ctx,
            makeError(ErrorCode::Conflict,
                QStringLiteral("nothing applied: %1 changed on this machine since the sandbox was made, and applying "
                               "would lose that: %2. Name the other paths to apply them, or add --overwrite to apply "
                               "the sandbox's version over these")
                    .arg(conflicts.size() == 1 ? QStringLiteral("a path it changed has")
                                               : QStringLiteral("%1 paths it changed have").arg(conflicts.size()),
                        conflicts.join(QStringLiteral("; ")))));
    QJsonArray done, skipped;
    for (qsizetype i = 0; i < changes->mounts.size(); ++i) {
        const cow::MountChanges &m = changes->mounts[i];
        QSet<QString> named; // a link out of the folder is applied only when named
        for (const QString &p : byMount->value(m.index))
            named.insert(p);
        review::ReviewState state = review::ReviewState::load(changes->sandbox, m.index);
        review::Applied applied;
        auto ran = review::applyChanges(
            m.hostPath, lists[i], review::viewReader(m_api, sandbox, m.index), named, state.reviewed, &applied);
        // What was applied is remembered even when something after it failed: the files it
        // wrote are not the person's changes.
        for (const QString &p : std::as_const(applied.done))
            state.applied.remove(p);
        state.applied.insert(applied.stamps);
        const Status saved = state.save(changes->sandbox, m.index);
        for (const QString &p : std::as_const(applied.done))
            done.append(QString(m.hostPath + QLatin1Char('/') + p));
        if (!ran)
            return Command::fail(m_ctx,
                Error{ran.error().code,
                    QStringLiteral("%1 (%2 applied before it)").arg(ran.error().message).arg(done.size())});
        if (!saved)
            m_ctx.err << "airlockctl: warning: " << saved.error().message
                      << " (a later apply of the same paths may see them as changed here)" << Qt::endl;
        for (const QString &s : std::as_const(applied.skipped))
            skipped.append(s);
    }
    if (m_ctx.json) {
        Command::printJson(m_ctx, QJsonObject{{QStringLiteral("applied"), done}, {QStringLiteral("skipped"), skipped}});
        return ExitOk;
    }
    for (const QJsonValue &p : std::as_const(done))
        m_ctx.out << "applied  " << display::escaped(p.toString()) << '\n';
    for (const QJsonValue &s : std::as_const(skipped))
        m_ctx.err << "airlockctl: skipped " << display::escaped(s.toString()) << '\n';
    const int left = count(*changes) - int(done.size());
    m_ctx.err << "airlockctl: " << done.size() << (done.size() == 1 ? " change" : " changes") << " applied";
    if (left > 0)
        m_ctx.err << "; " << left << " left in sandbox " << sandbox << " (agent discard " << sandbox << " drops them)";
    m_ctx.err << Qt::endl;
    m_ctx.out.flush();
    return ExitOk;
}

int AgentReview::discard(const QString &sandbox)
{
    auto changes = review::fetchChanges(m_api, sandbox);
    if (!changes)
        return Command::fail(m_ctx, changes.error());
    auto removed = m_api.deleteSandbox(sandbox).wait();
    if (!removed)
        return Command::fail(m_ctx, removed.error());
    review::ReviewState::drop(changes->sandbox);
    if (m_ctx.json)
        Command::printJson(m_ctx, QJsonObject{{QStringLiteral("discarded"), count(*changes)}});
    else
        m_ctx.err << "airlockctl: " << count(*changes) << " changes discarded with sandbox " << sandbox << Qt::endl;
    return ExitOk;
}

bool AgentReview::summarize(const QString &sandbox, const QString &title)
{
    auto changes = review::fetchChanges(m_api, sandbox);
    if (!changes) {
        m_ctx.err << "airlockctl: cannot list what " << title << " changed: " << changes.error().message
                  << " (its sandbox " << sandbox << " is kept)" << Qt::endl;
        return true;
    }
    const int n = count(*changes);
    if (n == 0) {
        const bool removed = bool(m_api.deleteSandbox(sandbox).wait());
        m_ctx.err << "airlockctl: " << title << " changed nothing in the project"
                  << (removed ? "; its sandbox is removed" : "") << Qt::endl;
        return !removed;
    }
    m_ctx.err << "airlockctl: " << title << " changed " << n << (n == 1 ? " path" : " paths")
              << "; they wait in sandbox " << sandbox << ", not in the project:\n";
    for (const cow::MountChanges &m : std::as_const(changes->mounts))
        for (const Change &c : m.changes)
            m_ctx.err << "  " << letter(c.status) << ' ' << display::escaped(m.hostPath + QLatin1Char('/') + c.path)
                      << '\n';
    m_ctx.err << "review: airlockctl agent diff " << sandbox << "\napply:  airlockctl agent apply " << sandbox
              << " [PATH]...\ndrop:   airlockctl agent discard " << sandbox << Qt::endl;
    return true;
}

} // namespace airlock::cli
