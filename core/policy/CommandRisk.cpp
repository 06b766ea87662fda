// SPDX-License-Identifier: Apache-2.0
#include "policy/CommandRisk.h"

#include "policy/ProgramForms.h"
#include "policy/ShellParser.h"

#include <QRegularExpression>

namespace airlock::policy {

namespace {

bool shell(const QString &name)
{
    static const QStringList shells{QStringLiteral("sh"), QStringLiteral("bash"), QStringLiteral("dash"),
        QStringLiteral("zsh"), QStringLiteral("ksh"), QStringLiteral("ash"), QStringLiteral("mksh")};
    return shells.contains(name);
}

// Where a shell's own arguments start (after `sh`, or `busybox sh`), or -1 when argv is no shell.
qsizetype shellArguments(const QStringList &argv)
{
    if (argv.isEmpty())
        return -1;
    const QString name = programName(argv.first());
    if (name == QLatin1String("busybox"))
        return argv.size() > 1 && shell(argv.at(1)) ? 2 : -1;
    return shell(name) ? 1 : -1;
}

// A shell's option that takes the next word as its value (-o pipefail, -O extglob, --rcfile F).
bool takesValue(const QString &option)
{
    if (option.startsWith(QLatin1String("--")))
        return option == QLatin1String("--rcfile") || option == QLatin1String("--init-file");
    return option.contains(QLatin1Char('o')) || option.contains(QLatin1Char('O'));
}

// The index of a shell's -c script in argv, or -1.
qsizetype scriptIndex(const QStringList &argv)
{
    const qsizetype start = shellArguments(argv);
    if (start < 0)
        return -1;
    for (qsizetype i = start; i < argv.size(); ++i) {
        const QString &a = argv.at(i);
        if (a == QLatin1String("--") || !(a.startsWith(QLatin1Char('-')) || a.startsWith(QLatin1Char('+'))))
            return -1;
        const bool value = takesValue(a);
        if (a.startsWith(QLatin1Char('-')) && !a.startsWith(QLatin1String("--")) && a.contains(QLatin1Char('c'))) {
            const qsizetype script = i + 1 + (value ? 1 : 0);
            return script < argv.size() ? script : -1;
        }
        if (value)
            ++i;
    }
    return -1;
}

bool interpreter(const QString &name)
{
    return name.startsWith(QLatin1String("python")) || name.startsWith(QLatin1String("pypy"))
        || name == QLatin1String("perl") || name == QLatin1String("ruby") || name == QLatin1String("node")
        || name == QLatin1String("nodejs") || name == QLatin1String("php");
}

// The command behind the wrappers that only run it (env, sudo, timeout, xargs …): what the risk
// is about. The wrapper that asks for root is kept as a risk of its own.
QStringList unwrapped(QStringList argv, QStringList &risks)
{
    static const QStringList wrappers{QStringLiteral("env"), QStringLiteral("nice"), QStringLiteral("nohup"),
        QStringLiteral("timeout"), QStringLiteral("xargs"), QStringLiteral("sudo"), QStringLiteral("doas"),
        QStringLiteral("time"), QStringLiteral("stdbuf"), QStringLiteral("setsid"), QStringLiteral("exec"),
        QStringLiteral("command"), QStringLiteral("ionice"), QStringLiteral("chrt")};
    static const QRegularExpression duration(QStringLiteral("^[0-9.]+[smhd]?$"));
    while (!argv.isEmpty() && wrappers.contains(programName(argv.first()))) {
        const QString name = programName(argv.first());
        if (name == QLatin1String("sudo") || name == QLatin1String("doas"))
            risks.append(QStringLiteral("asks for root: %1").arg(name));
        argv.removeFirst();
        while (!argv.isEmpty()
            && (argv.first().startsWith(QLatin1Char('-')) || argv.first().contains(QLatin1Char('='))
                || duration.match(argv.first()).hasMatch()))
            argv.removeFirst();
    }
    return argv;
}

bool hasShortOption(const QStringList &argv, QChar option, const QString &longOption)
{
    for (const QString &a : argv.mid(1)) {
        if (a == QLatin1String("--"))
            return false;
        if (a == longOption
            || (a.startsWith(QLatin1Char('-')) && !a.startsWith(QLatin1String("--")) && a.contains(option)))
            return true;
    }
    return false;
}

// A program that runs whatever comes on its input when given no script: a shell without -c and
// without a script file, an interpreter given nothing or "-".
bool runsItsInput(const QStringList &argv)
{
    static const QStringList interpreters{QStringLiteral("python"), QStringLiteral("python3"), QStringLiteral("perl"),
        QStringLiteral("ruby"), QStringLiteral("node"), QStringLiteral("php")};
    const qsizetype start = shellArguments(argv);
    const QString name = start == 2 ? argv.at(1) : programName(argv.first());
    if (start < 0 && !interpreters.contains(name) && !interpreter(name))
        return false;
    for (const QString &a : argv.mid(start < 0 ? 1 : start)) {
        if (a == QLatin1String("-") || a == QLatin1String("-s") || a == QLatin1String("/dev/stdin"))
            return true;
        if (!a.startsWith(QLatin1Char('-'))
            || (shell(name) && !a.startsWith(QLatin1String("--")) && a.contains(QLatin1Char('c'))))
            return false; // a script file, or a -c string (judged as its own parts)
        if (!shell(name) && (a == QLatin1String("-c") || a == QLatin1String("-e") || a == QLatin1String("-m")))
            return false;
    }
    return true;
}

} // namespace

QList<QStringList> commandParts(const QStringList &argv)
{
    const qsizetype script = scriptIndex(argv);
    if (script < 0)
        return {argv};
    auto segments = parseShell(argv.at(script));
    if (!segments || segments->isEmpty())
        return {argv};
    QList<QStringList> parts;
    for (const ShellSegment &s : std::as_const(*segments))
        if (!s.argv.isEmpty())
            parts.append(s.argv);
    return parts;
}

QList<CodeFile> codeFiles(const QStringList &argv)
{
    QList<CodeFile> out;
    QStringList ignored;
    bool moved = false; // after a cd the script does not follow: relative names are not bound
    const auto add = [&](const QString &path, bool optional = false) {
        if (moved && !path.startsWith(QLatin1Char('/')))
            out.append({path, optional, QStringLiteral("named after a change of directory that is not followed")});
        else
            out.append({path, optional, QString()});
    };
    const auto unbound = [&](const QStringList &part, const QString &why) {
        out.append({part.join(QLatin1Char(' ')).left(200), false, why});
    };
    for (QStringList part : commandParts(argv)) {
        const QStringList given = part;
        part = unwrapped(part, ignored);
        if (part.isEmpty())
            continue;
        if (given.first() == QLatin1String("env")
            && (given.contains(QStringLiteral("-C")) || !given.filter(QStringLiteral("--chdir")).isEmpty()))
            moved = true;
        const QString &program = part.first();
        const QString name = programName(program);
        if (name == QLatin1String("cd") || name == QLatin1String("pushd") || name == QLatin1String("popd")) {
            moved = true;
            continue;
        }
        if (program.contains(QLatin1Char('/')) && !program.startsWith(QLatin1String("/usr/"))
            && !program.startsWith(QLatin1String("/bin/")) && !program.startsWith(QLatin1String("/sbin/")))
            add(program);
        const qsizetype shellStart = shellArguments(part);
        if (name == QLatin1String("source") || name == QLatin1String(".")) {
            if (part.size() > 1)
                add(part.at(1));
        } else if (shellStart >= 0 || interpreter(name)) {
            if (scriptIndex(part) >= 0)
                continue; // a -c string: its parts are the parts above
            bool found = false;
            for (qsizetype i = shellStart >= 0 ? shellStart : 1; i < part.size() && !found; ++i) {
                const QString &a = part.at(i);
                if (a == QLatin1String("-") || a == QLatin1String("-s") || a == QLatin1String("/dev/stdin"))
                    break; // from its input: below
                if (shellStart < 0
                    && (a == QLatin1String("-c") || a == QLatin1String("-e") || a == QLatin1String("-p")
                        || a == QLatin1String("--eval") || a == QLatin1String("--print"))) {
                    found = true; // code on the command line, shown in full
                } else if (shellStart < 0 && a == QLatin1String("-m")) {
                    unbound(part, QStringLiteral("runs a module found on its search path: not bound"));
                    found = true;
                } else if (a == QLatin1String("--") && i + 1 < part.size()) {
                    add(part.at(i + 1));
                    found = true;
                } else if (!a.startsWith(QLatin1Char('-')) && !(shellStart >= 0 && a.startsWith(QLatin1Char('+')))) {
                    add(a);
                    found = true;
                } else if (shellStart >= 0
                        ? takesValue(a)
                        : QStringList{QStringLiteral("-W"), QStringLiteral("-X"), QStringLiteral("-Q"),
                            QStringLiteral("-I"), QStringLiteral("-M"), QStringLiteral("-r"), QStringLiteral("-C"),
                            QStringLiteral("--require"), QStringLiteral("--import")}
                              .contains(a)) {
                    if (a == QLatin1String("-r") || a == QLatin1String("--require") || a == QLatin1String("--import"))
                        add(i + 1 < part.size() ? part.at(i + 1) : QString()); // preloaded code (node, ruby)
                    ++i; // the option's value
                }
            }
            if (!found)
                unbound(part, QStringLiteral("reads the code it runs from its input: not bound"));
        } else if (name == QLatin1String("make") || name == QLatin1String("gmake")) {
            bool named = false;
            QString dir; // -C DIR: where it reads its makefile
            for (qsizetype i = 1; i + 1 < part.size(); ++i)
                if (part.at(i) == QLatin1String("-C") || part.at(i) == QLatin1String("--directory"))
                    dir = part.at(i + 1) + QLatin1Char('/');
            for (qsizetype i = 1; i < part.size(); ++i) {
                const QString &a = part.at(i);
                if (a == QLatin1String("-C") || a == QLatin1String("--directory")) {
                    ++i;
                } else if ((a == QLatin1String("-f") || a == QLatin1String("--file")
                               || a == QLatin1String("--makefile"))
                    && i + 1 < part.size()) {
                    add(part.at(++i));
                    named = true;
                } else if (a.startsWith(QLatin1String("--file=")) || a.startsWith(QLatin1String("--makefile="))) {
                    add(a.section(QLatin1Char('='), 1));
                    named = true;
                } else if (a.startsWith(QLatin1String("-f")) && a.size() > 2) {
                    add(a.mid(2));
                    named = true;
                }
            }
            if (!named)
                for (const char *f : {"GNUmakefile", "makefile", "Makefile"})
                    add(dir + QString::fromLatin1(f), true);
        }
    }
    return out;
}

QString riskSummary(const QStringList &argv)
{
    if (argv.isEmpty())
        return {};
    QStringList risks;
    const qsizetype script = scriptIndex(argv);
    if (script >= 0 && !parseShell(argv.at(script)))
        risks.append(QStringLiteral("a shell string that cannot be read in full"));
    static const QStringList downloaders{
        QStringLiteral("curl"), QStringLiteral("wget"), QStringLiteral("aria2c"), QStringLiteral("fetch")};
    static const QStringList clients{QStringLiteral("curl"), QStringLiteral("wget"), QStringLiteral("aria2c"),
        QStringLiteral("ssh"), QStringLiteral("scp"), QStringLiteral("sftp"), QStringLiteral("rsync"),
        QStringLiteral("nc"), QStringLiteral("ncat"), QStringLiteral("netcat"), QStringLiteral("socat"),
        QStringLiteral("telnet"), QStringLiteral("ftp"), QStringLiteral("nmap")};
    static const QStringList interpreters{QStringLiteral("python"), QStringLiteral("python3"), QStringLiteral("node"),
        QStringLiteral("perl"), QStringLiteral("ruby"), QStringLiteral("php")};
    bool download = false, runsInput = false;
    for (QStringList part : commandParts(argv)) {
        while (!part.isEmpty() && part.first().contains(QLatin1Char('=')) && !part.first().startsWith(QLatin1Char('-')))
            part.removeFirst(); // NAME=value before the program
        part = unwrapped(part, risks);
        if (part.isEmpty())
            continue;
        const QString name = programName(part.first());
        const QString sub = part.size() > 1 ? part.at(1) : QString();
        download = download || downloaders.contains(name);
        runsInput = runsInput || runsItsInput(part);
        if (name == QLatin1String("rm")
            && (hasShortOption(part, QLatin1Char('r'), QStringLiteral("--recursive"))
                || hasShortOption(part, QLatin1Char('R'), {})))
            risks.append(QStringLiteral("deletes recursively"));
        if (name == QLatin1String("find") && part.contains(QStringLiteral("-delete")))
            risks.append(QStringLiteral("deletes what it finds"));
        if (name == QLatin1String("shred") || name.startsWith(QLatin1String("mkfs"))
            || (name == QLatin1String("dd") && part.filter(QStringLiteral("of=")).size()))
            risks.append(QStringLiteral("overwrites a file or device: %1").arg(name));
        if ((name == QLatin1String("chmod") || name == QLatin1String("chown"))
            && hasShortOption(part, QLatin1Char('R'), QStringLiteral("--recursive")))
            risks.append(QStringLiteral("changes permissions recursively"));
        if (name == QLatin1String("su"))
            risks.append(QStringLiteral("asks for root: su"));
        if (clients.contains(name))
            risks.append(QStringLiteral("starts a network client: %1").arg(name));
        if (name == QLatin1String("git") && part.contains(QStringLiteral("push")))
            risks.append(QStringLiteral("publishes to a remote: git push"));
        else if (name == QLatin1String("git")
            && (part.contains(QStringLiteral("clone")) || part.contains(QStringLiteral("fetch"))
                || part.contains(QStringLiteral("pull"))))
            risks.append(QStringLiteral("starts a network client: git"));
        if ((QStringList{QStringLiteral("npm"), QStringLiteral("yarn"), QStringLiteral("pnpm"), QStringLiteral("cargo")}
                    .contains(name)
                && sub == QLatin1String("publish"))
            || (name == QLatin1String("twine") && sub == QLatin1String("upload"))
            || (name == QLatin1String("gem") && sub == QLatin1String("push")))
            risks.append(QStringLiteral("publishes a package: %1 %2").arg(name, sub));
        if (interpreters.contains(name) && (part.contains(QStringLiteral("-c")) || part.contains(QStringLiteral("-e"))))
            risks.append(QStringLiteral("runs code given inline: %1").arg(name));
    }
    if (download && runsInput)
        risks.prepend(QStringLiteral("pipes a download into a shell"));
    risks.removeDuplicates();
    return risks.join(QStringLiteral("; "));
}

} // namespace airlock::policy
