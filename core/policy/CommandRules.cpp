// SPDX-License-Identifier: Apache-2.0
#include "policy/CommandRules.h"

#include "policy/ProgramForms.h"
#include "policy/ShellParser.h"

#include <QFileInfo>
#include <QRegularExpression>

#include <limits>
#include <optional>

namespace airlock::policy {

namespace {
constexpr int kMaxDepth = 6; // wrappers within wrappers

QList<qsizetype> shifted(const QList<qsizetype> &runtime, qsizetype by)
{
    QList<qsizetype> out;
    for (qsizetype i : runtime)
        if (i >= by)
            out.append(i - by);
    return out;
}

// Options a shell may be given without changing where its commands come from: -c, -e, -u, -x,
// -v, -f and -o with one of these names. Anything else (-l, -i, -s, --login, --rcfile, -O …)
// can make it read startup files or commands from elsewhere, so its -c string is not all it runs.
std::optional<QString> unplainShellOption(const QStringList &argv, qsizetype from)
{
    static const QStringList names = {QStringLiteral("errexit"), QStringLiteral("nounset"), QStringLiteral("xtrace"),
        QStringLiteral("pipefail"), QStringLiteral("noglob"), QStringLiteral("verbose")};
    for (qsizetype i = from; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (a == QLatin1String("--") || a == QLatin1String("-")
            || !(a.startsWith(QLatin1Char('-')) || a.startsWith(QLatin1Char('+'))))
            return std::nullopt;
        if (a.startsWith(QLatin1String("--")))
            return a;
        if (a == QLatin1String("-o") || a == QLatin1String("+o")) {
            if (i + 1 >= argv.size() || !names.contains(argv.at(i + 1)))
                return a + QLatin1Char(' ') + (i + 1 < argv.size() ? argv.at(i + 1) : QString());
            ++i;
            continue;
        }
        for (const QChar c : QStringView(a).sliced(1))
            if (!QStringLiteral("ceuxvf").contains(c))
                return a;
        if (a.contains(QLatin1Char('c')))
            return std::nullopt; // the script follows
    }
    return std::nullopt;
}

bool isShell(const QString &name)
{
    static const QStringList shells
        = {QStringLiteral("sh"), QStringLiteral("bash"), QStringLiteral("dash"), QStringLiteral("zsh"),
            QStringLiteral("ksh"), QStringLiteral("ash"), QStringLiteral("mksh"), QStringLiteral("busybox")};
    return shells.contains(name);
}

// Programs that only run the command after them (after their own options).
struct Transparent {
    const char *name;
    QStringList optionsWithValue; // options that take the next word
    bool firstArgumentIsValue; // timeout DURATION, chrt PRIO, taskset MASK
};
const QList<Transparent> &transparentWrappers()
{
    static const QList<Transparent> wrappers = {
        {"env", {QStringLiteral("-u"), QStringLiteral("--unset"), QStringLiteral("-C"), QStringLiteral("--chdir")},
            false},
        {"nice", {QStringLiteral("-n"), QStringLiteral("--adjustment")}, false},
        {"nohup", {}, false},
        {"setsid", {}, false},
        {"stdbuf", {QStringLiteral("-i"), QStringLiteral("-o"), QStringLiteral("-e")}, false},
        {"timeout",
            {QStringLiteral("-s"), QStringLiteral("--signal"), QStringLiteral("-k"), QStringLiteral("--kill-after")},
            true},
        {"ionice", {QStringLiteral("-c"), QStringLiteral("-n"), QStringLiteral("-p")}, false},
        {"chrt", {}, true},
        {"taskset", {}, true},
        {"command", {}, false},
        {"exec", {QStringLiteral("-a")}, false},
        {"builtin", {}, false},
        {"time", {QStringLiteral("-f"), QStringLiteral("--format"), QStringLiteral("-o"), QStringLiteral("--output")},
            false},
        {"xargs",
            {QStringLiteral("-a"), QStringLiteral("--arg-file"), QStringLiteral("-d"), QStringLiteral("--delimiter"),
                QStringLiteral("-E"), QStringLiteral("-I"), QStringLiteral("-L"), QStringLiteral("-n"),
                QStringLiteral("--max-args"), QStringLiteral("-P"), QStringLiteral("--max-procs"), QStringLiteral("-s"),
                QStringLiteral("--max-chars")},
            false},
    };
    return wrappers;
}

CommandVerdict verdict(Decision d, const QString &rule, const QString &layer, const QString &reason)
{
    return {d, rule, layer, reason};
}

// Variables that only change presentation. Any other one can change what a program runs
// (LD_PRELOAD, PATH, GIT_*, BASH_ENV, PAGER, *_OPTIONS ...), so no allow rule covers it.
bool harmlessVariable(const QString &name)
{
    static const QStringList safe
        = {QStringLiteral("LANG"), QStringLiteral("TZ"), QStringLiteral("TERM"), QStringLiteral("COLUMNS"),
            QStringLiteral("LINES"), QStringLiteral("NO_COLOR"), QStringLiteral("CLICOLOR"), QStringLiteral("CI")};
    return safe.contains(name) || name.startsWith(QLatin1String("LC_"));
}

CommandVerdict withEnvironment(CommandVerdict v, const QStringList &env)
{
    if (v.decision != Decision::Allow)
        return v;
    QStringList risky;
    for (const QString &name : env)
        if (!harmlessVariable(name))
            risky.append(name);
    if (risky.isEmpty())
        return v;
    return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
        QStringLiteral("%1 (allowed by '%2') but with %3 set, which can change what runs")
            .arg(v.reason, v.rule, risky.join(QStringLiteral(", "))));
}

// Only programs from the system's own directories are known by their name alone: a rule about
// `ls` must not allow a `./ls` or `/workspace/ls` someone wrote.
bool trustedLocation(const QString &program)
{
    if (!program.contains(QLatin1Char('/')))
        return true;
    for (const char *dir : {"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/"})
        if (program.startsWith(QLatin1String(dir)) && !program.mid(qsizetype(strlen(dir))).contains(QLatin1Char('/')))
            return true;
    return false;
}
} // namespace

