// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QStringList>

#include <functional>

class QTimer;

namespace airlock {

// What a person is asked to decide: one agent request, bound to exactly what will run.
struct ApprovalRequest {
    QString id; // short, for people and commands: "a3f9c2d1"
    QString nonce; // must come back with the decision: a decision is for this request only
    QString kind = QStringLiteral("command");
    QString sandbox, sandboxName, run, requester;
    QStringList argv; // full, never elided (command)
    QString destination; // host:port and protocol (network)
    QString tool; // (tool) its name, and the exact arguments the call will run with
    QJsonObject arguments;
    QString cwd;
    QStringList env; // NAME=VALUE the request sets: shown, since it can change what runs
    QString rule, layer, reason; // what asked
    QString risk; // (command) one line on what stands out in it (policy::riskSummary)
    QJsonArray parts; // (command) each command of it, with the verdict of the rules on it
    QJsonArray files; // (command) the files it runs as code, bound by SHA-256 (engine/CodeBinding.h)
    uint32_t exec = 0; // a program started by this execution asks (the exec check)
    quint64 notification = 0; // and the kernel's id of the execve it waits in
    QStringList chain; // and what started it: its process, the execution's command, how that was decided
    int policyVersion = 0;
    QJsonObject capabilities; // what the approved process will be able to do
    const void *owner = nullptr; // the requesting connection: its requests go when it does
    qint64 createdMs = 0, expiresMs = 0;

    QJsonObject toJson() const;
};

struct ApprovalDecision {
    bool allowed = false;
    bool always = false; // allowed, and add a rule so that it is not asked again
    QString by, reason; // who decided; why (a denial's reason, "timed out", "sandbox deleted")
    bool expired = false; // denied because nobody decided in time
    // For the requester: "approved by X" or "denied by X: reason".
    QString describe() const;
};

// Holds pending requests until a person decides, the request expires (a timeout denies) or its
// sandbox goes. Decisions are single-use: bound to the id and nonce, refused once decided or
// expired.
class ApprovalBroker final : public QObject {
    Q_OBJECT
public:
    explicit ApprovalBroker(int timeoutMs, QObject *parent = nullptr);

    using Done = std::function<void(const ApprovalRequest &, const ApprovalDecision &)>;
    // Fills id, nonce and times; `done` is called exactly once.
    ApprovalRequest request(ApprovalRequest request, Done done);
    // Whether a decision with this nonce would be accepted now (so that side effects of a
    // decision, like an "always" rule, happen only for one that will be).
    Status check(const QString &id, const QString &nonce) const;
    int pendingCount() const { return int(m_pending.size()); }
    Status decide(const QString &id, const QString &nonce, const ApprovalDecision &decision);
    // Denies everything pending that matches (a sandbox was deleted, a requester went away).
    void cancelIf(const std::function<bool(const ApprovalRequest &)> &which, const QString &why);
    int pendingFor(const void *owner) const;
    QList<ApprovalRequest> pending() const;

Q_SIGNALS:
    void requested(const airlock::ApprovalRequest &request);

private:
    struct Pending {
        ApprovalRequest request;
        Done done;
        QTimer *timer = nullptr;
    };
    void finish(const QString &id, const ApprovalDecision &decision);

    int m_timeoutMs;
    QHash<QString, Pending> m_pending;
    QHash<QString, qint64> m_finished; // id -> when: "already decided" rather than "unknown"
};

} // namespace airlock
