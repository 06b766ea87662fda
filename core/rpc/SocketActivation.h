// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QObject>

class QLocalSocket;
class QSocketNotifier;

namespace airlock::rpc {

// The listening socket systemd passes a socket-activated daemon (LISTEN_PID, LISTEN_FDS: fd 3).
// Accepted here rather than by QLocalServer, which would delete the socket file when the daemon
// exits and so break activation for the next start.
class ActivatedSocket final : public QObject {
    Q_OBJECT
public:
    // The passed socket if there is one for this process (null when none was passed), checked to
    // be a listening unix socket bound to socketPath. Clears LISTEN_* so nothing inherits them.
    static Result<ActivatedSocket *> take(const QString &socketPath, QObject *parent);
    ~ActivatedSocket() override;

Q_SIGNALS:
    void accepted(QLocalSocket *socket); // the receiver takes it

private:
    explicit ActivatedSocket(int fd, QObject *parent);
    void acceptAll();

    int m_fd;
    QSocketNotifier *m_notifier;
};

} // namespace airlock::rpc