QString decisionName(Decision d)
{
    switch (d) {
    case Decision::Allow:
        return QStringLiteral("allow");
    case Decision::Deny:
        return QStringLiteral("deny");
    case Decision::Ask:
        break;
    }
    return QStringLiteral("ask");
}

std::optional<Decision> decisionFromName(const QString &name)
{
    for (Decision d : {Decision::Allow, Decision::Ask, Decision::Deny})
        if (decisionName(d) == name)
            return d;
    return std::nullopt;
}

Decision strictest(Decision a, Decision b)
{
    return int(a) >= int(b) ? a : b;
}

QJsonObject CommandVerdict::toJson() const
{
    return {{QStringLiteral("decision"), decisionName(decision)}, {QStringLiteral("rule"), rule},
        {QStringLiteral("layer"), layer}, {QStringLiteral("reason"), reason}};
}

bool globMatch(QStringView p, QStringView t)
{
    // Iterative matcher with one backtrack point for '*'.
    qsizetype pi = 0, ti = 0, starP = -1, starT = 0;
    while (ti < t.size()) {
        if (pi < p.size()) {
            const QChar c = p.at(pi);
            if (c == QLatin1Char('*')) {
                starP = pi++;
                starT = ti;
                continue;
            }
            if (c == QLatin1Char('[')) {
                const qsizetype close = p.indexOf(QLatin1Char(']'), pi + 2);
                if (close > 0) {
                    QStringView set = p.sliced(pi + 1, close - pi - 1);
                    const bool negate = set.startsWith(QLatin1Char('!')) || set.startsWith(QLatin1Char('^'));
                    if (negate)
                        set = set.sliced(1);
                    bool in = false;
                    for (qsizetype k = 0; k < set.size(); ++k) {
                        if (k + 2 < set.size() && set.at(k + 1) == QLatin1Char('-')) {
                            in = in || (t.at(ti) >= set.at(k) && t.at(ti) <= set.at(k + 2));
                            k += 2;
                        } else {
                            in = in || t.at(ti) == set.at(k);
                        }
                    }
                    if (in != negate) {
                        pi = close + 1;
                        ++ti;
                        continue;
                    }
                }
            } else if (c == QLatin1Char('?')
                || (c == QLatin1Char('\\') && pi + 1 < p.size() && p.at(pi + 1) == t.at(ti) && ++pi) || c == t.at(ti)) {
                ++pi;
                ++ti;
                continue;
            }
        }
        if (starP < 0)
            return false;
        pi = starP + 1;
        ti = ++starT;
    }
    while (pi < p.size() && p.at(pi) == QLatin1Char('*'))
        ++pi;
    return pi == p.size();
}

