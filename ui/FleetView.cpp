// SPDX-License-Identifier: Apache-2.0
#include "FleetView.h"

#include "FleetFilter.h"
#include "FleetSampler.h"
#include "SandboxModel.h"
#include "SparklineDelegate.h"

#include <QAction>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace airlock::ui {

FleetView::FleetView(SandboxModel &model, QWidget *parent)
    : QWidget(parent)
    , m_model(model)
    , m_proxy(new FleetFilter(this))
    , m_sampler(new FleetSampler(model, this))
    , m_filter(new QLineEdit)
    , m_tree(new QTreeView)
    , m_empty(new QWidget)
{
    m_proxy->setSourceModel(&model);
    m_filter->setPlaceholderText(tr("Filter sandboxes: name, agent, run, network, output…"));
    m_filter->setToolTip(tr("Shows the sandboxes with this text in any column (Ctrl+Shift+F)"));
    m_filter->setClearButtonEnabled(true);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &FleetFilter::setFilterFixedString);
    auto *focusFilter = new QAction(this);
    focusFilter->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
    focusFilter->setShortcutContext(Qt::WindowShortcut);
    connect(focusFilter, &QAction::triggered, m_filter, [this] {
        m_filter->setFocus();
        m_filter->selectAll();
    });
    addAction(focusFilter);

    // The current row going (deleted, or hidden by the filter) leaves nothing current: Qt would
    // move it to a neighbour, and the console and the next command would silently follow. Connected
    // before the view is given the model, so this runs before the view picks a neighbour.
    connect(m_proxy, &QAbstractItemModel::rowsAboutToBeRemoved, this,
        [this](const QModelIndex &parent, int first, int last) {
            const QModelIndex now = m_tree->currentIndex();
            if (now.isValid() && now.parent() == parent && now.row() >= first && now.row() <= last)
                m_tree->selectionModel()->setCurrentIndex({}, QItemSelectionModel::Clear);
        });
    m_tree->setModel(m_proxy);
    m_tree->setRootIsDecorated(true);
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection); // several at once, for bulk actions
    m_tree->setUniformRowHeights(true);
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(SandboxModel::Name, Qt::AscendingOrder);
    m_tree->setAllColumnsShowFocus(true);
    auto *sparkline = new SparklineDelegate(m_tree);
    m_tree->setItemDelegateForColumn(SandboxModel::Cpu, sparkline);
    m_tree->setItemDelegateForColumn(SandboxModel::Memory, sparkline);
    // Short columns as wide as what they hold; the last output takes the rest, and the pane
    // scrolls sideways when they do not fit.
    QHeaderView *header = m_tree->header();
    header->setStretchLastSection(true);
    // Widths set once, never measured again: a header sized to its contents re-measures every
    // row on every sample.
    header->setSectionResizeMode(QHeaderView::Interactive);
    const QFontMetrics fm = fontMetrics();
    for (int column : {SandboxModel::State, SandboxModel::Running, SandboxModel::Age})
        header->resizeSection(column,
            fm.horizontalAdvance(model.headerData(column, Qt::Horizontal).toString())
                + fm.horizontalAdvance(QStringLiteral("MMM")));
    header->resizeSection(SandboxModel::State, fm.horizontalAdvance(QStringLiteral("not connectedMM")));
    header->resizeSection(SandboxModel::Network, fm.horizontalAdvance(QStringLiteral("FULL (host network)M")));
    header->resizeSection(SandboxModel::Name, 190);
    header->resizeSection(SandboxModel::Cpu, 120);
    header->resizeSection(SandboxModel::Memory, 130);
    header->resizeSection(SandboxModel::Credentials, 110);
    header->resizeSection(SandboxModel::Agent, 90);
    header->resizeSection(SandboxModel::Run, 110);
    m_tree->expandAll();
    connect(m_proxy, &QAbstractItemModel::rowsInserted, m_tree, [this] { m_tree->expandAll(); });
    connect(m_proxy, &QAbstractItemModel::layoutChanged, m_tree, [this] { m_tree->expandAll(); });
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this, &FleetView::currentChanged);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_tree, &QWidget::customContextMenuRequested, this, [this](const QPoint &at) {
        // A right click on a row that is not selected acts on that row alone, as in a file manager.
        const QModelIndex row = m_tree->indexAt(at);
        if (row.isValid() && !m_tree->selectionModel()->isRowSelected(row.row(), row.parent()))
            m_tree->selectionModel()->setCurrentIndex(
                row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QMenu menu(this);
        const bool remoteHost = row.isValid() && !row.parent().isValid() && m_proxy->mapToSource(row).row() > 0;
        menu.addActions(remoteHost ? m_hostActions : m_contextActions);
        if (!menu.isEmpty())
            menu.exec(m_tree->viewport()->mapToGlobal(at));
    });

    // No sandbox anywhere yet: what to do next, in place of an empty table.
    m_empty->setObjectName(QStringLiteral("fleetEmptyState"));
    auto *emptyLayout = new QVBoxLayout(m_empty);
    auto *says = new QLabel(tr(
        "<b>No sandboxes yet.</b> A sandbox is where an agent's commands run, with only the network, credentials and "
        "tools you give it. Make one to work in, or connect an agent: it makes its own, and asks you before "
        "anything its policy does not allow."));
    says->setWordWrap(true);
    auto *newButton = new QPushButton(tr("New sandbox…"));
    newButton->setToolTip(tr("A sandbox with a preset and limits you choose (Ctrl+N)"));
    auto *agentButton = new QPushButton(tr("Connect an agent…"));
    agentButton->setToolTip(tr("The configuration for Claude Code, Codex, Cursor, VS Code or any MCP client"));
    connect(newButton, &QPushButton::clicked, this, &FleetView::newSandboxRequested);
    connect(agentButton, &QPushButton::clicked, this, &FleetView::connectAgentRequested);
    auto *row = new QHBoxLayout;
    row->addWidget(newButton);
    row->addWidget(agentButton);
    row->addStretch(1);
    emptyLayout->addWidget(says);
    emptyLayout->addLayout(row);
    emptyLayout->addStretch(1);
    for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved})
        connect(&model, signal, this, &FleetView::updateEmptyState);
    connect(&model, &QAbstractItemModel::modelReset, this, &FleetView::updateEmptyState);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_filter);
    layout->addWidget(m_tree, 1);
    layout->addWidget(m_empty, 3);
    updateEmptyState();
}

