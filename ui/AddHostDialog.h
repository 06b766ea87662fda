// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/Hosts.h"

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace airlock::ui {

// Adds a daemon on another machine: a name, the address airlockd printed (for wss:// with the
// certificate's fingerprint, shown back in groups so it can be compared with the server's), and
// for wss:// the token. Add is enabled only when all of it is valid; accept() saves the host
// (hosts.json) and its token (keyring, else a 0600 file) and returns the entry.
class AddHostDialog final : public QDialog {
    Q_OBJECT
public:
    explicit AddHostDialog(QWidget *parent = nullptr);

    QLineEdit *nameEdit() const { return m_name; }
    QLineEdit *addressEdit() const { return m_address; }
    QLineEdit *tokenEdit() const { return m_token; }
    QLabel *fingerprintLabel() const { return m_fingerprint; }
    QLabel *problemLabel() const { return m_problem; }
    QDialogButtonBox *buttons() const { return m_buttons; }
    // Saves; the error says what is wrong (the dialog stays open).
    Result<HostRegistry::Entry> save();
    HostRegistry::Entry entry() const { return m_saved; }

    void accept() override;

private:
    void check();

    QLineEdit *m_name, *m_address, *m_token;
    QLabel *m_fingerprint, *m_problem;
    QDialogButtonBox *m_buttons;
    HostRegistry::Entry m_saved;
};

} // namespace airlock::ui