CommandRules::CommandRules(QList<CommandRule> rules, Decision fallback, QList<CommandRule> everywhere)
    : m_rules(std::move(rules))
    , m_default(fallback)
    , m_everywhere(std::move(everywhere))
{
    for (const CommandRule &r : std::as_const(m_rules))
        if (r.decision == Decision::Deny)
            m_denyRules.append(r);
    for (CommandRule &r : m_everywhere)
        r.decision = Decision::Ask; // a pattern: matched as a rule that is not an allow
}

namespace {
// A shell that reads its commands from its input (`curl … | sh`, `sh -s`, `bash -i`, `sh -`,
// `sh /dev/stdin`): what it runs is whatever came down the pipe.
bool readsCommandsFromInput(const QStringList &argv)
{
    qsizetype i = 1;
    const QString name = programName(argv.first());
    if (name == QLatin1String("busybox") && argv.size() > 1 && isShell(argv.at(1)))
        i = 2;
    else if (!isShell(name) || name == QLatin1String("busybox"))
        return false;
    for (; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (a == QLatin1String("--")) {
            ++i;
            break;
        }
        if (a == QLatin1String("-"))
            return true;
        if (a.startsWith(QLatin1String("--"))) {
            if (a == QLatin1String("--rcfile") || a == QLatin1String("--init-file"))
                ++i;
            continue;
        }
        if (a.size() > 1 && (a.startsWith(QLatin1Char('-')) || a.startsWith(QLatin1Char('+')))) {
            if (a.startsWith(QLatin1Char('-')) && a.contains(QLatin1Char('c')))
                return false; // a command string: judged as the programs it starts
            if (a.startsWith(QLatin1Char('-')) && (a.contains(QLatin1Char('s')) || a.contains(QLatin1Char('i'))))
                return true;
            if (a.mid(1) == QLatin1String("o") || a.mid(1) == QLatin1String("O"))
                ++i;
            continue;
        }
        break;
    }
    if (i >= argv.size())
        return true;
    const QString &script = argv.at(i);
    return script.startsWith(QLatin1String("/dev/")) || script.startsWith(QLatin1String("/proc/"));
}

// git's argv without its global options, so that `git -C d -c a=b push` is seen as `git push`;
// nullopt when an option can rename a subcommand (an alias, or config taken from the environment).
std::optional<QStringList> gitWithoutGlobalOptions(const QStringList &argv)
{
    if (programName(argv.first()) != QLatin1String("git"))
        return argv;
    QStringList out{argv.first()};
    qsizetype i = 1;
    for (; i < argv.size() && argv.at(i).startsWith(QLatin1Char('-')); ++i) {
        const QString &a = argv.at(i);
        if (a.startsWith(QLatin1String("--config-env")))
            return std::nullopt;
        if (a == QLatin1String("-c") && i + 1 < argv.size()
            && argv.at(i + 1).startsWith(QLatin1String("alias."), Qt::CaseInsensitive))
            return std::nullopt;
        if (a == QLatin1String("-c") || a == QLatin1String("-C") || a == QLatin1String("--git-dir")
            || a == QLatin1String("--work-tree") || a == QLatin1String("--namespace")
            || a == QLatin1String("--super-prefix"))
            ++i;
    }
    return out + argv.mid(i);
}
} // namespace

CommandVerdict CommandRules::evaluateNested(const QStringList &argv) const
{
    if (argv.isEmpty())
        return verdict(
            Decision::Deny, QStringLiteral("-"), QStringLiteral("builtin"), QStringLiteral("an empty command"));
    const auto plain = gitWithoutGlobalOptions(argv);
    for (const QStringList &form : {argv, plain.value_or(argv)})
        if (const CommandVerdict denied = matchIn(m_denyRules, Decision::Allow, form, {}, {});
            denied.decision == Decision::Deny)
            return denied;
    QString why;
    if (readsCommandsFromInput(argv))
        why = QStringLiteral("a shell reading commands from its input");
    else if (!plain)
        why = QStringLiteral("git with an alias or configuration from the environment");
    else if (const CommandVerdict judged = matchIn(m_everywhere, Decision::Allow, *plain, {}, {});
             judged.decision != Decision::Allow)
        why = QStringLiteral("pattern '%1', %2").arg(judged.rule, judged.layer);
    if (!why.isEmpty()) {
        CommandVerdict v = evaluateCommand(argv, 0, {}, {});
        v.reason = QStringLiteral("'%1' is judged wherever it runs (%2): %3")
                       .arg(argv.join(QLatin1Char(' ')).left(200), why, v.reason);
        return v;
    }
    return verdict(Decision::Allow, QStringLiteral("covered"), QString(),
        QStringLiteral("covered by the decision on the command that started it"));
}

