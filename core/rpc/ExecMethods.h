// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "rpc/MethodTable.h"

#include <QObject>
#include <QPointer>

namespace airlock {
class ApprovalBroker;
struct ApprovalRequest;
class Engine;
struct ExecRequest;
class HistoryStore;
} // namespace airlock

namespace airlock::rpc {

class Connection;

// exec.*: starting commands (a person's at once; an agent's as the command rules or a person
// decide), their stdin, signals and terminal size, and the leases of executions that may outlive
// the connection that started them.
class ExecMethods final : public QObject, public MethodGroup {
    Q_OBJECT
public:
    // The session of a connection, or null once it has gone.
    using SessionOf = std::function<Session *(const Connection *)>;
    ExecMethods(Engine &engine, ApprovalBroker &approvals, HistoryStore *history, SessionOf sessionOf,
        QObject *parent = nullptr);
    QList<Method> methods() override;

    // A session ends: executions started with a lease are killed (and that recorded) once their
    // lease runs out.
    void expireLeasesLater(const Session &session);

    static constexpr int kMaxPendingPerConnection = 16; // requests one connection may have waiting for a person
    static constexpr qint64 kStdinHighWater = 4 * 1024 * 1024;

private:
    void start(Call &call);
    void runOneShot(Call &call);
    // Starts `request` for `session` in `sandbox`: at once for a person; for an agent, as the
    // command rules say, or a person decides.
    void begin(Session &session, Sandbox &sandbox, ExecRequest request, bool attach, const Reply &reply);
    void feed(Call &call);
    void sendSignal(Call &call);
    void resize(Call &call);

    // Starts an execution for a connection (after any approval), replying with its id.
    void startExecution(
        QPointer<Connection> conn, Sandbox &sandbox, const ExecRequest &request, bool attach, const Reply &reply);
    // An agent's command that asks: a person decides, on what it runs bound by content.
    void askToRun(Session &session, Sandbox &sandbox, const ExecRequest &exec, const ApprovalRequest &request,
        bool attach, const Reply &reply, int round);

    Engine &m_engine;
    ApprovalBroker &m_approvals;
    HistoryStore *m_history;
    SessionOf m_sessionOf;
};

} // namespace airlock::rpc
