// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "Command.h"

namespace airlock::cli {
void addSandboxCommands(std::vector<std::unique_ptr<Command>> &commands);
void addExecCommands(std::vector<std::unique_ptr<Command>> &commands);
void addFileCommands(std::vector<std::unique_ptr<Command>> &commands);
void addHistoryCommands(std::vector<std::unique_ptr<Command>> &commands);
void addApprovalCommands(std::vector<std::unique_ptr<Command>> &commands);
void addPolicyCommands(std::vector<std::unique_ptr<Command>> &commands);
void addSecretCommands(std::vector<std::unique_ptr<Command>> &commands);
void addToolCommands(std::vector<std::unique_ptr<Command>> &commands);
void addMcpCommands(std::vector<std::unique_ptr<Command>> &commands);
void addShowCommand(std::vector<std::unique_ptr<Command>> &commands);
void addExportCommand(std::vector<std::unique_ptr<Command>> &commands);
void addHostCommands(std::vector<std::unique_ptr<Command>> &commands);
void addAgentCommands(std::vector<std::unique_ptr<Command>> &commands);
} // namespace airlock::cli
