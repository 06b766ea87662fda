// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QStringList>

// What a person is shown about a command before deciding on it (the approval card, `airlockctl
// approvals`): the commands it is made of, and what in it deserves a second look.
namespace airlock::policy {

// The commands a decision on `argv` is about: those of its `sh -c` script when the script can be
// read (redirects as `> FILE`), else `argv` itself.
QList<QStringList> commandParts(const QStringList &argv);

// One line, for a person: what stands out in `argv` ("pipes a download into a shell; deletes
// recursively; starts a network client: curl"), empty when nothing does. A hint beside the rules'
// verdict, never a verdict itself.
QString riskSummary(const QStringList &argv);

// The files that `argv` runs or reads as code, as it names them (relative to its working
// directory): a shell's or an interpreter's script, `source`/`.` files, make's -f/--file (and,
// without one, its default makefiles, `optional`), a program given by a relative path. An approval
// binds their content.
struct CodeFile {
    QString path;
    bool optional = false; // make's default makefiles: bound only when there
    QString problem; // why it cannot be bound (code from stdin, a module, after a cd): shown so
};
QList<CodeFile> codeFiles(const QStringList &argv);

} // namespace airlock::policy
