// SPDX-License-Identifier: Apache-2.0
// RpcServer's per-connection state, shared by its source files (not part of core's interface).
#pragma once

#include "rpc/RpcServer.h"

#include <QHash>
#include <QPair>
#include <QSet>

#include <optional>

namespace airlock::rpc {

struct RpcServer::Session {
    Connection *conn = nullptr;
    bool greeted = false;
    QString client;
    QString run;
    QString agent; // set: requests come from an agent, and command rules and approvals gate them
    bool allEvents = false;
    QSet<QString> sandboxes; // sandbox ids
    QSet<QPair<QString, uint32_t>> execs; // (sandbox id, exec)
    QSet<Sandbox *> holding;
    std::optional<remote::Grant> grant; // set: a remote connection, limited to its token's grant
    QString peer; // remote: address:port
    QHash<QPair<QString, uint32_t>, qint64> leases; // (sandbox id, exec) → ms it may outlive this connection
};

} // namespace airlock::rpc
