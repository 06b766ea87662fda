// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QFrame>
#include <QJsonObject>
#include <QList>

#include "model/CreateSandboxRequest.h"
#include "util/Result.h"

#include <functional>

class QLabel;
class QPushButton;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// After the daemon came back: which of the sandboxes last seen ended with it (their processes
// and files went with it), and an offer to make each again with its name, preset and own policy
// layer (network, mounts, limits included), read from the history. Dismissed, or hidden once
// they are made.
class EndedSandboxesBar final : public QFrame {
    Q_OBJECT
public:
    struct Seen {
        QString id, name;
    };
    // `create`: sends one sandbox.create (the window's, which selects what it made) and calls
    // back with the daemon's answer.
    using Create = std::function<void(const CreateSandboxRequest &request, std::function<void(Status)> done)>;
    EndedSandboxesBar(DaemonClient &client, Create create, QWidget *parent = nullptr);
    // The sandboxes shown when the daemon went away; kept until check().
    void remember(const QList<Seen> &sandboxes);
    bool remembers() const { return !m_remembered.isEmpty(); }
    // The daemon's list now: those remembered that are not in it ended.
    void check(const QList<Seen> &now);
    QList<Seen> ended() const { return m_ended; }
    QLabel *text() const { return m_text; }
    QPushButton *recreateButton() const { return m_recreate; }
    void recreate();

Q_SIGNALS:
    void recreated(int made, int failed); // the daemon answered for every ended sandbox

private:
    void fetch(const Seen &sandbox, const QJsonObject &after, const std::shared_ptr<QJsonArray> &events);
    void done(const Seen &sandbox, const QString &failure, bool withoutRules = false);

    DaemonClient &m_client;
    Create m_create;
    QList<Seen> m_remembered, m_ended;
    QLabel *m_text;
    QPushButton *m_recreate, *m_dismiss;
    int m_pending = 0, m_made = 0;
    QStringList m_failures, m_withoutRules;
    QList<Seen> m_failed;
};

} // namespace airlock::ui
