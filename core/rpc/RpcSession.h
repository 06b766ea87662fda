// SPDX-License-Identifier: Apache-2.0
// One client connection's state, shared by the daemon's RPC sources (not part of core's interface).
#pragma once

#include "remote/TokenStore.h"

#include <QHash>
#include <QPair>
#include <QSet>
#include <QString>

#include <cstdint>
#include <optional>

namespace airlock {
class Sandbox;
}

namespace airlock::rpc {

class Connection;

struct Session {
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

    bool isAgent() const { return !agent.isEmpty(); }
    // Who asks, in the history and on approval cards.
    const QString &requester() const { return agent.isEmpty() ? client : agent; }
    // A remote token limited to some sandboxes.
    bool scoped() const { return grant && !grant->sandboxes.isEmpty(); }
};

} // namespace airlock::rpc
