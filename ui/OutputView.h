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
// in its own colour. Text is selected with the mouse (double-click: a word) and copied with
// Ctrl+C; long lines scroll sideways or, with wrapping on, continue on the next rows.
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
    // Ctrl+Home and Ctrl+End: the first line kept, or the end (following it again).
    void scrollToStart();
    void scrollToEnd();
    // A line (of document(), counting from the first kept) near the top of the view, with a line of
    // context above it; stops following the tail. A trace's span opens its output so.
    void showLine(qsizetype line);
    // Output came while scrolled away from the end: a "new output below" marker shows, and a
    // click on it goes to the end.
    bool hasNewOutputBelow() const { return m_newBelow && !m_follow; }
    QRect newOutputMarker() const { return m_newBelowRect; } // from the last paint

    // Search: every occurrence highlighted (case-insensitive); findNext() moves to the next line
    // that has one, wrapping around, and stops following the tail.
    void setSearch(const QString &text);
    bool findNext();
    qsizetype currentMatchLine() const { return m_matchLine; }
    int firstVisibleLine() const;

    void setWrap(bool wrap);
    bool wraps() const { return m_wrap; }
    int rowsPainted() const { return int(m_rows.size()); }

    // A place in the text: line counted from the first line ever appended (so a selection holds
    // while old lines are dropped), column in characters.
    struct Position {
        qsizetype line = 0, column = 0;
        auto operator<=>(const Position &) const = default;
    };
    Position positionAt(QPoint point) const; // from the last paint
    void select(Position from, Position to);
    void selectAll();
    void clearSelection();
    bool hasSelection() const { return m_anchor != m_cursor; }
    QString selectedText() const;
    void copy() const; // the selection to the clipboard (and the X11 primary selection)

Q_SIGNALS:
    void wrapChanged(bool wrap);

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void scrollContentsBy(int dx, int dy) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    struct Row { // one painted row: a line, or part of one when wrapping
        qsizetype line = 0, from = 0, to = 0;
        int y = 0;
    };
    void scheduleUpdate();
    void updateScrollBars();
    int lineHeight() const;
    int wrapColumns() const;
    struct Top {
        qsizetype line = 0, skipRows = 0; // the first line in view, and its rows above the view
    };
    Top topInView() const;
    void paintRow(QPainter &painter, const StyledLine &line, const Row &row, int x0) const;
    int columnX(QStringView text, qsizetype from, qsizetype column) const;

    OutputDocument m_doc;
    QString m_search;
    qsizetype m_matchLine = -1;
    QTimer *m_frame;
    bool m_follow = true;
    bool m_wrap = false;
    bool m_newBelow = false;
    QRect m_newBelowRect;
    QList<Row> m_rows;
    Position m_anchor, m_cursor; // the selection, in either order
    bool m_selecting = false;
};

} // namespace airlock::ui
