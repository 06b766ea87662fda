// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>
#include <QHostAddress>
#include <QStringList>

namespace airlock::remote {

// Where refusals count as coming from one client: an IPv4 address, or an IPv6 address's /64 (one
// machine commonly holds a whole /64, so per exact address a flood would never be one client).
QString addressBlock(const QHostAddress &address);

// The record of refused connections, kept readable under a flood: in each minute, an address
// block's first kPerBlock refusals are written in full and at most kTotal in all; the rest are
// counted, and said as counts when the minute is over (the blocks with most first, up to
// kSummaryLines, then the others together). A flood thus costs the log a few kilobytes a minute,
// and what came before it is not rotated away.
class RefusalLog {
public:
    static constexpr int kPerBlock = 10;
    static constexpr int kTotal = 100;
    static constexpr int kSummaryLines = 20;
    static constexpr qint64 kWindowMs = 60'000;

    // The lines to write now for a refusal: its own (unless counted), after the counts of a
    // minute that ended.
    QStringList refused(const QString &peer, const QString &block, int status, const QString &reason, qint64 nowMs);
    // The counts of the minute, if it is over (call it now and then: a flood that stops is still
    // summed up).
    QStringList flush(qint64 nowMs);
    qint64 counted() const { return m_counted; }

private:
    struct Block {
        int written = 0;
        qint64 counted = 0;
        QString last; // the last counted refusal, as said
    };
    qint64 m_windowStart = -1;
    int m_written = 0;
    qint64 m_counted = 0;
    QHash<QString, Block> m_blocks;
};

} // namespace airlock::remote
