// SPDX-License-Identifier: Apache-2.0
// What tst_gvisor and tst_gvisor_outlive share: gVisor's processes of a daemon or a sandbox, as the
// host sees them, a sandbox's workspace, and a file's text.
#pragma once

#include "TestDaemon.h"
#include "TestHelpers.h"

#include <QByteArray>
#include <QFile>
#include <QList>
#include <QString>

namespace airlock::test {

// Processes of gVisor's for this daemon (runsc, its gofer and sentry name the bundle, which is
// in the daemon's workspaces folder).
inline QList<qint64> runscProcessesOf(const QString &dataDir)
{
    QList<qint64> found;
    for (qint64 pid : pidsWithCommandLine(QFile::encodeName(dataDir)))
        if (QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
            f.open(QIODevice::ReadOnly) && f.readAll().contains("runsc"))
            found.append(pid);
    return found;
}

inline QByteArray fileText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline QString workspaceOf(const TestDaemon &d, const QString &sandbox)
{
    return sandboxInfo(d, sandbox).value(QStringLiteral("workspace")).toString();
}

} // namespace airlock::test
