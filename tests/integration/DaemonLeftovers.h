// SPDX-License-Identifier: Apache-2.0
// tst_daemon's leftovers: processes a command leaves running in a sandbox, one in the background and
// one double-forked into a session of its own, and how the host sees them (or, under gVisor, the
// gVisor processes that hold them).
#pragma once

#include "TestDaemon.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

namespace {
using namespace airlock::test;
// The processes a test leaves running in a sandbox, named by a number no other suite uses. On the
// host their command lines end in "sleep N\0": the trailing space keeps "sleep 7301" from matching
// "sleep 73010".

struct Leftovers {
    int n = 0;
    // Under gVisor the sandbox's processes are gVisor's tasks, not the host's: what stands for them
    // on the host is gVisor's own processes (runsc, its gofer and sentry), which name the bundle.
    QByteArray gvisorBundle;
    QByteArray plain() const { return QByteArray("sleep ") + QByteArray::number(n) + ' '; }
    QByteArray detached() const { return QByteArray("sleep ") + QByteArray::number(n + 1) + ' '; }
    // One background child, and one that double-forked into its own session: its parent exits,
    // so it is reparented to the sandbox's init and no process group or session reaches it.
    QString script() const
    {
        return QStringLiteral("sleep %1 & setsid sh -c \"sleep %2 &\" ; exit 0").arg(n).arg(n + 1);
    }
    QList<qint64> alive() const
    {
        if (!gvisorBundle.isEmpty())
            return pidsWithCommandLine(gvisorBundle);
        return pidsWithCommandLine(plain()) + pidsWithCommandLine(detached());
    }
    bool bothRunning() const
    {
        return !pidsWithCommandLine(plain()).isEmpty() && !pidsWithCommandLine(detached()).isEmpty();
    }
    QString describe() const
    {
        QStringList pids;
        for (qint64 p : alive())
            pids.append(QString::number(p));
        return QStringLiteral("still alive for sleep %1/%2: [%3]").arg(n).arg(n + 1).arg(pids.join(QLatin1Char(' ')));
    }
};
} // namespace
