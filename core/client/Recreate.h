// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/CreateSandboxRequest.h"
#include "util/Result.h"

#include <QJsonArray>
#include <QJsonObject>

namespace airlock {

// The sandbox.create request that makes a sandbox again as it last was (its name, preset and
// own policy layer, which holds its network, mounts and limits), from its history: the
// sandbox.created event and the policy.changed events after it, oldest first. Without a recorded
// own layer (a sandbox from before it was recorded), its spec as created: network, mounts and
// limits, but not its own rules (ownLayer false says so). An error says why a sandbox cannot be
// made again from what is recorded.
struct Recreation {
    CreateSandboxRequest request;
    bool ownLayer = true; // its own layer as it last was; false: only its spec as created
};
Result<Recreation> recreateParameters(const QJsonArray &events);

} // namespace airlock
