// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "history/HistoryReader.h"
#include "rpc/MethodTable.h"

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
class HistoryMethods final : public QObject, public MethodGroup {
    Q_OBJECT
public:
    // store may be null: every method then answers that this daemon keeps no history.
    explicit HistoryMethods(HistoryStore *store, QObject *parent = nullptr);
    ~HistoryMethods() override;

    QList<Method> methods() override;

private:
    void list(Call &call);
    void show(Call &call);
    void output(Call &call);
    void runs(Call &call);
    void events(Call &call);
    void exportRun(Call &call);
    // Tells how far it has come (Call::progress, on the daemon's thread) before its reply.
    void prune(Call &call);
    void inBackground(const Reply &reply, std::function<Result<QJsonObject>()> work);

    HistoryStore *m_store;
    std::optional<HistoryReader> m_reader;
    QThreadPool m_pool;
    int m_inFlight = 0;
    static constexpr int kMaxInFlight = 16;
};

} // namespace airlock::rpc
