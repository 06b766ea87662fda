// SPDX-License-Identifier: Apache-2.0
#include "AgentReview.h"

#include "Table.h"

#include "client/DaemonApi.h"
#include "model/DisplayText.h"
#include "review/ProjectReview.h"
#include "review/SandboxReview.h"

#include <QJsonArray>

#include <unistd.h>

namespace airlock::cli {

namespace {
using cow::Change;
using review::SandboxReview;

QString letter(Change::Status s)
{
    return s == Change::Status::Added  ? QStringLiteral("A")
        : s == Change::Status::Deleted ? QStringLiteral("D")
                                       : QStringLiteral("M");
}
} // namespace

int AgentReview::list(const QString &sandbox)
{
    auto review = SandboxReview::fetch(m_api, sandbox);
    if (!review)
        return Command::fail(m_ctx, review.error());
    if (m_ctx.json) {
        Command::printJson(m_ctx, review->changes().toJson());
        return ExitOk;
    }
    Table table({QStringLiteral("CHANGE"), QStringLiteral("PATH"), QStringLiteral("KIND"), QStringLiteral("SIZE")});
    for (const cow::MountChanges &m : review->changes().mounts)
        for (const Change &c : m.changes)
            table.add({cow::statusName(c.status) + (c.modeOnly ? QStringLiteral(" (mode)") : QString()),
                display::escaped(m.hostPath + QLatin1Char('/') + c.path), cow::kindName(c.kind),
                c.kind == Change::Kind::File ? QString::number(c.size) : QString()});
    table.print(m_ctx.out);
    return ExitOk;
}

Result<std::pair<SandboxReview, SandboxReview::Chosen>> AgentReview::open(
    const QString &sandbox, const QStringList &paths) const
{
    auto review = SandboxReview::fetch(m_api, sandbox);
    if (!review)
        return review.error();
    auto chosen = review->place(paths);
    if (!chosen)
        return chosen.error();
    return std::pair{std::move(*review), std::move(*chosen)};
}

int AgentReview::diff(const QString &sandbox, const QStringList &paths)
{
    auto opened = open(sandbox, paths);
    if (!opened)
        return Command::fail(m_ctx, opened.error());
    auto &[review, chosen] = *opened;
    if (paths.isEmpty())
        review.look(); // everything is shown: what an apply may write is this
    // A terminal gets no control character of the sandbox's; a pipe (git apply) gets the bytes.
    const bool terminal = ::isatty(STDOUT_FILENO);
    m_ctx.out.flush();
    QIODevice *device = m_ctx.out.device();
    for (const cow::MountChanges &m : review.changes().mounts) {
        auto list = review.chosenIn(m, chosen);
        if (!list)
            return Command::fail(m_ctx, list.error());
        for (const Change &c : std::as_const(*list)) {
            auto text = review.diff(m.index, c);
            if (!text)
                return Command::fail(m_ctx, text.error());
            const QByteArray bytes = terminal ? review::forTerminal(*text) : *text;
            if (device)
                device->write(bytes);
            else
                m_ctx.out << QString::fromUtf8(bytes);
        }
    }
    // What each diff showed is remembered: an apply writes it only as it was shown.
    if (Status s = review.saveReviewed(); !s)
        m_ctx.err << "airlockctl: warning: " << s.error().message
                  << " (an apply will not check that what it writes is what this diff showed)" << Qt::endl;
    m_ctx.out.flush();
    return ExitOk;
}

int AgentReview::apply(const QString &sandbox, const QStringList &paths, bool overwrite)
{
    auto opened = open(sandbox, paths);
    if (!opened)
        return Command::fail(m_ctx, opened.error());
    auto outcome = opened->first.apply(opened->second, overwrite);
    if (!outcome)
        return Command::fail(m_ctx, outcome.error());
    if (!outcome->unseen.isEmpty())
        return Command::fail(m_ctx,
            makeError(ErrorCode::Conflict,
                QStringLiteral("nothing applied: the sandbox changed what you reviewed since (agent diff): %1. Look "
                               "again (agent diff) before applying")
                    .arg(display::escaped(outcome->unseen.join(QStringLiteral("; "))))));
    if (!outcome->conflicts.isEmpty() && !overwrite) {
        const qsizetype n = outcome->conflicts.size();
        return Command::fail(m_ctx,
            makeError(ErrorCode::Conflict,
                QStringLiteral("nothing applied: %1 changed on this machine since the sandbox was made, and applying "
                               "would lose that: %2. Name the other paths to apply them, or add --overwrite to apply "
                               "the sandbox's version over these")
                    .arg(n == 1 ? QStringLiteral("a path it changed has")
                                : QStringLiteral("%1 paths it changed have").arg(n),
                        display::escaped(outcome->conflicts.join(QStringLiteral("; "))))));
    }
    if (m_ctx.json) {
        Command::printJson(m_ctx,
            QJsonObject{{QStringLiteral("applied"), QJsonArray::fromStringList(outcome->applied)},
                {QStringLiteral("skipped"), QJsonArray::fromStringList(outcome->skipped)},
                {QStringLiteral("left"), outcome->left}});
        return ExitOk;
    }
    for (const QString &p : std::as_const(outcome->applied))
        m_ctx.out << "applied  " << display::escaped(p) << '\n';
    for (const QString &s : std::as_const(outcome->skipped))
        m_ctx.err << "airlockctl: skipped " << display::escaped(s) << '\n';
    if (!outcome->warning.isEmpty())
        m_ctx.err << "airlockctl: warning: " << outcome->warning << '\n';
    m_ctx.err << "airlockctl: " << outcome->applied.size() << (outcome->applied.size() == 1 ? " change" : " changes")
              << " applied";
    if (outcome->left > 0)
        m_ctx.err << "; " << outcome->left << " left in sandbox " << sandbox << " (agent discard " << sandbox
                  << " drops them)";
    m_ctx.err << Qt::endl;
    m_ctx.out.flush();
    return ExitOk;
}

int AgentReview::discard(const QString &sandbox)
{
    auto review = SandboxReview::fetch(m_api, sandbox);
    if (!review)
        return Command::fail(m_ctx, review.error());
    if (Status s = review->discard(); !s)
        return Command::fail(m_ctx, s.error());
    if (m_ctx.json)
        Command::printJson(m_ctx, QJsonObject{{QStringLiteral("discarded"), review->count()}});
    else
        m_ctx.err << "airlockctl: " << review->count() << " changes discarded with sandbox " << sandbox << Qt::endl;
    return ExitOk;
}

bool AgentReview::summarize(const QString &sandbox, const QString &title)
{
    auto review = SandboxReview::fetch(m_api, sandbox);
    if (!review) {
        m_ctx.err << "airlockctl: cannot list what " << title << " changed: " << review.error().message
                  << " (its sandbox " << sandbox << " is kept)" << Qt::endl;
        return true;
    }
    const int n = review->count();
    if (n == 0) {
        const bool removed = bool(review->discard());
        m_ctx.err << "airlockctl: " << title << " changed nothing in the project"
                  << (removed ? "; its sandbox is removed" : "") << Qt::endl;
        return !removed;
    }
    m_ctx.err << "airlockctl: " << title << " changed " << n << (n == 1 ? " path" : " paths")
              << "; they wait in sandbox " << sandbox << ", not in the project:\n";
    for (const cow::MountChanges &m : review->changes().mounts)
        for (const Change &c : m.changes)
            m_ctx.err << "  " << letter(c.status) << ' ' << display::escaped(m.hostPath + QLatin1Char('/') + c.path)
                      << '\n';
    m_ctx.err << "review: airlockctl agent diff " << sandbox << "\napply:  airlockctl agent apply " << sandbox
              << " [PATH]...\ndrop:   airlockctl agent discard " << sandbox << Qt::endl;
    return true;
}

} // namespace airlock::cli
