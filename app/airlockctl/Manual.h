// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "Command.h"

namespace airlock::cli {

// airlockctl's options before the command: one table for --help, the manual page and the
// shell completions.
QList<QCommandLineOption> globalOptions();

void printHelp(QTextStream &out, const std::vector<std::unique_ptr<Command>> &commands);
QString manualPage(const std::vector<std::unique_ptr<Command>> &commands); // man(7)
// A completion script for "bash" or "zsh": commands, their options, and sandbox names (asked of
// a running daemon, never starting one); empty for another shell.
QString completionScript(const QString &shell, const std::vector<std::unique_ptr<Command>> &commands);

} // namespace airlock::cli
