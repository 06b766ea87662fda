// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "policy/ProgramForms.h"
#include "util/Result.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QStringList>

namespace airlock::policy {

enum class Decision { Allow, Ask, Deny };
QString decisionName(Decision d);
std::optional<Decision> decisionFromName(const QString &name);
// deny > ask > allow
Decision strictest(Decision a, Decision b);

// One rule: a decision for every argv that starts with these words. Each word is a glob (`*` any
// run of characters, `/` included; `?` one; `[…]` a class); a first word without `/` also matches
// the program's basename, so a rule about `rm` covers `/bin/rm`.
struct CommandRule {
    Decision decision = Decision::Ask;
    QStringList words;
    QString layer; // where it came from (builtin, user, preset:NAME, sandbox)
    bool exact = false; // the whole argv, word for word, no globs (what "always" approvals add)
    QString text() const { return words.join(QLatin1Char(' ')); }
};

// What the rules say about one command, and why.
struct CommandVerdict {
    Decision decision = Decision::Ask;
    QString rule; // the deciding rule's words, or "default"
    QString layer; // the deciding rule's layer
    QString reason; // for a person: which part decided and why
    QJsonObject toJson() const;
};

// Ordered command rules with a default (ask). Every simple command that an argv would run is judged
// on its own: the segments of a `sh -c` string (; && || | $(…) backticks, redirects as `>` FILE),
// the command behind env, xargs, find -exec, nice, nohup, timeout and the like. Programs that run
// code given on their command line (python -c, node -e, perl -e, git -c, awk) are not covered by a
// rule for the program alone: an allow rule must name the code option. The strictest decision of
// all matching rules and segments wins (deny > ask > allow), so rule order never turns a deny into
// an allow; order only picks which rule is reported. What cannot be parsed asks.
class CommandRules {
public:
    CommandRules() = default;
    // `everywhere`: patterns (words, exact) of programs that are judged wherever they run.
    CommandRules(QList<CommandRule> rules, Decision fallback = Decision::Ask, QList<CommandRule> everywhere = {});

    // `env`: names of the environment variables the request sets (beyond the sandbox defaults).
    CommandVerdict evaluate(const QStringList &argv, const QStringList &env = {}) const;
    // A program that a process in a sandbox starts under a command already decided (the exec
    // check, on exactly the argv the kernel was given). A deny rule applies at any depth; a program
    // matching an `everywhere` pattern is judged as a command of its own (allow rules and "always"
    // rules apply, the default asks); any other is covered by the decision of the command that
    // started it (rule "covered").
    CommandVerdict evaluateNested(const QStringList &argv) const;
    const QList<CommandRule> &rules() const { return m_rules; }
    const QList<CommandRule> &everywhere() const { return m_everywhere; }
    // The programs a decision on `argv` names word for word: the argv and the commands of its
    // `sh -c` script whose words are all known before it runs. A person who approved the argv saw them.
    static QList<QStringList> namedPrograms(const QStringList &argv);

private:
    CommandVerdict evaluateCommand(
        const QStringList &argv, int depth, const QStringList &env, const QList<qsizetype> &runtime) const;
    CommandVerdict match(const QStringList &argv, const Coverage &coverage, const QList<qsizetype> &runtime) const;
    // All matching rules of `rules`: the strictest decides (`fallback` when none matches).
    static CommandVerdict matchIn(const QList<CommandRule> &rules, Decision fallback, const QStringList &argv,
        const Coverage &coverage, const QList<qsizetype> &runtime);

    QList<CommandRule> m_rules;
    Decision m_default = Decision::Ask;
    QList<CommandRule> m_everywhere;
    QList<CommandRule> m_denyRules; // of m_rules
};

// Glob matching of one word (exposed for tests).
bool globMatch(QStringView pattern, QStringView text);

} // namespace airlock::policy
