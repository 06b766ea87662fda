// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "OutputDocument.h"

#include <QAbstractScrollArea>
#include <QJsonArray>
#include <QJsonValue>

class QTimer;

namespace airlock::ui {

// Shows an OutputDocument: paints only the lines in view, so 100 MB of output costs what one
// screen does; appends are batched to at most one repaint per frame; follows the tail while
// scrolled to the bottom. Inert bytes (control sequences the sandbox sent) are drawn boxed, stderr
// in its own colour.
class OutputView final : public QAbstractScrollArea {
    Q_OBJECT
public:
    explicit OutputView(QWidget *parent = nullptr);

    OutputDocument &document() { return m_doc; }
    void append(int stream, QByteArrayView bytes);
    void finish();
    void clear();
    // The lines that frame an execution, the same live and replayed: its command as one could
    // type it again (escaped: nothing in an argv drives the view), then how it ended.
    void beginExecution(const QJsonArray &argv, qint64 exec);
    void endExecution(qint64 exec, const QString &status, const QJsonValue &exitCode);
    bool followsTail() const { return m_follow; }

    // Search: every occurrence highlighted (case-insensitive); findNext() moves to the next line
    // that has one, wrapping around, and stops following the tail.
    void setSearch(const QString &text);
    bool findNext();
    qsizetype currentMatchLine() const { return m_matchLine; }
    int firstVisibleLine() const;

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;

private:
    void scheduleUpdate();
    void updateScrollBars();
    int lineHeight() const;

    OutputDocument m_doc;
    QString m_search;
    qsizetype m_matchLine = -1;
    QTimer *m_frame;
    bool m_follow = true;
};

} // namespace airlock::ui
