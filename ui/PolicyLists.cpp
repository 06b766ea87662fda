// SPDX-License-Identifier: Apache-2.0
#include "PolicyLists.h"

#include "mcp/AgentConfig.h"
#include "model/DisplayText.h"

#include <QApplication>
#include <QComboBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QTextDocument>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace airlock::ui {

namespace {
constexpr int InheritedRole = Qt::UserRole + 40; // on column 0: the row is another layer's
constexpr int LayerRole = Qt::UserRole + 41; // on column 0: that layer, as the resolver names it

constexpr int ChipRole = Qt::UserRole + 43; // on a "Set by" cell: the layer, as the resolver names it
constexpr int CellsRole = Qt::UserRole + 42; // on column 0: the cells as given
constexpr int RawRole = Qt::UserRole + 44; // on column 0: the entry as the policy holds it

void markInherited(QTreeWidgetItem *item, const QString &layer, int fromColumn, const QString &howToChange)
{
    item->setData(0, InheritedRole, true);
    item->setData(0, LayerRole, layer);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    item->setText(fromColumn, layerLabel(layer));
    item->setData(fromColumn, ChipRole, layer);
    // A remote daemon's words: escaped, and never read as rich text.
    const QString why = Qt::convertFromPlainText(
        QObject::tr("In force, set by %1. %2").arg(display::escaped(layerLabel(layer), 200), howToChange));
    for (int c = 0; c <= fromColumn; ++c)
        item->setToolTip(c, why);
}
} // namespace

QString layerLabel(const QString &layer)
{
    if (layer == QLatin1String("builtin"))
        return QObject::tr("built-in");
    if (layer == QLatin1String("user"))
        return QObject::tr("your defaults");
    if (layer == QLatin1String("sandbox"))
        return QObject::tr("this sandbox");
    if (layer.startsWith(QLatin1String("preset:")))
        return QObject::tr("preset %1").arg(layer.mid(7));
    return layer;
}

HostListEditor::HostListEditor(const QString &title, bool canBlock, QWidget *parent)
    : QWidget(parent)
    , m_list(new QTreeWidget)
    , m_input(new QLineEdit)
    , m_add(new QPushButton(tr("Add")))
    , m_remove(new QPushButton(tr("Remove")))
    , m_block(new QPushButton(tr("Block")))
    , m_error(new QLabel)
    , m_ownLayer(QStringLiteral("sandbox"))
{
    auto *box = new QGroupBox(title);
    auto *layout = new QVBoxLayout(box);
    m_list->setHeaderLabels({tr("Destination"), tr("Set by")});
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_list->header()->setStretchLastSection(false);
    m_list->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_list->header()->setSectionResizeMode(1, QHeaderView::Interactive); // sized to its chips as rows change
    m_list->setItemDelegate(new InheritedDelegate(m_list));
    m_list->setItemDelegateForColumn(1, new LayerChipDelegate(m_list));
    layout->addWidget(m_list);
    auto *row = new QHBoxLayout;
    m_input->setPlaceholderText(tr("example.com, *.example.com, host:443 or a URL"));
    m_input->setToolTip(tr("A host, a *. pattern, host:port, or a pasted URL (it becomes host:port). Several at once, "
                           "separated by spaces or commas."));
    row->addWidget(m_input, 1);
    row->addWidget(m_add);
    row->addWidget(m_remove);
    row->addWidget(m_block);
    m_add->setToolTip(tr("Add what is typed to this layer"));
    m_remove->setToolTip(
        tr("Remove the selected entries of this layer (entries of other layers cannot be removed here)"));
    m_block->setToolTip(
        tr("Put the selected entries on the deny list: deny beats allow, whichever layer allowed them"));
    m_block->setVisible(canBlock);
    layout->addLayout(row);
    m_error->setWordWrap(true);
    m_error->setTextFormat(Qt::PlainText);
    layout->addWidget(m_error);
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(box);
    connect(m_input, &QLineEdit::textChanged, this, &HostListEditor::check);
    connect(m_input, &QLineEdit::returnPressed, m_add, &QPushButton::click);
    connect(m_add, &QPushButton::clicked, this, [this] {
        auto parsed = mcp::parseAllowedHosts(m_input->text());
        if (!parsed || parsed->isEmpty())
            return;
        addHosts(*parsed);
        m_input->clear();
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        for (QTreeWidgetItem *item : m_list->selectedItems())
            if (!item->data(0, InheritedRole).toBool())
                delete item;
        Q_EMIT changed();
    });
    connect(m_block, &QPushButton::clicked, this, [this] {
        QStringList hosts;
        for (QTreeWidgetItem *item : m_list->selectedItems())
            if (item->data(0, InheritedRole).toBool())
                hosts.append(item->text(0));
        if (!hosts.isEmpty())
            Q_EMIT blockRequested(hosts);
    });
    connect(m_list, &QTreeWidget::itemSelectionChanged, this, &HostListEditor::selectionChanged);
    check();
    selectionChanged();
}