QList<QStringList> CommandRules::namedPrograms(const QStringList &argv)
{
    QList<QStringList> out{argv};
    QList<QStringList> todo{argv};
    for (int depth = 0; depth < 4 && !todo.isEmpty(); ++depth) {
        QList<QStringList> next;
        for (const QStringList &a : std::as_const(todo)) {
            if (a.isEmpty() || !isShell(programName(a.first())))
                continue;
            qsizetype i = 1;
            for (; i < a.size() && a.at(i).startsWith(QLatin1Char('-')) && !a.at(i).startsWith(QLatin1String("--"));
                 ++i)
                if (a.at(i).contains(QLatin1Char('c')))
                    break;
            if (i + 1 >= a.size() || !a.at(i).startsWith(QLatin1Char('-')) || !a.at(i).contains(QLatin1Char('c')))
                continue;
            const auto segments = parseShell(a.at(i + 1));
            if (!segments)
                continue;
            for (const ShellSegment &segment : *segments)
                if (!segment.dynamicProgram && segment.runtimeWords.isEmpty() && !segment.argv.isEmpty()) {
                    out.append(segment.argv);
                    next.append(segment.argv);
                }
        }
        todo = next;
    }
    return out;
}

CommandVerdict CommandRules::evaluate(const QStringList &argv, const QStringList &env) const
{
    if (argv.isEmpty())
        return verdict(
            Decision::Deny, QStringLiteral("-"), QStringLiteral("builtin"), QStringLiteral("an empty command"));
    return evaluateCommand(argv, 0, env, {});
}

CommandVerdict CommandRules::match(
    const QStringList &argv, const Coverage &coverage, const QList<qsizetype> &runtime) const
{
    return matchIn(m_rules, m_default, argv, coverage, runtime);
}

CommandVerdict CommandRules::matchIn(const QList<CommandRule> &rules, Decision fallback, const QStringList &argv,
    const Coverage &coverage, const QList<qsizetype> &runtime)
{
    // All matching rules; the strictest decides, the first of those is reported.
    const CommandRule *best = nullptr;
    const CommandRule *possible = nullptr; // a deny or ask rule that a word known only at run time could make match
    bool skippedAllow = false;
    const qsizetype firstRuntime = [&] {
        qsizetype f = std::numeric_limits<qsizetype>::max(); // none: a rule longer than argv cannot match
        for (qsizetype i : runtime)
            f = std::min(f, std::max<qsizetype>(i, 1));
        return f;
    }();
    for (const CommandRule &rule : rules) {
        if (rule.words.isEmpty() || (rule.exact && rule.words.size() != argv.size()))
            continue;
        const bool byName = rule.decision != Decision::Allow || trustedLocation(argv.at(0));
        bool matches = rule.words.size() <= argv.size();
        qsizetype i = 0;
        for (; i < rule.words.size() && i < argv.size(); ++i) {
            const QString &w = rule.words.at(i);
            const bool word = rule.exact
                ? (w == argv.at(i)
                    || (i == 0 && byName && !w.contains(QLatin1Char('/')) && w == programName(argv.at(0))))
                : (globMatch(w, argv.at(i))
                    || (i == 0 && byName && !w.contains(QLatin1Char('/')) && globMatch(w, programName(argv.at(0)))));
            if (!word) {
                matches = false;
                break;
            }
        }
        if (!matches) {
            // From its first word known only at run time on, the argv can be anything (a $x
            // splits into any number of words).
            if (rule.decision != Decision::Allow && i >= firstRuntime
                && (!possible || int(rule.decision) > int(possible->decision)))
                possible = &rule;
            continue;
        }
        if (rule.decision == Decision::Allow && !rule.exact && rule.words.size() <= coverage.words) {
            skippedAllow = true; // `allow python` does not cover `python -c CODE`
            continue;
        }
        if (!best || int(rule.decision) > int(best->decision))
            best = &rule;
    }
    if (possible && (!best || int(possible->decision) > int(best->decision)))
        return verdict(Decision::Ask, possible->text(), possible->layer,
            QStringLiteral("cannot be checked: '%1' could match rule '%2' (%3, %4) once '%5' is expanded at run time")
                .arg(argv.join(QLatin1Char(' ')).left(200), possible->text(), possible->layer,
                    decisionName(possible->decision),
                    firstRuntime < argv.size() ? argv.at(firstRuntime).left(60) : QString()));
    if (best)
        return verdict(best->decision, best->text(), best->layer,
            QStringLiteral("'%1' matches rule '%2' (%3)")
                .arg(argv.join(QLatin1Char(' ')).left(200), best->text(), best->layer));
    if (skippedAllow)
        return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"), coverage.reason);
    return verdict(fallback, QStringLiteral("default"), QStringLiteral("builtin"),
        QStringLiteral("no rule matches '%1'").arg(argv.join(QLatin1Char(' ')).left(200)));
}

