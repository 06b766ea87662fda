// SPDX-License-Identifier: Apache-2.0
#include "policy/ProgramForms.h"

#include <QRegularExpression>

#include <optional>

namespace airlock::policy {

QString programName(const QString &program)
{
    return program.mid(program.lastIndexOf(QLatin1Char('/')) + 1);
}

namespace {
bool isPython(const QString &name)
{
    static const QRegularExpression python(QStringLiteral("^(python|pypy)[0-9.]*$"));
    return python.match(name).hasMatch();
}

Coverage none()
{
    return {};
}

Coverage upTo(qsizetype index, const QString &reason)
{
    return {int(index) + 1, reason};
}

Coverage never(const QString &reason)
{
    return {Coverage::kNoPrefixRule, reason};
}

bool isOption(const QString &a, const QStringList &names)
{
    for (const QString &n : names)
        if (a == n || (n.startsWith(QLatin1String("--")) && a.startsWith(n + QLatin1Char('='))))
            return true;
    return false;
}

// A short option letter inside a bundle such as -xvIf (or tar's old-style first word xvIf).
bool bundleHas(const QString &a, QChar letter, bool oldStyle = false)
{
    if (oldStyle ? a.startsWith(QLatin1Char('-'))
                 : (!a.startsWith(QLatin1Char('-')) || a.startsWith(QLatin1String("--"))))
        return false;
    return a.contains(letter);
}

// python -c CODE, node -e CODE, perl -e, php -r, git -c, awk PROGRAM: code on the command line.
std::optional<Coverage> inlineCode(const QStringList &argv)
{
    const QString name = programName(argv.first());
    static const QRegularExpression awk(QStringLiteral("^[gmn]?awk$"));
    QStringList codeFlags;
    if (isPython(name))
        codeFlags = {QStringLiteral("-c")};
    else if (name == QLatin1String("node") || name == QLatin1String("nodejs") || name == QLatin1String("deno")
        || name == QLatin1String("bun"))
        codeFlags = {QStringLiteral("-e"), QStringLiteral("--eval"), QStringLiteral("-p"), QStringLiteral("--print")};
    else if (name == QLatin1String("perl") || name == QLatin1String("ruby"))
        codeFlags = {QStringLiteral("-e"), QStringLiteral("-E")};
    else if (name == QLatin1String("php"))
        codeFlags = {QStringLiteral("-r")};
    else if (name == QLatin1String("git"))
        codeFlags = {QStringLiteral("-c"), QStringLiteral("--config-env"), QStringLiteral("--exec-path")};
    else if (awk.match(name).hasMatch())
        return upTo(0, QStringLiteral("%1 runs code given on its command line; no rule names that form").arg(name));
    else
        return std::nullopt;
    // Only the program's own options count: they end at its first operand (a script, a
    // subcommand) or at python's -m, after which the words belong to someone else.
    for (qsizetype i = 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (!a.startsWith(QLatin1Char('-')) || a == QLatin1String("-m") || a == QLatin1String("--"))
            return std::nullopt;
        if (a == QLatin1String("-W") || a == QLatin1String("-X")) {
            ++i; // python options with a value
            continue;
        }
        for (const QString &flag : std::as_const(codeFlags))
            if (a == flag
                || (a.startsWith(flag) && flag.size() == 2 && a.size() > 2 && !a.startsWith(QLatin1String("--")))
                || a.startsWith(flag + QLatin1Char('=')))
                return upTo(
                    i, QStringLiteral("%1 runs code given on its command line; no rule names that form").arg(name));
    }
    return std::nullopt;
}

// The first word after the program's own leading options (git's subcommand, npm's command).
qsizetype subcommandIndex(const QStringList &argv, const QStringList &optionsWithValue)
{
    for (qsizetype i = 1; i < argv.size(); ++i) {
        if (!argv.at(i).startsWith(QLatin1Char('-')))
            return i;
        if (optionsWithValue.contains(argv.at(i)))
            ++i;
    }
    return -1;
}

Coverage git(const QStringList &argv)
{
    const qsizetype sub = subcommandIndex(argv,
        {QStringLiteral("-C"), QStringLiteral("-c"), QStringLiteral("--git-dir"), QStringLiteral("--work-tree"),
            QStringLiteral("--namespace")});
    const QString command = sub > 0 ? argv.at(sub) : QString();
    const QStringList runsPrograms
        = {QStringLiteral("--upload-pack"), QStringLiteral("--receive-pack"), QStringLiteral("--exec"),
            QStringLiteral("--template"), QStringLiteral("--config"), QStringLiteral("--config-env")};
    for (qsizetype i = sub + 1; sub > 0 && i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (a == QLatin1String("--"))
            break;
        const bool shortForm = (command == QLatin1String("clone") || command == QLatin1String("ls-remote"))
            && (a == QLatin1String("-u") || (a.startsWith(QLatin1String("-u")) && !a.startsWith(QLatin1String("--"))));
        const bool config = command == QLatin1String("clone") && bundleHas(a, QLatin1Char('c'));
        if (isOption(a, runsPrograms) || shortForm || config)
            return upTo(i,
                QStringLiteral("git %1 %2 runs a program or hooks it names; no rule names that form")
                    .arg(command, a.section(QLatin1Char('='), 0, 0)));
        if (a.startsWith(QLatin1String("ext::")))
            return upTo(i, QStringLiteral("git's ext:: transport runs a command"));
    }
    return none();
}

Coverage tar(const QStringList &argv)
{
    const QStringList runsPrograms = {QStringLiteral("--to-command"), QStringLiteral("--use-compress-program"),
        QStringLiteral("--checkpoint-action"), QStringLiteral("--info-script"), QStringLiteral("--new-volume-script"),
        QStringLiteral("--rsh-command"), QStringLiteral("--rmt-command")};
    const bool forceLocal = argv.contains(QStringLiteral("--force-local"));
    for (qsizetype i = 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (isOption(a, runsPrograms) || bundleHas(a, QLatin1Char('I')) || bundleHas(a, QLatin1Char('F'))
            || (i == 1 && (bundleHas(a, QLatin1Char('I'), true) || bundleHas(a, QLatin1Char('F'), true))))
            return upTo(i,
                QStringLiteral("tar %1 runs a program it names; no rule names that form")
                    .arg(a.section(QLatin1Char('='), 0, 0)));
        // An archive named host:path is read through rsh/ssh.
        const bool fileOption = a == QLatin1String("--file")
            || (bundleHas(a, QLatin1Char('f')) && a.endsWith(QLatin1Char('f')))
            || (i == 1 && bundleHas(a, QLatin1Char('f'), true));
        if (!forceLocal && fileOption && i + 1 < argv.size() && argv.at(i + 1).contains(QLatin1Char(':')))
            return upTo(i + 1,
                QStringLiteral("tar reads an archive named host:path through a remote shell; no rule names that form"));
        if (!forceLocal && a.startsWith(QLatin1String("--file=")) && a.mid(7).contains(QLatin1Char(':')))
            return upTo(i,
                QStringLiteral("tar reads an archive named host:path through a remote shell; no rule names that form"));
    }
    return none();
}

Coverage rsync(const QStringList &argv)
{
    for (qsizetype i = 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (isOption(a, {QStringLiteral("--rsh"), QStringLiteral("--rsync-path")}) || bundleHas(a, QLatin1Char('e')))
            return upTo(i,
                QStringLiteral("rsync %1 runs a program it names; no rule names that form")
                    .arg(a.section(QLatin1Char('='), 0, 0)));
        if (!a.startsWith(QLatin1Char('-')) && a.contains(QLatin1Char(':')))
            return upTo(i, QStringLiteral("rsync to or from host:path starts a remote shell; no rule names that form"));
    }
    return none();
}

Coverage sshFamily(const QStringList &argv, const QString &name)
{
    QStringList options = {QStringLiteral("-o"), QStringLiteral("-F")};
    if (name != QLatin1String("ssh"))
        options += {QStringLiteral("-S"), QStringLiteral("-D")};
    for (qsizetype i = 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        for (const QString &o : std::as_const(options))
            if (a == o || (a.startsWith(o) && !a.startsWith(QLatin1String("--"))))
                return upTo(i,
                    QStringLiteral(
                        "%1 %2 can name a program to run (ProxyCommand, LocalCommand, -S); no rule names that form")
                        .arg(name, o));
    }
    return none();
}

Coverage sed(const QStringList &argv)
{
    if (argv.contains(QStringLiteral("--sandbox")))
        return none();
    // Its script is the -e/--expression values, a -f file, or the first operand.
    for (qsizetype i = 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (a.startsWith(QLatin1String("--file")) || bundleHas(a, QLatin1Char('f')))
            return never(
                QStringLiteral("sed reads a script from a file, and its e command runs programs; add --sandbox"));
        const bool expression = a == QLatin1String("-e") || a == QLatin1String("--expression");
        const QString script = expression && i + 1 < argv.size() ? argv.at(i + 1)
            : a.startsWith(QLatin1String("--expression="))       ? a.mid(13)
                                                                 : (!a.startsWith(QLatin1Char('-')) ? a : QString());
        if (script.contains(QLatin1Char('e')))
            return upTo(expression ? i + 1 : i,
                QStringLiteral(
                    "sed's e command and s///e flag run programs; no rule names this script (or add --sandbox)"));
        if (!a.startsWith(QLatin1Char('-')) && !expression)
            break; // the first operand was the script; the rest are files
        if (expression)
            ++i;
    }
    return none();
}

// npm, yarn and pnpm run lifecycle scripts (the project's own package.json, which the agent
// can write, and every dependency's) unless told not to.
Coverage packageScripts(const QStringList &argv, const QString &name)
{
    const qsizetype sub
        = subcommandIndex(argv, {QStringLiteral("--prefix"), QStringLiteral("-C"), QStringLiteral("--dir")});
    const QString command
        = sub > 0 ? argv.at(sub) : (name == QLatin1String("yarn") ? QStringLiteral("install") : QString());
    static const QStringList installs = {QStringLiteral("install"), QStringLiteral("i"), QStringLiteral("ci"),
        QStringLiteral("add"), QStringLiteral("update"), QStringLiteral("up"), QStringLiteral("rebuild"),
        QStringLiteral("link"), QStringLiteral("pack"), QStringLiteral("publish"), QStringLiteral("dedupe"),
        QStringLiteral("install-test"), QStringLiteral("it"), QStringLiteral("install-ci-test"),
        QStringLiteral("uninstall"), QStringLiteral("remove")};
    static const QStringList runners = {QStringLiteral("run"), QStringLiteral("run-script"), QStringLiteral("exec"),
        QStringLiteral("x"), QStringLiteral("test"), QStringLiteral("t"), QStringLiteral("start"),
        QStringLiteral("stop"), QStringLiteral("restart"), QStringLiteral("explore"), QStringLiteral("dlx")};
    if (runners.contains(command))
        return upTo(sub + 1,
            QStringLiteral(
                "%1 %2 runs a script or package it names (package.json is the agent's to write); no rule names it")
                .arg(name, command));
    if (installs.contains(command) && !argv.contains(QStringLiteral("--ignore-scripts")))
        return never(
            QStringLiteral("%1 %2 runs install scripts of the project and its packages; allow it with --ignore-scripts")
                .arg(name, command));
    return none();
}

// pip builds (runs the setup code of) a local project, an archive or a repository.
Coverage pip(const QStringList &argv, qsizetype first)
{
    if (first < 0 || first >= argv.size()) // no subcommand (a bare "pip", "pip --version")
        return none();
    const QString command = argv.at(first);
    if (command != QLatin1String("install") && command != QLatin1String("download")
        && command != QLatin1String("wheel"))
        return none();
    static const QStringList withValue
        = {QStringLiteral("-i"), QStringLiteral("--index-url"), QStringLiteral("--extra-index-url"),
            QStringLiteral("-t"), QStringLiteral("--target"), QStringLiteral("-d"), QStringLiteral("--dest"),
            QStringLiteral("--python-version"), QStringLiteral("--platform"), QStringLiteral("--prefix"),
            QStringLiteral("--root"), QStringLiteral("--only-binary"), QStringLiteral("--no-binary"),
            QStringLiteral("--progress-bar"), QStringLiteral("--timeout"), QStringLiteral("--retries")};
    static const QStringList local = {QStringLiteral("-e"), QStringLiteral("--editable"), QStringLiteral("-r"),
        QStringLiteral("--requirement"), QStringLiteral("-c"), QStringLiteral("--constraint"), QStringLiteral("-f"),
        QStringLiteral("--find-links"), QStringLiteral("--global-option"), QStringLiteral("--build-option"),
        QStringLiteral("-C"), QStringLiteral("--config-settings")};
    static const QRegularExpression archive(QStringLiteral("\\.(tar\\.gz|tgz|tar\\.bz2|tar\\.xz|zip)$"));
    for (qsizetype i = first + 1; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (isOption(a, local)
            || (a.startsWith(QLatin1Char('-')) && !a.startsWith(QLatin1String("--")) && a.size() > 2
                && local.contains(a.left(2))))
            return never(QStringLiteral("pip %1 %2 builds code from a local path or file; only a person can allow that")
                             .arg(command, a.section(QLatin1Char('='), 0, 0)));
        if (withValue.contains(a)) {
            ++i;
            continue;
        }
        if (a.startsWith(QLatin1Char('-')))
            continue;
        if (a.contains(QLatin1Char('/')) || a.startsWith(QLatin1Char('.')) || a.contains(QLatin1Char('@'))
            || a.contains(QLatin1Char(':')) || archive.match(a).hasMatch())
            return never(QStringLiteral("pip %1 '%2' builds and runs the setup code of a local project, an archive or "
                                        "a repository; only a person can allow that")
                             .arg(command, a.left(80)));
    }
    return none();
}

// Shell builtins that take variable names: bash evaluates an array subscript in a name as code
// (printf -v 'a[$(cmd)]', test -v, read, declare, unset), and let evaluates arithmetic.
std::optional<Coverage> namesVariables(const QStringList &argv, const QList<qsizetype> &runtime)
{
    static const QStringList builtins = {QStringLiteral("test"), QStringLiteral("["), QStringLiteral("printf"),
        QStringLiteral("read"), QStringLiteral("declare"), QStringLiteral("typeset"), QStringLiteral("local"),
        QStringLiteral("export"), QStringLiteral("readonly"), QStringLiteral("unset"), QStringLiteral("getopts"),
        QStringLiteral("mapfile"), QStringLiteral("readarray"), QStringLiteral("wait"), QStringLiteral("let"),
        QStringLiteral("shift"), QStringLiteral("return"), QStringLiteral("exit")};
    const QString name = argv.first();
    if (!builtins.contains(name))
        return std::nullopt;
    if (name == QLatin1String("let"))
        return never(
            QStringLiteral("let evaluates arithmetic, in which bash runs the subscripts of variables' values"));
    for (qsizetype i = 1; i < argv.size(); ++i)
        if (runtime.contains(i) || argv.at(i).contains(QLatin1Char('[')))
            return never(QStringLiteral(
                "%1's argument '%2' may name an array element, whose subscript bash evaluates as code (a[$(cmd)])")
                             .arg(name, argv.at(i).left(60)));
    return std::nullopt;
}

// Programs that start programs through some of their options, so a word known only at run time
// may be one of them.
bool startsPrograms(const QString &name)
{
    static const QStringList names
        = {QStringLiteral("git"), QStringLiteral("tar"), QStringLiteral("rsync"), QStringLiteral("ssh"),
            QStringLiteral("scp"), QStringLiteral("sftp"), QStringLiteral("sed"), QStringLiteral("npm"),
            QStringLiteral("yarn"), QStringLiteral("pnpm"), QStringLiteral("pip"), QStringLiteral("pip3"),
            QStringLiteral("zip"), QStringLiteral("find"), QStringLiteral("xargs"), QStringLiteral("env"),
            QStringLiteral("make"), QStringLiteral("cargo"), QStringLiteral("man"), QStringLiteral("less")};
    return names.contains(name) || isPython(name);
}

// Programs whose arguments are a program to run; a rule about them alone does not cover it.
bool runsItsArguments(const QString &name)
{
    static const QStringList names = {QStringLiteral("watch"), QStringLiteral("flock"), QStringLiteral("strace"),
        QStringLiteral("ltrace"), QStringLiteral("script"), QStringLiteral("unshare"), QStringLiteral("nsenter"),
        QStringLiteral("setpriv"), QStringLiteral("chroot"), QStringLiteral("su"), QStringLiteral("sudo"),
        QStringLiteral("runuser"), QStringLiteral("parallel"), QStringLiteral("valgrind"), QStringLiteral("gdb"),
        QStringLiteral("expect"), QStringLiteral("eval"), QStringLiteral("source"), QStringLiteral("."),
        QStringLiteral("trap"), QStringLiteral("socat"), QStringLiteral("xvfb-run"), QStringLiteral("dbus-run-session"),
        QStringLiteral("ssh-agent"), QStringLiteral("systemd-run"), QStringLiteral("perf")};
    return names.contains(name);
}
} // namespace

Coverage requiredCoverage(const QStringList &argv, const QList<qsizetype> &runtime)
{
    if (argv.isEmpty())
        return none();
    const QString name = programName(argv.first());
    if (auto code = inlineCode(argv))
        return *code;
    if (auto names = namesVariables(argv, runtime))
        return *names;
    if (runsItsArguments(name) && argv.size() > 1)
        return upTo(1, QStringLiteral("%1 runs the program or code given to it; no rule names that form").arg(name));
    for (qsizetype i : runtime)
        if (i > 0 && startsPrograms(name))
            return never(QStringLiteral(
                "%1 can start programs through its options, and its argument '%2' is only known at run time")
                             .arg(name, i < argv.size() ? argv.at(i).left(60) : QStringLiteral("(added at run time)")));
    if (name == QLatin1String("git"))
        return git(argv);
    if (name == QLatin1String("tar"))
        return tar(argv);
    if (name == QLatin1String("rsync"))
        return rsync(argv);
    if (name == QLatin1String("ssh") || name == QLatin1String("scp") || name == QLatin1String("sftp"))
        return sshFamily(argv, name);
    if (name == QLatin1String("sed"))
        return sed(argv);
    if (name == QLatin1String("npm") || name == QLatin1String("yarn") || name == QLatin1String("pnpm"))
        return packageScripts(argv, name);
    if (name == QLatin1String("pip") || name == QLatin1String("pip3"))
        return pip(argv, subcommandIndex(argv, {}));
    if (isPython(name)) {
        const qsizetype m = argv.indexOf(QStringLiteral("-m"));
        if (m > 0 && m + 1 < argv.size() && argv.at(m + 1) == QLatin1String("pip"))
            return pip(argv, m + 2);
    }
    if (name == QLatin1String("zip"))
        for (qsizetype i = 1; i < argv.size(); ++i)
            if (isOption(argv.at(i), {QStringLiteral("-TT"), QStringLiteral("--unzip-command")}))
                return upTo(
                    i, QStringLiteral("zip %1 runs a program it names; no rule names that form").arg(argv.at(i)));
    return none();
}

} // namespace airlock::policy
