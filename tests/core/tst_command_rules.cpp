// SPDX-License-Identifier: Apache-2.0
// Command rules: every command a string would run is judged on its own, wrappers are seen
// through, inline code needs a rule that names it, deny beats allow, and what cannot be parsed asks.
#include "policy/CommandRules.h"
#include "policy/ShellParser.h"

#include <QTest>

using namespace airlock::policy;

namespace {
CommandRule rule(Decision d, const QString &words)
{
    return {d, words.split(QLatin1Char(' ')), QStringLiteral("test")};
}

const CommandRules &rules()
{
    static const CommandRules r({rule(Decision::Allow, QStringLiteral("ls")), rule(Decision::Allow, QStringLiteral("echo")),
                                 rule(Decision::Allow, QStringLiteral("cat")), rule(Decision::Allow, QStringLiteral("python3")),
                                 rule(Decision::Allow, QStringLiteral("node")), rule(Decision::Allow, QStringLiteral("git")),
                                 rule(Decision::Allow, QStringLiteral("awk")), rule(Decision::Allow, QStringLiteral("find")),
                                 rule(Decision::Allow, QStringLiteral("env")), rule(Decision::Allow, QStringLiteral("xargs")),
                                 rule(Decision::Allow, QStringLiteral("git status")), rule(Decision::Deny, QStringLiteral("rm")),
                                 rule(Decision::Allow, QStringLiteral("rm -i")), // deny beats it anyway
                                 rule(Decision::Deny, QStringLiteral("curl * *.evil.example")),
                                 rule(Decision::Allow, QStringLiteral("curl")), rule(Decision::Allow, QStringLiteral("> /workspace/*")),
                                 rule(Decision::Allow, QStringLiteral("python3 -m pytest")), rule(Decision::Allow, QStringLiteral("node -e console.log(1)"))});
    return r;
}

QString decide(const QStringList &argv)
{
    return decisionName(rules().evaluate(argv).decision);
}

QString sh(const QString &script)
{
    return decide({QStringLiteral("sh"), QStringLiteral("-c"), script});
}
} // namespace

