// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>
#include <QJsonObject>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace airlock::ui {

// A new sandbox: name, preset, network (with the hosts an allowlist lets through), host folders
// to mount and the common limits. What it builds is exactly the parameters of sandbox.create, so the daemon validates it
// like any request; the dialog checks what it can as you type and says what is wrong.
class CreateSandboxDialog final : public QDialog {
    Q_OBJECT
public:
    explicit CreateSandboxDialog(const QStringList &presets, QWidget *parent = nullptr);
    QJsonObject parameters() const; // for sandbox.create
    QLineEdit *nameEdit() const { return m_name; }
    QComboBox *presetBox() const { return m_preset; }
    QComboBox *networkBox() const { return m_network; }
    QLineEdit *allowEdit() const { return m_allow; }
    QLineEdit *mountsEdit() const { return m_mounts; }
    QString problem() const; // empty when the form can be sent

private:
    void validate();

    QLineEdit *m_name;
    QComboBox *m_preset;
    QComboBox *m_network;
    QLineEdit *m_allow;
    QLineEdit *m_mounts;
    QSpinBox *m_memoryMiB;
    QSpinBox *m_pids;
    QLabel *m_problem;
    QDialogButtonBox *m_buttons;
};

} // namespace airlock::ui