QModelIndex FleetView::current() const
{
    return m_proxy->mapToSource(m_tree->currentIndex());
}

void FleetView::setCurrent(const QModelIndex &index)
{
    const QModelIndex shown = m_proxy->mapFromSource(index);
    if (!shown.isValid() && index.isValid() && !m_filter->text().isEmpty()) {
        m_filter->clear(); // the filter hid it: asked for by name, it is shown
        return setCurrent(index);
    }
    m_tree->selectionModel()->setCurrentIndex(shown, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

QModelIndexList FleetView::selectedSandboxes() const
{
    QModelIndexList out;
    for (const QModelIndex &row : m_tree->selectionModel()->selectedRows())
        if (row.parent().isValid())
            out.append(m_proxy->mapToSource(row));
    return out; // only what is selected: never a row the person did not pick (the current one moves when rows go)
}

void FleetView::select(const QModelIndexList &indexes)
{
    QItemSelection selection;
    for (const QModelIndex &index : indexes)
        if (const QModelIndex shown = m_proxy->mapFromSource(index); shown.isValid())
            selection.select(shown, shown);
    m_tree->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void FleetView::updateEmptyState()
{
    bool any = false;
    for (int host = 0; host < m_model.rowCount() && !any; ++host)
        any = m_model.rowCount(m_model.index(host, 0)) > 0;
    m_empty->setVisible(!any);
}

void FleetView::setContextActions(const QList<QAction *> &actions)
{
    m_contextActions = actions;
}

void FleetView::setHostContextActions(const QList<QAction *> &actions)
{
    m_hostActions = actions;
}

void FleetView::showEvent(QShowEvent *event)
{
    m_sampler->setActive(true);
    QWidget::showEvent(event);
}

void FleetView::hideEvent(QHideEvent *event)
{
    m_sampler->setActive(false);
    QWidget::hideEvent(event);
}

} // namespace airlock::ui
