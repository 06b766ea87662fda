// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDockWidget>
#include <QElapsedTimer>
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
} // namespace airlock

namespace airlock::ui {

// One request in front of a person: who asks, in which sandbox and run, what stands out in it (a
// one-line risk summary), exactly what (the full argv escaped, a destination or a tool call), each
// command of it with the rule that decided it, what started it, why it asks, what the process
// could do once allowed, and how long is left. Allow stays disabled while long or unusual
// arguments are folded away: a person approves what they have seen.
//
// Nothing is decided by accident: the buttons are never in the Tab chain and none is a default;
// with the card focused (a click on it, or the dock's shortcut), 1 allows once, 2 always, 3 or Esc
// denies, Tab goes to the reason; and for kGraceMs after the card appears, moves (a card above it
// came or went) or is focused from the keyboard, clicks and keys on it do nothing.
class ApprovalCard final : public QFrame {
    Q_OBJECT
public:
    static constexpr int kGraceMs = 500;

    explicit ApprovalCard(const QJsonObject &request, QWidget *parent = nullptr);
    const QJsonObject &request() const { return m_request; }
    QString id() const;
    static QString keyOf(const QJsonObject &request); // what id() is for a request
    // The daemon did not take the decision (a read-only token, a lost connection): said here.
    void showFailure(const QString &why);
    QString failureText() const;
    QPushButton *allowButton() const { return m_allow; }
    QPushButton *alwaysButton() const { return m_always; }
    QPushButton *denyButton() const { return m_deny; }
    QPushButton *expandButton() const { return m_expand; }
    QLineEdit *reasonEdit() const { return m_reason; }
    QString riskText() const; // the summary line as shown ("" when nothing stands out)
    QString shownText() const; // the request as shown (escaped)
    bool settled() const; // past the grace period: input counts
    void tick(); // the countdown

Q_SIGNALS:
    void decided(const QString &decision, bool always, const QString &reason);
    void stepFocus(int delta); // Up/Down: the card above or below

protected:
    bool event(QEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void moveEvent(QMoveEvent *event) override;
    void showEvent(QShowEvent *event) override;
    void focusInEvent(QFocusEvent *event) override;
    void focusOutEvent(QFocusEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void decide(const QString &decision, bool always);
    void unsettle();
    void colourRisk(); // amber that reads on the light or the dark theme

    QJsonObject m_request;
    QLabel *m_risk = nullptr;
    QLabel *m_what;
    QLabel *m_countdown;
    QLabel *m_failure = nullptr;
    QPushButton *m_expand = nullptr;
    QPushButton *m_allow, *m_always, *m_deny;
    QLineEdit *m_reason;
    QString m_full, m_folded;
    bool m_fromReason = false;
    QElapsedTimer m_steady; // since the card last appeared, moved or was given focus by key
};

// Every pending request of the daemon, newest on top, decided here through the same broker the
// CLI uses.
class ApprovalsDock final : public QDockWidget {
    Q_OBJECT
public:
    // This computer's daemon first; other hosts are added and their requests labelled with the host.
    explicit ApprovalsDock(DaemonClient &client, QWidget *parent = nullptr);
    void addHost(const QString &name, DaemonClient &client);
    // A host taken out of the console: its requests go from the dock (they wait on, and time out, there).
    void retireHost(int host);
    void refresh(); // every host
    void onEvent(const Event &event);
    QList<ApprovalCard *> cards() const; // top (newest) first
    // Focuses the newest card: from there the keys decide (the window's shortcut for it).
    void focusNewest();
    // Empty, the dock is a slim bar with its title running down the edge.
    bool isSlim() const;
    static constexpr int kWidth = 380;

Q_SIGNALS:
    void pendingCountChanged(int count);

private:
    void refreshHost(int host);
    void show(int host, const QJsonArray &requests);
    void show(const QJsonArray &requests); // every host's, as cards
    void setSlim(bool slim);
    void decide(const QJsonObject &request, const QString &decision, bool always, const QString &reason);

    struct Host {
        QString name; // empty: this computer
        DaemonClient *client;
        QJsonArray pending;
        bool retired = false;
    };
    QList<Host> m_hosts;
    QVBoxLayout *m_list;
    QLabel *m_empty;
    QWidget *m_content = nullptr;
    QWidget *m_slimBar = nullptr;
};

} // namespace airlock::ui
