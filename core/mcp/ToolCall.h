// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QByteArrayView>
#include <QJsonObject>
#include <QString>

#include <functional>

namespace airlock::mcp {

// What a tool call returns: text for the model, the same as structured data when the tool has an
// output schema, and whether it is an error the model should see (a denial, a failed command
// start, bad arguments) rather than a protocol failure.
struct ToolResult {
    QString text;
    QJsonObject structured;
    bool isError = false;
    ErrorCode code = ErrorCode::Internal; // of a failure: why (a denial, a sandbox not running)

    static ToolResult failure(const QString &message, ErrorCode code = ErrorCode::Internal)
    {
        return {message, {}, true, code};
    }
};

// One call in flight, as the server sees it: progress while it runs (only when the client asked
// for progress), then done exactly once. cancel() stops it (the client cancelled, or left);
// done still comes, and the server decides whether anyone hears of it.
struct CallHooks {
    std::function<void(const QString &message)> progress; // empty: the client did not ask
    std::function<void(const ToolResult &)> done;
    // Every byte of a command's output as it comes (stream 1 or 2), for a client that streams it.
    std::function<void(int stream, QByteArrayView bytes)> output;
};

} // namespace airlock::mcp
