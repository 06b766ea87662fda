// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/CreateSandboxRequest.h"

#include <QDialog>
#include <QJsonArray>
#include <QJsonObject>

#include <functional>

class QComboBox;
class QDialogButtonBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace airlock::ui {

// A new sandbox: where (which host), name, preset (each explained in a line), network (with the
// hosts an allowlist lets through, added to the preset's), host folders to mount and the common
// limits. What it builds is a sandbox.create request, so the daemon validates it
// like any request; the dialog checks what it can as you type and says what is wrong.
class CreateSandboxDialog final : public QDialog {
    Q_OBJECT
public:
    // `presets`: policy.presets' list ({name, policy}); `hosts`: the console's hosts by name, the
    // one at `host` chosen first (the choice is hidden when there is one).
    explicit CreateSandboxDialog(
        const QJsonArray &presets, const QStringList &hosts = {}, int host = 0, QWidget *parent = nullptr);
    int host() const; // the index of the chosen host in `hosts`
    // Where another host's presets come from when it is chosen (its own names and descriptions).
    void setPresetSource(std::function<QJsonArray(int host)> presetsOf);
    CreateSandboxRequest request() const;
    QLineEdit *nameEdit() const { return m_name; }
    QComboBox *presetBox() const { return m_preset; }
    QComboBox *networkBox() const { return m_network; }
    QComboBox *isolationBox() const { return m_isolation; }
    QLineEdit *allowEdit() const { return m_allow; }
    QLineEdit *mountsEdit() const { return m_mounts; }
    QComboBox *hostBox() const { return m_host; }
    QSpinBox *memoryBox() const { return m_memoryMiB; }
    QSpinBox *pidsBox() const { return m_pids; }
    QDoubleSpinBox *cpusBox() const { return m_cpus; }
    QDoubleSpinBox *diskBox() const { return m_diskGiB; }
    QLabel *presetAbout() const { return m_presetAbout; }
    QLabel *allowAbout() const { return m_allowAbout; }
    QString problem() const; // empty when the form can be sent

private:
    void validate();
    void describePreset();
    void setPresets(const QJsonArray &presets);

    QJsonArray m_presets;
    std::function<QJsonArray(int)> m_presetsOf;
    QComboBox *m_host;
    QLineEdit *m_name;
    QComboBox *m_preset;
    QLabel *m_presetAbout, *m_allowAbout;
    QComboBox *m_network;
    QComboBox *m_isolation;
    QLineEdit *m_allow;
    QLineEdit *m_mounts;
    QSpinBox *m_memoryMiB;
    QSpinBox *m_pids;
    QDoubleSpinBox *m_cpus;
    QDoubleSpinBox *m_diskGiB;
    QLabel *m_problem;
    QDialogButtonBox *m_buttons;
};

} // namespace airlock::ui