void HostListEditor::setOwnLayerName(const QString &layer)
{
    m_ownLayer = layer;
}

void HostListEditor::setHosts(const QStringList &hosts)
{
    for (int i = m_list->topLevelItemCount() - 1; i >= 0; --i)
        if (!m_list->topLevelItem(i)->data(0, InheritedRole).toBool())
            delete m_list->takeTopLevelItem(i);
    int at = 0;
    for (const QString &host : hosts) {
        auto *item = new QTreeWidgetItem({host, layerLabel(m_ownLayer)});
        item->setData(1, ChipRole, m_ownLayer);
        m_list->insertTopLevelItem(at++, item);
    }
    fitChips();
    selectionChanged();
}

void HostListEditor::addHosts(const QStringList &hosts)
{
    QStringList own = this->hosts();
    for (const QString &host : hosts)
        if (!own.contains(host))
            own.append(host);
    setHosts(own);
    Q_EMIT changed();
}

void HostListEditor::setInherited(const QList<InheritedRow> &rows)
{
    for (int i = m_list->topLevelItemCount() - 1; i >= 0; --i)
        if (m_list->topLevelItem(i)->data(0, InheritedRole).toBool())
            delete m_list->takeTopLevelItem(i);
    for (const InheritedRow &row : rows) {
        auto *item = new QTreeWidgetItem({row.cells.value(0), QString()});
        markInherited(item, row.layer, 1,
            m_block->isVisibleTo(this)
                ? tr("Lists add up across layers, so it cannot be removed here: Block puts it on the deny list.")
                : tr("Lists add up across layers, so it cannot be removed here."));
        m_list->addTopLevelItem(item);
    }
    fitChips();
    selectionChanged();
}

void HostListEditor::fitChips()
{
    // Wide enough for the widest chip, measured (a view not shown yet has no rows laid out to ask).
    const QFontMetrics metrics(m_list->font());
    int width = metrics.horizontalAdvance(m_list->headerItem()->text(1)) + 24;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i)
        width = std::max(width, metrics.horizontalAdvance(m_list->topLevelItem(i)->text(1)) + 32);
    m_list->setColumnWidth(1, std::min(width, 320));
}

QStringList HostListEditor::hosts() const
{
    QStringList out;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i)
        if (!m_list->topLevelItem(i)->data(0, InheritedRole).toBool())
            out.append(m_list->topLevelItem(i)->text(0));
    return out;
}

QStringList HostListEditor::inherited() const
{
    QStringList out;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i)
        if (m_list->topLevelItem(i)->data(0, InheritedRole).toBool())
            out.append(m_list->topLevelItem(i)->text(0));
    return out;
}

void HostListEditor::selectionChanged()
{
    bool own = false, inherited = false;
    for (QTreeWidgetItem *item : m_list->selectedItems())
        (item->data(0, InheritedRole).toBool() ? inherited : own) = true;
    m_remove->setEnabled(own);
    m_block->setEnabled(inherited);
}

void HostListEditor::check()
{
    // Checked as it is typed, by the same rules the daemon applies; a URL says what it becomes.
    const QString text = m_input->text().trimmed();
    auto parsed = text.isEmpty() ? Result<QStringList>(QStringList()) : mcp::parseAllowedHosts(text);
    const QString normal = parsed ? parsed->join(QStringLiteral(", ")) : QString();
    m_error->setText(parsed
            ? (text.isEmpty() || normal == text ? QString()
                                                : tr("will be stored as %1").arg(display::escaped(normal, 300)))
            : parsed.error().message);
    m_error->setStyleSheet(parsed ? QStringLiteral("color: palette(mid)") : QStringLiteral("color: #d03030"));
    m_add->setEnabled(!text.isEmpty() && parsed && !parsed->isEmpty());
}

QString InheritedDelegate::displayText(const QVariant &value, const QLocale &) const
{
    return display::escaped(value.toString(), 1000);
}

