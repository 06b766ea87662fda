// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDockWidget>
#include <QFrame>
#include <QJsonArray>
#include <QJsonObject>

class QLabel;
class QLineEdit;
class QPushButton;
class QVBoxLayout;

namespace airlock {
class DaemonClient;
struct Event;
}

namespace airlock::ui {

// One request in front of a person: who asks, in which sandbox and run, exactly what (the full
// argv escaped, a destination or a tool call), why it asks, what the process could do once
// allowed, and how long is left. Allow stays disabled while long or unusual arguments are folded
// away: a person approves what they have seen.
class ApprovalCard final : public QFrame {
    Q_OBJECT
public:
    explicit ApprovalCard(const QJsonObject &request, QWidget *parent = nullptr);
    const QJsonObject &request() const { return m_request; }
    QString id() const;
    QPushButton *allowButton() const { return m_allow; }
    QPushButton *alwaysButton() const { return m_always; }
    QPushButton *denyButton() const { return m_deny; }
    QPushButton *expandButton() const { return m_expand; }
    QLineEdit *reasonEdit() const { return m_reason; }
    void tick(); // the countdown

Q_SIGNALS:
    void decided(const QString &decision, bool always, const QString &reason);

private:
    QJsonObject m_request;
    QLabel *m_what;
    QLabel *m_countdown;
    QPushButton *m_expand = nullptr;
    QPushButton *m_allow, *m_always, *m_deny;
    QLineEdit *m_reason;
    QString m_full, m_folded;
};

// Every pending request of the daemon, newest on top, decided here through the same broker the
// CLI uses.
class ApprovalsDock final : public QDockWidget {
    Q_OBJECT
public:
    // This computer's daemon first; other hosts are added and their requests labelled with the host.
    explicit ApprovalsDock(DaemonClient &client, QWidget *parent = nullptr);
    void addHost(const QString &name, DaemonClient &client);
    void refresh(); // every host
    void onEvent(const Event &event);
    QList<ApprovalCard *> cards() const;

Q_SIGNALS:
    void pendingCountChanged(int count);

private:
    void refreshHost(int host);
    void show(int host, const QJsonArray &requests);
    void show(const QJsonArray &requests); // every host's, as cards
    void decide(const QJsonObject &request, const QString &decision, bool always, const QString &reason);

    struct Host {
        QString name; // empty: this computer
        DaemonClient *client;
        QJsonArray pending;
    };
    QList<Host> m_hosts;
    QVBoxLayout *m_list;
    QLabel *m_empty;
};

} // namespace airlock::ui
