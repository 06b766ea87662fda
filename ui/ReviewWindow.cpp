// SPDX-License-Identifier: Apache-2.0
#include "ReviewWindow.h"

#include "StatusText.h"
#include "Theme.h"

#include "model/DisplayText.h"
#include "review/ProjectReview.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QEvent>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QSyntaxHighlighter>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
using cow::Change;

constexpr int kMountRole = Qt::UserRole;
constexpr int kPathRole = Qt::UserRole + 1;

// A unified diff in colour: what goes red, what comes green, hunks and headers apart.
class DiffHighlighter final : public QSyntaxHighlighter {
public:
    explicit DiffHighlighter(QTextDocument *document)
        : QSyntaxHighlighter(document)
    {
    }

protected:
    void highlightBlock(const QString &line) override
    {
        const bool dark = isDark(QApplication::palette());
        QTextCharFormat f;
        if (line.startsWith(QLatin1String("+++")) || line.startsWith(QLatin1String("---"))
            || line.startsWith(QLatin1String("diff --git")) || line.startsWith(QLatin1Char('#'))) {
            f.setFontWeight(QFont::Bold);
        } else if (line.startsWith(QLatin1Char('+'))) {
            f.setForeground(dark ? QColor(0x7e, 0xd3, 0x8a) : QColor(0x1a, 0x7f, 0x37));
        } else if (line.startsWith(QLatin1Char('-'))) {
            f.setForeground(dark ? QColor(0xf2, 0x8b, 0x82) : QColor(0xc0, 0x1c, 0x28));
        } else if (line.startsWith(QLatin1String("@@"))) {
            f.setForeground(dark ? QColor(0x79, 0xc0, 0xff) : QColor(0x05, 0x50, 0xae));
        } else {
            return;
        }
        setFormat(0, int(line.size()), f);
    }
};

QString changes(qsizetype n)
{
    return n == 1 ? ReviewWindow::tr("1 change") : ReviewWindow::tr("%1 changes").arg(n);
}
} // namespace

ReviewWindow::ReviewWindow(DaemonClient &client, const QString &sandbox, const QString &sandboxName, QWidget *parent)
    : QDialog(parent)
    , m_api(client)
    , m_sandbox(sandbox)
    , m_name(sandboxName)
    , m_intro(new QLabel)
    , m_list(new QTreeWidget)
    , m_diff(new QPlainTextEdit)
    , m_status(new QLabel)
    , m_applyChosen(new QPushButton(tr("Apply &chosen")))
    , m_applyAll(new QPushButton(tr("Apply &all")))
    , m_overwrite(new QPushButton(tr("Apply over them")))
    , m_discard(new QPushButton(tr("&Discard the rest…")))
{
    setWindowTitle(tr("Review changes — %1").arg(display::escaped(sandboxName)));
    m_intro->setWordWrap(true);
    m_list->setHeaderLabels({tr("Path"), tr("Change")});
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->header()->setStretchLastSection(false);
    m_list->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_list->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_diff->setReadOnly(true);
    m_diff->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_diff->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_highlighter = new DiffHighlighter(m_diff->document());
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_applyChosen->setToolTip(tr("Apply the ticked paths to the project, as you: what their diffs showed"));
    m_applyAll->setToolTip(tr("Apply every change to the project (a link out of it, or a file too large to show, "
                              "only when ticked)"));
    m_overwrite->setToolTip(tr("Apply the sandbox's version over what changed in the project since the sandbox was "
                               "made"));
    m_discard->setToolTip(tr("Delete the sandbox, and with it every change not applied"));

    auto *split = new QSplitter;
    split->addWidget(m_list);
    split->addWidget(m_diff);
    split->setStretchFactor(1, 2);
    auto *buttons = new QDialogButtonBox;
    buttons->addButton(m_applyChosen, QDialogButtonBox::ActionRole);
    buttons->addButton(m_applyAll, QDialogButtonBox::ActionRole);
    buttons->addButton(m_discard, QDialogButtonBox::DestructiveRole);
    QPushButton *refreshButton = buttons->addButton(tr("&Refresh"), QDialogButtonBox::ResetRole);
    buttons->addButton(QDialogButtonBox::Close);
    // What went wrong, and beside it the way past a conflict (shown only then).
    m_overwrite->hide();
    auto *said = new QHBoxLayout;
    said->addWidget(m_status, 1);
    said->addWidget(m_overwrite, 0, Qt::AlignTop);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_intro);
    layout->addWidget(split, 1);
    layout->addLayout(said);
    layout->addWidget(buttons);
    resize(1000, 640);

    connect(m_list, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem *item) { showDiff(item); });
    connect(m_list, &QTreeWidget::itemChanged, this, [this] { updateButtons(); });
    connect(m_applyChosen, &QPushButton::clicked, this, [this] { applyChosen(); });
    connect(m_applyAll, &QPushButton::clicked, this, [this] { applyAll(); });
    connect(m_overwrite, &QPushButton::clicked, this, [this] { apply(m_lastChoice, true); });
    connect(m_discard, &QPushButton::clicked, this, [this] { discard(); });
    connect(refreshButton, &QPushButton::clicked, this, &ReviewWindow::refresh);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    refresh();
}