void InheritedDelegate::initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const
{
    QStyledItemDelegate::initStyleOption(option, index);
    if (index.siblingAtColumn(0).data(InheritedRole).toBool())
        option->palette.setColor(QPalette::Text, option->palette.color(QPalette::Disabled, QPalette::Text));
}

void LayerChipDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QStyleOptionViewItem item = option;
    initStyleOption(&item, index);
    const QString text = item.text;
    item.text.clear();
    const QWidget *widget = option.widget;
    QStyle *style = widget ? widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &item, painter, widget);
    if (text.isEmpty())
        return;
    const QString layer = index.data(ChipRole).toString();
    QColor hue(130, 130, 130); // built-in, and what no layer names
    if (layer == QLatin1String("user"))
        hue = QColor(40, 150, 80);
    else if (layer.startsWith(QLatin1String("preset:")))
        hue = QColor(50, 110, 210);
    else if (layer == QLatin1String("sandbox") || layer.isEmpty())
        hue = QColor(170, 90, 200);
    const QFontMetrics metrics(option.font);
    QRect chip(
        option.rect.left() + 4, option.rect.top() + 2, metrics.horizontalAdvance(text) + 16, option.rect.height() - 4);
    chip = chip.intersected(option.rect.adjusted(0, 0, -2, 0));
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    QColor fill = hue;
    fill.setAlpha(50);
    painter->setPen(QPen(hue, 1));
    painter->setBrush(fill);
    painter->drawRoundedRect(QRectF(chip).adjusted(0.5, 0.5, -0.5, -0.5), chip.height() / 2.0, chip.height() / 2.0);
    painter->setPen(option.palette.color(QPalette::Text));
    // Elided only when the column is narrower than the chip (the advance is rounded: 2 px to spare).
    painter->drawText(chip.adjusted(7, 0, -5, 0), Qt::AlignVCenter | Qt::AlignLeft,
        metrics.elidedText(text, Qt::ElideRight, chip.width() - 12));
    painter->restore();
}

QSize LayerChipDelegate::sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QSize size = InheritedDelegate::sizeHint(option, index);
    return {size.width() + 22, size.height() + 2};
}

CellDelegate::CellDelegate(RowListEditor *editor)
    : InheritedDelegate(editor)
    , m_editor(editor)
{
}

void CellDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    const RowColumn::Kind kind = m_editor->m_columns.value(index.column()).kind;
    const bool own = !index.siblingAtColumn(0).data(InheritedRole).toBool();
    if (kind != RowColumn::Choice || !own)
        return InheritedDelegate::paint(painter, option, index);
    // This layer's choice: drawn as the drop-down it opens.
    QStyleOptionViewItem item = option;
    initStyleOption(&item, index);
    const QWidget *widget = option.widget;
    QStyle *style = widget ? widget->style() : QApplication::style();
    style->drawPrimitive(QStyle::PE_PanelItemViewItem, &item, painter, widget);
    QStyleOptionComboBox combo;
    combo.rect = option.rect.adjusted(1, 1, -1, -1);
    combo.state = option.state | QStyle::State_Enabled;
    combo.palette = option.palette;
    combo.frame = true;
    style->drawComplexControl(QStyle::CC_ComboBox, &combo, painter, widget);
    combo.currentText = displayText(index.data(), option.locale);
    style->drawControl(QStyle::CE_ComboBoxLabel, &combo, painter, widget);
}

QWidget *CellDelegate::createEditor(QWidget *parent, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    const RowColumn column = m_editor->m_columns.value(index.column());
    if (column.kind == RowColumn::Shown || column.kind == RowColumn::Check)
        return nullptr; // shown only, or toggled in place
    if (column.kind != RowColumn::Choice)
        return QStyledItemDelegate::createEditor(parent, option, index);
    auto *box = new QComboBox(parent);
    for (const QString &choice : column.choices) // shown escaped (a daemon's secret names), kept as they are
        box->addItem(display::escaped(choice, 200), choice);
    const QString extra = m_editor->m_extra.value(index.column());
    if (!extra.isEmpty())
        box->addItem(extra, QStringLiteral("\x01extra"));
    // A choice is taken as it is made (not when the cell loses focus).
    connect(box, &QComboBox::activated, this, [this, box, extra](int i) {
        if (!extra.isEmpty() && i == box->count() - 1)
            return; // setModelData says what it means
        Q_EMIT const_cast<CellDelegate *>(this)->commitData(box);
    });
    return box;
}

