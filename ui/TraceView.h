// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QWidget>

class QLabel;
class QTreeView;

namespace airlock {
class DaemonClient;
}

namespace airlock::ui {

class TraceModel;

// A trace, Langfuse-style: the spans of a run as a tree, each with its duration and a bar on the
// run's time axis (commands blue, waits for a person amber, refusals red, connections and tool
// calls in their own colours; a moment is a mark). Activating a span that has output (a command,
// or anything inside one) asks for that output from the span's start.
class TraceView final : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget *parent = nullptr);

    TraceModel *model() const { return m_model; }
    QTreeView *tree() const { return m_tree; }
    QLabel *summary() const { return m_summary; }
    void showTrace(DaemonClient &client, const QString &sandbox, const QString &run, const QString &title,
        const QHash<QString, QString> &names = {});
    void activateSpan(int span); // as a double-click on it

Q_SIGNALS:
    void outputRequested(const QString &sandbox, uint exec, qint64 atMs);

private:
    void showLoaded(int events, qint64 elapsedMs);

    TraceModel *m_model;
    QTreeView *m_tree;
    QLabel *m_summary;
};

} // namespace airlock::ui