void ReviewWindow::refresh()
{
    auto review = review::SandboxReview::fetch(m_api, m_sandbox);
    const QString current = m_list->currentItem() ? m_list->currentItem()->data(0, kPathRole).toString() : QString();
    m_list->clear();
    m_diff->clear();
    if (!review) {
        m_review.reset();
        m_intro->setText(tr("The changes of %1 cannot be listed.").arg(display::escaped(m_name)));
        showStatus(m_status, review.error().message, true);
        updateButtons();
        return;
    }
    m_review = std::move(*review);
    m_review->look(); // the person sees this list: an apply writes nothing else
    (void)m_review->saveReviewed();
    QStringList folders;
    for (const cow::MountChanges &m : m_review->changes().mounts)
        folders.append(display::escaped(m.hostPath));
    m_intro->setText(m_review->count() == 0
            ? tr("Nothing of %1's changes is left to review in %2.")
                  .arg(display::escaped(m_name), folders.join(QStringLiteral(", ")))
            : tr("%1 in %2, kept in sandbox %3: nothing reaches the folder until you apply it. Select a path to see "
                 "its diff; tick the ones to apply.")
                  .arg(changes(m_review->count()), folders.join(QStringLiteral(", ")), display::escaped(m_name)));
    QTreeWidgetItem *select = nullptr;
    for (const cow::MountChanges &m : m_review->changes().mounts)
        for (const Change &c : m.changes) {
            const QString shown
                = display::escaped(
                      m_review->changes().mounts.size() > 1 ? m.hostPath + QLatin1Char('/') + c.path : c.path)
                + (c.kind == Change::Kind::Directory ? QStringLiteral("/") : QString());
            auto *item = new QTreeWidgetItem(m_list, {shown, cow::statusName(c.status)});
            item->setCheckState(0, Qt::Unchecked);
            item->setData(0, kMountRole, m.index);
            item->setData(0, kPathRole, c.path);
            item->setToolTip(0, display::escaped(m.hostPath + QLatin1Char('/') + c.path));
            if (!select || c.path == current)
                select = item;
        }
    if (select)
        m_list->setCurrentItem(select);
    updateButtons();
}

void ReviewWindow::showDiff(QTreeWidgetItem *item)
{
    if (!item || !m_review)
        return m_diff->clear();
    const int mount = item->data(0, kMountRole).toInt();
    const QString path = item->data(0, kPathRole).toString();
    for (const cow::MountChanges &m : m_review->changes().mounts) {
        if (m.index != mount)
            continue;
        for (const Change &c : m.changes)
            if (c.path == path) {
                auto text = m_review->diff(mount, c);
                if (!text) {
                    m_diff->setPlainText(text.error().message);
                    return;
                }
                // What it showed is what an apply writes (saved now: the CLI's apply honours it too).
                (void)m_review->saveReviewed();
                // No control character of the sandbox's draws on the view.
                m_diff->setPlainText(QString::fromUtf8(review::forTerminal(*text)));
                return;
            }
    }
}

review::SandboxReview::Chosen ReviewWindow::chosen() const
{
    review::SandboxReview::Chosen chosen;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i) {
        const QTreeWidgetItem *item = m_list->topLevelItem(i);
        if (item->checkState(0) == Qt::Checked)
            chosen[item->data(0, kMountRole).toInt()].append(item->data(0, kPathRole).toString());
    }
    return chosen;
}

void ReviewWindow::applyChosen(bool overwrite)
{
    const auto picked = chosen();
    if (!picked.isEmpty())
        apply(picked, overwrite);
}

void ReviewWindow::applyAll(bool overwrite)
{
    apply({}, overwrite);
}

void ReviewWindow::apply(const review::SandboxReview::Chosen &chosen, bool overwrite)
{
    if (!m_review)
        return;
    m_lastChoice = chosen;
    m_overwrite->hide();
    auto outcome = m_review->apply(chosen, overwrite);
    if (!outcome) {
        refresh();
        return showStatus(m_status, outcome.error().message, true);
    }
    if (!outcome->unseen.isEmpty()) {
        refresh();
        return showStatus(m_status,
            tr("Nothing applied: the sandbox changed these since they were listed, listed again now: %1")
                .arg(display::escaped(outcome->unseen.join(QStringLiteral("; ")))),
            true);
    }
    if (!outcome->conflicts.isEmpty() && !overwrite) {
        showStatus(m_status,
            tr("Nothing applied: changed in the project since the sandbox was made, and applying would lose that:\n%1")
                .arg(display::escaped(outcome->conflicts.join(QLatin1Char('\n')))),
            true);
        m_overwrite->show();
        return;
    }
    refresh();
    QString said = tr("Applied %1").arg(changes(outcome->applied.size()));
    if (!outcome->skipped.isEmpty())
        said += tr("; left as they are: %1").arg(display::escaped(outcome->skipped.join(QStringLiteral("; "))));
    if (!outcome->warning.isEmpty())
        said += QStringLiteral(". ") + outcome->warning;
    showStatus(m_status, said, false);
}

bool ReviewWindow::discard()
{
    if (!m_review)
        return false;
    const int n = m_review->count();
    if (QMessageBox::question(this, tr("Discard the changes"),
            tr("Delete sandbox %1 and the %2 not applied? The project keeps what you applied.")
                .arg(display::escaped(m_name), changes(n)))
        != QMessageBox::Yes)
        return false;
    if (Status s = m_review->discard(); !s) {
        showStatus(m_status, s.error().message, true);
        return false;
    }
    Q_EMIT discarded();
    accept();
    return true;
}

void ReviewWindow::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange)
        m_highlighter->rehighlight(); // its colours are the theme's
    QDialog::changeEvent(event);
}

void ReviewWindow::updateButtons()
{
    const bool any = m_review && m_review->count() > 0;
    m_applyAll->setEnabled(any);
    m_applyChosen->setEnabled(any && !chosen().isEmpty());
    m_discard->setEnabled(bool(m_review));
}

} // namespace airlock::ui
