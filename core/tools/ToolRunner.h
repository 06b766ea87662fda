// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tools/ToolRegistry.h"

#include <QObject>

#include <functional>

class QNetworkAccessManager;

namespace airlock {
class SecretStore;
}

namespace airlock::tools {

// Runs one tool call, already validated and decided: the command (argv only, no shell) or the
// HTTP request, with a timeout and bounded output. The result is JSON for the caller:
// {"exitCode", "stdout", "stderr", "truncated"} or {"status", "body", "truncated"}.
class ToolRunner final : public QObject {
    Q_OBJECT
public:
    static constexpr qsizetype kMaxOutput = 1024 * 1024;

    explicit ToolRunner(SecretStore *secrets, QObject *parent = nullptr);
    struct Outcome {
        Result<QJsonObject> result = QJsonObject{};
        QList<std::pair<QString, QByteArray>> secretsUsed; // to be redacted from what is recorded
    };
    using Done = std::function<void(Outcome)>;
    void run(const ToolDeclaration &tool, const QJsonObject &arguments, Done done);

private:
    // "{secret:NAME}" in a template, from the store; fails closed when one is missing.
    Result<QString> fillSecrets(QString text, QList<std::pair<QString, QByteArray>> &used) const;
    void runCommand(const ToolDeclaration &tool, const QJsonObject &arguments, Done done);
    void runHttp(const ToolDeclaration &tool, const QJsonObject &arguments, Done done);

    SecretStore *m_secrets;
    QNetworkAccessManager *m_network = nullptr;
};

} // namespace airlock::tools