CommandVerdict CommandRules::evaluateCommand(
    const QStringList &argv, int depth, const QStringList &env, const QList<qsizetype> &runtime) const
{
    if (depth > kMaxDepth)
        return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
            QStringLiteral("wrappers nested too deep to check"));
    const QString name = programName(argv.first());
    // A deny rule about the wrapper itself always counts.
    CommandVerdict own = match(argv, {}, runtime);
    if (own.decision != Decision::Deny)
        own = {};
    auto combine = [&](CommandVerdict inner) {
        if (own.decision == Decision::Deny && !own.rule.isEmpty())
            return own;
        return inner;
    };

    auto ask = [](const QString &reason) {
        return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"), reason);
    };

    // sh -c SCRIPT: every segment of the script on its own.
    if (isShell(name)) {
        qsizetype i = 1;
        if (name == QLatin1String("busybox") && argv.size() > 1 && isShell(argv.at(1)))
            i = 2;
        // Reasons to ask whatever the script says; a deny in the script still wins.
        std::optional<CommandVerdict> floor;
        if (name == QLatin1String("zsh"))
            floor = ask(
                QStringLiteral("zsh reads ~/.zshenv before any command, so what it runs is not only its arguments"));
        else if (const auto option = unplainShellOption(argv, i))
            floor = ask(
                QStringLiteral("shell option '%1' is not one of -c -e -u -x -v -f -o pipefail/errexit/nounset/xtrace: "
                               "it can make the shell read startup files or commands from elsewhere")
                    .arg(option->left(40)));
        auto withFloor = [&](CommandVerdict v) {
            if (floor && v.decision != Decision::Deny)
                v = *floor;
            return combine(v);
        };
        bool command = false;
        for (; i < argv.size() && argv.at(i).startsWith(QLatin1Char('-')); ++i) {
            if (argv.at(i) == QLatin1String("--"))
                break;
            if (!argv.at(i).startsWith(QLatin1String("--")) && argv.at(i).contains(QLatin1Char('c'))) {
                command = true;
                ++i;
                break;
            }
            if (argv.at(i) == QLatin1String("-o") || argv.at(i) == QLatin1String("+o"))
                ++i;
        }
        // Words after the script are its $0, $1 …: data to it. Before it, a word known only at run
        // time may be an option.
        for (qsizetype k : runtime)
            if (k > 0 && k <= (command ? i : argv.size()) && !floor)
                floor = ask(QStringLiteral("the shell's argument '%1' is only known at run time")
                                .arg(k < argv.size() ? argv.at(k).left(60) : QString()));
        if (command) {
            if (i >= argv.size())
                return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
                    QStringLiteral("-c without a command"));
            auto segments = parseShell(argv.at(i));
            if (!segments)
                return combine(verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
                    QStringLiteral("the shell command %1").arg(segments.error().message)));
            CommandVerdict result = verdict(
                Decision::Allow, QStringLiteral("-"), QStringLiteral("builtin"), QStringLiteral("an empty script"));
            bool first = true;
            for (const ShellSegment &s : std::as_const(*segments)) {
                CommandVerdict v = s.dynamicProgram
                    ? verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
                        QStringLiteral("'%1' runs a program chosen at run time")
                            .arg(s.argv.join(QLatin1Char(' ')).left(200)))
                    : evaluateCommand(s.argv, depth + 1, env + s.assignments, s.runtimeWords);
                if (first || int(v.decision) > int(result.decision))
                    result = v;
                first = false;
            }
            return withFloor(result);
        }
        if (floor)
            return withFloor(match(argv, requiredCoverage(argv, runtime), runtime));
    }

    // env, nice, timeout, xargs, ...: the command they run.
    for (const Transparent &w : transparentWrappers()) {
        if (name != QLatin1String(w.name))
            continue;
        qsizetype i = 1;
        bool valueTaken = !w.firstArgumentIsValue;
        QStringList assigned;
        for (; i < argv.size(); ++i) {
            const QString &a = argv.at(i);
            if (a == QLatin1String("--")) {
                ++i;
                break;
            }
            if (name == QLatin1String("env")
                && ((a.startsWith(QLatin1Char('-')) && !a.startsWith(QLatin1String("--"))
                        && a.contains(QLatin1Char('S')))
                    || a.startsWith(QLatin1String("--split-string"))))
                return combine(verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
                    QStringLiteral("env -S splits a string into a command; it is not followed")));
            if ((name == QLatin1String("exec") && a.startsWith(QLatin1String("-a")))
                || (name == QLatin1String("env")
                    && (a == QLatin1String("-a") || a.startsWith(QLatin1String("--argv0")))))
                return combine(ask(
                    QStringLiteral("%1 %2 renames the program it starts (a name starting with '-' makes a login shell)")
                        .arg(name, a)));
            if (name == QLatin1String("env") && a.contains(QLatin1Char('=')) && !a.startsWith(QLatin1Char('-'))) {
                assigned.append(a.section(QLatin1Char('='), 0, 0));
                continue;
            }
            if (a.startsWith(QLatin1Char('-')) && a.size() > 1) {
                if (w.optionsWithValue.contains(a))
                    ++i;
                continue;
            }
            if (!valueTaken) {
                valueTaken = true;
                continue;
            }
            break;
        }
        if (i >= argv.size()) // nothing to run (env alone prints the environment)
            break;
        for (qsizetype k : runtime)
            if (k > 0 && k <= i)
                return combine(ask(
                    QStringLiteral("%1's argument '%2' is only known at run time; it may be an option or the program")
                        .arg(name, argv.at(k).left(60))));
        QList<qsizetype> inner = shifted(runtime, i);
        if (name == QLatin1String("xargs"))
            inner.append(argv.size() - i); // the words it reads from its input follow the command
        return combine(evaluateCommand(argv.mid(i), depth + 1, env + assigned, inner));
    }

    // find … -exec CMD … ; — find itself, and what it executes.
    if (name == QLatin1String("find")) {
        const QStringList execFlags
            = {QStringLiteral("-exec"), QStringLiteral("-execdir"), QStringLiteral("-ok"), QStringLiteral("-okdir")};
        CommandVerdict result = match(argv, requiredCoverage(argv, runtime), runtime);
        for (qsizetype i = 1; i < argv.size(); ++i) {
            if (!execFlags.contains(argv.at(i)))
                continue;
            qsizetype end = i + 1;
            while (end < argv.size() && argv.at(end) != QLatin1String(";") && argv.at(end) != QLatin1String("+"))
                ++end;
            if (end == i + 1)
                return verdict(Decision::Ask, QStringLiteral("default"), QStringLiteral("builtin"),
                    QStringLiteral("find -exec without a command"));
            // find's own rule may not cover what it executes: judged separately.
            // {} becomes each file's name, which the agent chose (a file can be named --upload-pack=…).
            const QStringList command = argv.mid(i + 1, end - i - 1);
            QList<qsizetype> names = shifted(runtime, i + 1);
            for (qsizetype k = 0; k < command.size(); ++k)
                if (command.at(k).contains(QStringLiteral("{}")))
                    names.append(k);
            CommandVerdict inner = evaluateCommand(command, depth + 1, env, names);
            if (int(inner.decision) > int(result.decision))
                result = inner;
            else if (result.decision == Decision::Allow && inner.decision == Decision::Allow)
                result = inner;
            i = end;
        }
        return withEnvironment(result, env);
    }

    return withEnvironment(match(argv, requiredCoverage(argv, runtime), runtime), env);
}

} // namespace airlock::policy
