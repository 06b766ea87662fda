// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "client/DaemonApi.h"
#include "review/SandboxReview.h"

#include <QDialog>

#include <optional>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSyntaxHighlighter;
class QTreeWidget;
class QTreeWidgetItem;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

// What an agent changed in a project it saw copy-on-write, for the person to review: the changed
// paths (each with a box to choose it), the selected one's diff, and apply the chosen ones, apply
// all, or discard the rest with the sandbox. Nothing reaches the project until applied; what is
// applied is what the diff showed (review::SandboxReview); a path changed in the project since the
// sandbox was made is said, and applied over only when the person says so.
class ReviewWindow final : public QDialog {
    Q_OBJECT
public:
    ReviewWindow(DaemonClient &client, const QString &sandbox, const QString &sandboxName, QWidget *parent = nullptr);

    // Lists the changes again (after an apply, or when asked).
    void refresh();
    void applyChosen(bool overwrite = false);
    void applyAll(bool overwrite = false);
    bool discard(); // asks first

    QTreeWidget *list() const { return m_list; }
    QPlainTextEdit *diffView() const { return m_diff; }
    QLabel *statusLabel() const { return m_status; }
    QPushButton *overwriteButton() const { return m_overwrite; }

Q_SIGNALS:
    void discarded();

protected:
    void changeEvent(QEvent *event) override;

private:
    void showDiff(QTreeWidgetItem *item);
    void apply(const review::SandboxReview::Chosen &chosen, bool overwrite);
    void updateButtons();
    review::SandboxReview::Chosen chosen() const;

    DaemonApi m_api;
    QString m_sandbox;
    QString m_name;
    std::optional<review::SandboxReview> m_review;
    review::SandboxReview::Chosen m_lastChoice; // what the overwrite button applies
    QLabel *m_intro;
    QTreeWidget *m_list;
    QPlainTextEdit *m_diff;
    QLabel *m_status;
    QPushButton *m_applyChosen;
    QPushButton *m_applyAll;
    QPushButton *m_overwrite;
    QPushButton *m_discard;
    QSyntaxHighlighter *m_highlighter;
};

} // namespace airlock::ui
