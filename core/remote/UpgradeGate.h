// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "remote/TokenStore.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QStringList>

#include <deque>
#include <optional>

namespace airlock::remote {

// The HTTP request that asks for the WebSocket upgrade, up to its blank line.
struct UpgradeRequest {
    QByteArray method, target;
    QHash<QByteArray, QByteArray> headers; // names lowercased; a repeated header is refused
};
// The head is complete (ends in CRLF CRLF) and at most kMaxHead bytes.
Result<UpgradeRequest> parseRequestHead(const QByteArray &head);
constexpr qsizetype kMaxRequestHead = 8192;

// Whether an upgrade may proceed, decided before any WebSocket byte: the HTTP status and reason
// when not (the reason is what the client shows), the token's grant when it may.
struct GateDecision {
    std::optional<Grant> grant;
    int status = 0;
    QByteArray reason;
};

struct GateConfig {
    QStringList hosts; // accepted Host values, lowercase, with and without the port
    QStringList origins; // accepted Origin values; none by default (a browser page is never a client)
};

// Checks, in order: GET / with no query (a token in a URL ends in logs and histories), a Host
// that names this daemon (DNS rebinding), no foreign Origin (a web page), a WebSocket upgrade,
// then the bearer token in the Authorization header.
GateDecision checkUpgrade(const UpgradeRequest &request, const GateConfig &config, TokenStore &tokens);

// Failed authentication per peer address: past kMaxFailures within the window, the address is
// refused without a check until its failures age out.
class AuthLimiter {
public:
    static constexpr int kMaxFailures = 5;
    static constexpr qint64 kWindowMs = 60'000;
    bool blocked(const QString &peer, qint64 nowMs);
    void failed(const QString &peer, qint64 nowMs);
    qint64 retryAfterMs(const QString &peer, qint64 nowMs);

private:
    void prune(const QString &peer, qint64 nowMs);
    QHash<QString, std::deque<qint64>> m_failures;
};

} // namespace airlock::remote
