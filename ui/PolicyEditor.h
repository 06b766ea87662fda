// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>
#include <QJsonObject>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTimer;
class QTreeWidget;

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

// Rows of text cells (command rules, credential grants, tool permissions): add, remove, move up
// and down or drag to reorder, edit in place. What the cells mean is the policy's business: the
// whole document is validated, and the error names the field.
class RowListEditor final : public QWidget {
    Q_OBJECT
public:
    RowListEditor(const QStringList &headers, QStringList newRow, QWidget *parent = nullptr);
    void setRows(const QList<QStringList> &rows);
    QList<QStringList> rows() const;
    void addRow(const QStringList &cells);
    QTreeWidget *tree() const { return m_tree; }

Q_SIGNALS:
    void changed();

private:
    QTreeWidget *m_tree;
    QStringList m_newRow;
    bool m_quiet = false;
};

// A running sandbox's policy, its own layer edited where the daemon lets a running sandbox
// change: network lists, command rules (ordered), credential grants and tool permissions;
// filesystem and limits shown with the layer each value comes from; the layer as JSON, imported
// from and exported to a file. Before anything is sent, the difference from the saved layer is
// shown; a "what would happen" box asks the daemon's policy checker about a URL, a command or a
// tool call as it is typed.
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

Q_SIGNALS:
    void loaded();
    void applied(bool ok, const QString &message);

private:
    void load();
    void showEffective(const QJsonObject &effective);
    void updateDiff();
    void apply();
    void tryNow();

    DaemonClient &m_client;
    QString m_sandbox;
    QJsonObject m_saved;      // the sandbox's own layer as the daemon has it
    QJsonObject m_editedBase; // the layer being edited (saved, or imported), before the widgets' sections
    bool m_loaded = false;
    QLabel *m_mode;
    QComboBox *m_unknown;
    HostListEditor *m_allow, *m_deny;
    QComboBox *m_commandDefault;
    RowListEditor *m_rules, *m_grants, *m_tools;
    QTreeWidget *m_effective;
    QPlainTextEdit *m_json;
    QTabWidget *m_tabs;
    QPlainTextEdit *m_diff;
    QLineEdit *m_try;
    QLabel *m_tryAnswer;
    QTimer *m_tryTimer;
    QPushButton *m_apply;
    QLabel *m_status;
};

} // namespace airlock::ui
