// SPDX-License-Identifier: Apache-2.0
#include "FleetView.h"

#include "FleetFilter.h"
#include "FleetSampler.h"
#include "SandboxModel.h"
#include "SparklineDelegate.h"

#include <QAction>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QTreeView>
#include <QVBoxLayout>

namespace airlock::ui {

FleetView::FleetView(SandboxModel &model, QWidget *parent)
    : QWidget(parent), m_model(model), m_proxy(new FleetFilter(this)), m_sampler(new FleetSampler(model, this)), m_filter(new QLineEdit),
      m_tree(new QTreeView)
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
        header->resizeSection(column, fm.horizontalAdvance(model.headerData(column, Qt::Horizontal).toString()) + fm.horizontalAdvance(QStringLiteral("MMM")));
    header->resizeSection(SandboxModel::State, fm.horizontalAdvance(QStringLiteral("connected · 999 ms")));
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
            m_tree->selectionModel()->setCurrentIndex(row, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QMenu menu(this);
        menu.addActions(m_contextActions);
        menu.exec(m_tree->viewport()->mapToGlobal(at));
    });

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_filter);
    layout->addWidget(m_tree, 1);
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
    if (out.isEmpty() && m_tree->currentIndex().parent().isValid())
        out.append(current().siblingAtColumn(0));
    return out;
}

void FleetView::select(const QModelIndexList &indexes)
{
    QItemSelection selection;
    for (const QModelIndex &index : indexes)
        if (const QModelIndex shown = m_proxy->mapFromSource(index); shown.isValid())
            selection.select(shown, shown);
    m_tree->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void FleetView::setContextActions(const QList<QAction *> &actions)
{
    m_contextActions = actions;
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
