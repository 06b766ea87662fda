// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QList>
#include <QObject>

#include <sys/types.h>

class QSocketNotifier;

namespace airlock {

// How a daemon gets a gVisor sandbox back after an earlier one went (decision 6): no descriptor
// crosses into gVisor, so its guest connects to the socket this listens on (the bundle's
// resume/sock) and proves itself first, with the sandbox's token (wire::Type::Reconnect). The
// first connection that does is the guest's channel (reconnected()); Resume follows as for
// bubblewrap. What else connects (only the runtime's uid can, and so whatever runs in the
// sandbox, which sees the folder) is closed unanswered: it never hears the token, nor anything.
class GuestReconnect final : public QObject {
    Q_OBJECT
public:
    // Takes `listenFd` (listening, non-blocking) and closes it when done or destroyed.
    GuestReconnect(int listenFd, QByteArray token, uid_t runtimeUid, const QString &sandboxId, QObject *parent);
    ~GuestReconnect() override;

    // Connections that may still prove themselves, at most this many at once (the oldest goes).
    static constexpr int kMaxPending = 8;

Q_SIGNALS:
    // The guest, proven: `channelFd` (blocking, with a send timeout) is the caller's. Nothing else is
    // accepted after.
    void reconnected(int channelFd);

private:
    struct Pending {
        int fd = -1;
        quint64 serial = 0; // which connection, whatever its descriptor's number
        QByteArray got;
        QSocketNotifier *notifier = nullptr;
    };
    void onAcceptable();
    void onReadable(int fd);
    void drop(int fd, const char *why);

    int m_listenFd;
    QSocketNotifier *m_listenNotifier;
    QByteArray m_token;
    uid_t m_runtimeUid;
    QString m_sandboxId;
    QList<Pending> m_pending; // oldest first
    int m_refused = 0;
    quint64 m_accepted = 0;
    static constexpr int kRefusalsLogged = 3;
};

} // namespace airlock