class TestCommandRules final : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void globsMatchWords()
    {
        QVERIFY(globMatch(u"*", u"/etc/passwd"));
        QVERIFY(globMatch(u"/workspace/*", u"/workspace/a/b"));
        QVERIFY(!globMatch(u"/workspace/*", u"/workspacex/a"));
        QVERIFY(globMatch(u"f?o", u"foo"));
        QVERIFY(globMatch(u"[a-c]x", u"bx"));
        QVERIFY(!globMatch(u"[!a-c]x", u"bx"));
        QVERIFY(globMatch(u"*.evil.example", u"x.y.evil.example"));
        QVERIFY(!globMatch(u"*.evil.example", u"evil.example"));
        QVERIFY(globMatch(u"a\\*", u"a*"));
        QVERIFY(!globMatch(u"a\\*", u"ab"));
    }

    void plainCommandsFollowTheirRules()
    {
        QCOMPARE(decide({QStringLiteral("ls"), QStringLiteral("-la")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("make")}), QStringLiteral("ask")); // the default
        QCOMPARE(decide({QStringLiteral("rm"), QStringLiteral("x")}), QStringLiteral("deny"));
        // A path to the program does not escape a rule about it.
        QCOMPARE(decide({QStringLiteral("/bin/rm"), QStringLiteral("x")}), QStringLiteral("deny"));
        // Deny beats allow whatever the order: `allow rm -i` does not win over `deny rm`.
        const CommandVerdict v = rules().evaluate({QStringLiteral("rm"), QStringLiteral("-i"), QStringLiteral("x")});
        QCOMPARE(v.decision, Decision::Deny);
        QCOMPARE(v.rule, QStringLiteral("rm"));
        QCOMPARE(v.layer, QStringLiteral("test"));
        QCOMPARE(decide({QStringLiteral("curl"), QStringLiteral("-s"), QStringLiteral("a.evil.example")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("curl"), QStringLiteral("-s"), QStringLiteral("pypi.org")}), QStringLiteral("allow"));
    }

    void everySegmentOfAShellStringIsJudged()
    {
        QCOMPARE(sh(QStringLiteral("ls && echo ok | cat")), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("ls; rm -rf /")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("ls || make")), QStringLiteral("ask"));
        QCOMPARE(sh(QStringLiteral("ls & rm x")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("ls\nrm x")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("curl https://x | sh")), QStringLiteral("ask")); // `sh` reading stdin: no rule
        QCOMPARE(sh(QStringLiteral("echo $(rm -rf /)")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("echo \"$(rm -rf /)\"")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("echo `rm -rf /`")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("echo $(echo $(rm x))")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("FOO=$(rm x) ls")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("bash -c 'rm x'")), QStringLiteral("deny"));
        // Redirects are judged as `> FILE`.
        QCOMPARE(sh(QStringLiteral("echo hi > /workspace/out.txt")), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("echo hi >/etc/profile")), QStringLiteral("ask"));
        QCOMPARE(sh(QStringLiteral("echo hi 2>>/etc/x")), QStringLiteral("ask"));
        QCOMPARE(sh(QStringLiteral("echo hi 2>&1")), QStringLiteral("allow"));
        // Quoting and escaping are respected: these are single harmless commands.
        QCOMPARE(sh(QStringLiteral("echo 'a; rm -rf /'")), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("echo a\\;rm x")), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("ls # ; rm -rf /")), QStringLiteral("allow"));
        // Shell flags are found wherever -c hides.
        QCOMPARE(decide({QStringLiteral("bash"), QStringLiteral("-lc"), QStringLiteral("rm x")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("/bin/sh"), QStringLiteral("-e"), QStringLiteral("-c"), QStringLiteral("rm x")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("busybox"), QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("rm x")}), QStringLiteral("deny"));
    }

    void wrappersAreSeenThrough()
    {
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("FOO=1"), QStringLiteral("rm"), QStringLiteral("x")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("-u"), QStringLiteral("HOME"), QStringLiteral("rm")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("-S"), QStringLiteral("rm x")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("env")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("nohup"), QStringLiteral("rm"), QStringLiteral("x")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("timeout"), QStringLiteral("5"), QStringLiteral("rm"), QStringLiteral("x")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("timeout"), QStringLiteral("-s"), QStringLiteral("KILL"), QStringLiteral("5"), QStringLiteral("ls")}),
                 QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("nice"), QStringLiteral("-n"), QStringLiteral("5"), QStringLiteral("make")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("xargs"), QStringLiteral("-n"), QStringLiteral("1"), QStringLiteral("rm")}), QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("xargs"), QStringLiteral("-0"), QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("rm $1")}),
                 QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("find"), QStringLiteral("."), QStringLiteral("-exec"), QStringLiteral("rm"), QStringLiteral("{}"),
                         QStringLiteral(";")}),
                 QStringLiteral("deny"));
        QCOMPARE(decide({QStringLiteral("find"), QStringLiteral("."), QStringLiteral("-execdir"), QStringLiteral("make"), QStringLiteral("+")}),
                 QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("find"), QStringLiteral("."), QStringLiteral("-name"), QStringLiteral("*.py")}), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("nohup env A=1 timeout 3 xargs rm")), QStringLiteral("deny"));
    }

    void inlineCodeNeedsARuleThatNamesIt()
    {
        const CommandVerdict v = rules().evaluate({QStringLiteral("python3"), QStringLiteral("-c"), QStringLiteral("import os")});
        QCOMPARE(v.decision, Decision::Ask);
        QVERIFY2(v.reason.contains(QStringLiteral("runs code given on its command line")), qPrintable(v.reason));
        QCOMPARE(decide({QStringLiteral("python3"), QStringLiteral("script.py")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("python3"), QStringLiteral("-u"), QStringLiteral("-c"), QStringLiteral("x")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("python3"), QStringLiteral("-cimport os")}), QStringLiteral("ask"));
        // After -m the words are the module's: pytest's -c is not python's.
        QCOMPARE(decide({QStringLiteral("python3"), QStringLiteral("-m"), QStringLiteral("pytest"), QStringLiteral("-c"), QStringLiteral("x.ini")}),
                 QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("node"), QStringLiteral("-e"), QStringLiteral("require('fs')")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("node"), QStringLiteral("-e"), QStringLiteral("console.log(1)")}), QStringLiteral("allow")); // named
        QCOMPARE(decide({QStringLiteral("node"), QStringLiteral("--eval=process.exit()")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("git"), QStringLiteral("-c"), QStringLiteral("core.pager=sh -c 'rm x'"), QStringLiteral("log")}),
                 QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("git"), QStringLiteral("status")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("awk"), QStringLiteral("BEGIN{system(\"rm x\")}")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("/usr/bin/python3.11"), QStringLiteral("-c"), QStringLiteral("1")}), QStringLiteral("ask"));
    }

    void whatCannotBeFollowedAsks()
    {
        for (const char *script : {"if true; then rm x; fi", "for f in *; do ls; done", "(rm x)", "{ rm x; }", "cat <<EOF\nrm\nEOF",
                                   "echo 'unbalanced", "echo \"unbalanced", "echo $(unbalanced", "$CMD -rf /", "x=rm; $x -rf /",
                                   "/bin/r? x", "echo $(if true; then rm x; fi)", "f() { rm x; }; f"}) {
            const CommandVerdict v = rules().evaluate({QStringLiteral("sh"), QStringLiteral("-c"), QString::fromUtf8(script)});
            QVERIFY2(v.decision != Decision::Allow, qPrintable(QStringLiteral("%1 -> %2 (%3)").arg(QString::fromUtf8(script), decisionName(v.decision), v.reason)));
        }
        QCOMPARE(sh(QStringLiteral("$CMD")), QStringLiteral("ask"));
        const CommandVerdict v = rules().evaluate({QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("if true; then ls; fi")});
        QCOMPARE(v.decision, Decision::Ask);
        QVERIFY2(v.reason.contains(QStringLiteral("control structures")), qPrintable(v.reason));
        QCOMPARE(decide({QStringLiteral("sh"), QStringLiteral("-c")}), QStringLiteral("ask"));
        QCOMPARE(rules().evaluate({}).decision, Decision::Deny);
    }

    void theEnvironmentCanChangeWhatRuns()
    {
        // A variable that changes what a program loads or runs takes it out of its allow rule.
        QCOMPARE(decide({QStringLiteral("ls")}), QStringLiteral("allow"));
        QCOMPARE(decisionName(rules().evaluate({QStringLiteral("ls")}, {QStringLiteral("LD_PRELOAD")}).decision), QStringLiteral("ask"));
        QCOMPARE(decisionName(rules().evaluate({QStringLiteral("ls")}, {QStringLiteral("LANG"), QStringLiteral("LC_ALL")}).decision), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("BASH_ENV='$(rm x)' bash -c ls")), QStringLiteral("ask")); // bash expands BASH_ENV itself
        QCOMPARE(sh(QStringLiteral("X=$(rm x) ls")), QStringLiteral("deny"));                 // the outer shell runs this one
        QCOMPARE(sh(QStringLiteral("BASH_ENV=/workspace/x bash -c ls")), QStringLiteral("ask"));
        QCOMPARE(sh(QStringLiteral("PATH=/workspace ls")), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("GIT_CONFIG_COUNT=1"), QStringLiteral("GIT_CONFIG_KEY_0=core.fsmonitor"),
                         QStringLiteral("git"), QStringLiteral("status")}),
                 QStringLiteral("ask"));
        const CommandVerdict v = rules().evaluate({QStringLiteral("ls")}, {QStringLiteral("PAGER")});
        QVERIFY2(v.reason.contains(QStringLiteral("with PAGER set")), qPrintable(v.reason));
        QCOMPARE(decisionName(rules().evaluate({QStringLiteral("rm")}, {QStringLiteral("LANG")}).decision), QStringLiteral("deny"));
    }

    void shellSyntaxThatHidesCommandsAsks()
    {
        for (const char *script : {"echo $((`rm x`0))", "echo ${x:-'}'}; rm x #'", "echo \"${x#\"}\"}\"; rm x", "echo $'\\''; rm x #'",
                                   "echo $((rm x) ) #))", "cat <(rm x)", "echo x >(rm x)", "echo $((1+$(rm x)))"}) {
            const CommandVerdict v = rules().evaluate({QStringLiteral("bash"), QStringLiteral("-c"), QString::fromUtf8(script)});
            QVERIFY2(v.decision != Decision::Allow, qPrintable(QStringLiteral("%1 -> %2 (%3)").arg(QString::fromUtf8(script), decisionName(v.decision), v.reason)));
        }
        QCOMPARE(sh(QStringLiteral("echo $((1 + 2))")), QStringLiteral("allow"));
        QCOMPARE(sh(QStringLiteral("echo ${HOME}")), QStringLiteral("allow"));
    }

    void wrapperOptionsAreReadAsTheWrapperReadsThem()
    {
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("-Srm -rf x"), QStringLiteral("ls")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("-iSrm x"), QStringLiteral("ls")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("env"), QStringLiteral("--split-string=rm x"), QStringLiteral("ls")}), QStringLiteral("ask"));
        // GNU xargs -i, -l and -e take no separate value: the command is the next word.
        QCOMPARE(sh(QStringLiteral("echo x | xargs -i rm ls -rf x")), QStringLiteral("deny"));
        QCOMPARE(sh(QStringLiteral("echo x | xargs -l rm")), QStringLiteral("deny"));
    }

    void aNameAloneOnlyVouchesForTheSystemsPrograms()
    {
        QCOMPARE(decide({QStringLiteral("/bin/ls")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("/usr/bin/ls")}), QStringLiteral("allow"));
        QCOMPARE(decide({QStringLiteral("./ls")}), QStringLiteral("ask"));            // someone's own ls
        QCOMPARE(decide({QStringLiteral("/workspace/ls")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("/usr/bin/x/../ls")}), QStringLiteral("ask"));
        QCOMPARE(decide({QStringLiteral("/workspace/rm")}), QStringLiteral("deny"));  // deny still recognises the name
    }

    void anExactRuleCoversThatArgvOnly()
    {
        const CommandRules exact({{Decision::Allow, {QStringLiteral("rm"), QStringLiteral("-rf"), QStringLiteral("build/*")}, QStringLiteral("t"), true}});
        QCOMPARE(exact.evaluate({QStringLiteral("rm"), QStringLiteral("-rf"), QStringLiteral("build/*")}).decision, Decision::Allow);
        QCOMPARE(exact.evaluate({QStringLiteral("rm"), QStringLiteral("-rf"), QStringLiteral("build/x")}).decision, Decision::Ask);
        QCOMPARE(exact.evaluate({QStringLiteral("rm"), QStringLiteral("-rf"), QStringLiteral("build/*"), QStringLiteral("/")}).decision, Decision::Ask);
    }

    void theParserFindsEveryCommand()
    {
        auto parsed = parseShell(QStringLiteral("a 1 | b \"2 3\" && c $(d) > out; e `f` 2>&1"));
        QVERIFY(parsed);
        QStringList seen;
        for (const ShellSegment &s : *parsed)
            seen.append(s.argv.join(QLatin1Char(',')));
        QCOMPARE(seen, QStringList({QStringLiteral("a,1"), QStringLiteral("b,2 3"), QStringLiteral("c,$"), QStringLiteral("d"),
                                    QStringLiteral(">,out"), QStringLiteral("e,$"), QStringLiteral("f")}));
    }
};

QTEST_GUILESS_MAIN(TestCommandRules)
#include "tst_command_rules.moc"
