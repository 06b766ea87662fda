// SPDX-License-Identifier: Apache-2.0
#include "Manual.h"
#include "util/Version.h"

#include "ManPage.h"

#include <QRegularExpression>

namespace airlock::cli {

namespace {
const char kExitCodes[]
    = "0 ok, 1 failure, 2 bad usage or input, 3 not found, 4 no daemon, 5 the host cannot enforce the sandbox, 6 "
      "refused "
      "(path escape, protocol, the history cannot be written). exec and run return the command's own code (128+N when "
      "it died of signal N), and 128+N when airlockctl itself gets signal N while the command waits to start (for "
      "a person's approval: the request is withdrawn, nothing runs).";

QString optionNames(const QCommandLineOption &o)
{
    QStringList names;
    for (const QString &n : o.names())
        names.append(n.size() == 1 ? QStringLiteral("-") + n : QStringLiteral("--") + n);
    return names.join(QLatin1Char(' '));
}
// Text broken into lines of at most `width` characters, each after `indent` spaces but the first.
QString wrapped(const QString &text, int indent, int width = 100)
{
    QString out, line;
    for (const QString &word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (!line.isEmpty() && indent + line.size() + 1 + word.size() > width) {
            out += line + QLatin1Char('\n') + QString(indent, QLatin1Char(' '));
            line.clear();
        }
        line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
    }
    return out + line;
}

// A command's options for a completion: its own and the ones every command takes.
QString commandOptions(const Command &command)
{
    QStringList options{QStringLiteral("--help --json --verbose")};
    for (const QCommandLineOption &o : command.options())
        options.append(optionNames(o));
    return options.join(QLatin1Char(' '));
}

// A command's options that take a value (whose next word is that value, not a positional).
QString valueOptions(const Command &command)
{
    QStringList options;
    for (const QCommandLineOption &o : command.options())
        if (!o.valueName().isEmpty())
            options.append(optionNames(o));
    return options.join(QLatin1Char(' '));
}

// What goes where among a command's positional words, read from its usage: alternatives split
// by '|', each a list of SANDBOX (a sandbox name; SANDBOX... for any number), HOST, a literal
// sub-command (first word only) or _ (anything else: nothing is offered). Options and what
// follows "--" are left out. "policy": "presets|show SANDBOX|set SANDBOX _|…".
QString positionalShape(const Command &command)
{
    QStringList alternatives;
    for (const QString &alternative : command.usage().split(QStringLiteral(" | "))) {
        QStringList kinds;
        int depth = 0; // inside an option's [..] or (..), or a bracket group of several words
        const QStringList tokens = alternative.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        for (const QString &token : tokens) {
            const bool opens = token.startsWith(QLatin1Char('[')) || token.startsWith(QLatin1Char('('));
            const int balance = int(token.count(QLatin1Char('[')) + token.count(QLatin1Char('(')))
                - int(token.count(QLatin1Char(']')) + token.count(QLatin1Char(')')));
            if (depth > 0) {
                depth += balance;
                continue;
            }
            if (token == QLatin1String("--"))
                break;
            if (token.startsWith(QLatin1Char('-')) || token.startsWith(QLatin1String("[-")) || (opens && balance > 0)) {
                depth = std::max(0, balance);
                continue;
            }
            QString word = token;
            word.remove(QLatin1Char('[')).remove(QLatin1Char(']'));
            const bool many = word.endsWith(QLatin1String("..."));
            word.chop(many ? 3 : 0);
            static const QRegularExpression literal(QStringLiteral("^[a-z]+$"));
            QString kind = word == QLatin1String("SANDBOX") ? word
                : command.name() == QLatin1String("hosts") && word.startsWith(QLatin1String("NAME")) && !kinds.isEmpty()
                    && kinds.first() != QLatin1String("add")
                ? QStringLiteral("HOST")
                : &token == &tokens.first() && literal.match(word).hasMatch() ? word
                                                                              : QStringLiteral("_");
            kinds.append(many ? kind + QStringLiteral("...") : kind);
        }
        alternatives.append(kinds.join(QLatin1Char(' ')));
    }
    return alternatives.join(QLatin1Char('|'));
}
} // namespace

QList<QCommandLineOption> globalOptions()
{
    return {
        {QStringLiteral("host"),
            QStringLiteral("Talk to another daemon: a name from 'airlockctl hosts', or unix:///path/to/airlockd.sock, "
                           "ssh://[user@]host or "
                           "wss://host:port#sha256=FINGERPRINT (also AIRLOCK_HOST). Without it: the host chosen with "
                           "'airlockctl hosts use', "
                           "else this machine's own daemon."),
            QStringLiteral("NAME|URL")},
        {QStringLiteral("socket"), QStringLiteral("This machine's daemon at another socket."), QStringLiteral("PATH")},
        {QStringLiteral("run"),
            QStringLiteral("Group this work with an agent session's in the history (also AIRLOCK_RUN); without it, "
                           "each invocation is its own run."),
            QStringLiteral("NAME")},
        {QStringLiteral("agent"),
            QStringLiteral("Act for an agent (also AIRLOCK_AGENT): its commands go through the sandbox's command "
                           "rules, and those that ask "
                           "wait for 'airlockctl approve'."),
            QStringLiteral("NAME")},
        {QStringLiteral("no-autostart"), QStringLiteral("Never start airlockd; fail when none answers.")},
        {QStringLiteral("json"), QStringLiteral("Machine-readable JSON output.")},
        {QStringLiteral("verbose"), QStringLiteral("Log debug messages to stderr.")},
        {QStringLiteral("version"), QStringLiteral("Print the version.")},
        {QStringLiteral("help"), QStringLiteral("Print this help.")},
    };
}

void printHelp(QTextStream &out, const std::vector<std::unique_ptr<Command>> &commands)
{
    out << "Usage: airlockctl [--host NAME|URL] [--socket PATH] [--run NAME] [--agent NAME] [--no-autostart] COMMAND "
           "[options] [--json] [--verbose]\n\n"
           "Airlock: sandboxes for the code AI agents run. The daemon (airlockd) is started on demand.\n\nCommands:\n";
    for (const auto &c : commands)
        out << "  " << c->name().leftJustified(9) << ' '
            << wrapped(c->summary().section(QLatin1Char('.'), 0, 0) + QLatin1Char('.'), 12) << '\n';
    out << "\nOptions before the command:\n";
    for (const QCommandLineOption &o : globalOptions()) {
        const QString term = optionNames(o) + (o.valueName().isEmpty() ? QString() : QLatin1Char(' ') + o.valueName());
        out << "  " << term.leftJustified(18) << ' ' << wrapped(o.description(), 21) << '\n';
    }
    out << '\n'
        << wrapped(QStringLiteral("Exit codes: ") + QLatin1String(kExitCodes), 0)
        << "\nRun 'airlockctl COMMAND --help' for a command's options; 'man airlockctl' for all of them.\n";
    out.flush();
}

QString manualPage(const std::vector<std::unique_ptr<Command>> &commands)
{
    app::ManPage page(
        QStringLiteral("airlockctl"), QStringLiteral("sandboxes for the code AI agents run, from the command line"));
    page.synopsis(QStringLiteral(
        "[--host NAME|URL] [--socket PATH] [--run NAME] [--agent NAME] [--no-autostart] COMMAND [options]"));
    page.paragraphs(QStringLiteral("Description"),
        QStringLiteral(
            "airlockctl creates sandboxes, runs commands in them with live output, moves files, edits their policies, "
            "decides what agents ask for, and reads the history of every run. It talks to this user's daemon, "
            "airlockd(1), which it starts on demand, or to another host's over ssh:// or wss://.\n\n"
            "airlockctl mcp is the Model Context Protocol server that agents connect to."));
    page.options(QStringLiteral("Options"), globalOptions(), QStringLiteral("These come before the command."));
    page.paragraphs(
        QStringLiteral("Commands"), QStringLiteral("Every command also takes --json, --verbose and --help."));
    for (const auto &c : commands)
        page.subsection(QStringLiteral("%1 %2").arg(c->name(), c->usage()), c->summary(), c->options());
    page.paragraphs(QStringLiteral("Exit status"), QLatin1String(kExitCodes));
    page.definitions(QStringLiteral("Environment"),
        {{QStringLiteral("AIRLOCK_HOST"), QStringLiteral("The daemon to use, as --host.")},
            {QStringLiteral("AIRLOCK_RUN"), QStringLiteral("The run, as --run.")},
            {QStringLiteral("AIRLOCK_AGENT"), QStringLiteral("The agent, as --agent.")},
            {QStringLiteral("AIRLOCK_TOKEN"),
                QStringLiteral("The token for a wss:// URL given directly (a saved host keeps its own).")},
            {QStringLiteral("AIRLOCK_SSH"), QStringLiteral("The ssh program for ssh:// hosts (default ssh).")}});
    page.definitions(QStringLiteral("Files"),
        {{QStringLiteral("$XDG_CONFIG_HOME/airlock/policy.json"), QStringLiteral("Your defaults for new sandboxes.")},
            {QStringLiteral("$XDG_CONFIG_HOME/airlock/hosts.json"), QStringLiteral("Saved hosts (airlockctl hosts).")},
            {QStringLiteral("$XDG_CONFIG_HOME/airlock/tools/"),
                QStringLiteral("Host tool declarations; examples in /usr/share/airlock/tools.")},
            {QStringLiteral("$XDG_DATA_HOME/airlock/history.db"), QStringLiteral("The history (SQLite).")},
            {QStringLiteral("$XDG_RUNTIME_DIR/airlock/airlockd.sock"),
                QStringLiteral("The daemon's socket (without XDG_RUNTIME_DIR: /run/user/UID/airlock/ when yours, else "
                               "$XDG_STATE_HOME/airlock/run/).")}});
    page.paragraphs(QStringLiteral("See also"), QStringLiteral("airlockd(1), airlock(1)"));
    return page.render(airlock::version());
}

QString completionScript(const QString &shell, const std::vector<std::unique_ptr<Command>> &commands)
{
    QStringList names, globals;
    for (const auto &c : commands)
        names.append(c->name());
    for (const QCommandLineOption &o : globalOptions())
        globals.append(optionNames(o));
    // Sandbox names from a daemon that is already running (the first column of 'ls').
    const QString sandboxes = QStringLiteral("airlockctl --no-autostart ls 2>/dev/null | awk 'NR>1 {print $1}'");
    if (shell == QLatin1String("bash")) {
        QString cases;
        for (const auto &c : commands)
            cases += QStringLiteral("        %1) opts=\"%2\" values=\"%3\" shape=\"%4\";;\n")
                         .arg(c->name(), commandOptions(*c), valueOptions(*c), positionalShape(*c));
        // Sandbox names only where a sandbox goes (by position, after --sandbox), saved host
        // names after --host; a value of another option, or a word after "--", is left to the
        // shell's own completion (files).
        return QStringLiteral(
            "# bash completion for airlockctl (written by 'airlockctl --completion bash')\n"
            "_airlockctl_sandboxes() {\n"
            "    airlockctl ${1:+--host \"$1\"} --no-autostart ls 2>/dev/null | awk 'NR>1 {print $1}'\n"
            "}\n"
            "_airlockctl_hosts() {\n"
            "    airlockctl hosts ls 2>/dev/null | cut -c3- | awk '{print $1}'\n"
            "}\n"
            "_airlockctl() {\n"
            "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command= host= i w opts= values= "
            "shape= kind alt\n"
            "    local -a pos=() alts=() words=()\n"
            "    COMPREPLY=()\n"
            "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
            "        case ${COMP_WORDS[i]} in\n"
            "            --host) host=${COMP_WORDS[i+1]}; ((i++));;\n"
            "            --socket|--run|--agent) ((i++));;\n"
            "            -*) ;;\n"
            "            *) command=${COMP_WORDS[i]}; break;;\n"
            "        esac\n"
            "    done\n"
            "    case $prev in\n"
            "        --host) COMPREPLY=($(compgen -W \"$(_airlockctl_hosts)\" -- \"$cur\")); return;;\n"
            "        --socket|--run|--agent) [[ -z $command ]] && return;;\n"
            "    esac\n"
            "    if [[ -z $command ]]; then\n"
            "        COMPREPLY=($(compgen -W \"%1 %2\" -- \"$cur\"))\n"
            "        return\n"
            "    fi\n"
            "    case $command in\n%3"
            "    esac\n"
            "    for ((i++; i < COMP_CWORD; i++)); do\n"
            "        w=${COMP_WORDS[i]}\n"
            "        [[ $w == -- ]] && return\n"
            "        if [[ \" $values \" == *\" $w \"* ]]; then ((i++)); continue; fi\n"
            "        [[ $w == -* ]] || pos+=(\"$w\")\n"
            "    done\n"
            "    if [[ $prev == --sandbox ]]; then\n"
            "        COMPREPLY=($(compgen -W \"$(_airlockctl_sandboxes \"$host\")\" -- \"$cur\"))\n"
            "        return\n"
            "    fi\n"
            "    [[ \" $values \" == *\" $prev \"* ]] && return\n"
            "    if [[ $cur == -* ]]; then\n"
            "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
            "        return\n"
            "    fi\n"
            "    IFS='|' read -ra alts <<<\"$shape\"\n"
            "    for alt in \"${alts[@]}\"; do\n"
            "        read -ra words <<<\"$alt\"\n"
            "        ((${#words[@]})) || continue\n"
            "        if ((${#pos[@]})) && [[ ${words[0]} =~ ^[a-z]+$ && ${words[0]} != \"${pos[0]}\" ]]; then "
            "continue; fi\n"
            "        if ((${#pos[@]} < ${#words[@]})); then kind=${words[${#pos[@]}]}\n"
            "        elif [[ ${words[${#words[@]}-1]} == *... ]]; then kind=${words[${#words[@]}-1]}\n"
            "        else continue; fi\n"
            "        case ${kind%...} in\n"
            "            SANDBOX) COMPREPLY+=($(compgen -W \"$(_airlockctl_sandboxes \"$host\")\" -- \"$cur\"));;\n"
            "            HOST) COMPREPLY+=($(compgen -W \"$(_airlockctl_hosts)\" -- \"$cur\"));;\n"
            "            _) ;;\n"
            "            *) COMPREPLY+=($(compgen -W \"${kind%...}\" -- \"$cur\"));;\n"
            "        esac\n"
            "    done\n"
            "}\n"
            "complete -o default -F _airlockctl airlockctl\n")
            .arg(names.join(QLatin1Char(' ')), globals.join(QLatin1Char(' ')), cases);
    }
    if (shell == QLatin1String("zsh")) {
        QString described, cases;
        for (const auto &c : commands) {
            QString summary = c->summary().section(QLatin1Char('.'), 0, 0);
            summary.replace(QLatin1Char('\''), QStringLiteral("'\\''"))
                .replace(QLatin1Char(':'), QStringLiteral("\\:"));
            described += QStringLiteral("        '%1:%2'\n").arg(c->name(), summary);
            cases += QStringLiteral("        %1) opts=(%2);;\n").arg(c->name(), commandOptions(*c));
        }
        return QStringLiteral(
            "#compdef airlockctl\n"
            "# zsh completion for airlockctl (written by 'airlockctl --completion zsh')\n"
            "_airlockctl() {\n"
            "    local -a commands opts\n"
            "    commands=(\n%1    )\n"
            "    local command i\n"
            "    for ((i = 2; i < CURRENT; i++)); do\n"
            "        case ${words[i]} in\n"
            "            --host|--socket|--run|--agent) ((i++));;\n"
            "            -*) ;;\n"
            "            *) command=${words[i]}; break;;\n"
            "        esac\n"
            "    done\n"
            "    if [[ -z $command ]]; then\n"
            "        if [[ ${words[CURRENT]} == -* ]]; then compadd -- %2; else _describe 'command' commands; fi\n"
            "        return\n"
            "    fi\n"
            "    case $command in\n%3"
            "    esac\n"
            "    if [[ ${words[CURRENT]} == -* ]]; then\n"
            "        compadd -- $opts\n"
            "    else\n"
            "        compadd -- ${(f)\"$(%4)\"}\n"
            "        _files\n"
            "    fi\n"
            "}\n"
            "_airlockctl \"$@\"\n")
            .arg(described, globals.join(QLatin1Char(' ')), cases, sandboxes);
    }
    return {};
}

} // namespace airlock::cli
