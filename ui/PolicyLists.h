// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QJsonValue>
#include <QStringList>
#include <QStyledItemDelegate>
#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace airlock::ui {

// A policy layer's name as a person reads it: "preset package-install", "your defaults", …
QString layerLabel(const QString &layer);

// A value in force that a layer below the one being edited set: shown greyed beside the layer's
// own values, with the layer that set it, and never part of what the editor applies.
struct InheritedRow {
    QStringList cells;
    QString layer; // as the resolver names it (builtin, user, preset:NAME, sandbox) or a phrase
    QJsonValue raw; // the entry as the policy holds it (Override copies it exactly)
};

// A list of host patterns: this layer's own (added as typed or pasted, a URL becoming host:port,
// checked by the policy's own rules; removable) and the ones in force from other layers (greyed,
// with their layer). Lists add up across layers, so an inherited allow entry cannot be removed
// here; Block puts it on the deny list instead (deny beats allow).
class HostListEditor final : public QWidget {
    Q_OBJECT
public:
    HostListEditor(const QString &title, bool canBlock, QWidget *parent = nullptr);
    void setHosts(const QStringList &hosts);
    void setInherited(const QList<InheritedRow> &rows);
    void addHosts(const QStringList &hosts);
    QStringList hosts() const; // this layer's own
    QStringList inherited() const; // the hosts of the other layers
    QLineEdit *input() const { return m_input; }
    QPushButton *addButton() const { return m_add; }
    QPushButton *removeButton() const { return m_remove; }
    QPushButton *blockButton() const { return m_block; }
    QTreeWidget *list() const { return m_list; }

Q_SIGNALS:
    void changed();
    void blockRequested(const QStringList &hosts);

private:
    void check();
    void selectionChanged();
    void fitChips();
    void setOwnLayerName(const QString &layer);
    friend class PolicyEditor;

    QTreeWidget *m_list;
    QLineEdit *m_input;
    QPushButton *m_add, *m_remove, *m_block;
    QLabel *m_error;
    QString m_ownLayer;
};

// One column of a RowListEditor: free text, a choice among values (a decision, a secret from the
// store), a check box ("yes" or ""), or shown only (a tool's description).
struct RowColumn {
    enum Kind { Text, Choice, Check, Shown };
    QString header;
    Kind kind = Text;
    QStringList choices; // Choice: the values offered
    QString tip; // the header's tooltip: what goes in the cell
};

// Rows of cells (command rules, credential grants, tool permissions): this layer's own, edited in
// place (a choice column is a drop-down, Tab goes to the next cell), and the rows in force from
// other layers, greyed, with their layer in the last column. Where a row's first cell is a key
// (tools: a later layer replaces an earlier one's entry of that name), an inherited row that this
// layer replaces is hidden. Override copies an inherited row into this layer to be changed.
// Order does not matter in any of these sections (the strictest matching rule wins), so there is
// no moving up or down.
class RowListEditor final : public QWidget {
    Q_OBJECT
public:
    RowListEditor(QList<RowColumn> columns, QStringList newRow, QWidget *parent = nullptr);
    // `raws`: each row's entry as the policy holds it, given back by raws() while the row's cells
    // are as they were (a rule's words as a list, constraints with ';' or '=' in them).
    void setRows(const QList<QStringList> &rows, const QList<QJsonValue> &raws = {});
    void setInherited(const QList<InheritedRow> &rows);
    QList<QStringList> rows() const; // this layer's own
    QList<QJsonValue> raws() const; // per own row: its entry as it was, or null once its cells changed
    QList<InheritedRow> inherited() const;
    void addRow(const QStringList &cells, const QJsonValue &raw = {});
    // Keyed: an own row replaces the inherited one with the same first cell.
    void setKeyed(bool keyed);
    void setOverridable(bool overridable);
    // A Choice column's values (the secrets in the store); `extra` is offered last and chosen
    // means specialChosen() (New secret…), the cell keeping its value.
    void setChoices(int column, const QStringList &choices, const QString &extra = {});
    QTreeWidget *tree() const { return m_tree; }
    QPushButton *overrideButton() const { return m_override; }
    QPushButton *removeButton() const { return m_remove; }
    QPushButton *addButton() const { return m_add; }
    // Copies the inherited row at `index` (of inherited()) into this layer; returns its item.
    QTreeWidgetItem *overrideInherited(int index);
    const QList<RowColumn> &columns() const { return m_columns; }

Q_SIGNALS:
    void changed();
    void specialChosen(QTreeWidgetItem *item, int column);

private:
    void selectionChanged();
    void hideReplaced();
    void fitColumns();
    // Opens the editor of the next (step 1) or previous (-1) editable cell of this layer's rows.
    bool editNext(const QModelIndex &from, int step);
    bool isOwn(const QTreeWidgetItem *item) const;
    int ownCount() const;
    QTreeWidgetItem *makeOwn(const QStringList &cells, const QJsonValue &raw) const;
    void setOwnLayerName(const QString &layer);
    friend class PolicyEditor;
    friend class CellDelegate;

    QList<RowColumn> m_columns;
    QTreeWidget *m_tree;
    QStringList m_newRow;
    QPushButton *m_add, *m_remove, *m_override;
    QStringList m_extra; // per column: the special last choice
    bool m_keyed = false;
    bool m_quiet = false;
    QString m_ownLayer;
};

// Paints the rows of other layers greyed, in whichever theme is in force when they are painted,
// and every cell's text escaped (a daemon's words, an agent's command an "always" rule holds),
// while the cell keeps its value as it is.
class InheritedDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    QString displayText(const QVariant &value, const QLocale &locale) const override;

protected:
    void initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const override;
};

// Paints a "Set by" cell as a chip, one colour per kind of layer (built-in, your defaults, a
// preset, this sandbox, none), the same in the light and the dark theme.
class LayerChipDelegate final : public InheritedDelegate {
    Q_OBJECT
public:
    using InheritedDelegate::InheritedDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;
};

// Paints a Choice cell as a drop-down and edits it with one; Check cells as check boxes.
class CellDelegate final : public InheritedDelegate {
    Q_OBJECT
public:
    explicit CellDelegate(RowListEditor *editor);
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    QWidget *createEditor(QWidget *parent, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
    void setEditorData(QWidget *editor, const QModelIndex &index) const override;
    void setModelData(QWidget *editor, QAbstractItemModel *model, const QModelIndex &index) const override;

protected:
    // Tab and Shift+Tab go from cell to cell of this layer's rows, as in a spreadsheet (a tree
    // view's own Tab goes down a column).
    bool eventFilter(QObject *object, QEvent *event) override;

private:
    RowListEditor *m_editor;
};

} // namespace airlock::ui
