// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QStringList>

#include <limits>

namespace airlock::policy {

// What Airlock knows about programs that start other programs or run code through their
// arguments: python -c, git --upload-pack, tar --to-command, npm install's scripts, a pip install
// of a local project, sed's e command, test -v 'a[$(cmd)]'. A prefix rule about the program alone
// must not cover those forms.
struct Coverage {
    static constexpr int kNoPrefixRule = std::numeric_limits<int>::max();
    // A rule must have more words than this to cover the argv (so it names the risky part), or
    // kNoPrefixRule: only an exact rule (a person's "always" for that very argv) covers it.
    int words = 0;
    QString reason; // for a person: what the form does
};

// `runtime`: indexes of the argv words known only at run time (see ShellSegment::runtimeWords).
Coverage requiredCoverage(const QStringList &argv, const QList<qsizetype> &runtime = {});

QString programName(const QString &program); // the basename

} // namespace airlock::policy
