// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/EventKinds.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

#include <cstdint>

namespace airlock {

// One fact about a sandbox. Sequence numbers are per sandbox, start at 1 and have no gaps, so a
// subscriber can tell whether it missed something. Output events carry their bytes in `data`
// (raw, exactly as produced) and travel as binary frames; everything else is JSON.
struct Event {
    QString sandbox;
    uint64_t seq = 0;
    qint64 timeMs = 0;
    QString kind; // sandbox.created | sandbox.failed | sandbox.deleted | exec.started | exec.output | exec.exited |
                  // exec.truncated
    QString run; // the run (agent session) the fact belongs to: its creator's or its execution's
    QJsonObject payload;
    uint32_t exec = 0; // execution events
    // exec.output only
    int stream = 0; // 1 stdout, 2 stderr
    qint64 offset = 0; // of data[0] in its stream: a reader resuming from the store skips what it has
    QByteArray data;
    // Committed with the history's next batch (within 100 ms) instead of before anyone hears of
    // it: facts that come by the thousand and decide nothing, like a program a rule let run.
    // Output always rides the batch.
    bool batched = false;

    bool isOutput() const { return kind == event::ExecOutput; }
    bool committedFirst() const { return !batched && !isOutput(); }
};

} // namespace airlock