void CellDelegate::setEditorData(QWidget *editor, const QModelIndex &index) const
{
    if (auto *box = qobject_cast<QComboBox *>(editor)) {
        // A value the list does not have (a secret not in this store), or none yet, is offered as it is.
        const QString value = index.data().toString();
        if (box->findData(value) < 0)
            box->insertItem(0, display::escaped(value, 200), value);
        box->setCurrentIndex(box->findData(value));
        return;
    }
    QStyledItemDelegate::setEditorData(editor, index);
}

void CellDelegate::setModelData(QWidget *editor, QAbstractItemModel *model, const QModelIndex &index) const
{
    if (auto *box = qobject_cast<QComboBox *>(editor)) {
        if (box->currentData().toString() == QLatin1String("\x01extra")) {
            QTreeWidgetItem *item = m_editor->m_tree->topLevelItem(index.row());
            const int column = index.column();
            QTimer::singleShot(
                0, m_editor, [editor = m_editor, item, column] { Q_EMIT editor->specialChosen(item, column); });
            return;
        }
        model->setData(index, box->currentData().toString());
        return;
    }
    QStyledItemDelegate::setModelData(editor, model, index);
}

bool CellDelegate::eventFilter(QObject *object, QEvent *event)
{
    if (event->type() == QEvent::KeyPress) {
        const auto *key = static_cast<QKeyEvent *>(event);
        const bool tab = key->key() == Qt::Key_Tab || key->key() == Qt::Key_Backtab;
        if (tab && !(key->modifiers() & (Qt::ControlModifier | Qt::AltModifier))) {
            auto *editor = qobject_cast<QWidget *>(object);
            const QModelIndex at = m_editor->m_tree->currentIndex();
            Q_EMIT commitData(editor);
            Q_EMIT closeEditor(editor, QAbstractItemDelegate::NoHint);
            if (!m_editor->editNext(
                    at, key->key() == Qt::Key_Backtab || (key->modifiers() & Qt::ShiftModifier) ? -1 : 1))
                m_editor->m_tree->setFocus(); // past the last cell: the rows keep the focus, Tab leaves them
            return true;
        }
    }
    return QStyledItemDelegate::eventFilter(object, event);
}

bool RowListEditor::editNext(const QModelIndex &from, int step)
{
    const int columns = int(m_columns.size());
    const int own = ownCount();
    for (int cell = from.row() * columns + from.column() + step; cell >= 0 && cell < own * columns; cell += step) {
        const RowColumn::Kind kind = m_columns.at(cell % columns).kind;
        if (kind != RowColumn::Text && kind != RowColumn::Choice)
            continue;
        QTreeWidgetItem *item = m_tree->topLevelItem(cell / columns);
        m_tree->setCurrentItem(item, cell % columns);
        m_tree->editItem(item, cell % columns);
        return true;
    }
    return false;
}

