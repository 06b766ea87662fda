// SPDX-License-Identifier: Apache-2.0
// A "remote host" for tests and benchmarks: a network namespace joined to this one by a veth
// pair. NET.1 and NET.5 are on this side, NET.2 on the other; removed again on destruction.
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

#include <unistd.h>

namespace airlock::test {

class NetnsPair {
public:
    NetnsPair()
        : m_id(QString::number(::getpid() % 100000))
        , m_net(QStringLiteral("10.%1.%2").arg(100 + (::getpid() / 250) % 100).arg(::getpid() % 250))
    {
    }
    ~NetnsPair()
    {
        if (m_up)
            run(QStringLiteral("ip link del %1; ip netns del %2").arg(hostInterface(), name()));
    }
    NetnsPair(const NetnsPair &) = delete;
    NetnsPair &operator=(const NetnsPair &) = delete;

    bool up(QByteArray *output)
    {
        m_up = run(
            QStringLiteral("ip netns add %1 && ip link add %2 type veth peer name %3 && ip link set %3 netns %1 && "
                           "ip addr add %4.1/24 dev %2 && ip addr add %4.5/24 dev %2 && ip link set %2 up && "
                           "ip -n %1 addr add %4.2/24 dev %3 && ip -n %1 link set %3 up && ip -n %1 link set lo up")
                .arg(name(), hostInterface(), remoteInterface(), m_net),
            output);
        return m_up;
    }
    // Takes this side of the link down or up again (the addresses stay).
    bool setLink(bool up)
    {
        return run(QStringLiteral("ip link set %1 %2")
                       .arg(hostInterface(), up ? QStringLiteral("up") : QStringLiteral("down")));
    }

    QString name() const { return QStringLiteral("alkns") + m_id; }
    QString hostInterface() const { return QStringLiteral("alkh") + m_id; }
    QString remoteInterface() const { return QStringLiteral("alkr") + m_id; } // in the namespace
    // IPv6 on the link as well: PREFIX::2 over there, PREFIX::1 and PREFIX::N here (a /64).
    bool addIPv6(const QString &prefix, const QStringList &localHosts)
    {
        QString command
            = QStringLiteral("ip -n %1 -6 addr add %2::2/64 dev %3 nodad").arg(name(), prefix, remoteInterface());
        for (const QString &host : localHosts)
            command += QStringLiteral(" && ip -6 addr add %1::%2/64 dev %3 nodad").arg(prefix, host, hostInterface());
        return run(command);
    }
    QString local() const { return m_net + QStringLiteral(".1"); }
    QString remote() const { return m_net + QStringLiteral(".2"); }
    QString other() const { return m_net + QStringLiteral(".5"); } // a second address on this side
    QStringList launcher() const
    {
        return {QStringLiteral("ip"), QStringLiteral("netns"), QStringLiteral("exec"), name()};
    }

    static bool run(const QString &command, QByteArray *output = nullptr)
    {
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), command});
        const bool ok = p.waitForFinished(20000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
        if (output)
            *output = p.readAll();
        return ok;
    }

private:
    QString m_id, m_net;
    bool m_up = false;
};

} // namespace airlock::test
