// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/Hosts.h"

#include <QDialog>

#include <optional>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace airlock::ui {

// Adds a daemon on another machine, or changes one saved before: a name, the address airlockd
// printed (for wss:// with the certificate's fingerprint, shown back in groups so it can be
// compared with the server's), and for wss:// the token. Test connection reaches the daemon
// before anything is saved and shows the certificate it presents beside the one pasted. Save is
// enabled only when all of it is valid; accept() saves the host (hosts.json) and its token
// (keyring, else a 0600 file) and returns the entry. Editing, an empty token keeps the saved one.
class AddHostDialog final : public QDialog {
    Q_OBJECT
public:
    explicit AddHostDialog(QWidget *parent = nullptr, std::optional<HostRegistry::Entry> editing = std::nullopt);

    QLineEdit *nameEdit() const { return m_name; }
    QLineEdit *addressEdit() const { return m_address; }
    QLineEdit *tokenEdit() const { return m_token; }
    QLabel *fingerprintLabel() const { return m_fingerprint; }
    QLabel *problemLabel() const { return m_problem; }
    QDialogButtonBox *buttons() const { return m_buttons; }
    QPushButton *testButton() const { return m_testButton; }
    QLabel *testLabel() const { return m_test; }
    // Connects with what is typed (nothing saved), asks the daemon who it is, and says so.
    bool testConnection();
    // Saves; the error says what is wrong (the dialog stays open).
    Result<HostRegistry::Entry> save();
    HostRegistry::Entry entry() const { return m_saved; }
    // After a save: where the token went when no keyring answered, and why (empty otherwise).
    QString tokenNotice() const { return m_tokenNotice; }

    void accept() override;

private:
    void check();
    // Typed, or the saved one when editing leaves it empty and the address is the one it was
    // saved for (a token never goes to an address it was not given for without being typed).
    Result<QByteArray> token() const;
    bool keepsSavedToken() const;

    std::optional<HostRegistry::Entry> m_editing;
    QLineEdit *m_name, *m_address, *m_token;
    QLabel *m_fingerprint, *m_problem, *m_test;
    QPushButton *m_testButton;
    QDialogButtonBox *m_buttons;
    HostRegistry::Entry m_saved;
    QString m_tokenNotice;
};

} // namespace airlock::ui
