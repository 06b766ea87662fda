// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "history/HistoryReader.h"
#include "util/Result.h"

#include <QJsonObject>
#include <QObject>
#include <QThreadPool>

#include <functional>

namespace airlock {
class HistoryStore;
}

namespace airlock::rpc {

// The history.* RPC methods: queries run on a small thread pool with their own read connections
// (a search over a million executions must not stall live output), replies go back on the
// daemon's thread.
class HistoryMethods final : public QObject {
    Q_OBJECT
public:
    using Reply = std::function<void(Result<QJsonObject>)>;
    // Tells the caller how far a long request has come ("progress" notifications): called on the
    // daemon's thread, any number of times before the reply.
    using Progress = std::function<void(const QJsonObject &)>;

    // store may be null: every method then answers that this daemon keeps no history.
    explicit HistoryMethods(HistoryStore *store, QObject *parent = nullptr);
    ~HistoryMethods() override;

    static bool handles(const QString &method);
    void handle(const QString &method, const QJsonObject &params, const Reply &reply, const Progress &progress = {});

private:
    void inBackground(const Reply &reply, std::function<Result<QJsonObject>()> work);

    HistoryStore *m_store;
    std::optional<HistoryReader> m_reader;
    QThreadPool m_pool;
    int m_inFlight = 0;
    static constexpr int kMaxInFlight = 16;
};

} // namespace airlock::rpc
