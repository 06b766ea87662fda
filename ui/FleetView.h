// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QModelIndex>
#include <QWidget>

class QAction;
class QLineEdit;
class QTreeView;

namespace airlock::ui {

class FleetFilter;
class FleetSampler;
class SandboxModel;

// The sandboxes of every host as a table to run many agents from: a filter box over a tree of
// hosts and their sandboxes, sortable on every column, CPU and memory sampled about once a second
// while it is shown (drawn with their last minute), several rows selectable for bulk actions, and
// the window's per-sandbox actions on a context menu. Indices it takes and gives are the model's.
class FleetView final : public QWidget {
    Q_OBJECT
public:
    explicit FleetView(SandboxModel &model, QWidget *parent = nullptr);

    QTreeView *tree() const { return m_tree; }
    QLineEdit *filterLine() const { return m_filter; }
    FleetFilter *filter() const { return m_proxy; }
    FleetSampler *sampler() const { return m_sampler; }
    QModelIndex current() const;
    void setCurrent(const QModelIndex &index);
    // The selected sandbox rows; hosts are left out.
    QModelIndexList selectedSandboxes() const;
    void select(const QModelIndexList &indexes); // replaces the selection
    void setContextActions(const QList<QAction *> &actions);
    // The menu of a host's own row (not this computer's): edit, remove.
    void setHostContextActions(const QList<QAction *> &actions);

    QWidget *emptyState() const { return m_empty; } // shown while no host has a sandbox

Q_SIGNALS:
    void currentChanged();
    void newSandboxRequested();
    void connectAgentRequested();

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;

private:
    SandboxModel &m_model;
    FleetFilter *m_proxy;
    FleetSampler *m_sampler;
    QLineEdit *m_filter;
    QTreeView *m_tree;
    QList<QAction *> m_contextActions, m_hostActions;
    QWidget *m_empty;
    void updateEmptyState();
};

} // namespace airlock::ui
