// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/SandboxSpec.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

namespace airlock {

// Everything a sandbox.create request carries: the spec's fields (what was not asked for is left
// out, so the daemon's defaults and the policy decide it), the sandbox's own policy layer and the
// preset under it. The GUI's New sandbox dialog, the CLI's create and run, and MCP's
// sandbox_create build one; DaemonApi sends it.
struct CreateSandboxRequest {
    QString name; // empty: the daemon names it
    std::optional<NetworkMode> network; // unset: its policy decides
    QList<Mount> mounts;
    Limits limits;
    Isolation isolation = Isolation::Namespaces;
    std::optional<QJsonObject> policy; // its own policy layer, over the preset
    QString preset; // empty: the person's defaults

    // Lets these hosts through the egress proxy: added to the own layer's network allowlist, and
    // the network made an allowlist.
    void allowHosts(const QStringList &hosts);

    QJsonObject toJson() const;
    // Checked as the daemon checks a spec, except that mount sources are the daemon's to find
    // (it may run on another machine): errors name the field.
    static Result<CreateSandboxRequest> fromJson(const QJsonObject &json);
};

} // namespace airlock