RowListEditor::RowListEditor(QList<RowColumn> columns, QStringList newRow, QWidget *parent)
    : QWidget(parent)
    , m_columns(std::move(columns))
    , m_tree(new QTreeWidget)
    , m_newRow(std::move(newRow))
    , m_add(new QPushButton(tr("Add")))
    , m_remove(new QPushButton(tr("Remove")))
    , m_override(new QPushButton(tr("Override")))
    , m_ownLayer(QStringLiteral("sandbox"))
{
    QStringList headers;
    for (const RowColumn &c : m_columns)
        headers.append(c.header);
    headers.append(tr("Set by"));
    m_extra.resize(m_columns.size());
    m_tree->setHeaderLabels(headers);
    for (int c = 0; c < m_columns.size(); ++c)
        m_tree->headerItem()->setToolTip(c, m_columns.at(c).tip);
    m_tree->headerItem()->setToolTip(
        int(m_columns.size()), tr("The layer that set the row: built-in, your defaults, the preset, or this sandbox"));
    m_tree->setRootIsDecorated(false);
    m_tree->setUniformRowHeights(true);
    m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
    m_tree->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed
        | QAbstractItemView::SelectedClicked | QAbstractItemView::AnyKeyPressed);
    m_tree->setItemDelegate(new CellDelegate(this));
    m_tree->setItemDelegateForColumn(int(m_columns.size()), new LayerChipDelegate(m_tree));
    m_add->setToolTip(tr("Add a row to this layer"));
    m_remove->setToolTip(tr("Remove the selected row of this layer"));
    m_override->setToolTip(tr("Copy the selected row of another layer into this one, to make it stricter"));
    m_override->setVisible(false);
    auto *buttons = new QHBoxLayout;
    for (QPushButton *b : {m_add, m_remove, m_override})
        buttons->addWidget(b);
    buttons->addStretch(1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tree, 1);
    layout->addLayout(buttons);
    connect(m_add, &QPushButton::clicked, this, [this] {
        addRow(m_newRow);
        QTreeWidgetItem *item = m_tree->topLevelItem(ownCount() - 1);
        m_tree->setCurrentItem(item, 0);
        m_tree->editItem(item, 0);
        Q_EMIT changed();
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        if (QTreeWidgetItem *item = m_tree->currentItem(); item && isOwn(item)) {
            delete item;
            hideReplaced();
            Q_EMIT changed();
        }
    });
    connect(m_override, &QPushButton::clicked, this, [this] {
        QTreeWidgetItem *item = m_tree->currentItem();
        if (!item || isOwn(item))
            return;
        const int own = ownCount();
        if (QTreeWidgetItem *copy = overrideInherited(m_tree->indexOfTopLevelItem(item) - own)) {
            m_tree->setCurrentItem(copy, 0);
            m_tree->editItem(copy, 0);
        }
    });
    // A click on a drop-down cell of this layer opens it at once.
    connect(m_tree, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem *item, int column) {
        if (isOwn(item) && m_columns.value(column).kind == RowColumn::Choice)
            m_tree->editItem(item, column);
    });
    connect(m_tree, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem *item) {
        if (!isOwn(item) && m_override->isVisible())
            m_override->click();
    });
    connect(m_tree, &QTreeWidget::itemChanged, this, [this] {
        if (m_quiet)
            return;
        hideReplaced();
        Q_EMIT changed();
    });
    connect(m_tree, &QTreeWidget::currentItemChanged, this, &RowListEditor::selectionChanged);
    selectionChanged();
}

void RowListEditor::setOwnLayerName(const QString &layer)
{
    m_ownLayer = layer;
}

void RowListEditor::setKeyed(bool keyed)
{
    m_keyed = keyed;
}

void RowListEditor::setOverridable(bool overridable)
{
    m_override->setVisible(overridable);
}

void RowListEditor::setChoices(int column, const QStringList &choices, const QString &extra)
{
    if (column < 0 || column >= m_columns.size())
        return;
    m_columns[column].choices = choices;
    m_extra[column] = extra;
}

bool RowListEditor::isOwn(const QTreeWidgetItem *item) const
{
    return item && !item->data(0, InheritedRole).toBool();
}

int RowListEditor::ownCount() const
{
    int n = 0; // own rows come first
    while (n < m_tree->topLevelItemCount() && isOwn(m_tree->topLevelItem(n)))
        ++n;
    return n;
}

QTreeWidgetItem *RowListEditor::makeOwn(const QStringList &cells, const QJsonValue &raw) const
{
    auto *item = new QTreeWidgetItem;
    for (int c = 0; c < m_columns.size(); ++c) {
        if (m_columns.at(c).kind == RowColumn::Check)
            item->setCheckState(c, cells.value(c) == QLatin1String("yes") ? Qt::Checked : Qt::Unchecked);
        else
            item->setText(c, cells.value(c));
    }
    item->setText(int(m_columns.size()), layerLabel(m_ownLayer));
    item->setData(int(m_columns.size()), ChipRole, m_ownLayer);
    item->setData(0, CellsRole, cells);
    item->setData(0, RawRole, raw.toVariant());
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable | Qt::ItemIsUserCheckable);
    return item;
}

void RowListEditor::addRow(const QStringList &cells, const QJsonValue &raw)
{
    const QScopedValueRollback quiet(m_quiet, true);
    m_tree->insertTopLevelItem(ownCount(), makeOwn(cells, raw)); // own rows first, then the inherited
    hideReplaced();
}

QTreeWidgetItem *RowListEditor::overrideInherited(int index)
{
    const QList<InheritedRow> rows = inherited();
    if (index < 0 || index >= rows.size())
        return nullptr;
    addRow(rows.at(index).cells, rows.at(index).raw);
    Q_EMIT changed();
    return m_tree->topLevelItem(ownCount() - 1);
}

