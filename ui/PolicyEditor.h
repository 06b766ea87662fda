// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>
#include <QJsonObject>

class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTimer;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// A list of host patterns, checked as they are typed (the policy's own normalisation), with add
// and remove.
class HostListEditor final : public QWidget {
    Q_OBJECT
public:
    explicit HostListEditor(const QString &title, QWidget *parent = nullptr);
    void setHosts(const QStringList &hosts);
    QStringList hosts() const;
    QLineEdit *input() const { return m_input; }
    QPushButton *addButton() const { return m_add; }
    QPushButton *removeButton() const { return m_remove; }

Q_SIGNALS:
    void changed();

private:
    void check();

    QListWidget *m_list;
    QLineEdit *m_input;
    QPushButton *m_add, *m_remove;
    QLabel *m_error;
};

// A running sandbox's network rules, edited where they apply at once: the allow and deny lists.
// Before anything is sent, the difference from the saved policy is shown; a "what would happen"
// box asks the daemon's policy checker about a URL or a command as it is typed.
class PolicyEditor final : public QDialog {
    Q_OBJECT
public:
    PolicyEditor(DaemonClient &client, const QString &sandbox, QWidget *parent = nullptr);
    HostListEditor *allowList() const { return m_allow; }
    HostListEditor *denyList() const { return m_deny; }
    QString diffText() const;
    QLineEdit *tryInput() const { return m_try; }
    QString tryAnswer() const;
    QPushButton *applyButton() const { return m_apply; }
    bool isLoaded() const { return m_loaded; }

Q_SIGNALS:
    void loaded();
    void applied(bool ok, const QString &message);

private:
    void load();
    QJsonObject edited() const;
    void updateDiff();
    void apply();
    void tryNow();

    DaemonClient &m_client;
    QString m_sandbox;
    QJsonObject m_saved; // the sandbox's own layer as the daemon has it
    bool m_loaded = false;
    QLabel *m_mode;
    HostListEditor *m_allow, *m_deny;
    QPlainTextEdit *m_diff;
    QLineEdit *m_try;
    QLabel *m_tryAnswer;
    QTimer *m_tryTimer;
    QPushButton *m_apply;
    QLabel *m_status;
};

} // namespace airlock::ui
