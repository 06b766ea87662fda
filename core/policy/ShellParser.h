// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QList>
#include <QStringList>

namespace airlock::policy {

// One thing a shell string would do, to be judged on its own: a simple command (its words after
// quote removal), or a redirect (`>`/`>>`/`<` and its target), found anywhere in the string:
// between ; && || | &, inside $(…) and backticks, inside double quotes.
struct ShellSegment {
    QStringList argv;
    // The program is chosen at run time ($VAR, $(…), a glob in command position): no rule about a
    // program can cover it.
    bool dynamicProgram = false;
    QStringList assignments; // NAME=… words before it: environment it runs with
    // Indexes into argv of the words whose value is only known at run time: an expansion
    // ($x, "$x", $(…)), a glob, or words added by xargs and find's {}. Such a word can be
    // anything, an option included.
    QList<qsizetype> runtimeWords;
};

// A conservative parser of POSIX shell command strings for policy checks. It does not execute or
// expand anything. What it cannot follow with certainty (control structures, subshells, here
// documents, unbalanced quotes) is an error, so that the caller asks a person rather than guess.
Result<QList<ShellSegment>> parseShell(const QString &script);

} // namespace airlock::policy
