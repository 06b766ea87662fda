// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the strings an agent asks to run. The bytes are a shell command string (for
// the shell parser and for `sh -c`) and, split at NUL bytes, an argv, judged by the command rules
// of the shipped presets as the daemon judges a request and a program started in a sandbox.
// Must end in a verdict or a parse error; never a crash or a hang.
#include "policy/CommandRules.h"
#include "policy/Policy.h"
#include "policy/ShellParser.h"

#include <QList>

using namespace airlock::policy;

namespace {
const QList<CommandRules> &presetRules()
{
    static const QList<CommandRules> rules = [] {
        QList<CommandRules> all;
        for (const QString &name : presetNames()) {
            auto resolved = resolve({{QStringLiteral("builtin"), builtinDefaults()},
                {QStringLiteral("preset:") + name, preset(name).value()}});
            if (!resolved)
                abort(); // a shipped preset that does not resolve is a bug of its own
            all.append(resolved->commands);
        }
        // Rules of every kind: globs, exact words, a deny that applies at any depth, code options.
        const auto rule = [](Decision decision, QStringList words, bool exact = false) {
            return CommandRule{decision, std::move(words), QStringLiteral("sandbox"), exact};
        };
        all.append(CommandRules(
            {rule(Decision::Allow, {QStringLiteral("git"), QStringLiteral("status")}),
                rule(Decision::Allow, {QStringLiteral("python3"), QStringLiteral("-c"), QStringLiteral("print(*)")}),
                rule(Decision::Deny, {QStringLiteral("rm"), QStringLiteral("-rf"), QStringLiteral("*")}),
                rule(Decision::Allow, {QStringLiteral("ls")}, true),
                rule(Decision::Allow, {QStringLiteral("/usr/bin/[a-z]?*")})},
            Decision::Ask, {rule(Decision::Ask, {QStringLiteral("curl")})}));
        return all;
    }();
    return rules;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    const QString script = QString::fromUtf8(bytes);
    (void)parseShell(script);
    QStringList argv;
    for (const QByteArray &word : bytes.split('\0'))
        argv.append(QString::fromUtf8(word));
    const QStringList shell{QStringLiteral("sh"), QStringLiteral("-c"), script};
    for (const CommandRules &rules : presetRules()) {
        (void)rules.evaluate(shell);
        (void)rules.evaluate(argv, {QStringLiteral("LD_PRELOAD")});
        (void)rules.evaluateNested(argv);
    }
    (void)CommandRules::namedPrograms(shell);
    (void)CommandRules::namedPrograms(argv);
    (void)globMatch(argv.value(0), argv.value(1));
    return 0;
}
