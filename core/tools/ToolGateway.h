// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "policy/Policy.h"
#include "tools/ToolRegistry.h"

#include <QObject>

#include <functional>

namespace airlock {
class Sandbox;
class SecretStore;
} // namespace airlock

namespace airlock::tools {

class ToolRunner;

struct ToolCall {
    QString tool;
    QJsonValue arguments;
    QString requester; // the agent, the client, or "a process in the sandbox"
    QString run;
    const void *owner = nullptr; // whose going away cancels a pending approval
};

// Every call of a host tool, from a client or from inside a sandbox: the tool must be declared,
// the arguments must fit its schema, the sandbox's policy decides (allow, ask a person, deny;
// argument constraints), then the runner runs it. Each step is an event of the sandbox:
// tool.requested, tool.denied or tool.finished. What the tool's own credentials look like is
// masked in what the caller gets back and in what is recorded.
class ToolGateway final : public QObject {
    Q_OBJECT
public:
    using Answer = std::function<void(bool allowed, const QString &why)>;
    using Ask = std::function<void(Sandbox *, const ToolCall &, const policy::ToolVerdict &, Answer)>;
    using Done = std::function<void(Result<QJsonObject>)>;

    ToolGateway(ToolRegistry registry, SecretStore *secrets, Ask ask, QObject *parent = nullptr);
    void call(Sandbox *sandbox, ToolCall call, Done done);
    // The declared tools with what this sandbox's policy says about each.
    QJsonArray list(const Sandbox &sandbox) const;
    const ToolRegistry &registry() const { return m_registry; }

private:
    void execute(Sandbox *sandbox, const ToolDeclaration &tool, const ToolCall &call, quint64 id, const Done &done);

    ToolRegistry m_registry;
    ToolRunner *m_runner;
    Ask m_ask;
    quint64 m_nextCall = 1;
};

} // namespace airlock::tools
