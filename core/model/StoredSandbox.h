// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace airlock {

// An execution the history says is running, with what a daemon that takes its sandbox over
// continues from: how much of each stream is stored, and when its time runs out.
struct StoredExecution {
    uint32_t id = 0;
    QStringList argv;
    QString run;
    qint64 startedMs = 0;
    std::optional<qint64> timeoutMs;
    uint64_t stored[3] = {0, 0, 0}; // output stored, by stream (1 stdout, 2 stderr)
    // Its programs are judged (exec.started's execCheck): the guest hands its exec check's
    // listener to the daemon that takes it over. How it was decided, for judging them:
    bool execCheck = false;
    QString agent; // empty: a person's own command (recorded, not judged)
    QString decidedBy;
    QString approval;
    // Its exec.program events that asked a person and were not decided (the daemon went first):
    // their notifications still wait, and only a daemon that names them can answer them.
    QList<QJsonObject> openAsks;
};

// What the history holds of one sandbox's stream.
struct StoredSandbox {
    uint64_t lastSeq = 0; // the last event stored
    uint32_t lastExec = 0; // the highest execution id it had
    QList<StoredExecution> running;
};

} // namespace airlock
