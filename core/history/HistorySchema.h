// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStringList>

#include "util/Result.h"

struct sqlite3;

// The history database's schema: stepwise migrations keyed by `PRAGMA user_version`.
namespace airlock::history {

inline constexpr int kSchemaVersion = 4;

// Brings the database to kSchemaVersion, one committed step at a time. Refuses a database written
// by a newer Airlock rather than guessing at it. `path` is for messages only.
Status migrate(sqlite3 *db, const QString &path);
// For tests: apply the steps up to `version` only.
Status migrateTo(sqlite3 *db, int version);
Result<int> userVersion(sqlite3 *db);

// What a dead daemon left: executions still `running` become `interrupted` as of the last thing
// their sandbox recorded, with their stored byte counts; their sandboxes are marked deleted.
// Sandboxes in `liveSandboxes` (they outlived it) are left as they are.
Status recoverInterrupted(sqlite3 *db, const QStringList &liveSandboxes = {});

} // namespace airlock::history
