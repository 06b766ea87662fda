// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>
#include <QJsonArray>
#include <QJsonObject>
#include <QPointer>
#include <QWidget>

#include "PolicyLists.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTimer;
class QTreeWidget;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

class SecretsDialog;

// A running sandbox's policy: every value in force, in its section (network, commands,
// credentials, tools, filesystem and limits), with the layer that set it; this sandbox's own layer
// edited where the daemon lets a running sandbox change (network lists, command rules, credential
// grants from the secret store, each declared tool's decision); the layer as JSON, imported from
// and exported to a file. Before anything is sent, the difference from the saved layer is shown; a
// "what would happen" box asks the daemon's checker about a URL, a command or a tool call as it
// is typed, under the policy in force and under the pending edit.
// With no sandbox, it edits the person's defaults for new sandboxes (policy.defaults.*).
class PolicyEditor final : public QDialog {
    Q_OBJECT
public:
    PolicyEditor(DaemonClient &client, const QString &sandbox, QWidget *parent = nullptr);
    HostListEditor *allowList() const { return m_allow; }
    HostListEditor *denyList() const { return m_deny; }
    RowListEditor *commandRules() const { return m_rules; }
    RowListEditor *grants() const { return m_grants; }
    RowListEditor *toolPermissions() const { return m_tools; }
    QComboBox *commandDefault() const { return m_commandDefault; }
    QTabWidget *tabs() const { return m_tabs; }
    QTreeWidget *effectiveView() const { return m_effective; }
    QTreeWidget *fixedView() const { return m_fixed; } // filesystem, limits and the rest: fixed while it runs
    QComboBox *unknownDestinations() const { return m_unknown; }
    QLabel *summary() const { return m_mode; }
    // The layer the editor would apply, and whether it is a valid policy (else why not).
    QJsonObject edited() const;
    QString problem() const;
    // Replaces what is being edited by a layer (Import… reads one from a file).
    void editLayer(const QJsonObject &layer);
    bool importFile(const QString &path, QString *error = nullptr);
    bool exportFile(const QString &path, QString *error = nullptr) const;
    QString diffText() const;
    QLineEdit *tryInput() const { return m_try; }
    QString tryAnswer() const;
    QPushButton *applyButton() const { return m_apply; }
    bool isLoaded() const { return m_loaded; }
    // The New secret… page while it is open (from a grant's secret cell).
    SecretsDialog *secretDialog() const;

Q_SIGNALS:
    void loaded();
    void applied(bool ok, const QString &message);

private:
    void load();
    void showEffective(const QJsonObject &effective);
    void showInherited();
    void loadChoices();
    void newSecret(QTreeWidgetItem *item, int column);
    void reloadEffective();
    void partLoaded();
    void describeOwnTools();
    void updateDiff();
    void apply();
    void tryNow();

    DaemonClient &m_client;
    QString m_sandbox;
    QJsonObject m_saved; // the sandbox's own layer as the daemon has it
    QJsonObject m_editedBase; // the layer being edited (saved, or imported), before the widgets' sections
    bool m_loaded = false;
    int m_pendingParts = 2; // the layer being edited, and what is in force
    QLabel *m_mode;
    QComboBox *m_unknown;
    HostListEditor *m_allow, *m_deny;
    QComboBox *m_commandDefault;
    RowListEditor *m_rules, *m_grants, *m_tools;
    QTreeWidget *m_effective, *m_fixed;
    QJsonObject m_inForce; // the effective policy reply: document, sources, preset
    QJsonArray m_declaredTools; // tools.list: what this host declares, with descriptions
    QJsonObject m_presets; // name -> description
    QPointer<SecretsDialog> m_secretDialog;
    QPlainTextEdit *m_json;
    QTabWidget *m_tabs;
    QPlainTextEdit *m_diff;
    QLineEdit *m_try;
    QLabel *m_tryAnswer;
    QTimer *m_tryTimer;
    QString m_tryAsked; // what the newest check asked (text and draft): older answers are dropped
    QPushButton *m_apply;
    QLabel *m_status;
};

} // namespace airlock::ui