void RowListEditor::setRows(const QList<QStringList> &rows, const QList<QJsonValue> &raws)
{
    const QScopedValueRollback quiet(m_quiet, true);
    for (int i = ownCount() - 1; i >= 0; --i)
        delete m_tree->takeTopLevelItem(i);
    QList<QTreeWidgetItem *> items;
    for (qsizetype i = 0; i < rows.size(); ++i)
        items.append(makeOwn(rows.at(i), raws.value(i)));
    m_tree->insertTopLevelItems(0, items); // at once: a layer of thousands of rows loads in one pass
    hideReplaced();
    fitColumns();
}

QList<QJsonValue> RowListEditor::raws() const
{
    // Unchanged: every cell a person can edit is as it was given (a shown description may differ).
    QList<QJsonValue> out;
    const QList<QStringList> now = rows();
    for (int i = 0; i < now.size(); ++i) {
        const QTreeWidgetItem *item = m_tree->topLevelItem(i);
        const QStringList given = item->data(0, CellsRole).toStringList();
        bool same = true;
        for (int c = 0; c < m_columns.size() && same; ++c)
            same = m_columns.at(c).kind == RowColumn::Shown || given.value(c).trimmed() == now.at(i).value(c);
        out.append(same ? QJsonValue::fromVariant(item->data(0, RawRole)) : QJsonValue());
    }
    return out;
}

void RowListEditor::setInherited(const QList<InheritedRow> &rows)
{
    const QScopedValueRollback quiet(m_quiet, true);
    for (int i = m_tree->topLevelItemCount() - 1; i >= 0; --i)
        if (!isOwn(m_tree->topLevelItem(i)))
            delete m_tree->takeTopLevelItem(i);
    for (const InheritedRow &row : rows) {
        auto *item = new QTreeWidgetItem;
        for (int c = 0; c < m_columns.size(); ++c) {
            if (m_columns.at(c).kind == RowColumn::Check)
                item->setCheckState(c, row.cells.value(c) == QLatin1String("yes") ? Qt::Checked : Qt::Unchecked);
            else
                item->setText(c, row.cells.value(c));
        }
        item->setData(0, CellsRole, row.cells); // as given (Override copies them, and the entry)
        item->setData(0, RawRole, row.raw.toVariant());
        markInherited(item, row.layer, int(m_columns.size()),
            m_keyed ? tr("Override to choose what this layer says instead.")
                : m_override->isVisibleTo(this)
                ? tr("Rules add up across layers, so it cannot be removed here: Override copies it "
                     "here to make it stricter (the strictest matching rule wins).")
                : tr("Lists add up across layers, so it cannot be removed here."));
        m_tree->addTopLevelItem(item);
    }
    hideReplaced();
    fitColumns();
}

void RowListEditor::fitColumns()
{
    // To their contents, but none so wide that "Set by" leaves the view (a long description).
    for (int c = 0; c < m_tree->columnCount(); ++c) {
        m_tree->resizeColumnToContents(c);
        m_tree->setColumnWidth(c, std::min(m_tree->columnWidth(c), 420));
    }
}

void RowListEditor::hideReplaced()
{
    QStringList keys;
    if (m_keyed)
        for (const QStringList &row : rows())
            keys.append(row.value(0));
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        QTreeWidgetItem *item = m_tree->topLevelItem(i);
        if (!isOwn(item))
            item->setHidden(keys.contains(item->text(0)));
    }
}

QList<QStringList> RowListEditor::rows() const
{
    QList<QStringList> out;
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        const QTreeWidgetItem *item = m_tree->topLevelItem(i);
        if (!isOwn(item))
            continue;
        QStringList cells;
        for (int c = 0; c < m_columns.size(); ++c)
            cells.append(m_columns.at(c).kind == RowColumn::Check
                    ? (item->checkState(c) == Qt::Checked ? QStringLiteral("yes") : QString())
                    : item->text(c).trimmed());
        out.append(cells);
    }
    return out;
}

QList<InheritedRow> RowListEditor::inherited() const
{
    QList<InheritedRow> out;
    for (int i = 0; i < m_tree->topLevelItemCount(); ++i) {
        const QTreeWidgetItem *item = m_tree->topLevelItem(i);
        if (!isOwn(item))
            out.append({item->data(0, CellsRole).toStringList(), item->data(0, LayerRole).toString(),
                QJsonValue::fromVariant(item->data(0, RawRole))});
    }
    return out;
}

void RowListEditor::selectionChanged()
{
    QTreeWidgetItem *item = m_tree->currentItem();
    m_remove->setEnabled(isOwn(item));
    m_override->setEnabled(item && !isOwn(item));
}

} // namespace airlock::ui
