// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>

class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// The secrets the daemon keeps for credential grants: names, sizes and when each was set; set a
// new value (typed unseen, or read from a file), remove one. A value never comes back from the
// daemon, so it is never displayed after entry; the entry field is cleared as soon as it is sent.
class SecretsDialog final : public QDialog {
    Q_OBJECT
public:
    explicit SecretsDialog(DaemonClient &client, QWidget *parent = nullptr);
    void refresh();
    QTreeWidget *list() const { return m_list; }
    QLineEdit *nameEdit() const { return m_name; }
    QLineEdit *valueEdit() const { return m_value; }
    QPushButton *setButton() const { return m_set; }
    QLabel *backendLabel() const { return m_backend; }
    QString statusText() const;
    // Removes without asking (the Remove button asks first).
    void remove(const QString &name);

Q_SIGNALS:
    void refreshed();
    void changeFinished(bool ok, const QString &message); // a set or a remove finished
    void stored(const QString &name); // a value was set

private:
    void setValue(const QByteArray &value);
    void showStatus(const QString &text, bool error);

    DaemonClient &m_client;
    QTreeWidget *m_list;
    QLabel *m_backend;
    QLineEdit *m_name, *m_value;
    QPushButton *m_set;
    QLabel *m_status;
};

} // namespace airlock::ui
