// SPDX-License-Identifier: Apache-2.0
#include "remote/RefusalLog.h"

#include "model/DisplayText.h"

#include <algorithm>

namespace airlock::remote {

namespace {
QString connections(qint64 n)
{
    return n == 1 ? QStringLiteral("1 connection") : QStringLiteral("%1 connections").arg(n);
}
} // namespace

QString addressBlock(const QHostAddress &address)
{
    bool v4 = false;
    const quint32 ipv4 = address.toIPv4Address(&v4); // also a v4-mapped IPv6 address
    if (v4)
        return QHostAddress(ipv4).toString();
    if (address.protocol() != QAbstractSocket::IPv6Protocol)
        return address.toString();
    Q_IPV6ADDR bytes = address.toIPv6Address();
    std::fill(std::begin(bytes.c) + 8, std::end(bytes.c), quint8(0));
    return QHostAddress(bytes).toString() + QStringLiteral("/64");
}

QStringList RefusalLog::refused(
    const QString &peer, const QString &block, int status, const QString &reason, qint64 nowMs)
{
    QStringList lines = flush(nowMs);
    if (m_windowStart < 0)
        m_windowStart = nowMs;
    // The reason may quote what the peer sent (Host, Origin): inert in the log and on a terminal.
    const QString said = status > 0 ? QStringLiteral("%1 %2").arg(status).arg(display::escaped(reason, 300))
                                    : display::escaped(reason, 300);
    Block &b = m_blocks[block];
    if (b.written < kPerBlock && m_written < kTotal) {
        ++b.written;
        ++m_written;
        lines.append(QStringLiteral("refused a connection from %1: %2").arg(peer, said));
    } else {
        ++b.counted;
        ++m_counted;
        b.last = said;
    }
    return lines;
}

QStringList RefusalLog::flush(qint64 nowMs)
{
    if (m_windowStart < 0 || nowMs - m_windowStart < kWindowMs)
        return {};
    QList<std::pair<QString, Block>> counted;
    for (auto it = m_blocks.cbegin(); it != m_blocks.cend(); ++it)
        if (it->counted > 0)
            counted.append({it.key(), *it});
    std::sort(counted.begin(), counted.end(), [](const auto &a, const auto &b) {
        return a.second.counted > b.second.counted || (a.second.counted == b.second.counted && a.first < b.first);
    });
    QStringList lines;
    const int seconds = int((nowMs - m_windowStart) / 1000);
    qint64 rest = 0;
    for (qsizetype i = 0; i < counted.size(); ++i) {
        if (i < kSummaryLines)
            lines.append(QStringLiteral("refused another %1 from %2 in the last %3 s, not each logged (the last: %4)")
                             .arg(connections(counted[i].second.counted), counted[i].first)
                             .arg(seconds)
                             .arg(counted[i].second.last));
        else
            rest += counted[i].second.counted;
    }
    if (rest > 0)
        lines.append(QStringLiteral("refused another %1 from %2 other addresses in the last %3 s, not each logged")
                         .arg(connections(rest))
                         .arg(counted.size() - kSummaryLines)
                         .arg(seconds));
    m_windowStart = -1;
    m_written = 0;
    m_blocks.clear();
    return lines;
}

} // namespace airlock::remote
